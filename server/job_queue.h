// server/job_queue.h
//
// JobQueue holds the jobs this process owns while they are QUEUED or
// RUNNING, and every change of their lifecycle that the store must see:
//
//  - admission: Submit stores a new job (QUEUED) and queues it, unless the
//    bounded FIFO is full (max_queued_jobs); Restore re-queues, at start, the
//    jobs the store holds as QUEUED or RUNNING (a crash or a shutdown
//    interrupted them; determinism makes the re-run identical), except a
//    comparison's cells, which end CANCELLED (comparisons live in memory);
//  - the FIFO: Take hands the oldest queued job to a worker and marks it
//    RUNNING in the store;
//  - the active set: IsActive, Progress (live progress of a job), Cancel (a
//    QUEUED job ends at once; a RUNNING one is asked to stop);
//  - watchers: Watch / Unwatch subscribe a WatchJob stream to a job's
//    snapshots; a job already finished gets its final snapshot at once;
//  - the end: Finish is the one way out of the active set. It writes the
//    final record to the store first, then removes the job, then tells the
//    observer and pushes the final snapshot to the watchers: nothing is
//    reported done before it is durable, and a Watch that no longer finds
//    the job reads its final state from the store.
//
// Running a job is the runner's part (server/job_runner.h); the worker pool
// that connects the two is the JobManager (server/job_manager.h).
//
// Invariants: a job is in the active set exactly while its stored state is
//   QUEUED or RUNNING and this process owns it; the FIFO holds only QUEUED
//   jobs; an ActiveJob's record is RUNNING exactly while a worker holds it.
// Thread-safety: thread-safe. Lock order: the queue's mutex, then an
//   ActiveJob's. Sinks and the observer are called with neither held.
// Cost: Submit / Cancel are O(queue length) at worst, plus one store
//   statement; snapshots cost one proto per status interval per job, built
//   only when someone watches, shared by all its watchers.
#ifndef BLKLAB_SERVER_JOB_QUEUE_H_
#define BLKLAB_SERVER_JOB_QUEUE_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "blklab/v1/job.pb.h"
#include "engine/engine.h"
#include "server/job_record.h"
#include "server/store.h"

namespace blklab::server {

// Receives one job's snapshots (a WatchJob stream: server/job_service.h).
// Push may be called from a worker thread at any time until Close or a final
// snapshot (final_job set); after either, nothing more is pushed. Snapshots
// come in their wire form: built once per interval, shared by all watchers.
class WatchSink {
 public:
  virtual ~WatchSink() = default;
  virtual void Push(const v1::Snapshot& snapshot) = 0;
  // The stream ends without a final snapshot (server shutting down).
  virtual void Close(const absl::Status& status) = 0;
};

// Observes runs for the metrics exporter. Called on worker threads (and, for
// JobEnded of a job cancelled while queued, on the cancelling thread)
// without any lock held; implementations must be thread-safe and cheap (one
// call per engine snapshot, at most every 100 ms of virtual time).
class JobObserver {
 public:
  virtual ~JobObserver() = default;
  // A worker started `job` (RUNNING). `display_name` is fio's first job name.
  virtual void JobStarted(const JobRecord& job, const std::string& display_name) = 0;
  // An engine snapshot of running job `id`; `wall_ns` since the run started.
  virtual void JobProgress(const std::string& id, const Snapshot& snapshot, int64_t wall_ns) = 0;
  // The job reached a final state (also for a job cancelled while queued,
  // which was never started).
  virtual void JobEnded(const JobRecord& job) = 0;
};

// Why a run was asked to stop.
enum class StopReason { kNone, kCancel, kShutdown, kWallLimit };

// One job of the active set: its record, the flag that stops its run, and
// its watchers. Shared by the queue and the worker running it; the record is
// changed by the queue (RUNNING, Finish) and by the runner (progress).
class ActiveJob {
 public:
  explicit ActiveJob(JobRecord record) : id_(record.id), record_(std::move(record)) {}
  ActiveJob(const ActiveJob&) = delete;
  ActiveJob& operator=(const ActiveJob&) = delete;

  const std::string& id() const { return id_; }
  JobRecord record() const ABSL_LOCKS_EXCLUDED(mu_);

  // Asks the run to stop. kCancel and kShutdown replace an earlier reason;
  // kWallLimit only takes an empty one. A shutdown also raises the engine's
  // cancel flag at once; for the others the runner raises it (StopEngine)
  // at the next engine snapshot, once it has kept the results as they stand.
  void Stop(StopReason reason);
  StopReason stop_reason() const { return reason_.load(); }
  // The engine's cancel flag (RunFio polls it between slices).
  const std::atomic<bool>* stop_flag() const { return &engine_stop_; }
  void StopEngine() { engine_stop_.store(true); }
  // True once Stop was called (the engine may still be running).
  bool stopping() const { return stop_.load(); }

  // Records the run's progress. When `interval` (the snapshot closes a
  // status interval), numbers it and returns the watchers to push it to
  // (none: nobody watches), with its sequence number in `*sequence`.
  std::vector<std::shared_ptr<WatchSink>> RecordProgress(const JobProgress& progress, bool interval,
                                                         uint64_t* sequence) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  friend class JobQueue;

  const std::string id_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> engine_stop_{false};
  std::atomic<StopReason> reason_{StopReason::kNone};
  mutable absl::Mutex mu_;
  JobRecord record_ ABSL_GUARDED_BY(mu_);
  uint64_t next_sequence_ ABSL_GUARDED_BY(mu_) = 0;
  std::vector<std::shared_ptr<WatchSink>> sinks_ ABSL_GUARDED_BY(mu_);
};

struct JobQueueOptions {
  size_t max_queued_jobs = 1000;
  JobObserver* observer = nullptr;  // not owned; outlives the queue
};

class JobQueue {
 public:
  JobQueue(Store* store, const JobQueueOptions& options) : store_(store), options_(options) {}
  JobQueue(const JobQueue&) = delete;
  JobQueue& operator=(const JobQueue&) = delete;

  // Re-queues the store's unfinished jobs, oldest first (beyond the queue
  // cap), as QUEUED with no start time or progress. Call once, before Take.
  absl::Status Restore();

  // Stores `job` (QUEUED) and queues it. ResourceExhausted naming
  // max_queued_jobs when the queue is full; AlreadyExists when the id or the
  // request id is taken; Unavailable while shutting down.
  absl::Status Submit(JobRecord job);

  // Cancels a QUEUED job at once or asks a RUNNING one to stop. Returns the
  // job as it now is (for a RUNNING one: as it was when asked; its run ends
  // within one slice of virtual time). A job already CANCELLED is returned
  // as it is. FailedPrecondition on SUCCEEDED or FAILED; NotFound.
  absl::StatusOr<JobRecord> Cancel(const std::string& id);

  // True while the job is QUEUED or RUNNING here.
  bool IsActive(const std::string& id) const;

  // The live progress of an active job (zero before its first slice);
  // nullopt when the job is not active.
  std::optional<JobProgress> Progress(const std::string& id) const;

  // Subscribes `sink` to a job's snapshots. A job already in a final state
  // gets its final snapshot pushed at once (on this thread). NotFound when
  // the job does not exist; Unavailable while shutting down.
  absl::Status Watch(const std::string& id, std::shared_ptr<WatchSink> sink);
  void Unwatch(const std::string& id, const WatchSink* sink);

  // Workers. Take blocks until a job is queued, marks it RUNNING (start time
  // now), writes that to the store and returns it; nullptr once shut down.
  // Every job taken is handed back with Release when its run returns.
  std::shared_ptr<ActiveJob> Take();
  void Release(const ActiveJob& job);

  // Ends `job` with `final_record` (a final state): see the file comment.
  void Finish(ActiveJob& job, JobRecord final_record);

  // Stops taking jobs, asks running ones to stop (they keep their stored
  // RUNNING state and run again at the next start), closes all watchers with
  // UNAVAILABLE and wakes the workers blocked in Take. Idempotent.
  void Shutdown();

  // Number of queued / running jobs.
  size_t queued() const;
  size_t running() const;

 private:
  Store* const store_;
  const JobQueueOptions options_;

  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<ActiveJob>> active_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<ActiveJob>> fifo_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool shutdown_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_QUEUE_H_
