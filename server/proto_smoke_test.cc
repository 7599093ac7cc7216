// Proves the code-generation pipeline: the generated blklab.v1 messages and
// services compile, link, serialise and parse, and carry their descriptors.
#include <string>

#include "blklab/v1/host.pb.h"
#include "blklab/v1/job.pb.h"
#include "blklab/v1/service.grpc.pb.h"
#include "blklab/v1/service.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace blklab::server {
namespace {

v1::Job MakeJob() {
  v1::Job job;
  v1::HostSpec* host = job.mutable_host_spec();
  host->set_name("desktop-7950x");
  host->mutable_cpus()->set_count(32);
  host->mutable_cpus()->set_threads_per_core(2);
  (*host->mutable_kernel()->mutable_config())["BLK_CGROUP"] = false;
  v1::DeviceSpec* dev = host->add_devices();
  dev->set_name("nullb0");
  dev->mutable_null_blk()->set_irqmode(0);  // proto3 optional: 0 is present
  dev->mutable_null_blk()->set_hw_queue_depth(64);
  dev->mutable_queue()->set_scheduler("mq-deadline");

  v1::FioBundle* fio = job.mutable_fio();
  (*fio->mutable_files())["randread.fio"] =
      "[global]\nioengine=io_uring\niodepth=${DEPTH}\n[job1]\nfilename=/dev/nullb0\nrw=randread\n";
  fio->add_args("--output-format=json");
  fio->add_args("randread.fio");
  (*fio->mutable_variables())["DEPTH"] = "32";
  job.set_pace(v1::Job::REALTIME);
  job.mutable_limits()->mutable_max_virtual_time()->set_seconds(10);
  return job;
}

TEST(ProtoSmokeTest, JobWithBundleRoundTrips) {
  const v1::Job job = MakeJob();
  std::string wire;
  ASSERT_TRUE(job.SerializeToString(&wire));
  ASSERT_FALSE(wire.empty());

  v1::Job parsed;
  ASSERT_TRUE(parsed.ParseFromString(wire));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(job, parsed));
  EXPECT_EQ(parsed.target_case(), v1::Job::kHostSpec);
  EXPECT_EQ(parsed.fio().files().at("randread.fio"), job.fio().files().at("randread.fio"));
  ASSERT_EQ(parsed.fio().args_size(), 2);
  EXPECT_EQ(parsed.fio().args(1), "randread.fio");
  EXPECT_EQ(parsed.fio().variables().at("DEPTH"), "32");
  EXPECT_EQ(parsed.pace(), v1::Job::REALTIME);
  EXPECT_EQ(parsed.state(), v1::Job::STATE_UNSPECIFIED);

  const v1::NullBlkSpec& nb = parsed.host_spec().devices(0).null_blk();
  EXPECT_TRUE(nb.has_irqmode());
  EXPECT_EQ(nb.irqmode(), 0);
  EXPECT_FALSE(nb.has_completion_nsec());
  EXPECT_EQ(parsed.host_spec().devices(0).driver_case(), v1::DeviceSpec::kNullBlk);
}

TEST(ProtoSmokeTest, ServiceDescriptorsExist) {
  EXPECT_STREQ(v1::JobService::service_full_name(), "blklab.v1.JobService");
  EXPECT_STREQ(v1::HostService::service_full_name(), "blklab.v1.HostService");

  const google::protobuf::ServiceDescriptor* jobs =
      v1::CreateJobRequest::descriptor()->file()->FindServiceByName("JobService");
  ASSERT_NE(jobs, nullptr);
  const google::protobuf::MethodDescriptor* watch = jobs->FindMethodByName("WatchJob");
  ASSERT_NE(watch, nullptr);
  EXPECT_TRUE(watch->server_streaming());
  EXPECT_FALSE(watch->client_streaming());
  EXPECT_EQ(watch->output_type(), v1::Snapshot::descriptor());
  for (const char* method : {"CreateJob", "GetJob", "ListJobs", "CancelJob", "DeleteJob"}) {
    EXPECT_NE(jobs->FindMethodByName(method), nullptr) << method;
  }

  const google::protobuf::ServiceDescriptor* hosts =
      v1::CreateJobRequest::descriptor()->file()->FindServiceByName("HostService");
  ASSERT_NE(hosts, nullptr);
  for (const char* method :
       {"CreateHost", "GetHost", "ListHosts", "UpdateHost", "DeleteHost", "ListPresets"}) {
    EXPECT_NE(hosts->FindMethodByName(method), nullptr) << method;
  }
}

}  // namespace
}  // namespace blklab::server
