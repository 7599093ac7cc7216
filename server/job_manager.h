// server/job_manager.h
//
// JobManager runs jobs in the background: it owns the JobQueue (admission,
// the bounded FIFO, the active set, cancellation, watchers:
// server/job_queue.h), a JobRunner (one run from its request to its final
// record: server/job_runner.h) and the pool of worker threads between them
// (one per core by default). A worker takes the oldest queued job from the
// queue and runs it with the runner, one job at a time.
//
// Cancellation: the engine checks a job's stop flag between 100 ms slices of
// virtual time, so a running job stops within one slice. A REALTIME-paced
// job sleeps between slices (so virtual time tracks wall time) and wakes for
// a stop at once.
//
// Crash safety: the store is written before anything is reported, so a job
// is never reported done without a result. Start() re-queues every job the
// store holds as QUEUED or RUNNING; Shutdown() stops running jobs without
// changing their stored state, so they run again, identically, after the
// next start.
//
// Snapshots: the engine reports progress every slice (at most 100 ms of
//   virtual time) and an interval view at each status interval (fio's
//   --status-interval of the bundle, else 1 s of virtual time); watchers get
//   one Snapshot per status interval, sequence numbered by interval.
// Thread-safety: thread-safe. Start and Shutdown are called by the owner.
// Cost: one thread per worker; see the queue and the runner for the rest.
#ifndef BLKLAB_SERVER_JOB_MANAGER_H_
#define BLKLAB_SERVER_JOB_MANAGER_H_

#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "server/convert.h"
#include "server/job_queue.h"
#include "server/job_runner.h"
#include "server/store.h"

namespace blklab::server {

struct JobManagerOptions {
  int workers = 0;  // 0: one per core
  size_t max_queued_jobs = 1000;
  JobLimitsConfig limits;
  JobObserver* observer = nullptr;  // not owned; outlives the manager
};

class JobManager {
 public:
  JobManager(Store* store, const JobManagerOptions& options);
  ~JobManager();  // Shutdown()
  JobManager(const JobManager&) = delete;
  JobManager& operator=(const JobManager&) = delete;

  // Re-queues the store's unfinished jobs and starts the workers. Call once.
  absl::Status Start();

  // Stops the queue (running jobs are interrupted and keep their stored
  // RUNNING state; watchers are closed with UNAVAILABLE) and joins the
  // workers. Idempotent.
  void Shutdown();

  // The jobs: what the JobService submits, cancels and watches.
  JobQueue& queue() { return queue_; }
  const JobQueue& queue() const { return queue_; }

  size_t workers() const { return workers_.size(); }

 private:
  void WorkerLoop();

  const int worker_count_;
  JobQueue queue_;
  const JobRunner runner_;
  std::vector<std::thread> workers_;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_MANAGER_H_
