// tests/guarded_mechanisms_test.cc
//
// Mechanisms that visibly change results and that an independent mutation
// check (or the kernel lab) found unguarded. Each test fails when its
// mechanism is removed (tests/mutation/mutations.py lists the breakages):
//
//  * nomerges=1 keeps the scheduler's one-hit merge cache (q->last_merge);
//  * plug merging joins a batch's adjacent bios before they become requests;
//  * the plug is flushed at BLK_MAX_REQUEST_COUNT (32) requests;
//  * a bio over the queue's max_sectors is split (null_blk: 255 sectors);
//  * mq-deadline's writes_starved and fifo_batch, over their values;
//  * bfq maps a process's I/O priority to its queue's weight;
//  * NVMe interrupt coalescing raises one interrupt per threshold of
//    completions, and poll queues raise none.
//
// Thresholds are properties of the deterministic model, worked out below.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers

// --- nomerges under a scheduler -------------------------------------------------

// A sequential QD32 reader on a 2-tag null_blk (1 ms) under mq-deadline:
// requests wait in the scheduler and each new bio lands behind the newest
// one. nomerges=1 (QUEUE_FLAG_NOXMERGES) still lets elv_merge try
// q->last_merge, the one-hit cache, so nearly every bio merges as with 0
// (the kernel lab's merge-dd-seq-nomerges-1: 0.156 requests per fio I/O
// against 0.155 with 0); 2 turns every merge off.
uint64_t ReadMerges(int nomerges) {
  const RunResult r = MustRun(
      HostFromYaml(absl::StrCat("name: nomerges\ncpus: {count: 2}\n"
                                // 6.1's mq-deadline: requests go straight into the sort and hash
                                // (6.9's side lists hold them out of reach of merges until a dispatch).
                                "knobs: {dd_insert_side_lists: false, dd_skip_merge_if_contended: false}\n"
                                "devices:\n  - name: nullb0\n"
                                "    null_blk: {irqmode: 2, completion_nsec: 1000000, hw_queue_depth: 2, "
                                "submit_queues: 1, poll_queues: 0}\n"
                                "    queue: {scheduler: mq-deadline, nr_requests: 64, nomerges: ",
                                nomerges, "}\n")),
      {"--name=t", "--filename=/dev/nullb0", "--ioengine=libaio", "--direct=1", "--rw=read", "--bs=4k",
       "--iodepth=32", "--runtime=200ms", "--time_based"});
  return r.kernel.devices.at(0).read_merges;
}

TEST(NoMerges, OneKeepsTheSchedulersOneHitCache) {
  const uint64_t all = ReadMerges(0);
  const uint64_t one_hit = ReadMerges(1);
  ASSERT_GT(all, 100u);
  EXPECT_GT(one_hit, all * 9 / 10);
  EXPECT_EQ(ReadMerges(2), 0u);
}

// --- the plug ---------------------------------------------------------------------

// libaio submitting `batch` iocbs per io_submit (one plug each) on a
// null_blk without a scheduler (inline completions).
RunResult PlugRun(const std::string& rw, int batch) {
  return MustRun(NullHost(1, "irqmode: 0, submit_queues: 1, poll_queues: 0"),
                 {"--name=t", "--filename=/dev/nullb0", "--ioengine=libaio", "--direct=1", absl::StrCat("--rw=", rw),
                  "--bs=4k", "--iodepth=64", absl::StrCat("--iodepth_batch_submit=", batch),
                  absl::StrCat("--iodepth_batch_complete_min=", batch), "--runtime=5ms", "--time_based"});
}

// A batched sequential write: each bio of a 16-iocb batch after the first
// joins the plug's last request (blk_attempt_plug_merge), 15 merges per
// batch, so requests are about a 16th of the bios.
TEST(Plug, SequentialBatchMergesInThePlug) {
  const RunResult r = PlugRun("write", 16);
  const uint64_t bios = CounterOf(r.kernel, "submit_bio");
  ASSERT_GT(bios, 1000u) << Describe(r);
  EXPECT_GT(CounterOf(r.kernel, "plug_merge"), bios * 14 / 16) << Describe(r);
  EXPECT_LT(r.kernel.devices.at(0).write_ios, bios / 8) << Describe(r);
}

// Random writes in batches of 64: blk_add_rq_to_plug flushes when the plug
// holds BLK_MAX_REQUEST_COUNT (32) requests, so each batch flushes twice;
// batches of 16 flush once, at io_submit's blk_finish_plug.
TEST(Plug, FlushesAtBlkMaxRequestCount) {
  const RunResult big = PlugRun("randwrite", 64);
  const RunResult small = PlugRun("randwrite", 16);
  const double per_io_big = static_cast<double>(CounterOf(big.kernel, "plug_flush")) /
                            static_cast<double>(CounterOf(big.kernel, "submit_bio"));
  const double per_io_small = static_cast<double>(CounterOf(small.kernel, "plug_flush")) /
                              static_cast<double>(CounterOf(small.kernel, "submit_bio"));
  EXPECT_NEAR(per_io_big, 1.0 / 32, 0.25 / 32) << Describe(big);
  EXPECT_NEAR(per_io_small, 1.0 / 16, 0.25 / 16) << Describe(small);
}

// --- queue limits -------------------------------------------------------------------

// 128 KiB direct reads on null_blk, whose max_sectors is BLK_SAFE_MAX_SECTORS
// (255): each bio is split into 255 + 1 sectors, two requests per fio I/O
// of 127.5 and 0.5 KiB (the kernel lab's read-ahead scenarios measure the
// same 64 KiB average); NVMe's 512 KiB takes each whole.
TEST(QueueLimits, BiosOverMaxSectorsAreSplit) {
  const std::vector<std::string> job = {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=read", "--bs=128k",
                                        "--iodepth=4", "--runtime=5ms", "--time_based"};
  std::vector<std::string> null_job = job;
  null_job.push_back("--filename=/dev/nullb0");
  const RunResult nb = MustRun(NullHost(1, "irqmode: 0, submit_queues: 1, poll_queues: 0"), null_job);
  const uint64_t ios = TotalIos(nb);
  ASSERT_GT(ios, 100u) << Describe(nb);
  // Every bio is split once, into two requests.
  EXPECT_EQ(CounterOf(nb.kernel, "submit_bio"), 2 * CounterOf(nb.kernel, "bio_split")) << Describe(nb);
  const uint64_t requests = nb.kernel.devices.at(0).read_ios;
  EXPECT_GE(requests, 2 * ios) << Describe(nb);
  EXPECT_LE(requests, 2 * ios + 8) << Describe(nb);  // pieces of the I/Os still in flight at the end
  std::vector<std::string> nvme_job = job;
  nvme_job.push_back("--filename=/dev/nvme0n1");
  const RunResult nv = MustRun(HostFromYaml("name: nvme\ncpus: {count: 1}\ndevices:\n  - name: nvme0n1\n"
                                            "    nvme: {latency_nsec: 20000}\n    queue: {scheduler: none}\n"),
                               nvme_job);
  EXPECT_EQ(CounterOf(nv.kernel, "bio_split"), 0u) << Describe(nv);
}

// A block above MAX_RW_COUNT (2 GiB - 4 KiB): Linux cuts such a read short
// and fio resubmits the rest, which is not modelled, so the job is refused
// by name (it had aborted the run on an I/O size that overflowed).
TEST(QueueLimits, BlocksAboveMaxRwCountAreRefusedByName) {
  for (const char* rw : {"--rw=randread", "--rw=write"}) {
    const RunOutcome run = RunArgs(NullHost(1, "submit_queues: 1"),
                                   {"--name=t", "--filename=/dev/nullb0", rw, "--bs=4g", "--runtime=10ms",
                                    "--time_based"});
    ASSERT_FALSE(run.result.ok());
    EXPECT_EQ(run.result.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(run.result.status().message().find("MAX_RW_COUNT"), std::string::npos) << run.result.status();
  }
}

// --- bfq: I/O priority to weight ----------------------------------------------------

// Two QD4 readers in one cgroup under bfq (its default idling), best-effort
// levels 2 and 6: weights (8 - level) x 10 = 60 and 20
// (bfq_ioprio_to_weight). The in-service queue is idled on, so the heavier
// one gets far more than its 3/4 by weight (the kernel lab's
// bfq-ioprio-weights: 0.948 on 6.1); equal weights would give each half.
TEST(BfqIoprio, LevelSetsTheQueuesWeight) {
  const RunResult r = MustRun(
      HostFromYaml("name: bfq\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
                   "    null_blk: {irqmode: 2, completion_nsec: 2000000, hw_queue_depth: 64, submit_queues: 1, "
                   "poll_queues: 0}\n"
                   "    queue: {scheduler: bfq}\n"),
      {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=4", "--runtime=400ms",
       "--time_based", "--prioclass=2", "--name=hi", "--prio=2", "--name=lo", "--prio=6"});
  ASSERT_EQ(r.clones.size(), 2u);
  const double hi = static_cast<double>(r.clones[0].result.dirs[0].total_ios);
  const double lo = static_cast<double>(r.clones[1].result.dirs[0].total_ios);
  EXPECT_GT(hi / (hi + lo), 0.8) << Describe(r);
}

// --- NVMe interrupts ---------------------------------------------------------------

RunResult NvmeRun(const std::string& nvme, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--name=t", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1",
                                   "--rw=randread", "--bs=4k", "--iodepth=32", "--runtime=5ms", "--time_based"};
  args.insert(args.end(), extra.begin(), extra.end());
  return MustRun(HostFromYaml(absl::StrCat("name: nvme\ncpus: {count: 1}\ndevices:\n  - name: nvme0n1\n"
                                           "    nvme: {latency_nsec: 20000, ",
                                           nvme, "}\n    queue: {scheduler: none}\n")),
                 args);
}

// Coalescing at 8 completions: at QD32 the threshold is always reached
// before the (long) time limit, so one interrupt per 8 completions.
TEST(NvmeInterrupts, CoalescingRaisesOnePerThreshold) {
  const RunResult plain = NvmeRun("max_queues: 1", {});
  const RunResult coalesced = NvmeRun("max_queues: 1, irq_coalesce_threshold: 8, irq_coalesce_time_us: 1000", {});
  const double ios = static_cast<double>(CounterOf(coalesced.kernel, "requests_completed"));
  ASSERT_GT(ios, 1000);
  EXPECT_LT(CounterOf(coalesced.kernel, "hardirq") / ios, 1.0 / 7) << Describe(coalesced);
  EXPECT_GT(CounterOf(plain.kernel, "hardirq") / static_cast<double>(CounterOf(plain.kernel, "requests_completed")),
            1.0 / 4)
      << Describe(plain);
}

// Polled I/O (hipri) on a poll queue: completions are reaped by the
// submitter's polling, the queue raises no interrupt.
TEST(NvmeInterrupts, PollQueuesRaiseNone) {
  const RunResult r = NvmeRun("max_queues: 4, poll_queues: 1", {"--hipri=1"});
  ASSERT_GT(CounterOf(r.kernel, "requests_completed"), 1000u) << Describe(r);
  EXPECT_EQ(CounterOf(r.kernel, "hardirq"), 0u) << Describe(r);
}

// The run limits stop a run where they fall: a 0.3 s virtual-time limit at
// 0.3 s (plus 10 ms for the I/O in flight), not a slice later, and a limit
// of 5,000 IOs near 5,000, each named with its exact value.
TEST(RunLimits, StopWhereTheyFall) {
  const host::HostSpec host = NullHost(1, "irqmode: 0, submit_queues: 1, poll_queues: 0");
  absl::StatusOr<ParsedFio> parsed = ParseFio(
      {"--name=t", "--filename=/dev/nullb0", "--ioengine=libaio", "--direct=1", "--rw=randread", "--size=100g"}, host,
      nullptr, nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  auto run = [&](int64_t max_virtual_ns, uint64_t max_ios, int64_t* last_ns, uint64_t* last_ios) {
    RunRequest req;
    req.host = host;
    req.jobs = parsed->jobs;
    req.limits.max_virtual_ns = max_virtual_ns;
    req.limits.max_ios = max_ios;
    req.snapshot_interval_ns = 100'000'000;
    return RunFio(req, [&](const Snapshot& s) {
      *last_ns = s.virtual_ns;
      *last_ios = s.ios_completed;
    });
  };
  int64_t ns = 0;
  uint64_t ios = 0;
  absl::StatusOr<RunResult> timed = run(300'000'000, 10'000'000'000ULL, &ns, &ios);
  EXPECT_EQ(timed.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(timed.status().message(), "virtual-time limit of 0.3 s reached");
  EXPECT_LE(ns, 310'000'000);
  EXPECT_GE(ns, 300'000'000);
  absl::StatusOr<RunResult> counted = run(3600'000'000'000LL, 5000, &ns, &ios);
  EXPECT_EQ(counted.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StartsWith(counted.status().message(), "simulated-IO limit of 5000 reached (")) << counted.status();
  EXPECT_GE(ios, 5000u);
  EXPECT_LE(ios, 5100u);
}

}  // namespace
}  // namespace blklab
