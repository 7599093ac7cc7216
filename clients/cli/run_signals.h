// clients/cli/run_signals.h
//
// What the CLI's run commands share with fio's terminal behaviour:
//  - TerminationSignals: while an object lives, SIGINT and SIGTERM only
//    record themselves (a signal handler may do nothing else); the run loop
//    reads them and stops the run (local: a partial report, as fio; remote:
//    cancel the job). The previous handlers come back on destruction.
//  - InterruptWatcher: acts on those signals from a thread of its own
//    while a remote command waits on a stream.
//  - FioEtaString: fio's ETA format ("01m:05s", "02h:01m:05s",
//    "1d:02h:01m:05s").
//
// Thread-safety: one TerminationSignals at a time per process; the counters
// are atomics, readable from any thread.
#ifndef BLKLAB_CLIENTS_CLI_RUN_SIGNALS_H_
#define BLKLAB_CLIENTS_CLI_RUN_SIGNALS_H_

#include <signal.h>

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace blklab::cli {

class TerminationSignals {
 public:
  TerminationSignals();
  ~TerminationSignals();
  TerminationSignals(const TerminationSignals&) = delete;
  TerminationSignals& operator=(const TerminationSignals&) = delete;

  // Signals received since construction, and the number of the last one
  // (0: none).
  static int count();
  static int last();

 private:
  struct sigaction old_int_ = {};
  struct sigaction old_term_ = {};
};

// While it lives, a thread that watches TerminationSignals (every 50 ms):
// at the first signal it calls `first` (a remote command cancels what it
// runs on the server, then keeps waiting for the end), at the second
// `second` (stop waiting). Destruction stops and joins the thread.
class InterruptWatcher {
 public:
  InterruptWatcher(std::function<void()> first, std::function<void()> second);
  ~InterruptWatcher();
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

std::string FioEtaString(int64_t sec);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_RUN_SIGNALS_H_
