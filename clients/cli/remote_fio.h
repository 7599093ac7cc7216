// clients/cli/remote_fio.h
//
// `blklab --server ADDR fio ...` and the watch loop it shares with
// `blklab --server ADDR jobs watch ID`.
//
// The bundle: the job files named on the command line, and the files they
// `include`, are read locally (as the in-process run reads them) into
// FioBundle.files under their base names (arguments and include lines are
// rewritten to those names); ${VAR}s the files use are sent from the local
// environment as FioBundle.variables; the other arguments go as they are,
// except --output (honoured locally). --host=PRESET becomes Job.preset,
// --host=hosts/NAME a stored host, --host=FILE an inline spec (parsed and
// validated locally). --seed=N is Job.seed.
//
// Output: exactly what the in-process run prints for --output-format json,
// normal or both (the server returns those two texts). terse, json+ and
// --perf-top need figures the server does not return and are refused;
// --status-interval prints the final report only. --version, --cmdhelp,
// --enghelp and --showcmd run nothing and are answered locally;
// --parse-only validates on the server (CreateJob validate_only).
// --eta=auto shows the progress line on stdout when it is a terminal
// (always/never as fio); the line is erased before the result.
// Ctrl-C cancels the job on the server (a second one stops waiting).
// fio's log files come from the server (ReadJobArtifacts) and are written
// here as the in-process run writes them, but only those that the
// write_*_log and write_iolog options of this command line (its job files
// included) name; another name the server returns is warned of on stderr
// and not written. Files are opened without following a symbolic link as
// their last component. A log that cannot be written is reported after the
// report, and sets the exit code, as in-process.
#ifndef BLKLAB_CLIENTS_CLI_REMOTE_FIO_H_
#define BLKLAB_CLIENTS_CLI_REMOTE_FIO_H_

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "blklab/v1/job.pb.h"
#include "clients/cli/remote_client.h"

namespace blklab::cli {

int RunRemoteFio(RemoteClient& client, const std::vector<std::string>& args);

// fio's status line for a remote job, rewritten in place with \r:
//   Jobs: 1 (f=1): [r(1)][=========>          ][45.0%][r=7346MiB/s][r=1881k IOPS][eta 00m:01s]
// `clones` is the number of fio threads when known (0: unknown).
class RemoteProgress {
 public:
  RemoteProgress(std::ostream& out, size_t clones) : out_(out), clones_(clones) {}
  void Print(const v1::Snapshot& snap);
  void Queued(const std::string& job);
  // Erases the line (the result follows).
  void Clear();

 private:
  void Emit(std::string line);

  std::ostream& out_;
  size_t clones_;
  size_t last_len_ = 0;
};

// How WatchToEnd writes each interval to `lines`.
enum class SnapshotLines { kText, kJson };

// One interval as a line of text: virtual time, state and progress, then per
// direction with I/O IOPS, bandwidth and clat p50 / p99, the CPU shares and
// the spinlock contention, e.g.
//   "t=1.000s RUNNING 50.0%  read: IOPS=1.61M, BW=6294MiB/s, p50=19.3us,
//    p99=20.4us  cpu: usr=20.3% sys=79.6% irq=0.0% softirq=0.0%  contention=0.0%"
std::string SnapshotText(const v1::Snapshot& snap);

// Streams WatchJob for `job` until the final snapshot: the progress line on
// `progress`, or each interval on `lines` (text or JSON), when not null;
// returns the final job in `final_job`. Cancels the job on Ctrl-C. Returns
// the stream's status (OK when the final job arrived).
grpc::Status WatchToEnd(RemoteClient& client, const std::string& job, RemoteProgress* progress,
                        std::ostream* lines, v1::Job* final_job, SnapshotLines format = SnapshotLines::kJson);

// Exit code for a job in a final state: 0 SUCCEEDED, else its error code
// (printed on stderr with `prefix`).
int JobExit(const std::string& prefix, const v1::Job& job);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_REMOTE_FIO_H_
