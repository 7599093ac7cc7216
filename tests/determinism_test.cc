// tests/determinism_test.cc
//
// docs/architecture.md principle 1: the same host spec, job and seed give
// bit-identical results. A multi-CPU run with interrupt-driven completions
// (softirq and hrtimer, so completions cross CPUs and events interleave) and
// four clones is run twice; fio's JSON with blklab's kernel report must match
// byte for byte, and so must the kernel report itself (profile, locks,
// counters). A different --randseed must change the output, or the
// comparison would prove nothing.
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_join.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"
#include "engine/host/presets.h"
#include "engine/report/report.h"
#include "gtest/gtest.h"

namespace blklab {
namespace {

// A fixed wall clock, so only the simulation can make outputs differ.
WallClock FixedClock() {
  WallClock c;
  c.timestamp_sec = 1700000000;
  c.timestamp_ms = 1700000000123;
  c.time_string = "Tue Nov 14 22:13:20 2023";
  return c;
}

struct Output {
  std::string json;
  RunResult result;
};

absl::StatusOr<Output> RunOnce(const host::HostSpec& host, const std::vector<std::string>& args) {
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, nullptr, nullptr);
  if (!parsed.ok()) return parsed.status();
  RunRequest req;
  req.host = host;
  req.jobs = parsed->jobs;
  req.seed = 42;
  absl::StatusOr<RunResult> run = RunFio(req);
  if (!run.ok()) return run.status();
  Output out;
  out.json = report::WriteJson(BuildReport(req, *run, FixedClock(), /*with_kernel_report=*/true),
                               /*json_plus=*/true);
  out.result = *std::move(run);
  return out;
}

// 4 CPUs, null_blk with one submit queue and irqmode `irqmode`.
host::HostSpec FourCpuHost(int irqmode) {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(
      "name: det\n"
      "cpus: {count: 4}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {submit_queues: 1, poll_queues: 0, hw_queue_depth: 64, irqmode: " +
      std::to_string(irqmode) +
      ", completion_nsec: 20000}\n"
      "    queue: {scheduler: none}\n");
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *h : host::HostSpec{};
}

std::vector<std::string> Job(const std::string& randseed) {
  return {"--name=det",         "--ioengine=io_uring", "--direct=1", "--rw=randrw", "--rwmixread=70",
          "--bs=4k",            "--iodepth=16",        "--numjobs=4", "--runtime=150ms",
          "--time_based=1",     "--randseed=" + randseed};
}

void ExpectSameKernelReport(const stats::KernelReport& a, const stats::KernelReport& b) {
  EXPECT_EQ(a.elapsed_ns, b.elapsed_ns);
  EXPECT_EQ(a.busy_ns, b.busy_ns);
  EXPECT_EQ(a.events, b.events);
  EXPECT_EQ(a.total_ios, b.total_ios);
  ASSERT_EQ(a.profile.size(), b.profile.size());
  for (size_t i = 0; i < a.profile.size(); ++i) {
    EXPECT_EQ(a.profile[i].function, b.profile[i].function) << i;
    EXPECT_EQ(a.profile[i].mode, b.profile[i].mode) << i;
    EXPECT_EQ(a.profile[i].self_ns, b.profile[i].self_ns) << a.profile[i].function;
  }
  ASSERT_EQ(a.counters.size(), b.counters.size());
  for (size_t i = 0; i < a.counters.size(); ++i) {
    EXPECT_EQ(a.counters[i].name, b.counters[i].name);
    EXPECT_EQ(a.counters[i].count, b.counters[i].count) << a.counters[i].name;
  }
  ASSERT_EQ(a.locks.size(), b.locks.size());
  for (size_t i = 0; i < a.locks.size(); ++i) {
    EXPECT_EQ(a.locks[i].name, b.locks[i].name);
    EXPECT_EQ(a.locks[i].acquisitions, b.locks[i].acquisitions) << a.locks[i].name;
    EXPECT_EQ(a.locks[i].contended, b.locks[i].contended) << a.locks[i].name;
    EXPECT_EQ(a.locks[i].wait_ns, b.locks[i].wait_ns) << a.locks[i].name;
  }
  ASSERT_EQ(a.sched.size(), b.sched.size());
  for (size_t i = 0; i < a.sched.size(); ++i) {
    EXPECT_EQ(a.sched[i].task, b.sched[i].task);
    EXPECT_EQ(a.sched[i].switches, b.sched[i].switches) << a.sched[i].task;
    EXPECT_EQ(a.sched[i].delay_ns, b.sched[i].delay_ns) << a.sched[i].task;
    EXPECT_EQ(a.sched[i].max_delay_at_ns, b.sched[i].max_delay_at_ns) << a.sched[i].task;
  }
  ASSERT_EQ(a.cpus.size(), b.cpus.size());
  for (size_t i = 0; i < a.cpus.size(); ++i) {
    for (int m = 0; m < stats::kNumCpuModes; ++m) EXPECT_EQ(a.cpus[i].mode_ns[m], b.cpus[i].mode_ns[m]);
  }
}

class DeterminismTest : public ::testing::TestWithParam<int> {};

TEST_P(DeterminismTest, SameJobTwiceIsByteIdentical) {
  const host::HostSpec host = FourCpuHost(GetParam());
  absl::StatusOr<Output> a = RunOnce(host, Job("1234"));
  absl::StatusOr<Output> b = RunOnce(host, Job("1234"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  // The run is the multi-CPU one it claims to be: four clones on four CPUs,
  // completions through interrupts (softirq or hrtimer hardirq).
  ASSERT_EQ(a->result.clones.size(), 4u);
  EXPECT_EQ(a->result.kernel.cpus.size(), 4u);
  EXPECT_GT(a->result.kernel.total_ios, 1000u);
  EXPECT_EQ(a->json, b->json);
  ExpectSameKernelReport(a->result.kernel, b->result.kernel);
  for (size_t i = 0; i < a->result.clones.size(); ++i) {
    EXPECT_EQ(a->result.clones[i].end_ns, b->result.clones[i].end_ns);
    EXPECT_EQ(a->result.clones[i].result.dirs[0].total_ios, b->result.clones[i].result.dirs[0].total_ios);
  }
}

TEST_P(DeterminismTest, DifferentRandseedChangesTheOutput) {
  const host::HostSpec host = FourCpuHost(GetParam());
  absl::StatusOr<Output> a = RunOnce(host, Job("1234"));
  absl::StatusOr<Output> b = RunOnce(host, Job("98765"));
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->json, b->json);
  // The read/write mix follows the seed, so the per-clone counts differ.
  bool any_differs = false;
  for (size_t i = 0; i < a->result.clones.size(); ++i) {
    any_differs |= a->result.clones[i].result.dirs[0].total_ios !=
                   b->result.clones[i].result.dirs[0].total_ios;
  }
  EXPECT_TRUE(any_differs);
}

INSTANTIATE_TEST_SUITE_P(IrqModes, DeterminismTest, ::testing::Values(1, 2),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "irqmode" + std::to_string(info.param);
                         });

// Runs on other threads (as a server's worker pool would) give the same bytes.
TEST(Determinism, ParallelRunsOnThreadsMatch) {
  const host::HostSpec host = FourCpuHost(1);
  absl::StatusOr<Output> ref = RunOnce(host, Job("7"));
  ASSERT_TRUE(ref.ok()) << ref.status();
  std::vector<std::string> outs(3);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < outs.size(); ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<Output> o = RunOnce(host, Job("7"));
      outs[i] = o.ok() ? o->json : std::string(o.status().message());
    });
  }
  for (auto& t : threads) t.join();
  for (const std::string& o : outs) EXPECT_EQ(o, ref->json);
}

// bfq keeps per-process queues, groups and service trees in ordered
// containers: two cgroups, mixed reads and writes, completions deferred to
// irq work when bfqd->lock is busy, the idle timer; twice, same bytes.
TEST(Determinism, BfqWithCgroupsIsByteIdentical) {
  absl::StatusOr<host::HostSpec> host = host::ParseHostSpec(
      "name: det-bfq\ncpus: {count: 4}\ncgroups: {a: {bfq_weight: 300}}\n"
      "devices:\n  - name: nvme0n1\n    nvme: {latency_nsec: 50000}\n    queue: {scheduler: bfq}\n");
  ASSERT_TRUE(host.ok()) << host.status();
  const std::vector<std::string> args = {"--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1", "--rw=randrw",
                                         "--bs=4k", "--iodepth=8", "--runtime=100ms", "--time_based=1",
                                         "--name=a", "--cgroup=a", "--numjobs=2", "--name=b", "--cgroup=b",
                                         "--ioengine=psync", "--direct=1", "--thinktime=50us"};
  absl::StatusOr<Output> first = RunOnce(*host, args);
  absl::StatusOr<Output> second = RunOnce(*host, args);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(first->json, second->json);
  ExpectSameKernelReport(first->result.kernel, second->result.kernel);
}

}  // namespace
}  // namespace blklab
