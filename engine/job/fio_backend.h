// engine/job/fio_backend.h
//
// FioBackend models the two threads fio runs beside its job threads. They
// take CPU time and, on a CPU they share with a job, delay its I/O:
//  * the main thread (backend.c run_threads) checks its jobs (reap_threads)
//    and sleeps: 100 ms while some job has yet to start, then 10 ms
//    (do_usleep: clock_nanosleep, whose hrtimer fires at the end of the
//    task's 50 us timer slack), until no job runs;
//  * the helper thread (helper_thread.c) sleeps on its timerfd until the
//    next of its disk-util timer (DISK_UTIL_MSEC, 250 ms, from its start)
//    and the next bandwidth / IOPS sample of a running job
//    (calc_log_samples: every min(bwavgtime, iopsavgtime) from the job's
//    start; a job not yet measuring asks again after that long). At the
//    disk-util timer it reads /sys/block/DEV/stat of every disk a job
//    measures (disk_util=1), part_stat_read_all summing every CPU's
//    counters.
// Each wake-up is an hrtimer interrupt on the thread's CPU (hrtimer_wakeup,
// try_to_wake_up). The woken thread mostly sleeps, so it pre-empts the
// running task at that task's next pre-emption point (EEVDF's lag): on a
// CPU shared with a job the interrupt, two context switches and the loop
// land in the latency of the IOs the job has in flight, part of fio's clat
// tail on a host with no idle CPU. The threads sit on the CPU with the
// fewest job threads (the lowest-numbered among equals), where the
// scheduler would wake them: an idle CPU when the host has one.
//
// Not modelled: the main thread's delay in starting a later stonewall wave
// (the model starts it when the previous one ends), the helper's ETA and
// status output.
//
// Invariants: the threads run only while some job has not finished; they
// touch no block-layer state.
// Thread-safety: thread-compatible; owned by the Simulation of one run.
// Cost: one timer event per wake-up, 100 a second for the main thread and
// 4-6 for the helper.
#ifndef BLKLAB_ENGINE_JOB_FIO_BACKEND_H_
#define BLKLAB_ENGINE_JOB_FIO_BACKEND_H_

#include <array>
#include <memory>
#include <vector>

#include "engine/job/job_thread.h"
#include "engine/model/kernel.h"
#include "engine/sim/cpu.h"
#include "engine/sim/timer.h"

namespace blklab::job {

struct FioBackendConfig {
  int cpu = 0;              // where both threads run
  int disk_util_disks = 0;  // disks whose stats the helper reads
};

class FioBackend {
 public:
  // `clones` are the run's job threads (fio's thread_data), read to decide
  // when to sleep and when to stop.
  FioBackend(model::Kernel& kernel, const FioBackendConfig& config,
             const std::vector<std::unique_ptr<JobThread>>& clones);
  FioBackend(const FioBackend&) = delete;
  FioBackend& operator=(const FioBackend&) = delete;

  // Starts both threads at virtual time 0.
  void Start();
  // The last job has finished: no more wake-ups (the run's results end
  // there; fio's threads would exit at their next one).
  void Stop() {
    main_timer_.Cancel();
    helper_timer_.Cancel();
  }

  // The event targets of the threads' timers: a run whose only pending
  // events are these has stalled.
  std::array<const sim::EventHandler*, 2> timer_targets() const { return {&main_timer_, &helper_timer_}; }

 private:
  // hrtimer_wakeup in the timer's hardirq: wakes the thread `arg` names.
  class Waker final : public sim::IrqHandler {
   public:
    explicit Waker(FioBackend* b) : b_(b) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;

   private:
    FioBackend* b_;
  };

  sim::Task MainBody();
  sim::Task HelperBody();
  bool AllDone() const;
  bool AllStarted() const;
  // The helper's next wake-up after `now`; advances the disk-util timer
  // past `now` and says whether it expired.
  sim::SimTime NextHelperWake(sim::SimTime now, bool* disk_util_due);

  model::Kernel& kernel_;
  FioBackendConfig config_;
  const std::vector<std::unique_ptr<JobThread>>& clones_;
  sim::Cpu& cpu_;
  std::unique_ptr<sim::Thread> main_;
  std::unique_ptr<sim::Thread> helper_;
  Waker waker_{this};
  sim::HrTimer main_timer_;
  sim::HrTimer helper_timer_;
  sim::SimTime disk_util_next_ = 0;
  sim::FnId fn_reap_threads_, fn_nanosleep_, fn_helper_, fn_select_, fn_part_stat_;
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_FIO_BACKEND_H_
