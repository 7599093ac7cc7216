#include <string>

#include "absl/strings/match.h"
#include "clients/kernel_lab/guest_plan.h"
#include "clients/kernel_lab/kernel_report.h"
#include "clients/kernel_lab/scenario.h"
#include "clients/kernel_lab/vm.h"
#include "engine/host/host_spec.h"
#include "engine/util/json_reader.h"
#include "engine/util/yaml_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace blklab::kernel_lab {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

absl::StatusOr<GuestPlan> Plan(const std::string& yaml) {
  absl::StatusOr<util::DocNode> doc = util::ParseYaml(yaml);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<host::HostSpec> spec = host::HostSpecFromDoc(*doc);
  if (!spec.ok()) return spec.status();
  return PlanGuest(*doc, *spec);
}

constexpr char kNull[] = R"yaml(name: t
cpus: {count: 2}
devices:
  - name: nullb0
    null_blk: {irqmode: 2, completion_nsec: 1000000, hw_queue_depth: 4}
    queue: {scheduler: mq-deadline, nomerges: 2, iosched: {fifo_batch: 4}}
)yaml";

TEST(GuestPlanTest, OneNullBlkEntryLoadsTheModuleWithTheSpecsParameters) {
  absl::StatusOr<GuestPlan> p = Plan(kNull);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->vcpus, 2);
  EXPECT_THAT(p->setup_script, HasSubstr("modprobe null_blk queue_mode=2 submit_queues=1 poll_queues=1 "
                                         "hw_queue_depth=4 irqmode=2 completion_nsec=1000000"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo mq-deadline > /sys/block/$dev_0/queue/scheduler"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 2 > /sys/block/$dev_0/queue/nomerges"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 4 > /sys/block/$dev_0/queue/iosched/fifo_batch"));
  // Tunables not written stay the kernel's.
  EXPECT_THAT(p->setup_script, Not(HasSubstr("iosched/read_expire")));
  EXPECT_THAT(p->setup_script, Not(HasSubstr("queue/rq_affinity")));
  EXPECT_EQ(p->devices, std::vector<std::string>{"nullb0"});
}

TEST(GuestPlanTest, SeveralNullBlkEntriesUseConfigfsAndShareTheModulesTagSet) {
  absl::StatusOr<GuestPlan> p = Plan(R"yaml(name: t
devices:
  - name: a
    null_blk: {shared_tags: true, hw_queue_depth: 8, nr_devices: 2}
  - name: b
    null_blk: {shared_tags: true, hw_queue_depth: 8, irqmode: 2}
)yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->setup_script, HasSubstr("modprobe null_blk nr_devices=0 hw_queue_depth=8"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 1 > /sys/kernel/config/nullb/dev1/shared_tags"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 256000 > /sys/kernel/config/nullb/dev2/size"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 2 > /sys/kernel/config/nullb/dev2/irqmode"));
  EXPECT_EQ(p->devices, (std::vector<std::string>{"a-0", "a-1", "b"}));

  absl::StatusOr<GuestPlan> bad = Plan(R"yaml(name: t
devices:
  - name: a
    null_blk: {shared_tags: true, hw_queue_depth: 8}
  - name: b
    null_blk: {shared_tags: true, hw_queue_depth: 16}
)yaml");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(bad.status().message(), HasSubstr("devices.b.null_blk.shared_tags"));
}

TEST(GuestPlanTest, ScsiDebugLunsAndCgroups) {
  absl::StatusOr<GuestPlan> p = Plan(R"yaml(name: t
cgroups:
  a: {bfq_weight: 300}
devices:
  - name: sda
    scsi_debug: {ndelay: 500000, max_queue: 16, max_luns: 2, queue_depth: 4}
    queue: {scheduler: bfq}
)yaml");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_THAT(p->setup_script, HasSubstr("modprobe bfq"));
  EXPECT_THAT(p->setup_script, HasSubstr("modprobe scsi_debug delay=1 ndelay=500000 max_queue=16"));
  EXPECT_THAT(p->setup_script, Not(HasSubstr("queue_depth=4")));  // not a module parameter
  EXPECT_THAT(p->setup_script, HasSubstr("echo 4 > $q"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 300 > /sys/fs/cgroup/a/io.bfq.weight"));
  EXPECT_EQ(p->devices, (std::vector<std::string>{"sda", "sdb"}));
}

TEST(GuestPlanTest, RefusesWhatAVmCannotBeByName) {
  const std::pair<const char*, const char*> cases[] = {
      {"name: t\ncosts: {context_switch: 5}\ndevices: [{name: n, null_blk: {}}]\n", "costs.context_switch"},
      {"name: t\nkernel: {hz: 1000}\ndevices: [{name: n, null_blk: {}}]\n", "kernel.hz"},
      {"name: t\nknobs: {dd_serialize_dispatch: true}\ndevices: [{name: n, null_blk: {}}]\n",
       "knobs.dd_serialize_dispatch"},
      {"name: t\ncpus: {count: 4, threads_per_core: 2}\ndevices: [{name: n, null_blk: {}}]\n",
       "cpus.threads_per_core"},
      {"name: t\ndevices: [{name: sdb, hba: {}}]\n", "devices[0].hba"},
      {"name: t\ndevices: [{name: nvme0n1, nvme: {latency_nsec: 80000}}]\n", "devices[0].nvme.latency_nsec"},
      {"name: t\ndevices: [{name: n, null_blk: {queue_mode: 1}}]\n", "null_blk.queue_mode"},
  };
  for (const auto& [yaml, field] : cases) {
    absl::StatusOr<GuestPlan> p = Plan(yaml);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kUnimplemented) << yaml;
    EXPECT_THAT(p.status().message(), HasSubstr(field)) << yaml;
  }
  // A knob written as 6.1 has it is no conflict.
  EXPECT_TRUE(Plan("name: t\nknobs: {sched_eevdf: false}\ndevices: [{name: n, null_blk: {}}]\n").ok());
}

TEST(GuestPlanTest, TheLabKernelIsDebians61) {
  const LabKernel& lab = Lab61();
  EXPECT_EQ(lab.kernel.hz, 250);
  EXPECT_FALSE(lab.kernel.config.IRQ_TIME_ACCOUNTING);
  EXPECT_FALSE(lab.kernel.config.PREEMPT);
  EXPECT_FALSE(lab.knobs.sched_eevdf);
  EXPECT_FALSE(lab.knobs.dd_serialize_dispatch);
  EXPECT_TRUE(lab.knobs.menu_iowait_latency_limit);
  EXPECT_TRUE(lab.knobs.sched_batch_dispatch);
  host::HostSpec s;
  s.knobs.sched_eevdf = true;
  EXPECT_FALSE(WithLabKernel(s).knobs.sched_eevdf);
  EXPECT_EQ(WithLabKernel(s).kernel.hz, 250);
}

TEST(VmTest, NewcArchiveIsWhatTheInitramfsUnpackerReads) {
  const std::string a = NewcArchive({{"lab/run.sh", "#!/bin/sh\n"}, {"lab/jobs/x.fio", "[x]\n"}});
  EXPECT_TRUE(absl::StartsWith(a, "070701"));
  EXPECT_EQ(a.size() % 4, 0u);
  EXPECT_THAT(a, HasSubstr("lab/jobs"));
  EXPECT_THAT(a, HasSubstr("TRAILER!!!"));
  // run.sh is executable (mode 100755 in the header after the inode).
  EXPECT_THAT(a, HasSubstr("000081ED"));
  EXPECT_EQ(a, NewcArchive({{"lab/run.sh", "#!/bin/sh\n"}, {"lab/jobs/x.fio", "[x]\n"}}));
}

TEST(VmTest, TranscriptSectionsAndExitStatus) {
  GuestOutput out;
  ParseTranscript("noise\r\n@@blklab-begin fio@@\r\n{\n}\r\n@@blklab-end fio@@\nmore\n{ \"x\" }@@blklab-exit 3@@\n", out);
  EXPECT_EQ(out.sections["fio"], "{\n}\n");
  EXPECT_EQ(out.exit_status, 3);
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
}

TEST(KernelReportTest, CountersAreDeltasOverTheRunUnderSpecNames) {
  GuestOutput out;
  out.sections["devices"] = "sdb sda\n";
  out.sections["diskstats-before"] = "sda 10 0 80 5 0 0 0 0 0 3 5 0 0 0 0 0 0\n";
  out.sections["diskstats-after"] = "sda 110 50 1280 105 0 0 0 0 0 103 205 0 0 0 0 0 0\n";
  out.sections["stat-before"] = "cpu 100 0 100 800 0 0 0 0 0 0\n";
  out.sections["stat-after"] = "cpu 150 0 150 900 0 0 0 0 0 0\n";
  out.sections["softirqs-before"] = "  CPU0 CPU1\nBLOCK: 5 5\nTIMER: 1 1\n";
  out.sections["softirqs-after"] = "  CPU0 CPU1\nBLOCK: 15 25\nTIMER: 1 1\n";
  const KernelSection k = ParseKernelSection(out);
  ASSERT_EQ(k.disk.count("sdb"), 1u);
  EXPECT_EQ(k.disk.at("sdb")[0], 100);
  EXPECT_EQ(k.disk.at("sdb")[1], 50);
  EXPECT_EQ(k.disk.at("sdb")[2], 1200);
  ASSERT_EQ(k.softirqs.size(), 1u);  // TIMER did not move
  EXPECT_EQ(k.softirqs[0].total, 30);
  EXPECT_DOUBLE_EQ(GuestCpuBusy(k), 0.5);
  EXPECT_EQ(GuestName(k, "sdb"), "sda");
  EXPECT_THAT(KernelSectionText(k), HasSubstr("sdb: ios=100/0, merge=50/0, sectors=1200/0, KiB/io=6.0/0.0"));
}

constexpr char kFio[] = R"yaml({
  "jobs" : [
    {"jobname" : "r", "job options" : {"filename" : "/dev/nullb0"},
     "read" : {"io_bytes" : 409600, "iops" : 300.0, "total_ios" : 100,
               "clat_ns" : {"mean" : 2000000.0, "percentile" : {"50.000000" : 1000000, "99.000000" : 3000000}}},
     "write" : {"io_bytes" : 0, "iops" : 0, "total_ios" : 0}, "trim" : {"io_bytes" : 0, "iops" : 0, "total_ios" : 0}},
    {"jobname" : "w", "job options" : {"filename" : "/dev/nullb0"},
     "read" : {"io_bytes" : 0, "iops" : 0, "total_ios" : 0},
     "write" : {"io_bytes" : 1228800, "iops" : 100.0, "total_ios" : 300},
     "trim" : {"io_bytes" : 0, "iops" : 0, "total_ios" : 0}}
  ],
  "disk_util" : [{"name" : "guest0", "read_ios" : 100, "write_ios" : 150, "read_merges" : 0, "write_merges" : 150}]
})yaml";

TEST(ScenarioTest, MetricsReadFiosJson) {
  absl::StatusOr<util::DocNode> fio = util::ParseJson(kFio);
  ASSERT_TRUE(fio.ok()) << fio.status();
  const DiskNameMap names = [](const std::string& n) { return n == "guest0" ? std::string("nullb0") : n; };
  auto eval = [&](const std::string& e) {
    absl::StatusOr<double> v = EvalMetric(e, *fio, names);
    EXPECT_TRUE(v.ok()) << e << ": " << v.status();
    return v.value_or(-1);
  };
  EXPECT_DOUBLE_EQ(eval("total_iops"), 400);
  EXPECT_DOUBLE_EQ(eval("share(r)"), 0.25);
  EXPECT_DOUBLE_EQ(eval("share(w, write)"), 1.0);
  EXPECT_DOUBLE_EQ(eval("ratio(r, w)"), 3.0);
  EXPECT_DOUBLE_EQ(eval("lat_us(r, read, 99)"), 3000);
  EXPECT_DOUBLE_EQ(eval("mean_lat_us(r, read)"), 2000);
  EXPECT_DOUBLE_EQ(eval("merges_per_io(nullb0, write)"), 1.0);
  EXPECT_DOUBLE_EQ(eval("request_kib(nullb0, write)"), 8.0);
  EXPECT_DOUBLE_EQ(eval("ios_per_job_io(nullb0, write)"), 0.5);
  EXPECT_FALSE(EvalMetric("share(nosuch)", *fio, names).ok());
  EXPECT_FALSE(EvalMetric("merges_per_io(nullb0, sideways)", *fio, names).ok());
  EXPECT_FALSE(EvalMetric("bogus", *fio, names).ok());
}

TEST(ScenarioTest, ParsesAndChecksTolerances) {
  absl::StatusOr<Scenario> s = ParseScenario(R"yaml(name: x
mechanism: m
ci: true
host: {name: x, devices: [{name: nullb0, null_blk: {}}]}
fio: x.fio
metrics:
  - {value: "share(r)", tolerance: 0.05}
  - {value: "total_iops", tolerance: "10%"}
analytic:
  - {value: "total_iops", expected: 8000}
)yaml", "x.yaml");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(s->ci);
  EXPECT_EQ(s->fio_file, "x.fio");
  ASSERT_EQ(s->metrics.size(), 2u);
  EXPECT_TRUE(s->metrics[0].tolerance.Holds(0.5, 0.549));
  EXPECT_FALSE(s->metrics[0].tolerance.Holds(0.5, 0.56));
  EXPECT_TRUE(s->metrics[1].tolerance.Holds(1000, 1099));
  EXPECT_FALSE(s->metrics[1].tolerance.Holds(1000, 1101));
  EXPECT_EQ(s->analytic.at(0).expected, 8000);
  absl::StatusOr<Scenario> bad = ParseScenario("name: x\nhost: {}\nfio: x\nmetric: []\n", "bad.yaml");
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.yaml: unknown or mistyped field 'metric'"));
}

}  // namespace
}  // namespace blklab::kernel_lab
