// server/job_record.h
//
// JobRecord is blklabd's own model of one job: what the job queue and the
// runner keep and change while a job waits, runs and ends (its state, times,
// progress, error and result), in plain C++ types. The API's v1::Job exists
// only at the edges, converted by JobToProto / JobFromProto:
//
//  - the gRPC services (server/job_service.h) convert a record into the Job
//    they return, and build the record of a new job from CreateJob;
//  - the store stays proto-serialized: a row holds the serialized v1::Job
//    (server/store.h), so databases written by earlier servers stay readable
//    and GetJob / ListJobs serve the stored message as it is. The job queue
//    converts where it writes a record to the store or reads one back.
//
// What the client defined — the target (a stored host, an inline host spec
// or a preset), the workload (fio bundle or JobSpec), seed, pace, limits and
// request id — and the host spec resolved at creation never change after
// CreateJob. They stay in their API form, `definition`: the manager never
// reads them; the runner hands them to PrepareJob (server/convert.h), which
// turns them into the engine's RunRequest, and they go back to the client
// unchanged. (C++ twins of the HostSpec and JobSpec schemas would add a
// converter per field and no reader.) The result is kept in its API form for
// a similar reason: BuildJobResult writes fio's texts with the wall clock of
// the moment, so the result is built once, when the run ends.
//
// Invariants: `definition` is never null and has none of the output fields
//   that the record holds itself (name, state, times, progress, error,
//   result); `result` is set only when state is kSucceeded; `error` is not OK
//   exactly when state is kFailed or kCancelled. JobFromProto(JobToProto(r))
//   gives `r` back, and JobToProto(JobFromProto(j)) gives `j` back for every
//   job this server writes (JobError's field_path, file and line, which it
//   never sets, are dropped).
// Thread-safety: a plain value; the owner synchronises. `definition` and
//   `result` are immutable and shared between copies.
// Cost: copying a record copies a few strings and two shared pointers;
//   JobToProto copies the definition (the job's bundle) and the result.
#ifndef BLKLAB_SERVER_JOB_RECORD_H_
#define BLKLAB_SERVER_JOB_RECORD_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "blklab/v1/job.pb.h"

namespace blklab::server {

// v1::Job.State without the wire's STATE_UNSPECIFIED, which no job has.
enum class JobState { kQueued, kRunning, kSucceeded, kFailed, kCancelled };

// "QUEUED", "RUNNING", ... as the API names the states.
const std::string& JobStateName(JobState state);

// How far a run has come: virtual time covered and the fraction of the
// planned run done, [0, 1] (0 while the end cannot be estimated).
struct JobProgress {
  int64_t virtual_ns = 0;
  double fraction = 0.0;
};

struct JobRecord {
  std::string id;  // {job} of "jobs/{job}"
  std::shared_ptr<const v1::Job> definition = std::make_shared<const v1::Job>();

  JobState state = JobState::kQueued;
  absl::Time create_time = absl::UnixEpoch();
  std::optional<absl::Time> start_time;   // when a worker took it
  std::optional<absl::Time> end_time;     // when it reached a final state
  std::optional<absl::Duration> wall_time;  // spent running, once finished
  std::optional<JobProgress> progress;    // none before the first slice
  absl::Status error;                     // FAILED / CANCELLED: why
  std::shared_ptr<const v1::JobResult> result;  // SUCCEEDED: what the run gave

  std::string name() const { return "jobs/" + id; }
};

// The Job the API shows for `record` (the FULL view: the result included
// when there is one).
v1::Job JobToProto(const JobRecord& record);

// The record of a stored Job. DataLoss when its name is not a job name
// ("jobs/{id}", server/resource_name.h) or its state is
// STATE_UNSPECIFIED: the store holds no such job unless it was damaged.
absl::StatusOr<JobRecord> JobFromProto(v1::Job job);

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_RECORD_H_
