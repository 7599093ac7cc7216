// server/job_runner.h
//
// JobRunner runs one job that a worker took from the JobQueue, on the
// worker's thread, from its prepared request to its final record:
//
//  - prepare: the job's definition and resolved host become the engine's
//    RunRequest (PrepareJob, server/convert.h), with the job's limits clamped
//    to the server's; a job that cannot be prepared ends FAILED;
//  - run: the engine's RunFio, with the job's stop flag as its cancel flag;
//  - at each engine snapshot (every slice, at most 100 ms of virtual time):
//    record the progress, push an interval snapshot to the watchers when the
//    slice closes a status interval, tell the observer, stop the run once it
//    has used its wall-time limit, and, for a REALTIME-paced job, sleep until
//    wall time catches up with virtual time (waking at once for a stop);
//    once a stop is asked for (CancelJob, the wall-time limit), keep the
//    results as they stand at that snapshot and stop the engine;
//  - the end: the final record (SUCCEEDED with the result, FAILED with the
//    error, CANCELLED with the partial result of what ran, as the CLI
//    reports it at Ctrl-C) goes to JobQueue::Finish, which stores it before
//    anyone is told. A run stopped by a shutdown is left as it is stored
//    (RUNNING): the next start runs it again.
//
// Parallelism is across jobs only; each run is single-threaded and owns its
// simulation (docs/architecture.md, "Data flow"). Watchers get snapshots built on
// the worker thread; gRPC threads never touch engine state.
//
// Thread-safety: thread-safe; Run may be called from several workers at once
//   (the runner itself is immutable).
// Cost: the engine run, plus per status interval one snapshot proto when the
//   job is watched; the result is built once (BuildJobResult).
#ifndef BLKLAB_SERVER_JOB_RUNNER_H_
#define BLKLAB_SERVER_JOB_RUNNER_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "server/convert.h"
#include "server/job_queue.h"
#include "server/job_record.h"

namespace blklab::server {

class JobRunner {
 public:
  // `queue` and `observer` (may be null) outlive the runner.
  JobRunner(JobQueue* queue, const JobLimitsConfig& limits, JobObserver* observer)
      : queue_(queue), limits_(limits), observer_(observer) {}

  // Runs `job` (RUNNING, from JobQueue::Take) to its end; see the file
  // comment. Returns when the job is finished or interrupted by a shutdown.
  void Run(ActiveJob& job) const;

 private:
  // What one run needs at each engine snapshot.
  struct RunContext {
    ActiveJob& job;
    std::string name;  // "jobs/{job}"
    absl::Time start;
    int64_t max_wall_ns = 0;
    bool realtime = false;
    RunLimits limits;       // the engine's, to see a limit coming at a snapshot
    int64_t slice_ns = 0;   // the engine's slice of virtual time
    // The results as they stood at the snapshot where a limit was reached
    // or a cancel was noticed (job.proto: a job stopped by a limit or by
    // CancelJob keeps its partial result).
    std::optional<RunResult> partial;
  };

  // The engine's request for the job: its definition on its resolved host,
  // within its limits clamped to the server's.
  absl::StatusOr<PreparedJob> Prepare(const JobRecord& record) const;
  void OnSnapshot(RunContext& run, const Snapshot& snapshot) const;
  // The record `job` ends with, given why it was stopped (if it was) and
  // how its run ended.
  JobRecord FinalRecord(const ActiveJob& job, JobRecord record, StopReason reason,
                        const absl::StatusOr<PreparedJob>& prepared, const absl::StatusOr<RunResult>& run,
                        const RunResult* partial, absl::Time start, absl::Time end) const;
  // OK, or RESOURCE_EXHAUSTED when `result` is above max_log_bytes (its logs
  // are then dropped) or max_result_bytes (then *keep is false: no result
  // may be stored).
  absl::Status CheckResultSize(v1::JobResult& result, bool* keep) const;

  JobQueue* const queue_;
  const JobLimitsConfig limits_;
  JobObserver* const observer_;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_RUNNER_H_
