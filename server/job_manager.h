// server/job_manager.h
//
// JobManager runs jobs in the background: a bounded FIFO queue of accepted
// jobs and a pool of worker threads (one per core by default). A worker takes
// the oldest queued job, marks it RUNNING in the store, calls the engine's
// RunFio on its own thread with a cancel flag and a snapshot callback, and
// writes the final state (SUCCEEDED with the result, FAILED with the error,
// CANCELLED) to the store before it tells the job's watchers.
//
// Parallelism is across jobs only; each run is single-threaded and owns its
// simulation (ARCHITECTURE.md, "Data flow"). Watchers get snapshots copied
// into protos on the worker thread; gRPC threads never touch engine state.
//
// Cancellation: CancelJob sets the job's flag; the engine checks it between
// 100 ms slices of virtual time, so a running job stops within one slice of
// wall time. A REALTIME-paced job sleeps in the snapshot callback (so virtual
// time tracks wall time) and wakes for a cancel at once.
//
// Crash safety: the store is written before anything is reported, so a job
// is never reported done without a result. Start() re-queues every job the
// store holds as QUEUED or RUNNING (a crash or a shutdown interrupted it);
// determinism makes the re-run identical. Shutdown() stops running jobs
// without changing their stored state, for the same reason.
//
// Invariants: a job is in `active_` exactly while its stored state is QUEUED
//   or RUNNING and this process owns it; `queue_` holds only QUEUED jobs.
// Thread-safety: thread-safe. Sinks are called without `mu_` held.
// Snapshots: the engine reports progress every slice (at most 100 ms of
//   virtual time) and an interval view at each status interval (fio's
//   --status-interval of the bundle, else 1 s of virtual time); watchers get
//   one Snapshot per status interval, sequence numbered by interval.
// Cost: Submit/Cancel are O(queue length) at worst; snapshots cost one proto
//   per status interval per job, built only when someone watches.
#ifndef BLKLAB_SERVER_JOB_MANAGER_H_
#define BLKLAB_SERVER_JOB_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "blklab/v1/job.pb.h"
#include "server/convert.h"
#include "server/store.h"

namespace blklab::server {

// Receives one job's snapshots. Push may be called from a worker thread at
// any time until Close or a final snapshot (final_job set); after either,
// nothing more is pushed.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void Push(const v1::Snapshot& snapshot) = 0;
  // The stream ends without a final snapshot (server shutting down).
  virtual void Close(const absl::Status& status) = 0;
};

// Observes runs for the metrics exporter. Called on worker threads without
// the manager's lock; implementations must be thread-safe and cheap (one
// call per engine snapshot, at most every 100 ms of virtual time).
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // A worker started `job` (RUNNING). `display_name` is fio's first job name.
  virtual void JobStarted(const v1::Job& job, const std::string& display_name) = 0;
  // An engine snapshot of a running job; `wall_ns` since the run started.
  virtual void JobProgress(const std::string& job_name, const Snapshot& snapshot, int64_t wall_ns) = 0;
  // The job reached a final state (also for a job cancelled while queued,
  // which was never started).
  virtual void JobEnded(const v1::Job& job) = 0;
};

struct JobManagerOptions {
  int workers = 0;             // 0: one per core
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

  // Re-queues the store's unfinished jobs (oldest first, beyond the queue
  // cap) and starts the workers. Call once.
  absl::Status Start();

  // Stores `job` (state QUEUED, resolved_host set) and queues it.
  // ResourceExhausted naming max_queued_jobs when the queue is full;
  // AlreadyExists when the id or request id is taken.
  absl::Status Submit(const v1::Job& job);

  // Cancels a QUEUED job at once or asks a RUNNING one to stop. Returns the
  // job as it now is. FailedPrecondition on SUCCEEDED or FAILED.
  absl::StatusOr<v1::Job> Cancel(const std::string& id);

  // True while the job is QUEUED or RUNNING here.
  bool IsActive(const std::string& id) const;

  // Overlays live progress (progress_virtual_time / progress_fraction) on a
  // RUNNING job read from the store.
  void FillProgress(v1::Job* job) const;

  // Subscribes `sink` to a job's snapshots. A job already in a final state
  // gets its final snapshot pushed at once (on this thread). NotFound when
  // the job does not exist.
  absl::Status Watch(const std::string& id, std::shared_ptr<WatchSink> sink);
  void Unwatch(const std::string& id, const WatchSink* sink);

  // Stops workers (running jobs are interrupted and keep their stored
  // RUNNING state), closes all watchers with UNAVAILABLE. Idempotent.
  void Shutdown();

  // Number of queued / running jobs, and of workers.
  size_t queued() const;
  size_t running() const;
  size_t workers() const;

 private:
  enum StopReason : int { kNone = 0, kCancel = 1, kShutdown = 2, kWallLimit = 3 };
  struct Active {
    v1::Job job;  // as stored, plus live progress
    std::atomic<bool> stop{false};
    std::atomic<int> reason{kNone};
    bool running = false;
    uint64_t next_sequence = 0;
    std::vector<std::shared_ptr<WatchSink>> sinks;
  };

  void WorkerLoop();
  void RunOne(const std::shared_ptr<Active>& active);
  // Writes the final job, removes it from active_ and pushes the final
  // snapshot to its sinks.
  void Finish(const std::shared_ptr<Active>& active, v1::Job job);

  Store* const store_;
  const JobManagerOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Active>> active_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Active>> queue_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_MANAGER_H_
