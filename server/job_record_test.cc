// Tests of server/job_record.h: a job converts between its record and the
// API's v1::Job without losing anything the server writes, in every state.
#include "server/job_record.h"

#include <memory>
#include <string>

#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "server/proto_time.h"

namespace blklab::server {
namespace {

using ::google::protobuf::util::MessageDifferencer;

// A QUEUED job as CreateJob stores it.
v1::Job Queued() {
  v1::Job j;
  j.set_name("jobs/j-1");
  j.set_preset("default");
  j.mutable_fio()->add_args("demo.fio");
  (*j.mutable_fio()->mutable_files())["demo.fio"] = "[j]\nrw=read\n";
  j.set_seed(7);
  j.set_pace(v1::Job::REALTIME);
  j.mutable_limits();  // present, empty: as CreateJob copies it
  j.mutable_resolved_host()->set_name("default");
  j.set_request_id("req-1");
  j.set_state(v1::Job::QUEUED);
  SetTimestamp(absl::FromUnixNanos(1'700'000'000'123'456'789), j.mutable_create_time());
  return j;
}

v1::Job RoundTrip(const v1::Job& job) {
  absl::StatusOr<JobRecord> record = JobFromProto(job);
  EXPECT_TRUE(record.ok()) << record.status();
  return record.ok() ? JobToProto(*record) : v1::Job();
}

void ExpectSame(const v1::Job& want, const v1::Job& got) {
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(want, got)) << diff;
}

TEST(JobRecordTest, QueuedJobRoundTrips) {
  const v1::Job job = Queued();
  ExpectSame(job, RoundTrip(job));
  absl::StatusOr<JobRecord> r = JobFromProto(job);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, "j-1");
  EXPECT_EQ(r->name(), "jobs/j-1");
  EXPECT_EQ(r->state, JobState::kQueued);
  EXPECT_FALSE(r->start_time.has_value());
  EXPECT_FALSE(r->progress.has_value());
  EXPECT_TRUE(r->error.ok());
  EXPECT_EQ(r->result, nullptr);
  // The definition holds only what the client defined.
  EXPECT_TRUE(r->definition->name().empty());
  EXPECT_FALSE(r->definition->has_create_time());
  EXPECT_EQ(r->definition->state(), v1::Job::STATE_UNSPECIFIED);
  EXPECT_EQ(r->definition->request_id(), "req-1");
}

TEST(JobRecordTest, RunningJobWithProgressRoundTrips) {
  v1::Job job = Queued();
  job.set_state(v1::Job::RUNNING);
  SetTimestamp(absl::FromUnixSeconds(1'700'000'001), job.mutable_start_time());
  SetDuration(300'000'000, job.mutable_progress_virtual_time());
  job.set_progress_fraction(0.15);
  ExpectSame(job, RoundTrip(job));
}

// Progress present but zero (a size-bound run before its first estimate)
// stays present: it is printed as "0s" by the JSON views.
TEST(JobRecordTest, ZeroProgressStaysPresent) {
  v1::Job job = Queued();
  job.set_state(v1::Job::FAILED);
  job.mutable_progress_virtual_time();
  job.mutable_error()->set_code(3);
  job.mutable_error()->set_message("bad");
  const v1::Job back = RoundTrip(job);
  EXPECT_TRUE(back.has_progress_virtual_time());
  ExpectSame(job, back);
}

TEST(JobRecordTest, SucceededJobWithResultRoundTrips) {
  v1::Job job = Queued();
  job.set_state(v1::Job::SUCCEEDED);
  SetTimestamp(absl::FromUnixSeconds(1'700'000'001), job.mutable_start_time());
  SetTimestamp(absl::FromUnixSeconds(1'700'000'003), job.mutable_end_time());
  SetDuration(2'000'000'001, job.mutable_wall_time());
  SetDuration(2'000'000'000, job.mutable_progress_virtual_time());
  job.set_progress_fraction(1.0);
  job.mutable_result()->set_fio_json("{}");
  job.mutable_result()->set_total_ios(42);
  ExpectSame(job, RoundTrip(job));
  absl::StatusOr<JobRecord> r = JobFromProto(job);
  ASSERT_TRUE(r.ok());
  ASSERT_NE(r->result, nullptr);
  EXPECT_EQ(r->result->total_ios(), 42u);
  EXPECT_EQ(r->wall_time, absl::Nanoseconds(2'000'000'001));
}

TEST(JobRecordTest, CancelledJobKeepsItsError) {
  v1::Job job = Queued();
  job.set_state(v1::Job::CANCELLED);
  job.mutable_error()->set_code(1);
  job.mutable_error()->set_message("cancelled before it started");
  SetTimestamp(absl::FromUnixSeconds(1'700'000'002), job.mutable_end_time());
  ExpectSame(job, RoundTrip(job));
  absl::StatusOr<JobRecord> r = JobFromProto(job);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->state, JobState::kCancelled);
  EXPECT_TRUE(absl::IsCancelled(r->error));
  EXPECT_EQ(r->error.message(), "cancelled before it started");
}

TEST(JobRecordTest, TargetsAndWorkloadsPassThrough) {
  v1::Job job = Queued();
  job.set_host("hosts/h1");
  job.mutable_spec()->add_jobs()->set_name("s");
  (*job.mutable_spec()->mutable_global_options())["bs"] = "4k";
  ExpectSame(job, RoundTrip(job));
  job.mutable_host_spec()->set_name("inline");
  ExpectSame(job, RoundTrip(job));
}

TEST(JobRecordTest, DamagedJobsAreDataLoss) {
  v1::Job job = Queued();
  job.set_name("hosts/j-1");
  EXPECT_TRUE(absl::IsDataLoss(JobFromProto(job).status()));
  job = Queued();
  job.set_state(v1::Job::STATE_UNSPECIFIED);
  EXPECT_TRUE(absl::IsDataLoss(JobFromProto(job).status()));
}

TEST(JobRecordTest, StateNamesAreTheApis) {
  for (JobState s : {JobState::kQueued, JobState::kRunning, JobState::kSucceeded, JobState::kFailed,
                     JobState::kCancelled}) {
    JobRecord r;
    r.id = "x";
    r.state = s;
    EXPECT_EQ(JobStateName(s), v1::Job::State_Name(JobToProto(r).state()));
  }
}

}  // namespace
}  // namespace blklab::server
