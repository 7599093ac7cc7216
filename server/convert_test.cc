#include "server/convert.h"

#include <gtest/gtest.h>

#include "engine/host/presets.h"

namespace blklab::server {
namespace {

TEST(ConvertTest, PresetRoundTripsThroughProto) {
  for (const host::PresetInfo& info : host::ListPresets()) {
    absl::StatusOr<host::HostSpec> spec = host::GetPreset(info.name);
    ASSERT_TRUE(spec.ok()) << info.name;
    v1::HostSpec proto;
    ASSERT_TRUE(HostSpecToProto(*spec, &proto).ok()) << info.name;
    absl::StatusOr<host::HostSpec> back = HostSpecFromProto(proto, {});
    ASSERT_TRUE(back.ok()) << info.name << ": " << back.status();
    EXPECT_TRUE(*back == *spec) << info.name;
  }
}

TEST(ConvertTest, UnsetFieldsTakeDefaultsAndNameDefaults) {
  v1::HostSpec proto;
  proto.add_devices()->set_name("nullb0");
  proto.mutable_devices(0)->mutable_null_blk();
  absl::StatusOr<host::HostSpec> spec = HostSpecFromProto(proto, {}, "h1");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "h1");
  EXPECT_EQ(spec->cpus.count, 1);
  const auto& nb = std::get<host::NullBlkSpec>(spec->devices[0].driver);
  EXPECT_EQ(nb.hw_queue_depth, 64);
}

TEST(ConvertTest, OutOfRangeNamesFieldPath) {
  v1::HostSpec proto;
  proto.set_name("x");
  auto* d = proto.add_devices();
  d->set_name("nullb0");
  d->mutable_null_blk()->set_irqmode(3);
  absl::StatusOr<host::HostSpec> spec = HostSpecFromProto(proto, {});
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spec.status().message().find("devices[0].null_blk.irqmode"), absl::string_view::npos)
      << spec.status();
}

TEST(ConvertTest, TopologyLimitIsResourceExhausted) {
  v1::HostSpec proto;
  proto.set_name("x");
  proto.mutable_cpus()->set_count(4096);
  proto.add_devices()->set_name("nullb0");
  proto.mutable_devices(0)->mutable_null_blk();
  absl::StatusOr<host::HostSpec> spec = HostSpecFromProto(proto, {});
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kResourceExhausted) << spec.status();
}

v1::Job JobWithFile(const std::string& text) {
  v1::Job job;
  (*job.mutable_fio()->mutable_files())["a.fio"] = text;
  job.mutable_fio()->add_args("a.fio");
  return job;
}

TEST(ConvertTest, BundleIsTheOnlyFileSystem) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  absl::StatusOr<PreparedJob> p =
      PrepareJob(JobWithFile("include /etc/passwd\n[j]\nrw=read\nsize=1m\n"), *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << p.status();
}

TEST(ConvertTest, VariablesComeFromTheBundleOnly) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  v1::Job job = JobWithFile("[j]\nrw=read\nsize=${SZ}\nfilename=/dev/nullb0\n");
  (*job.mutable_fio()->mutable_variables())["SZ"] = "1m";
  absl::StatusOr<PreparedJob> p = PrepareJob(job, *host, {});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->request.jobs.jobs.size(), 1u);
}

TEST(ConvertTest, BadLineNamesFileAndLine) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  absl::StatusOr<PreparedJob> p = PrepareJob(JobWithFile("[j]\nrw=read\nbogus_option=1\n"), *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("a.fio"), absl::string_view::npos) << p.status();
}

TEST(ConvertTest, RefusesOptionsTouchingTheMachine) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  v1::Job job = JobWithFile("[j]\nrw=read\nsize=1m\n");
  job.mutable_fio()->add_args("--output=/tmp/x");
  absl::StatusOr<PreparedJob> p = PrepareJob(job, *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(ConvertTest, ResourceNames) {
  EXPECT_EQ(*ParseResourceName("jobs/abc-1", "jobs"), "abc-1");
  EXPECT_FALSE(ParseResourceName("jobs/ABC", "jobs").ok());
  EXPECT_FALSE(ParseResourceName("hosts/abc", "jobs").ok());
  EXPECT_FALSE(ParseResourceName("jobs/", "jobs").ok());
}

}  // namespace
}  // namespace blklab::server
