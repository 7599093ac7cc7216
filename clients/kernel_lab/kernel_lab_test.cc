#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/match.h"
#include "clients/kernel_lab/guest_plan.h"
#include "clients/kernel_lab/kernel_report.h"
#include "clients/kernel_lab/lab_run.h"
#include "clients/kernel_lab/scenario.h"
#include "clients/kernel_lab/vm.h"
#include "engine/host/host_spec.h"
#include "engine/util/file.h"
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
  EXPECT_THAT(p->setup_script, HasSubstr("echo 4 > /sys/block/$(sed -n 1p /tmp/sd-order)/device/queue_depth"));
  EXPECT_THAT(p->setup_script, HasSubstr("echo 4 > /sys/block/$(sed -n 2p /tmp/sd-order)/device/queue_depth"));
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

// --real against a stand-in for /sys and /proc (BLKLAB_REAL_ROOT), with a
// modprobe that makes and removes null_blk's devices there and an fio that
// records what it saw: the set-up is in place while fio runs and undone
// after it, and a module already loaded stops the run before any change.
class RealRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) / "blklab-real-root";
    std::filesystem::remove_all(root_);
    for (const char* d : {"bin", "sys/module/bfq", "sys/module/configfs", "sys/block", "sys/fs/cgroup", "proc/sys/vm"}) {
      std::filesystem::create_directories(root_ / d);
    }
    Write("sys/fs/cgroup/cgroup.controllers", "io memory\n");
    Write("sys/fs/cgroup/cgroup.subtree_control", "memory\n");
    Write("proc/sys/vm/dirty_ratio", "20\n");
    for (const char* f : {"stat", "interrupts", "softirqs", "schedstat", "mounts"}) Write(std::string("proc/") + f, "");
    Write("bin/modprobe", R"sh(#!/bin/sh
r=$BLKLAB_REAL_ROOT
echo "$*" >> $r/modprobe.log
if [ "$1" = -r ]; then rm -rf $r/sys/module/$2; [ "$2" = null_blk ] && rm -rf $r/sys/block/nullb*; exit 0; fi
m=$1; shift; mkdir -p $r/sys/module/$m
[ $m = null_blk ] || exit 0
for a; do case $a in nr_devices=*) n=${a#*=};; esac; done
i=0
while [ $i -lt $n ]; do
  mkdir -p $r/sys/block/nullb$i/queue; echo 252:$i > $r/sys/block/nullb$i/dev
  echo 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 > $r/sys/block/nullb$i/stat; i=$((i+1))
done
)sh");
    Write("bin/fio", R"sh(#!/bin/sh
r=$BLKLAB_REAL_ROOT
echo "dirty_ratio=$(cat $r/proc/sys/vm/dirty_ratio) scheduler=$(cat $r/sys/block/nullb0/queue/scheduler) weight=$(cat $r/sys/fs/cgroup/a/io.bfq.weight) args=$*" > $r/fio.log
echo 12 0 96 0 0 0 0 0 0 0 0 0 0 0 0 0 0 > $r/sys/block/nullb0/stat
echo "fio ran"
)sh");
    // cgroupfs removes a group with its control files in it.
    Write("bin/rmdir", R"sh(#!/bin/sh
case "$1" in "$BLKLAB_REAL_ROOT"/sys/fs/cgroup/*) rm -rf "$1";; *) exec /bin/rmdir "$@";; esac
)sh");
    for (const char* b : {"bin/modprobe", "bin/fio", "bin/rmdir"}) {
      std::filesystem::permissions(root_ / b, std::filesystem::perms::owner_all, std::filesystem::perm_options::add);
    }
    old_path_ = std::getenv("PATH");
    setenv("PATH", ((root_ / "bin").string() + ":" + old_path_).c_str(), 1);
    setenv("BLKLAB_REAL_ROOT", root_.c_str(), 1);
  }
  void TearDown() override {
    setenv("PATH", old_path_.c_str(), 1);
    unsetenv("BLKLAB_REAL_ROOT");
  }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(root_ / rel) << text;
  }
  std::string Read(const std::string& rel) {
    return util::ReadFileToString((root_ / rel).string()).value_or("<missing>");
  }
  LabJob Job() {
    LabJob job;
    job.host_doc = util::ParseYaml(R"yaml(name: real
cpus: {count: 2}
vm: {dirty_ratio: 5}
cgroups:
  a: {bfq_weight: 300}
devices:
  - name: nullb0
    null_blk: {irqmode: 2, completion_nsec: 100000, nr_devices: 1}
    queue: {scheduler: bfq}
)yaml").value();
    job.host = host::HostSpecFromDoc(job.host_doc).value();
    job.real = true;
    job.fio_args = {"--name=r", "--filename=/dev/nullb0", "--rw=randread"};
    return job;
  }
  std::filesystem::path root_;
  std::string old_path_;
};

TEST_F(RealRunTest, SetsUpRunsFioAndUndoesEverything) {
  absl::StatusOr<KernelRun> run = RunOnRealKernel(Job());
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->fio_output, "fio ran\n");
  EXPECT_THAT(Read("fio.log"), HasSubstr("dirty_ratio=5 scheduler=bfq weight=300"));
  EXPECT_EQ(run->kernel.disk.at("nullb0")[0], 12);  // reads over the run
  EXPECT_EQ(run->kernel.disk.at("nullb0")[2], 96);  // sectors
  // Undone: the sysctl's old value, the cgroup made, io at the root, the
  // module loaded and its device; bfq was loaded before and stays.
  EXPECT_EQ(Read("proc/sys/vm/dirty_ratio"), "20\n");
  EXPECT_FALSE(std::filesystem::exists(root_ / "sys/fs/cgroup/a"));
  EXPECT_EQ(Read("sys/fs/cgroup/cgroup.subtree_control"), "-io\n");
  EXPECT_FALSE(std::filesystem::exists(root_ / "sys/module/null_blk"));
  EXPECT_FALSE(std::filesystem::exists(root_ / "sys/block/nullb0"));
  EXPECT_TRUE(std::filesystem::exists(root_ / "sys/module/bfq"));
  EXPECT_THAT(Read("modprobe.log"), HasSubstr("null_blk queue_mode=2"));
  EXPECT_THAT(Read("modprobe.log"), HasSubstr("-r null_blk"));
  EXPECT_THAT(Read("modprobe.log"), Not(HasSubstr("-r bfq")));
  EXPECT_THAT(run->restore, HasSubstr("modprobe -r null_blk"));
}

TEST_F(RealRunTest, ALoadedModuleStopsTheRunBeforeAnyChange) {
  std::filesystem::create_directories(root_ / "sys/module/null_blk");
  absl::StatusOr<KernelRun> run = RunOnRealKernel(Job());
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.status().message(), HasSubstr("null_blk is already loaded"));
  EXPECT_EQ(Read("proc/sys/vm/dirty_ratio"), "20\n");
  EXPECT_EQ(Read("sys/fs/cgroup/cgroup.subtree_control"), "memory\n");
  EXPECT_TRUE(std::filesystem::exists(root_ / "sys/module/null_blk"));  // not ours: left loaded
  EXPECT_EQ(Read("fio.log"), "<missing>");
}

TEST_F(RealRunTest, RefusesWhatIsNotItsOwnByName) {
  LabJob job = Job();
  job.fio_args = {"--name=r", "--filename=/dev/sda", "--rw=randread"};
  EXPECT_THAT(PlanRealRun(job).status().message(), HasSubstr("a job targets /dev/sda"));
  job = Job();
  job.blktrace = true;
  EXPECT_THAT(PlanRealRun(job).status().message(), HasSubstr("--blktrace"));
  job = Job();
  job.host_doc = util::ParseYaml("name: n\ndevices:\n  - name: nvme0n1\n    nvme: {}\n").value();
  job.host = host::HostSpecFromDoc(job.host_doc).value();
  job.fio_args = {"--name=r", "--filename=/dev/nvme0n1"};
  EXPECT_THAT(PlanRealRun(job).status().message(), HasSubstr("devices[0].nvme: --real touches no NVMe drive"));
  // Nothing of the VM's: no device nodes made, no hierarchy mounted.
  absl::StatusOr<GuestPlan> plan = PlanRealRun(Job());
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_THAT(plan->setup_script, Not(HasSubstr("mknod")));
  EXPECT_THAT(plan->setup_script, Not(HasSubstr("mount -t cgroup2")));
  EXPECT_THAT(plan->setup_script, Not(HasSubstr("rm -f /dev")));
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

TEST(KernelReportTest, TheKernelKeyJoinsFiosJsonAndParses) {
  GuestOutput out;
  out.sections["devices"] = "nullb0 nullb0\n";
  out.sections["diskstats-before"] = "nullb0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
  out.sections["diskstats-after"] = "nullb0 10 0 80 5 0 0 0 0 0 3 5 0 0 0 0 0 0\n";
  out.sections["debugfs"] = "nullb0 hctx0/tags: nr_tags=64\tbusy=0\r\nnullb0 hctx0/state: \x01\n";
  const KernelSection k = ParseKernelSection(out);
  absl::StatusOr<util::DocNode> doc =
      util::ParseJson(WithKernelJson("{\n  \"jobs\" : []\n}\n", k));
  ASSERT_TRUE(doc.ok()) << doc.status();
  const util::DocNode* dev = doc->Find("kernel")->Find("devices");
  ASSERT_TRUE(dev != nullptr && dev->is_list() && dev->size() == 1);
  EXPECT_EQ(dev->items()[0].Find("read_sectors")->AsDouble().value_or(-1), 80);
  EXPECT_EQ(doc->Find("kernel")->Find("debugfs")->text(), k.debugfs);
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
  "disk_util" : [{"name" : "guest0", "read_ios" : 100, "write_ios" : 200, "read_merges" : 0, "write_merges" : 200}],
  "kernel" : {"devices" : [{"name" : "nullb0", "read_ios" : 100, "read_sectors" : 800,
                            "write_ios" : 200, "write_sectors" : 3200}]}
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
  // The disk counted 200 writes of 8 KiB, 50 of them in fio's ramp time:
  // fio's 300 4 KiB writes made 150 requests, half a request each.
  EXPECT_DOUBLE_EQ(eval("request_kib(nullb0, write)"), 8.0);
  EXPECT_DOUBLE_EQ(eval("ios_per_job_io(nullb0, write)"), 0.5);
  EXPECT_DOUBLE_EQ(eval("ios_per_job_io(nullb0, read)"), 1.0);
  EXPECT_FALSE(EvalMetric("share(nosuch)", *fio, names).ok());
  EXPECT_FALSE(EvalMetric("merges_per_io(nullb0, sideways)", *fio, names).ok());
  EXPECT_FALSE(EvalMetric("bogus", *fio, names).ok());
}

TEST(ScenarioTest, SizesReadTheModelsDiskstats) {
  absl::StatusOr<util::DocNode> fio = util::ParseJson(R"json({
  "jobs" : [{"jobname" : "s", "job options" : {"filename" : "/dev/nullb0"},
             "read" : {"io_bytes" : 4096000, "iops" : 1.0, "total_ios" : 1000}}],
  "disk_util" : [{"name" : "nullb0", "read_ios" : 5000, "read_merges" : 0}],
  "blklab" : {"diskstats" : [{"name" : "nullb0", "read_ios" : 5000, "read_sectors" : 30000}]}
})json");
  ASSERT_TRUE(fio.ok()) << fio.status();
  const DiskNameMap same = [](const std::string& n) { return n; };
  EXPECT_DOUBLE_EQ(EvalMetric("request_kib(nullb0, read)", *fio, same).value_or(-1), 3.0);
  EXPECT_NEAR(EvalMetric("ios_per_job_io(nullb0, read)", *fio, same).value_or(-1), 4.0 / 3.0, 1e-12);
  EXPECT_THAT(EvalMetric("request_kib(nullb1, read)", *fio, same).status().message(),
              HasSubstr("no sector counts for nullb1"));
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
  EXPECT_EQ(s->kernel_runs, 1);
  absl::StatusOr<Scenario> runs = ParseScenario(
      "name: x\nkernel_runs: 5\nhost: {name: x}\nfio: x.fio\nmetrics: [{value: total_iops, tolerance: 1}]\n", "r.yaml");
  ASSERT_TRUE(runs.ok()) << runs.status();
  EXPECT_EQ(runs->kernel_runs, 5);
  EXPECT_THAT(ParseScenario("name: x\nkernel_runs: 0\nhost: {name: x}\nfio: x.fio\nmetrics: []\n", "r.yaml")
                  .status()
                  .message(),
              HasSubstr("r.yaml: kernel_runs: a whole number from 1 to 9"));
  absl::StatusOr<Scenario> bad = ParseScenario("name: x\nhost: {}\nfio: x\nmetric: []\n", "bad.yaml");
  EXPECT_THAT(bad.status().message(), HasSubstr("bad.yaml: unknown or mistyped field 'metric'"));
}

}  // namespace
}  // namespace blklab::kernel_lab
