#include "server/job_record.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "server/proto_time.h"
#include "server/resource_name.h"

namespace blklab::server {
namespace {

v1::Job::State StateToProto(JobState state) {
  switch (state) {
    case JobState::kQueued:
      return v1::Job::QUEUED;
    case JobState::kRunning:
      return v1::Job::RUNNING;
    case JobState::kSucceeded:
      return v1::Job::SUCCEEDED;
    case JobState::kFailed:
      return v1::Job::FAILED;
    case JobState::kCancelled:
      return v1::Job::CANCELLED;
  }
  return v1::Job::STATE_UNSPECIFIED;
}

std::optional<JobState> StateFromProto(v1::Job::State state) {
  switch (state) {
    case v1::Job::QUEUED:
      return JobState::kQueued;
    case v1::Job::RUNNING:
      return JobState::kRunning;
    case v1::Job::SUCCEEDED:
      return JobState::kSucceeded;
    case v1::Job::FAILED:
      return JobState::kFailed;
    case v1::Job::CANCELLED:
      return JobState::kCancelled;
    default:
      return std::nullopt;
  }
}

}  // namespace

const std::string& JobStateName(JobState state) { return v1::Job::State_Name(StateToProto(state)); }

v1::Job JobToProto(const JobRecord& r) {
  v1::Job job = *r.definition;
  job.set_name(r.name());
  job.set_state(StateToProto(r.state));
  SetTimestamp(r.create_time, job.mutable_create_time());
  if (r.start_time) SetTimestamp(*r.start_time, job.mutable_start_time());
  if (r.end_time) SetTimestamp(*r.end_time, job.mutable_end_time());
  if (r.wall_time) SetDuration(absl::ToInt64Nanoseconds(*r.wall_time), job.mutable_wall_time());
  if (r.progress) {
    SetDuration(r.progress->virtual_ns, job.mutable_progress_virtual_time());
    job.set_progress_fraction(r.progress->fraction);
  }
  if (!r.error.ok()) {
    job.mutable_error()->set_code(static_cast<int>(r.error.code()));
    job.mutable_error()->set_message(std::string(r.error.message()));
  }
  if (r.result != nullptr) *job.mutable_result() = *r.result;
  return job;
}

absl::StatusOr<JobRecord> JobFromProto(v1::Job job) {
  absl::StatusOr<std::string> id = ParseResourceName(job.name(), "jobs");
  if (!id.ok()) return absl::DataLossError(absl::StrCat("stored job: ", id.status().message()));
  const std::optional<JobState> state = StateFromProto(job.state());
  if (!state) return absl::DataLossError(absl::StrCat("stored job ", job.name(), ": no state"));
  JobRecord r;
  r.id = *std::move(id);
  r.state = *state;
  r.create_time = TimeFromProto(job.create_time());
  if (job.has_start_time()) r.start_time = TimeFromProto(job.start_time());
  if (job.has_end_time()) r.end_time = TimeFromProto(job.end_time());
  if (job.has_wall_time()) r.wall_time = absl::Nanoseconds(DurationNs(job.wall_time()));
  if (job.has_progress_virtual_time() || job.progress_fraction() != 0) {
    r.progress = JobProgress{DurationNs(job.progress_virtual_time()), job.progress_fraction()};
  }
  if (job.has_error()) {
    r.error = absl::Status(static_cast<absl::StatusCode>(job.error().code()), job.error().message());
  }
  if (job.has_result()) {
    r.result = std::make_shared<const v1::JobResult>(std::move(*job.mutable_result()));
  }
  // What is left is the definition.
  job.clear_name();
  job.clear_state();
  job.clear_create_time();
  job.clear_start_time();
  job.clear_end_time();
  job.clear_wall_time();
  job.clear_progress_virtual_time();
  job.clear_progress_fraction();
  job.clear_error();
  job.clear_result();
  r.definition = std::make_shared<const v1::Job>(std::move(job));
  return r;
}

}  // namespace blklab::server
