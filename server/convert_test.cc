#include "server/convert.h"

#include <gmock/gmock.h>
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

TEST(ConvertTest, CgroupsRoundTripThroughProto) {
  absl::StatusOr<host::HostSpec> spec = host::ParseHostSpec(
      "name: cg\ndevices:\n  - name: nvme0n1\n    nvme: {}\n    queue: {scheduler: bfq}\n"
      "cgroups: {fast: {bfq_weight: 300}, slow: {}}\n");
  ASSERT_TRUE(spec.ok()) << spec.status();
  v1::HostSpec proto;
  ASSERT_TRUE(HostSpecToProto(*spec, &proto).ok());
  EXPECT_EQ(proto.cgroups().at("fast").bfq_weight(), 300);
  absl::StatusOr<host::HostSpec> back = HostSpecFromProto(proto, {});
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(*back == *spec);
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

TEST(ConvertTest, ArgumentsAndVariablesCountInTheBundleLimit) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  // A 2 MiB --description= argument: over the 1 MiB bundle limit.
  v1::Job job = JobWithFile("[j]\nrw=read\nsize=1m\nfilename=/dev/nullb0\n");
  job.mutable_fio()->add_args("--description=" + std::string(2u << 20, 'd'));
  absl::StatusOr<PreparedJob> p = PrepareJob(job, *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("the limit is 1048576"), std::string::npos) << p.status();
  // The same through a variable.
  job = JobWithFile("[j]\nrw=read\nsize=1m\nfilename=/dev/nullb0\ndescription=${D}\n");
  (*job.mutable_fio()->mutable_variables())["D"] = std::string(2u << 20, 'd');
  p = PrepareJob(job, *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("the limit is 1048576"), std::string::npos) << p.status();
  EXPECT_LT(p.status().message().size(), 200u);
}

TEST(ConvertTest, StructuredSpecBecomesFiosCommandLine) {
  v1::JobSpec spec;
  (*spec.mutable_global_options())["size"] = "1g";
  (*spec.mutable_global_options())["direct"] = "1";
  v1::StructuredJob* j = spec.add_jobs();
  j->set_name("r");
  j->set_rw("randread");
  j->set_bs("4k");
  j->set_ioengine("io_uring");
  j->set_iodepth(32);
  j->mutable_runtime()->set_seconds(1);
  j->set_time_based(true);
  (*j->mutable_options())["thread"] = "";
  v1::StructuredJob* w = spec.add_jobs();
  w->set_name("w");
  w->set_rw("write");
  w->set_rwmixread(0);
  absl::StatusOr<std::vector<std::string>> args = SpecToArgs(spec);
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ(*args, (std::vector<std::string>{"--direct=1", "--size=1g", "--name=r", "--rw=randread",
                                            "--bs=4k", "--ioengine=io_uring", "--iodepth=32",
                                            "--runtime=1000000us", "--time_based=1", "--thread",
                                            "--name=w", "--rw=write", "--rwmixread=0"}));

  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  v1::Job job;
  *job.mutable_spec() = spec;
  absl::StatusOr<PreparedJob> p = PrepareJob(job, *host, {});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->request.jobs.jobs.size(), 2u);
  EXPECT_EQ(p->request.jobs.jobs[0].iodepth, 32u);
  EXPECT_EQ(p->request.jobs.jobs[0].runtime_ns, 1000000000);
  EXPECT_TRUE(p->request.jobs.jobs[0].thread);
  EXPECT_EQ(p->request.jobs.jobs[1].rwmixread, 0u);
}

TEST(ConvertTest, StructuredSpecErrorsNameTheField) {
  v1::JobSpec spec;
  EXPECT_THAT(SpecToArgs(spec).status().message(), ::testing::HasSubstr("spec.jobs"));
  spec.add_jobs();
  EXPECT_THAT(SpecToArgs(spec).status().message(), ::testing::HasSubstr("spec.jobs[0].name"));
  spec.mutable_jobs(0)->set_name("j");
  (*spec.mutable_jobs(0)->mutable_options())["--bad"] = "1";
  EXPECT_THAT(SpecToArgs(spec).status().message(), ::testing::HasSubstr("spec.jobs[0].options"));
  // An unknown option is refused by fio's parser, naming it.
  spec.mutable_jobs(0)->mutable_options()->clear();
  (*spec.mutable_jobs(0)->mutable_options())["bogus_option"] = "1";
  absl::StatusOr<host::HostSpec> host = host::GetPreset("default");
  ASSERT_TRUE(host.ok());
  v1::Job job;
  *job.mutable_spec() = spec;
  absl::StatusOr<PreparedJob> p = PrepareJob(job, *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), ::testing::HasSubstr("bogus_option"));
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
  // fio's one-dash spelling of the same option.
  v1::Job one_dash = JobWithFile("[j]\nrw=read\nsize=1m\n");
  one_dash.mutable_fio()->add_args("-output=/tmp/x");
  p = PrepareJob(one_dash, *host, {});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(p.status().message().find("-output=/tmp/x"), std::string::npos) << p.status();
  // --output-format stays allowed in either spelling.
  v1::Job fmt = JobWithFile("[j]\nrw=read\nsize=1m\n");
  fmt.mutable_fio()->add_args("-output-format=json");
  EXPECT_TRUE(PrepareJob(fmt, *host, {}).ok());
}

}  // namespace
}  // namespace blklab::server
