// tests/engine_mechanism_test.cc
//
// Cross-component mechanism tests: each builds a host (a preset or YAML
// text), parses fio arguments with blklab::ParseFio, runs the whole
// simulation with blklab::RunFio and checks one mechanism end to end:
//
//  * a CPU-bound single core delivers exactly 1 / (sum of the per-IO costs
//    the IO path charges), with the sum worked out here from the CostTable
//    entries, independently of the model code;
//  * queue depth (hardware or fio) beyond what one CPU can use buys nothing;
//  * null_blk irqmode=2 completion_nsec bounds clat and IOPS;
//  * tag exhaustion puts submitters to sleep on the sbitmap wait queues and
//    wakes them again;
//  * two CPUs contending for one spinlock show up in the lock table, the
//    profile (native_queued_spin_lock_slowpath) and contention_pct;
//  * no request is lost across completion modes, CPU counts, clone counts
//    and the mbps cap;
//  * configuration errors name what is wrong;
//  * fio's ctx counts each time a job thread leaves its CPU (getrusage's
//    voluntary and involuntary switches), even when the CPU idles between.
//
// Every run is deterministic, so the thresholds are exact properties of the
// model, not statistical allowances.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/engine.h"
#include "engine/host/cost_table.h"
#include "engine/host/host_spec.h"
#include "engine/host/presets.h"
#include "engine/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using ::testing::HasSubstr;
using namespace ::blklab::testing_support;  // NOLINT: test helpers

// Helpers (Preset, NullHost, RunArgs, MustRun, CounterOf, ...) are in
// tests/support/sim_test_support.h.

// --- CPU-bound single core: IOPS = 1e9 / sum of per-IO costs ---------------
//
// On null-1cpu (1 CPU, null_blk irqmode=0, one hw queue, scheduler none,
// 64 tags, iostats on, BLK_CGROUP on with the RC2 fixes, bio cache, 6.9 knobs)
// every IO ends inline in null_queue_rq on the submitting CPU, so the CPU
// never idles and IOPS = 1e9 / (ns charged per IO). The sums below are
// written from docs/kernel-model.md §2 and the CostTable entries, one term per
// charge; they do not call the model. (They matched the model to < 0.01 ns
// per IO when written: 520 / 440 / 532 / 554 / 914 ns.)

// The block layer between submit_bio and the end of the request, shared by
// all engines on null-1cpu.
int64_t BlockLayerPerIo(const host::CostTable& c) {
  return
      // submit_bio -> submit_bio_noacct (CONFIG_BLK_CGROUP=y):
      c.blkg_associate +          // bio_associate_blkg + blkg put
      c.ktime_get_ns +            // blkcg_bio_issue_init stamps bio->bi_issue
      c.submit_bio_noacct +       // sanity checks
      /* blk_throtl_bio: inline has_rules test (RC2 patch 1), ~0 ns */
      c.blk_cgroup_bio_start +    // per-CPU cgroup io stats
      c.blk_mq_submit_bio +       // blk_mq_submit_bio + blk_mq_rq_ctx_init
      /* no plug (one IO per syscall): no plug merge; sw queue empty: no merge scan */
      // blk_mq_get_new_requests:
      c.percpu_ref +              // bio_queue_enter (q_usage_counter get)
      c.sbitmap_get +             // __sbitmap_queue_get, local word
      c.ktime_get_ns +            // start_time_ns (iostats) in blk_mq_rq_ctx_init
      /* blk_mq_start_request under QUEUE_FLAG_STATS (wbt on): io_start_time_ns =
         bio->bi_issue (RC2 patch 2), no timestamp */
      c.blk_account_io_start +    // blk_account_io_start (+ one part-stamp cmpxchg per jiffy, ~0)
      // blk_mq_try_issue_directly (no plug, dispatch not busy):
      c.rcu_read_section +        // RCU read section
      c.line_read_hit +           // hctx state test in blk_mq_try_issue_directly
      c.null_queue_rq +           // null_queue_rq + null_handle_cmd, irqmode=0 ends inline
      // blk_mq_end_request -> __blk_mq_end_request -> blk_mq_free_request:
      c.end_request_single +      // blk_mq_end_request .. blk_mq_free_request
      c.ktime_get_ns +            // end timestamp (iostats)
      c.blk_account_io_done +     // blk_account_io_done
      c.sbitmap_clear +           // sbitmap_queue_clear, no waiters (deferred into `cleared`)
      c.line_read_hit +           // blk_mq_sched_restart tests SCHED_RESTART
      c.percpu_ref;               // blk_queue_exit
}
// sbitmap deferred clear, amortised: 64 tags make four 16-bit words; the
// allocation hint walks one word, and once every 16 allocations the word is
// full of freed-but-deferred bits, which the allocator folds back (an atomic
// on `cleared` and one on the word).
// fio's user-space work per IO with its default measurements on: the loop,
// the clock reads, the lat and clat samples, and slat for engines that queue.
double FioDefaultPerIo(const host::CostTable& c, bool queues) {
  return static_cast<double>(c.fio_user_per_io + c.fio_gettime_per_io + c.fio_time_cache_per_io +
                             c.fio_lat_sample + c.fio_clat_sample + (queues ? c.fio_slat_sample : 0));
}

double SbitmapFoldPerIo(const host::CostTable& c) { return 2.0 * c.atomic_local / 16.0; }

struct CpuBoundCase {
  std::string name;
  std::vector<std::string> args;
  double expected_ns;  // per IO
  int irqmode = 0;     // null_blk irqmode of the null-1cpu host
};

void ExpectCpuBound(const CpuBoundCase& tc) {
  SCOPED_TRACE(tc.name);
  host::HostSpec h = Preset("null-1cpu");
  std::get<host::NullBlkSpec>(h.devices.at(0).driver).irqmode = tc.irqmode;
  RunResult r = MustRun(h, tc.args);
  ASSERT_EQ(r.clones.size(), 1u);
  // The busy CPU also takes the scheduler tick: sched_tick every 1/HZ.
  const host::CostTable c = *host::BuildCostTable(h);
  const double tick_share = static_cast<double>(c.sched_tick) * h.kernel.hz / 1e9;
  // And it hosts fio's main thread (a wake-up every 10 ms + 50 us of timer
  // slack) and helper thread (the disk-util timer every 250 ms, a bandwidth
  // sample every 500 ms): each wake-up an hrtimer interrupt, two context
  // switches and the thread's loop, taken from the job.
  const double wake_ns = static_cast<double>(c.hrtimer_fire + c.try_to_wake_up + 2 * c.context_switch);
  const double main_ns = 1e9 / 10.05e6 * (wake_ns + static_cast<double>(c.fio_main_loop + c.fio_reap_per_job +
                                                                         c.clock_nanosleep));
  const double helper_ns = 6.0 * (wake_ns + static_cast<double>(c.fio_helper_loop + c.fio_helper_syscalls)) +
                           4.0 * static_cast<double>(c.diskstats_read + c.part_stat_per_cpu);
  const double backend_share = (main_ns + helper_ns) / 1e9;
  const double expected_ns = tc.expected_ns * (1.0 + tick_share) / (1.0 - backend_share);
  const double expected_iops = 1e9 / expected_ns;
  const double iops = r.clones[0].result.dir(stats::Dir::kRead).iops();
  EXPECT_NEAR(iops, expected_iops, expected_iops * 0.005)
      << "expected " << expected_ns << " ns/IO, model gives " << 1e9 / iops << " ns/IO\n"
      << Describe(r);
  // The same, exactly: CPU time per IO over the clone's whole run. The only
  // slack is the per-jiffy part-stamp update and the cold start (< 0.3 ns/IO),
  // so even a dropped or doubled 1 ns charge (rcu_read_section) shows.
  const auto& clone = r.clones[0];
  const double ns_per_io = static_cast<double>(clone.end_ns - clone.start_ns) /
                           static_cast<double>(clone.result.dir(stats::Dir::kRead).total_ios);
  EXPECT_NEAR(ns_per_io, expected_ns, 0.3);
  // The one CPU is busy all the time.
  ASSERT_EQ(r.kernel.cpus.size(), 1u);
  EXPECT_GE(static_cast<double>(r.kernel.busy_ns), 0.999 * static_cast<double>(r.kernel.elapsed_ns));
  const auto& cpu = r.clones[0].result.cpu;
  EXPECT_NEAR(cpu.usr_pct + cpu.sys_pct, 100.0, 0.5);
  // Three timestamps per IO: bi_issue, start_time_ns and the end of the
  // request (io_start_time_ns reuses bi_issue).
  EXPECT_EQ(CounterOf(r.kernel, "ktime_get_ns"), 3 * CounterOf(r.kernel, "submit_bio"));
}

TEST(CpuBoundSingleCore, IoUringQd1EqualsInverseCostSum) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io =
      FioDefaultPerIo(c, true) +  // fio get_io_u + io_completed
      c.syscall_entry_exit +      // io_uring_enter, one SQE per call (QD1)
      c.io_uring_issue_sqe +      // io_submit_sqes .. __blkdev_direct_IO_async
      c.fget_fput +               // registerfiles=0
      c.page_pin_4k +             // fixedbufs=0: pin + unpin one 4 KiB page
      c.bio_alloc_cached +        // per-CPU bio cache (io_uring sets IOCB_ALLOC_CACHE)
      BlockLayerPerIo(c) +
      c.io_uring_cqe_post +       // completion in the submitter's own context: CQE posted at once
      /* reaping reads the CQ ring from user space: no syscall */
      SbitmapFoldPerIo(c);
  ExpectCpuBound({"io_uring qd1",
                  {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                   "--runtime=1", "--time_based=1"},
                  per_io});
}

// gtod_reduce=1 (the RC4 cover letter's job has it): fio reads no clock
// per IO and keeps no latency samples, so only its loop is left.
TEST(CpuBoundSingleCore, GtodReduceLeavesOnlyFiosLoop) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io = c.fio_user_per_io + c.syscall_entry_exit + c.io_uring_issue_sqe + c.fget_fput +
                        c.page_pin_4k + c.bio_alloc_cached + BlockLayerPerIo(c) + c.io_uring_cqe_post +
                        SbitmapFoldPerIo(c);
  ExpectCpuBound({"io_uring qd1 gtod_reduce",
                  {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                   "--gtod_reduce=1", "--runtime=1", "--time_based=1"},
                  per_io});
}

TEST(CpuBoundSingleCore, IoUringFixedBufsRegisteredFilesSkipPinAndFget) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io = FioDefaultPerIo(c, true) + c.syscall_entry_exit + c.io_uring_issue_sqe +
                        /* registerfiles=1: no fget/fput; fixedbufs=1: no page pinning */
                        c.bio_alloc_cached + BlockLayerPerIo(c) + c.io_uring_cqe_post +
                        SbitmapFoldPerIo(c);
  ExpectCpuBound({"io_uring qd1 registerfiles fixedbufs",
                  {"--name=t", "--ioengine=io_uring", "--direct=1", "--registerfiles=1", "--fixedbufs=1",
                   "--rw=randread", "--bs=4k", "--iodepth=1", "--runtime=1", "--time_based=1"},
                  per_io});
}

// irqmode=1 on one CPU with one hw queue of one ctx: blk_mq_complete_request
// completes locally (no softirq, no IPI); everything else as above.
TEST(CpuBoundSingleCore, IoUringQd1Irqmode1CompletesLocally) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io = FioDefaultPerIo(c, true) + c.syscall_entry_exit + c.io_uring_issue_sqe +
                        c.fget_fput + c.page_pin_4k + c.bio_alloc_cached + BlockLayerPerIo(c) +
                        c.complete_request_local +  // blk_mq_complete_request, same CPU, 1 ctx
                        c.line_read_hit +           // null_complete_rq
                        c.io_uring_cqe_post + SbitmapFoldPerIo(c);
  ExpectCpuBound({"io_uring qd1 irqmode=1",
                  {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                   "--runtime=1", "--time_based=1"},
                  per_io,
                  /*irqmode=*/1});
}

TEST(CpuBoundSingleCore, PsyncEqualsInverseCostSum) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io =
      FioDefaultPerIo(c, false) + // fio get_io_u + io_completed (no slat: synchronous)
      c.syscall_entry_exit +      // pread64
      c.psync_per_io +            // fdget, rw_verify_area, blkdev_read_iter
      c.page_pin_4k +             // user buffer pinned
      /* __blkdev_direct_IO_simple: on-stack bio for <= 4 pages, no allocation */
      BlockLayerPerIo(c) +
      /* the bio ended inline: no sleep, no wake-up */
      SbitmapFoldPerIo(c);
  ExpectCpuBound({"psync",
                  {"--name=t", "--ioengine=psync", "--direct=1", "--rw=randread", "--bs=4k", "--runtime=1",
                   "--time_based=1"},
                  per_io});
}

TEST(CpuBoundSingleCore, LibaioQd1EqualsInverseCostSum) {
  const host::CostTable c = *host::BuildCostTable(Preset("null-1cpu"));
  const double per_io =
      FioDefaultPerIo(c, true) +  // fio
      c.syscall_entry_exit +      // io_submit
      c.libaio_submit_iocb +      // io_submit_one + aio_read + fget/fput
      c.page_pin_4k +             // user buffer pinned
      c.bio_alloc_slab +          // no bio cache for libaio
      BlockLayerPerIo(c) +
      c.libaio_event / 2 +        // aio_complete (half of the per-event cost)
      c.syscall_entry_exit +      // io_getevents: always a syscall
      c.libaio_event / 2 +        // read_events copy of the one event
      SbitmapFoldPerIo(c);
  ExpectCpuBound({"libaio qd1",
                  {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                   "--runtime=1", "--time_based=1"},
                  per_io});
}

// blk_mq_submit_bio outside a plug (libaio submits one IO per io_submit, and
// aio plugs only above two) inserts into the scheduler and runs the queue
// asynchronously: the kblockd worker (nice -20) is woken, takes the CPU from
// fio, dispatches, and sleeps again: two context switches per IO, which
// direct issue without a scheduler does not pay. perf stat's
// context-switches counter shows it.
TEST(CpuBoundSingleCore, LibaioIntoMqDeadlineCostsAKblockdRoundTripPerIo) {
  auto run = [](const std::string& scheduler) {
    return MustRun(Preset("null-1cpu"),
                   {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                    "--runtime=20ms", "--time_based=1", absl::StrCat("--ioscheduler=", scheduler)});
  };
  const RunResult dd = run("mq-deadline");
  const RunResult none = run("none");
  const double dd_per_io =
      static_cast<double>(CounterOf(dd.kernel, "context_switches")) / static_cast<double>(TotalIos(dd));
  const double none_per_io =
      static_cast<double>(CounterOf(none.kernel, "context_switches")) / static_cast<double>(TotalIos(none));
  EXPECT_NEAR(dd_per_io, 2.0, 0.05) << Describe(dd);
  EXPECT_EQ(CounterOf(dd.kernel, "run_hw_queue_async"), TotalIos(dd)) << Describe(dd);
  EXPECT_LT(none_per_io, 0.01) << Describe(none);
  EXPECT_GT(ProfileNs(dd.kernel, "__schedule"), 0);
  // Reported as perf shows them (FunctionRegistry::SetParts): the switch's
  // and the wake-up's callees above their own self time.
  EXPECT_GT(ProfileNs(dd.kernel, "switch_mm_irqs_off"), ProfileNs(dd.kernel, "__schedule"));
  EXPECT_GT(ProfileNs(dd.kernel, "enqueue_task_fair"), ProfileNs(dd.kernel, "try_to_wake_up"));
  EXPECT_GT(TotalIos(none), 2 * TotalIos(dd));
}

// --- depth one CPU cannot use buys nothing ---------------------------------

std::vector<std::string> IoUringRandRead(int iodepth, const std::string& runtime = "300ms") {
  return {"--name=t",      "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
          absl::StrCat("--iodepth=", iodepth), absl::StrCat("--runtime=", runtime),
          "--time_based=1"};
}

class SaturatedCpuTest : public ::testing::TestWithParam<int> {};  // irqmode

TEST_P(SaturatedCpuTest, MoreHardwareTagsDoNotRaiseIops) {
  const std::string irq = absl::StrCat("irqmode: ", GetParam());
  const RunResult small = MustRun(NullHost(1, irq + ", hw_queue_depth: 64"), IoUringRandRead(32));
  const RunResult big = MustRun(NullHost(1, irq + ", hw_queue_depth: 1024"), IoUringRandRead(32));
  ASSERT_GT(RunIops(small), 100000);
  EXPECT_NEAR(RunIops(big), RunIops(small), 0.01 * RunIops(small))
      << "64 tags:\n" << Describe(small) << "\n1024 tags:\n" << Describe(big);
  // The CPU is the limit in both.
  EXPECT_GE(static_cast<double>(big.kernel.busy_ns), 0.99 * static_cast<double>(big.kernel.elapsed_ns));
}

TEST_P(SaturatedCpuTest, DeeperFioQueueDoesNotRaiseIops) {
  const host::HostSpec h = NullHost(1, absl::StrCat("irqmode: ", GetParam(), ", hw_queue_depth: 64"));
  const RunResult qd32 = MustRun(h, IoUringRandRead(32));
  const RunResult qd128 = MustRun(h, IoUringRandRead(128));
  ASSERT_GT(RunIops(qd32), 100000);
  EXPECT_NEAR(RunIops(qd128), RunIops(qd32), 0.01 * RunIops(qd32))
      << "qd32:\n" << Describe(qd32) << "\nqd128:\n" << Describe(qd128);
  EXPECT_GE(static_cast<double>(qd128.kernel.busy_ns), 0.99 * static_cast<double>(qd128.kernel.elapsed_ns));
}

INSTANTIATE_TEST_SUITE_P(IrqModes, SaturatedCpuTest, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return absl::StrCat("irqmode", info.param);
                         });

// --- irqmode=2: the hrtimer delay bounds clat and IOPS ----------------------

TEST(TimerCompletion, CompletionNsecBoundsClatAndIops) {
  const RunResult r = MustRun(NullHost(1, "irqmode: 2, completion_nsec: 50000"),
                              IoUringRandRead(1, "200ms"));
  ASSERT_EQ(r.clones.size(), 1u);
  const stats::DirResult& rd = r.clones[0].result.dir(stats::Dir::kRead);
  ASSERT_GT(rd.total_ios, 0u);
  EXPECT_GE(rd.clat.min(), 50000u) << Describe(r);
  EXPECT_LE(rd.iops(), 1e9 / 50000);
  // Not much less either: the CPU work per IO (a few us with the sleep and
  // wake-up) is small against the 50 us delay.
  EXPECT_GE(rd.iops(), 0.85 * 1e9 / 50000) << Describe(r);
  // One hrtimer interrupt per IO.
  EXPECT_EQ(CounterOf(r.kernel, "hardirq"), CounterOf(r.kernel, "requests_completed"));
  // btt's stages: the 50 us are D2C (issued to the driver to completed);
  // Q2G (a free tag at once) and G2D (allocation to issue without a
  // scheduler at QD1) are short; Q2C is their sum, request by request.
  ASSERT_EQ(r.kernel.devices.size(), 1u);
  const stats::DeviceRow& d = r.kernel.devices[0];
  EXPECT_EQ(d.q2c.n, CounterOf(r.kernel, "requests_completed"));
  EXPECT_EQ(d.d2c.n, d.q2c.n);
  EXPECT_GE(d.d2c.min_ns, 50000) << Describe(r);
  EXPECT_LT(d.d2c.avg_ns, 55000) << Describe(r);
  EXPECT_LT(d.g2d.avg_ns, 2000) << Describe(r);
  EXPECT_LT(d.q2g.avg_ns, 2000) << Describe(r);
  EXPECT_GE(d.q2g.n, d.q2c.n);  // allocated, not all completed in the run
  EXPECT_LE(d.q2g.n, d.q2c.n + 1);
  EXPECT_NEAR(d.q2c.avg_ns, d.q2g.avg_ns + d.g2d.avg_ns + d.d2c.avg_ns, 50.0);
  EXPECT_GE(d.q2c.max_ns, d.d2c.max_ns);
}

// --- causality across CPUs --------------------------------------------------

// A CPU runs ahead of the others between its Syncs, so a completion it
// hands to another CPU's blk_cpu_done list can land there at a virtual time
// after that CPU's BLOCK_SOFTIRQ already ran; that run must leave it (its
// llist_add came later and sends its own IPI), or the request completes
// before it was issued. RC4's "before" state (32 submitters on one
// mq-deadline queue, each request completed by IPI or BLOCK_SOFTIRQ from
// whichever CPU dispatched it) hands over requests all the time.
TEST(Causality, NoRequestCompletesBeforeItIsIssued) {
  const RunResult r = MustRun(
      Preset("rc4-desktop-7950x"),
      {"--name=rc4", "--filename=/dev/nullb0", "--ioengine=io_uring", "--rw=randread", "--bs=512", "--iodepth=4",
       "--iodepth_batch_submit=4", "--iodepth_batch_complete=4", "--fixedbufs=1", "--norandommap", "--direct=1",
       "--gtod_reduce=1", "--numjobs=32", "--thread", "--cpus_allowed_policy=split", "--group_reporting",
       "--ramp_time=10ms", "--runtime=50ms", "--time_based=1"});
  EXPECT_GT(CounterOf(r.kernel, "ipi"), 10000u) << Describe(r);
  bool any = false;
  for (const stats::DeviceRow& d : r.kernel.devices) {
    if (d.q2c.n == 0) continue;
    any = true;
    for (const auto& [stage, st] : d.stages()) {
      EXPECT_GE(st->min_ns, 0) << d.name << " " << stage;
    }
  }
  EXPECT_TRUE(any);
}

// --- tag exhaustion -------------------------------------------------------

class TagExhaustionTest : public ::testing::TestWithParam<std::string> {};  // ioengine

TEST_P(TagExhaustionTest, SubmittersSleepOnTagsAndAreWoken) {
  const RunResult r =
      MustRun(NullHost(1, "hw_queue_depth: 4, irqmode: 2, completion_nsec: 100000"),
              {"--name=t", "--ioengine=" + GetParam(), "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=32",
               "--runtime=100ms", "--time_based=1"});
  ASSERT_EQ(r.clones.size(), 1u);
  const stats::JobResult& jr = r.clones[0].result;
  EXPECT_GT(CounterOf(r.kernel, "tag_sleep"), 0u) << Describe(r);
  EXPECT_GT(CounterOf(r.kernel, "tag_wakeup"), 0u) << Describe(r);
  EXPECT_EQ(jr.issued[0], jr.dir(stats::Dir::kRead).total_ios);
  EXPECT_GT(jr.dir(stats::Dir::kRead).total_ios, 0u);
  // Four tags, each busy 100 us per IO: at most 40000 IOPS ...
  EXPECT_LE(jr.dir(stats::Dir::kRead).iops(), 4.0 / 100e-6) << Describe(r);
  // ... and, the CPU being mostly idle, close to it.
  EXPECT_GE(jr.dir(stats::Dir::kRead).iops(), 0.8 * 4.0 / 100e-6) << Describe(r);
  // btt: the tag wait is Q2G (bio to request), not G2D.
  ASSERT_EQ(r.kernel.devices.size(), 1u);
  const stats::DeviceRow& d = r.kernel.devices[0];
  EXPECT_GT(d.q2g.avg_ns, 10000) << d.q2g.avg_ns;
  EXPECT_GT(d.q2g.max_ns, 50000) << d.q2g.max_ns;
  EXPECT_LT(d.g2d.avg_ns, 2000) << d.g2d.avg_ns;
}

INSTANTIATE_TEST_SUITE_P(Engines, TagExhaustionTest, ::testing::Values("io_uring", "libaio"));

// --- lock contention between two CPUs --------------------------------------
//
// Two libaio submitters on two CPUs share null_blk's one hardware queue with
// mq-deadline: both take dd->lock for every merge probe, insert and
// dispatch, so they meet on it. They submit in batches of four: io_submit
// plugs a batch and the flush dispatches inline, where one IO per call
// would be inserted outside a plug and dispatched by kblockd (6.x runs the
// queue asynchronously then), which keeps the two CPUs mostly apart. The lockstat accounting must be consistent:
// contended acquisitions had a waiter, the spin is CPU time charged to the
// qspinlock slow path (what contention_pct measures), dd->lock is a plain
// spin_lock (its spin leaves interrupts on), and holder changes never
// exceed acquisitions.
TEST(LockContention, TwoCpusMeetOnASoftwareQueueLock) {
  const RunResult r = MustRun(NullHost(2, "submit_queues: 1, irqmode: 1"),
                              {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                               "--iodepth=32", "--iodepth_batch_submit=4", "--iodepth_batch_complete_min=4",
                               "--numjobs=2", "--ioscheduler=mq-deadline", "--runtime=20ms", "--time_based=1"});
  ASSERT_EQ(r.clones.size(), 2u);
  EXPECT_NE(r.clones[0].cpu, r.clones[1].cpu);
  ASSERT_EQ(r.kernel.cpus.size(), 2u);  // both CPUs did work
  uint64_t contended = 0;
  int64_t wait_ns = 0;
  for (const auto& l : r.kernel.locks) {
    contended += l.contended;
    wait_ns += l.wait_ns;
    // A contended acquisition had a waiter, so a higher max_waiters.
    if (l.contended > 0) {
      EXPECT_GE(l.max_waiters, 1u) << l.name;
    }
    EXPECT_LE(l.contended, l.acquisitions) << l.name;
    EXPECT_LE(l.holder_changes, l.acquisitions) << l.name;
    EXPECT_LE(l.remote_holder_changes, l.holder_changes) << l.name;
    if (l.name == "nullb0:dd->lock") {
      EXPECT_GT(l.holder_changes, 0u);
      EXPECT_EQ(l.wait_irqs_off_ns, 0) << "dd->lock is a plain spin_lock";
    }
  }
  EXPECT_GT(contended, 0u) << Describe(r);
  EXPECT_GT(wait_ns, 0);
  // The spin is CPU time, charged to the qspinlock slow path, and is what
  // contention_pct measures.
  const int64_t slowpath = ProfileNs(r.kernel, "native_queued_spin_lock_slowpath");
  EXPECT_GT(slowpath, 0) << Describe(r);
  EXPECT_GT(r.kernel.contention_pct, 0.0);
  EXPECT_NEAR(r.kernel.contention_pct,
              100.0 * static_cast<double>(slowpath) / static_cast<double>(r.kernel.busy_ns), 1e-9);
}

// The same host and job with scheduler none: every request is issued
// directly, which takes no lock, so nothing is ever contended (the control
// for the test above).
TEST(LockContention, WithoutASchedulerNobodyWaits) {
  const RunResult r = MustRun(NullHost(2, "submit_queues: 1, irqmode: 1"),
                              {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                               "--iodepth=32", "--numjobs=2", "--runtime=20ms", "--time_based=1"});
  for (const auto& l : r.kernel.locks) EXPECT_EQ(l.contended, 0u) << l.name;
  EXPECT_EQ(ProfileNs(r.kernel, "native_queued_spin_lock_slowpath"), 0);
  EXPECT_EQ(r.kernel.contention_pct, 0.0);
}

// --- fio's own threads ------------------------------------------------------
//
// fio's main thread wakes every 10 ms (reap_threads, then do_usleep) and its
// helper thread at its disk-util timer and bandwidth samples; both sit on the
// CPU with the fewest job threads. On a one-CPU host that is the job's CPU:
// each wake-up (hrtimer interrupt, two context switches, the loop) lands in
// the latency of the IOs in flight, so clat's tail stands above the tick's.
// With a second CPU they run there and the job's spread is the tick's alone.
TEST(FioThreads, DelayTheJobOnlyOnTheCpuTheyShare) {
  const std::vector<std::string> args = {"--name=t",      "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                         "--bs=4k",       "--iodepth=32",        "--cpus_allowed=0",
                                         "--runtime=200ms", "--time_based=1"};
  const host::HostSpec one_cpu = NullHost(1, "irqmode: 0");
  const RunResult one = MustRun(one_cpu, args);
  const RunResult two = MustRun(NullHost(2, "irqmode: 0"), args);
  const host::CostTable c = *host::BuildCostTable(one_cpu);
  // About 20 wake-ups of the main thread in 200 ms, on either host.
  for (const RunResult* r : {&one, &two}) {
    const double loops = static_cast<double>(ProfileNs(r->kernel, "fio:reap_threads")) /
                         static_cast<double>(c.fio_main_loop + c.fio_reap_per_job);
    EXPECT_NEAR(loops, 200.0 / 10.05, 1.5) << Describe(*r);
    EXPECT_GT(ProfileNs(r->kernel, "do_select"), 0) << "the helper thread never ran\n" << Describe(*r);
  }
  // On two CPUs the threads' time is CPU 1's.
  ASSERT_EQ(two.kernel.cpus.size(), 2u);
  EXPECT_EQ(two.kernel.cpus[1].cpu, 1);
  const auto& clat_one = one.clones[0].result.dir(stats::Dir::kRead).clat;
  const auto& clat_two = two.clones[0].result.dir(stats::Dir::kRead).clat;
  const int64_t switch_pair = 2 * c.context_switch;
  EXPECT_GT(static_cast<double>(clat_one.max()) - clat_one.mean(), static_cast<double>(switch_pair)) << Describe(one);
  EXPECT_LT(static_cast<double>(clat_two.max()) - clat_two.mean(), static_cast<double>(switch_pair)) << Describe(two);
  // The p99.9 of the shared CPU carries the wake-ups (about 32 of every
  // 16,000 IOs are in flight at one).
  const auto p_one = one.clones[0].result.dir(stats::Dir::kRead).clat_hist.Percentiles({50.0, 99.9});
  const auto p_two = two.clones[0].result.dir(stats::Dir::kRead).clat_hist.Percentiles({50.0, 99.9});
  EXPECT_GT(p_one[1] - p_one[0], p_two[1] - p_two[0] + static_cast<uint64_t>(switch_pair)) << Describe(one);
}

// --- wake-up placement ------------------------------------------------------
//
// fio sets no CPU affinity unless cpus_allowed= is given (with split, one CPU
// per clone), so a clone that sleeps for its IO wakes wherever the scheduler
// puts it: its previous CPU if idle, else an idle CPU of the same LLC. Here a
// pinned CPU hog (ioengine=null) shares CPU 0 with one of two psync readers
// of a 20 us null_blk; unpinned, that reader moves to CPU 1, which its peer
// leaves idle while it waits, and gets nearly the peer's IOPS; pinned with
// split, it waits behind the hog's 3 ms slices at every wake-up.
//
// With CFS's rules (sched_eevdf: false: a woken thread of the hog's nice
// waits for the hog's slice). Under EEVDF the reader sleeps with the lag
// the hog's slices left it and pre-empts the hog at most wake-ups, so the
// pinned reader is not starved.
TEST(Scheduler, AnUnpinnedThreadLeavesABusyCpuAtItsWakeUp) {
  host::HostSpec host = NullHost(2, "irqmode: 2, completion_nsec: 20000");
  host.knobs.sched_eevdf = false;
  auto run = [&host](bool pinned) {
    std::vector<std::string> args = {"--name=hog",      "--ioengine=null",  "--bs=4k",
                                     "--size=1g",       "--cpus_allowed=0", "--runtime=100ms",
                                     "--time_based=1",  "--name=reader",    "--ioengine=psync", "--direct=1",
                                     "--rw=randread",   "--bs=4k",          "--filename=/dev/nullb0",
                                     "--numjobs=2",     "--runtime=100ms",  "--time_based=1"};
    if (pinned) {
      args.push_back("--cpus_allowed=0-1");
      args.push_back("--cpus_allowed_policy=split");
    }
    return MustRun(host, args);
  };
  const RunResult unpinned = run(false);
  const RunResult pinned = run(true);
  auto reader_ios = [](const RunResult& r) {
    std::vector<uint64_t> ios;
    for (const auto& c : r.clones) {
      if (c.thread_number > 1) ios.push_back(c.result.dir(stats::Dir::kRead).total_ios);
    }
    return ios;
  };
  const std::vector<uint64_t> free_ios = reader_ios(unpinned);
  const std::vector<uint64_t> pinned_ios = reader_ios(pinned);
  ASSERT_EQ(free_ios.size(), 2u);
  ASSERT_EQ(pinned_ios.size(), 2u);
  EXPECT_GT(CounterOf(unpinned.kernel, "cpu_migrations"), 0u) << Describe(unpinned);
  EXPECT_EQ(CounterOf(pinned.kernel, "cpu_migrations"), 0u) << Describe(pinned);
  // Unpinned, the two readers take turns on CPU 1: each near the other.
  const uint64_t lo = std::min(free_ios[0], free_ios[1]);
  const uint64_t hi = std::max(free_ios[0], free_ios[1]);
  EXPECT_GT(lo * 10, hi * 8) << Describe(unpinned);
  // Pinned, the reader on the hog's CPU gets a small fraction of its peer.
  const uint64_t p_lo = std::min(pinned_ios[0], pinned_ios[1]);
  const uint64_t p_hi = std::max(pinned_ios[0], pinned_ios[1]);
  EXPECT_LT(p_lo * 10, p_hi) << Describe(pinned);
  EXPECT_GT(lo, 5 * p_lo);
}

// --- files on a filesystem -------------------------------------------------
//
// Two files on one ext4 filesystem are two extents of its device: what a job
// writes to one (with verify headers) reads back from that file and is
// absent from the other. Every direct I/O to a file takes the inode's
// i_rwsem shared and maps through iomap; jobs on four CPUs sharing one file
// bounce the rwsem's line, jobs on four files do not.
host::HostSpec FsHost(int cpus) {
  return HostFromYaml(absl::StrCat("name: fs\ncpus: {count: ", cpus,
                                   "}\nkernel: {hz: 1000}\ndevices:\n"
                                   "  - name: nullb0\n    null_blk: {gb: 4, irqmode: 0}\n"
                                   "    queue: {scheduler: none}\n"
                                   "filesystems:\n  - {path: /mnt, device: nullb0, type: ext4}\n"));
}

TEST(Files, TwoFilesAreTwoExtentsOfTheDevice) {
  const std::vector<std::string> write = {"--name=w", "--filename=/mnt/a", "--size=8m", "--direct=1",
                                          "--rw=write", "--bs=64k", "--verify=crc32c", "--do_verify=0"};
  auto read_of = [](const std::string& file) {
    return std::vector<std::string>{"--name=r" + file, "--stonewall", "--filename=/mnt/" + file, "--size=8m",
                                    "--direct=1", "--rw=read", "--bs=64k", "--verify=crc32c"};
  };
  std::vector<std::string> same = write, other = write;
  for (const std::string& a : read_of("a")) same.push_back(a);
  for (const std::string& a : read_of("b")) other.push_back(a);
  const RunOutcome ok = RunArgs(FsHost(1), same);
  ASSERT_TRUE(ok.result.ok()) << ok.result.status();
  EXPECT_EQ(ok.result->clones[1].result.error, 0) << Describe(*ok.result);
  const RunOutcome bad = RunArgs(FsHost(1), other);
  ASSERT_TRUE(bad.result.ok()) << bad.result.status();
  EXPECT_NE(bad.result->clones[1].result.error, 0) << "file b read back file a's blocks\n" << Describe(*bad.result);
}

TEST(Files, PlannedAsFioNamesThem) {
  auto plan_of = [](const std::vector<std::string>& args) {
    RunRequest req;
    req.host = FsHost(2);
    absl::StatusOr<ParsedFio> parsed = ParseFio(args, req.host, nullptr, nullptr);
    EXPECT_TRUE(parsed.ok()) << parsed.status();
    req.jobs = parsed->jobs;
    return PlanRun(req);
  };
  // No filename: a file per clone, $jobname.$jobnum.$filenum, in directory=.
  absl::StatusOr<RunPlan> p = plan_of({"--name=t", "--directory=/mnt", "--size=8m", "--numjobs=2", "--direct=1"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->files.size(), 2u);
  EXPECT_EQ(p->files[0].path, "/mnt/t.0.0");
  EXPECT_EQ(p->files[1].path, "/mnt/t.1.0");
  EXPECT_EQ(p->files[0].base, 1u << 20);            // after the first MiB
  EXPECT_EQ(p->files[1].base, (1u << 20) + (8u << 20));
  EXPECT_EQ(p->clone_file, (std::vector<int>{0, 1}));
  // A relative name resolves under directory=, else the first mount point;
  // two jobs naming one file share it, at the larger size.
  p = plan_of({"--name=a", "--filename=f", "--size=4m", "--direct=1", "--name=b", "--filename=/mnt/f",
               "--size=16m", "--direct=1", "--name=c", "--directory=/mnt/sub", "--filename=f", "--size=1m",
               "--direct=1", "--name=raw", "--filename=/dev/nullb0", "--direct=1"});
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->files.size(), 2u);
  EXPECT_EQ(p->files[0].path, "/mnt/f");
  EXPECT_EQ(p->files[0].bytes, 16u << 20);
  EXPECT_EQ(p->files[1].path, "/mnt/sub/f");
  EXPECT_EQ(p->clone_file, (std::vector<int>{0, 0, 1, -1}));
  // A new file covers the job's region: size= past offset= (and the last
  // clone's offset_increment).
  p = plan_of({"--name=o", "--filename=/mnt/o", "--offset=1g", "--size=10m", "--offset_increment=20m",
               "--numjobs=3", "--direct=1"});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->files[0].bytes, (1u << 30) + (10u << 20) + 2 * (20u << 20));
  // A file outside every mount point, and one without a size, are errors.
  EXPECT_THAT(std::string(plan_of({"--name=x", "--filename=/tmp/x", "--size=1m"}).status().message()),
              HasSubstr("nor a file on one of its filesystems (mounted: /mnt)"));
  EXPECT_THAT(std::string(plan_of({"--name=x", "--filename=/mnt/x"}).status().message()),
              HasSubstr("needs a size"));
  // An existing file (filesystems[].files): a job without a size works on
  // its size; a larger size= extends it, as fio lays it out.
  RunRequest req;
  req.host = FsHost(2);
  req.host.filesystems[0].files.push_back(host::ExistingFileSpec{"/mnt/x", 96});
  for (const auto& [size, bytes] : std::vector<std::pair<std::string, uint64_t>>{
           {"", 96u << 20}, {"--size=8m", 96u << 20}, {"--size=200m", 200u << 20}}) {
    std::vector<std::string> args = {"--name=x", "--filename=/mnt/x", "--direct=1"};
    if (!size.empty()) args.push_back(size);
    absl::StatusOr<ParsedFio> parsed = ParseFio(args, req.host, nullptr, nullptr);
    ASSERT_TRUE(parsed.ok()) << parsed.status();
    req.jobs = parsed->jobs;
    absl::StatusOr<RunPlan> e = PlanRun(req);
    ASSERT_TRUE(e.ok()) << e.status();
    EXPECT_EQ(e->files[0].bytes, bytes) << size;
  }
}

TEST(Files, OptionsWhoseEffectIsNotModelledAreRefusedByName) {
  const RunOutcome iolog = RunArgs(FsHost(1), {"--name=r", "--filename=/mnt/f", "--size=1m", "--read_iolog=trace"});
  ASSERT_FALSE(iolog.result.ok());
  EXPECT_THAT(std::string(iolog.result.status().message()), HasSubstr("read_iolog=trace: replaying an I/O log"));
  const RunOutcome ss = RunArgs(FsHost(1), {"--name=r", "--filename=/mnt/f", "--size=1m", "--ss=iops:10%",
                                            "--ss_dur=30s"});
  ASSERT_FALSE(ss.result.ok());
  EXPECT_THAT(std::string(ss.result.status().message()), HasSubstr("steady-state detection"));
  // ss= alone (no duration) does not detect anything: it runs.
  EXPECT_TRUE(RunArgs(FsHost(1), {"--name=r", "--filename=/mnt/f", "--size=1m", "--ss=iops:10%"}).result.ok());
}

TEST(Files, JobsSharingAFileBounceItsRwsem) {
  auto run = [](bool shared) {
    std::vector<std::string> args;
    for (int j = 0; j < 4; ++j) {
      for (const std::string& a :
           {"--name=j" + std::to_string(j), "--filename=/mnt/" + std::string(shared ? "f" : "f" + std::to_string(j)),
            std::string("--size=64m"), std::string("--direct=1"), std::string("--rw=randread"),
            std::string("--ioengine=io_uring"), std::string("--direct=1"), std::string("--iodepth=8"), "--cpus_allowed=" + std::to_string(j),
            std::string("--runtime=20ms"), std::string("--time_based=1")}) {
        args.push_back(a);
      }
    }
    return MustRun(FsHost(4), args);
  };
  const RunResult shared = run(true);
  const RunResult apart = run(false);
  for (const RunResult* r : {&shared, &apart}) EXPECT_GT(ProfileNs(r->kernel, "iomap_dio_rw"), 0) << Describe(*r);
  auto per_io = [](const RunResult& r) {
    return static_cast<double>(ProfileNs(r.kernel, "down_read") + ProfileNs(r.kernel, "up_read")) /
           static_cast<double>(r.kernel.total_ios);
  };
  const host::CostTable c = *host::BuildCostTable(FsHost(4));
  // Apart: each rwsem stays on its CPU (two local atomics per IO).
  EXPECT_NEAR(per_io(apart), 2.0 * static_cast<double>(c.atomic_local), 1.0) << Describe(apart);
  // Shared: the line comes from another CPU most of the time.
  EXPECT_GT(per_io(shared), per_io(apart) + 10.0) << Describe(shared);
}

// --- no request is lost ---------------------------------------------------

struct LossCase {
  std::string name;
  int cpus;
  std::string null_blk;
  std::vector<std::string> args;
};

class NoLostRequestTest : public ::testing::TestWithParam<LossCase> {};

TEST_P(NoLostRequestTest, EveryIssuedIoCompletes) {
  const LossCase& tc = GetParam();
  RunOutcome run = RunArgs(NullHost(tc.cpus, tc.null_blk), tc.args);
  // RunFio itself fails when a request is still allocated at the end.
  ASSERT_TRUE(run.result.ok()) << run.result.status();
  const RunResult& r = *run.result;
  ASSERT_FALSE(r.clones.empty());
  for (const auto& c : r.clones) {
    SCOPED_TRACE(absl::StrCat("clone ", c.thread_number, " on cpu ", c.cpu));
    for (int d = 0; d < 3; ++d) EXPECT_EQ(c.result.issued[d], c.result.dirs[d].total_ios);
    EXPECT_GT(c.result.issued[0] + c.result.issued[1], 0u) << Describe(r);
  }
  // The kernel saw the same IOs: every bio became a request (or merged into
  // one) and every request ended.
  EXPECT_EQ(CounterOf(r.kernel, "submit_bio"), TotalIssued(r));
  EXPECT_EQ(CounterOf(r.kernel, "requests_completed") + CounterOf(r.kernel, "plug_merge"),
            CounterOf(r.kernel, "submit_bio"));
  ASSERT_EQ(r.kernel.devices.size(), 1u);
  EXPECT_EQ(r.kernel.devices[0].read_ios + r.kernel.devices[0].write_ios,
            CounterOf(r.kernel, "requests_completed"));
}

std::vector<std::string> LossJob(const std::string& engine, int iodepth, int numjobs) {
  return {"--name=t",       "--ioengine=" + engine, "--direct=1",   "--rw=randrw",
          "--bs=4k",        absl::StrCat("--iodepth=", iodepth), absl::StrCat("--numjobs=", numjobs),
          "--runtime=50ms", "--time_based=1"};
}

INSTANTIATE_TEST_SUITE_P(
    Configs, NoLostRequestTest,
    ::testing::Values(
        LossCase{"irq0_1cpu_1job", 1, "irqmode: 0", LossJob("io_uring", 32, 1)},
        LossCase{"irq1_1cpu_1job", 1, "irqmode: 1", LossJob("libaio", 32, 1)},
        LossCase{"irq2_1cpu_4jobs", 1, "irqmode: 2, completion_nsec: 20000",
                 LossJob("io_uring", 16, 4)},
        LossCase{"irq0_4cpu_4jobs", 4, "irqmode: 0", LossJob("io_uring", 32, 4)},
        LossCase{"irq1_4cpu_4jobs", 4, "irqmode: 1", LossJob("io_uring", 32, 4)},
        LossCase{"irq1_4cpu_4jobs_4queues", 4, "irqmode: 1, submit_queues: 4",
                 LossJob("libaio", 16, 4)},
        LossCase{"irq2_4cpu_4jobs", 4, "irqmode: 2, completion_nsec: 30000",
                 LossJob("io_uring", 32, 4)},
        LossCase{"irq2_4cpu_4jobs_tags4", 4,
                 "irqmode: 2, completion_nsec: 30000, hw_queue_depth: 4", LossJob("io_uring", 32, 4)},
        LossCase{"psync_4cpu_4jobs", 4, "irqmode: 1", LossJob("psync", 1, 4)},
        LossCase{"mbps_1cpu_1job", 1, "irqmode: 1, mbps: 100", LossJob("io_uring", 32, 1)},
        LossCase{"mbps_4cpu_4jobs", 4, "irqmode: 1, mbps: 200", LossJob("io_uring", 32, 4)},
        LossCase{"mbps_irq2_4cpu_4jobs", 4, "irqmode: 2, completion_nsec: 20000, mbps: 200",
                 LossJob("libaio", 32, 4)},
        LossCase{"poll_queues_hipri", 2, "irqmode: 1, poll_queues: 2",
                 {"--name=t", "--ioengine=io_uring", "--direct=1", "--hipri=1", "--rw=randread", "--bs=4k",
                  "--iodepth=16", "--numjobs=2", "--runtime=50ms", "--time_based=1"}}),
    [](const ::testing::TestParamInfo<LossCase>& info) { return info.param.name; });

// --- mq-deadline (docs/kernel-model.md §2.4, §3.5; RC4) --------------------------

// A host of `cpus` CPUs (one LLC) with one null_blk of one hw queue under
// mq-deadline; `fixes` turns the three RC4 switches on (6.9) or off (6.8).
host::HostSpec DeadlineHost(int cpus, bool fixes, const std::string& null_blk = "irqmode: 1") {
  const char* v = fixes ? "true" : "false";
  const std::string yaml = absl::StrCat(
      "name: dd-host\n"
      "cpus: {count: ", cpus, "}\n"
      "kernel: {hz: 1000}\n"
      "knobs: {dd_serialize_dispatch: ", v, ", dd_insert_side_lists: ", v,
      ", dd_skip_merge_if_contended: ", v, "}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {submit_queues: 1, poll_queues: 0, ", null_blk, "}\n"
      "    queue: {scheduler: mq-deadline}\n");
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(yaml);
  EXPECT_TRUE(h.ok()) << h.status() << "\n" << yaml;
  return h.ok() ? *h : host::HostSpec{};
}

// RC4-style submitters: io_uring, small batched depth, one thread per CPU.
std::vector<std::string> ManySubmitters(int numjobs, const std::string& sched = "") {
  std::vector<std::string> a = {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                                "--iodepth=8", "--iodepth_batch_submit=4",
                                "--iodepth_batch_complete_min=1", "--norandommap=1",
                                absl::StrCat("--numjobs=", numjobs), "--cpus_allowed_policy=split",
                                absl::StrCat("--cpus_allowed=0-", numjobs - 1),
                                "--runtime=20ms", "--time_based=1"};
  if (!sched.empty()) a.push_back("--ioscheduler=" + sched);
  return a;
}

const stats::LockRow* LockNamed(const stats::KernelReport& k, const std::string& name) {
  for (const auto& l : k.locks) {
    if (l.name == name) return &l;
  }
  return nullptr;
}

struct DeadlineLossCase {
  std::string name;
  int cpus;
  bool fixes;
  std::string null_blk;
  std::vector<std::string> args;
};

class DeadlineNoLostRequestTest : public ::testing::TestWithParam<DeadlineLossCase> {};

TEST_P(DeadlineNoLostRequestTest, EveryIssuedIoCompletes) {
  const DeadlineLossCase& tc = GetParam();
  RunOutcome run = RunArgs(DeadlineHost(tc.cpus, tc.fixes, tc.null_blk), tc.args);
  ASSERT_TRUE(run.result.ok()) << run.result.status();
  const RunResult& r = *run.result;
  for (const auto& c : r.clones) {
    for (int d = 0; d < 3; ++d) EXPECT_EQ(c.result.issued[d], c.result.dirs[d].total_ios);
  }
  EXPECT_GT(TotalIos(r), 0u);
  EXPECT_EQ(CounterOf(r.kernel, "submit_bio"), TotalIssued(r));
  EXPECT_EQ(CounterOf(r.kernel, "requests_completed") + CounterOf(r.kernel, "plug_merge") +
                CounterOf(r.kernel, "sched_merge"),
            CounterOf(r.kernel, "submit_bio"));
  EXPECT_NE(LockNamed(r.kernel, "nullb0:dd->lock"), nullptr) << Describe(r);
}

INSTANTIATE_TEST_SUITE_P(
    Configs, DeadlineNoLostRequestTest,
    ::testing::Values(
        DeadlineLossCase{"irq0_1cpu", 1, false, "irqmode: 0", LossJob("io_uring", 32, 1)},
        DeadlineLossCase{"irq1_4cpu_libaio", 4, false, "irqmode: 1", LossJob("libaio", 32, 4)},
        DeadlineLossCase{"irq2_4cpu_tags4", 4, false, "irqmode: 2, completion_nsec: 20000, hw_queue_depth: 4",
                         LossJob("io_uring", 32, 4)},
        DeadlineLossCase{"irq1_8cpu_fixes", 8, true, "irqmode: 1", ManySubmitters(8)},
        DeadlineLossCase{"irq2_8cpu_fixes_tags4", 8, true, "irqmode: 2, completion_nsec: 20000, hw_queue_depth: 4",
                         ManySubmitters(8)},
        DeadlineLossCase{"psync_4cpu_fixes", 4, true, "irqmode: 1", LossJob("psync", 1, 4)},
        DeadlineLossCase{"seq_merges_1cpu", 1, false, "irqmode: 2, completion_nsec: 50000",
                         {"--name=t", "--ioengine=libaio", "--direct=1", "--rw=read", "--bs=4k", "--iodepth=64",
                          "--iodepth_batch_submit=1", "--runtime=20ms", "--time_based=1"}}),
    [](const ::testing::TestParamInfo<DeadlineLossCase>& info) { return info.param.name; });

// Before the RC4 fixes every IO takes dd->lock three times: the merge probe,
// the insert and the dispatch (plus dispatch calls that find nothing).
TEST(MqDeadline, AboutThreeDdLockAcquisitionsPerIo) {
  const RunResult r = MustRun(DeadlineHost(1, false), LossJob("io_uring", 16, 1));
  const stats::LockRow* dd = LockNamed(r.kernel, "nullb0:dd->lock");
  ASSERT_NE(dd, nullptr) << Describe(r);
  const double per_io = static_cast<double>(dd->acquisitions) / static_cast<double>(TotalIos(r));
  EXPECT_GE(per_io, 2.9) << Describe(r);
  EXPECT_LE(per_io, 4.0) << Describe(r);
  EXPECT_GT(ProfileNs(r.kernel, "dd_bio_merge"), 0);
  EXPECT_GT(ProfileNs(r.kernel, "dd_insert_requests"), 0);
  EXPECT_GT(ProfileNs(r.kernel, "dd_dispatch_request"), 0);
}

// RC4's mechanism: many submitters on one hw queue meet on dd->lock, the
// spin shows in the profile, and IOPS fall below scheduler none.
TEST(MqDeadline, ManySubmittersContendOnDdLockAndLoseToNone) {
  const host::HostSpec h = DeadlineHost(16, false);
  const RunResult none = MustRun(h, ManySubmitters(16, "none"));
  const RunResult dd = MustRun(h, ManySubmitters(16, "mq-deadline"));
  const stats::LockRow* lock = LockNamed(dd.kernel, "nullb0:dd->lock");
  ASSERT_NE(lock, nullptr);
  EXPECT_GT(lock->contended, lock->acquisitions / 2) << Describe(dd);
  EXPECT_GT(dd.kernel.contention_pct, none.kernel.contention_pct);
  EXPECT_GT(ProfileNs(dd.kernel, "native_queued_spin_lock_slowpath"),
            ProfileNs(none.kernel, "native_queued_spin_lock_slowpath"));
  EXPECT_LT(RunIops(dd), RunIops(none)) << "none: " << Describe(none) << "\ndd: " << Describe(dd);
}

// The RC4-style submitters on `voluntary` and on the same host with full
// pre-emption (kernel.config.PREEMPT).
std::pair<RunResult, RunResult> VoluntaryAndFull(const host::HostSpec& voluntary) {
  host::HostSpec full = voluntary;
  full.kernel.config.PREEMPT = true;
  return {MustRun(voluntary, ManySubmitters(16)), MustRun(full, ManySubmitters(16))};
}

double SwitchesPerIo(const RunResult& r) {
  return static_cast<double>(CounterOf(r.kernel, "context_switches")) / static_cast<double>(TotalIos(r));
}

// kernel.config.PREEMPT: a completion raised as BLOCK_SOFTIRQ from the
// dispatching task (null_blk irqmode=1, one hardware queue, same LLC) wakes
// ksoftirqd; with full pre-emption it takes the CPU at once (a switch there
// and back per raise), with PREEMPT_VOLUNTARY at the task's syscall exit.
//
// With CFS's rules (sched_eevdf: false); under EEVDF whether ksoftirqd
// pre-empts depends on its lag (Eevdf.* below).
TEST(Preemption, FullPreemptionSwitchesToKsoftirqdAtTheRaise) {
  host::HostSpec voluntary = DeadlineHost(16, true);
  voluntary.knobs.sched_eevdf = false;
  const auto [v, f] = VoluntaryAndFull(voluntary);
  EXPECT_GT(SwitchesPerIo(f), 1.3 * SwitchesPerIo(v)) << "voluntary: " << Describe(v) << "\nfull: " << Describe(f);
  EXPECT_GT(CounterOf(f.kernel, "block_softirq"), 0u);
}

// Under EEVDF (the default) the same raise wakes a ksoftirqd that last ran
// while the dispatcher waited (negative lag): even with full pre-emption it
// does not take the CPU from the dispatcher, which is eligible and inside
// its slice (RUN_TO_PARITY); the completions run at the next interrupt's
// exit or when the dispatcher sleeps, and full pre-emption adds no switches.
TEST(Preemption, UnderEevdfAWokenKsoftirqdWaitsEvenWithFullPreemption) {
  const host::HostSpec voluntary = DeadlineHost(16, true);
  ASSERT_TRUE(voluntary.knobs.sched_eevdf);
  const auto [v, f] = VoluntaryAndFull(voluntary);
  EXPECT_LT(SwitchesPerIo(f), 1.1 * SwitchesPerIo(v)) << "voluntary: " << Describe(v) << "\nfull: " << Describe(f);
  EXPECT_GT(CounterOf(f.kernel, "block_softirq"), 0u);
  EXPECT_GT(RunIops(f), 0.9 * RunIops(v));
}

// kernel.config.IRQ_TIME_ACCOUNTING: with it (the distributions' choice)
// hardirq and softirq time is the CPU's, not the interrupted task's; without
// it (Kconfig's default) fio's sys includes the completions' interrupts that
// ran on top of its thread. The simulation itself does not change.
TEST(IrqTimeAccounting, WithoutItFioSysIncludesTheInterruptsOnTopOfTheThread) {
  const char kYaml[] =
      "name: irqtime\n"
      "cpus: {count: 1}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {irqmode: 2, completion_nsec: 2000, submit_queues: 1}\n"
      "    queue: {scheduler: none}\n";
  absl::StatusOr<host::HostSpec> fine = host::ParseHostSpec(kYaml);
  ASSERT_TRUE(fine.ok()) << fine.status();
  host::HostSpec tick = *fine;
  tick.kernel.config.IRQ_TIME_ACCOUNTING = false;
  const std::vector<std::string> job = {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                        "--bs=4k", "--iodepth=16", "--runtime=5ms", "--time_based"};
  const RunResult f = MustRun(*fine, job);
  const RunResult t = MustRun(tick, job);
  ASSERT_EQ(f.clones.size(), 1u);
  ASSERT_EQ(t.clones.size(), 1u);
  EXPECT_EQ(TotalIos(f), TotalIos(t));
  EXPECT_EQ(f.kernel.busy_ns, t.kernel.busy_ns);
  EXPECT_DOUBLE_EQ(f.clones[0].result.cpu.usr_pct, t.clones[0].result.cpu.usr_pct);
  int64_t irq_ns = 0;
  for (const stats::CpuRow& c : f.kernel.cpus) {
    irq_ns += c.mode_ns[static_cast<int>(stats::CpuMode::kIrq)] + c.mode_ns[static_cast<int>(stats::CpuMode::kSoftirq)];
  }
  const double irq_pct = 100.0 * static_cast<double>(irq_ns) / static_cast<double>(f.kernel.elapsed_ns);
  EXPECT_GT(irq_pct, 5.0) << Describe(f);
  // Most of the interrupts land while the thread runs (it rarely sleeps at
  // QD16 with 2 us completions).
  EXPECT_GT(t.clones[0].result.cpu.sys_pct, f.clones[0].result.cpu.sys_pct + irq_pct / 2)
      << "fine-grained: " << Describe(f) << "\ntick: " << Describe(t);
}

// The 6.9 fixes (one dispatcher, side-list inserts, merge trylock) lower
// the contention on dd->lock (direction only).
TEST(MqDeadline, Rc4FixesLowerContention) {
  const RunResult before = MustRun(DeadlineHost(16, false), ManySubmitters(16));
  const RunResult after = MustRun(DeadlineHost(16, true), ManySubmitters(16));
  EXPECT_LT(after.kernel.contention_pct, before.kernel.contention_pct)
      << "before: " << Describe(before) << "\nafter: " << Describe(after);
  const stats::LockRow* b = LockNamed(before.kernel, "nullb0:dd->lock");
  const stats::LockRow* a = LockNamed(after.kernel, "nullb0:dd->lock");
  ASSERT_NE(b, nullptr);
  ASSERT_NE(a, nullptr);
  EXPECT_LT(static_cast<double>(a->wait_ns) / static_cast<double>(TotalIos(after)),
            static_cast<double>(b->wait_ns) / static_cast<double>(TotalIos(before)));
  EXPECT_NE(LockNamed(after.kernel, "nullb0:dd->insert_lock"), nullptr);
}

// dd->lock's sections cost what the previous holder left behind: with
// every CPU taking turns (before), most acquisitions change holder (a few
// come in a row from one kworker: a run_work queued while it runs stays on
// that CPU) and pull many of the section's lines (tree nodes, hash buckets, FIFO neighbours,
// the per-priority stats) from other CPUs; with one dispatcher at a time and
// inserts on side lists (after), most acquisitions keep the holder and its
// warm lines, so a request costs fewer transfers and less time under it.
TEST(MqDeadline, SectionsPayForTheLinesThePreviousHolderWrote) {
  const RunResult before = MustRun(DeadlineHost(16, false), ManySubmitters(16));
  const RunResult after = MustRun(DeadlineHost(16, true), ManySubmitters(16));
  const stats::LockRow* b = LockNamed(before.kernel, "nullb0:dd->lock");
  const stats::LockRow* a = LockNamed(after.kernel, "nullb0:dd->lock");
  ASSERT_NE(b, nullptr);
  ASSERT_NE(a, nullptr);
  auto per_acq = [](uint64_t v, const stats::LockRow* l) {
    return static_cast<double>(v) / static_cast<double>(l->acquisitions);
  };
  EXPECT_GT(per_acq(b->holder_changes, b), 0.7) << Describe(before);
  EXPECT_LT(per_acq(a->holder_changes, a), 0.5) << Describe(after);
  // Per request (after takes the lock about once per request, before about
  // three times): far fewer lines move, and far less time is spent holding.
  auto per_io = [](double v, const RunResult& r) { return v / static_cast<double>(TotalIos(r)); };
  EXPECT_GT(per_io(static_cast<double>(b->line_transfers), before),
            1.5 * per_io(static_cast<double>(a->line_transfers), after));
  EXPECT_GT(per_io(static_cast<double>(b->hold_ns), before), per_io(static_cast<double>(a->hold_ns), after));
}

// Jens's insertion buckets (RC4's intermediate state): with one dispatcher
// at a time, a submitter that finds dd->lock busy while another CPU is
// inserting parks its list on its CPU's bucket instead of spinning, and the
// inserter drains the buckets. Against the same host inserting under
// dd->lock, the buckets take inserts off the lock: fewer acquisitions per
// IO and less time spinning. (IOPS need not rise on this small host: the
// drain of 32 bucket lines lengthens the inserter's hold.)
TEST(MqDeadline, InsertBucketsTakeInsertsOffTheLock) {
  auto host = [](bool buckets) {
    host::HostSpec h = DeadlineHost(16, true);
    h.knobs.dd_insert_side_lists = false;
    h.knobs.dd_insert_buckets = buckets;
    return h;
  };
  const RunResult locked = MustRun(host(false), ManySubmitters(16));
  const RunResult buckets = MustRun(host(true), ManySubmitters(16));
  const stats::LockRow* l = LockNamed(locked.kernel, "nullb0:dd->lock");
  const stats::LockRow* b = LockNamed(buckets.kernel, "nullb0:dd->lock");
  ASSERT_NE(l, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(CounterOf(locked.kernel, "dd_bucket_insert"), 0u);
  EXPECT_GT(CounterOf(buckets.kernel, "dd_bucket_insert"), TotalIos(buckets) / 100) << Describe(buckets);
  EXPECT_NE(LockNamed(buckets.kernel, "nullb0:dd->bucket_lists[].lock"), nullptr);
  auto per_io = [](double v, const RunResult& r) { return v / static_cast<double>(TotalIos(r)); };
  EXPECT_LT(per_io(static_cast<double>(b->acquisitions), buckets),
            per_io(static_cast<double>(l->acquisitions), locked));
  EXPECT_LT(per_io(static_cast<double>(b->wait_ns), buckets), per_io(static_cast<double>(l->wait_ns), locked))
      << Describe(locked) << Describe(buckets);
  // Nothing is stranded in a bucket: every request was dispatched.
  EXPECT_EQ(CounterOf(buckets.kernel, "queue_rq"), TotalIssued(buckets));
}

// mq-deadline's priority levels from fio's prioclass: an RT job and a BE
// job on one slow queue. The BE job waits while the RT job has requests in
// flight, so it gets almost nothing; prio_aging_expire lets its aged
// requests through.
RunResult PrioRun(int aging_ms) {
  const host::HostSpec h = HostFromYaml(absl::StrCat(
      "name: dd-prio\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {submit_queues: 1, poll_queues: 0, irqmode: 2, completion_nsec: 100000}\n"
      "    queue: {scheduler: mq-deadline, iosched: {prio_aging_expire: ",
      aging_ms, "}}\n"));
  return MustRun(h, {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=16",
                     "--runtime=200ms", "--time_based=1", "--name=rt", "--prioclass=1", "--cpus_allowed=0",
                     "--name=be", "--prioclass=2", "--cpus_allowed=1"});
}

TEST(MqDeadline, RealTimeFirstAndAgingLetsBestEffortThrough) {
  auto ios = [](const RunResult& r, size_t i) { return r.clones[i].result.dir(stats::Dir::kRead).total_ios; };
  const RunResult starved = PrioRun(0);
  const RunResult aged = PrioRun(20);
  ASSERT_EQ(starved.clones.size(), 2u);
  EXPECT_GT(ios(starved, 0), 20 * std::max<uint64_t>(ios(starved, 1), 1)) << Describe(starved);
  EXPECT_GT(ios(aged, 1), 4 * std::max<uint64_t>(ios(starved, 1), 1)) << Describe(aged);
  EXPECT_GT(ios(aged, 0), ios(aged, 1));
}

// blk_mq_delay_run_hw_queues after a dispatch that found nothing (another
// hctx's run took the request) re-runs every hctx of the queue before 5.13;
// since, a scheduler that ignores hardware queues (mq-deadline) re-runs only
// the calling CPU's hctx (blk_mq_get_sq_hctx). Eight hctxs race on one
// mq-deadline without DD_DISPATCHING (5.16, RC1's kernel).
RunResult SqHctxRun(bool own_hctx) {
  const std::string yaml = absl::StrCat(
      "name: sq-hctx\n"
      "cpus: {count: 8}\n"
      "kernel: {hz: 1000}\n"
      "knobs: {dd_serialize_dispatch: false, dd_insert_side_lists: false, dd_skip_merge_if_contended: false, "
      "sq_sched_runs_own_hctx: ", own_hctx ? "true" : "false", "}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {submit_queues: 8, poll_queues: 0, irqmode: 1}\n"
      "    queue: {scheduler: mq-deadline}\n");
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(yaml);
  EXPECT_TRUE(h.ok()) << h.status() << "\n" << yaml;
  return MustRun(h.ok() ? *h : host::HostSpec{}, ManySubmitters(8));
}

TEST(MqDeadline, DelayedRerunsOnlyTheCallersHctxSince513) {
  const RunResult all = SqHctxRun(false);
  const RunResult own = SqHctxRun(true);
  const uint64_t all_delayed = CounterOf(all.kernel, "run_hw_queue_delayed");
  const uint64_t own_delayed = CounterOf(own.kernel, "run_hw_queue_delayed");
  // Each empty dispatch delays up to 8 hctxs before, one after (those
  // with nothing pending are skipped).
  EXPECT_GT(all_delayed, 100u) << Describe(all);
  EXPECT_LT(2 * own_delayed, all_delayed) << Describe(own) << "\n" << Describe(all);
}

// --- SCSI HBA with host-wide shared tags (RC3, RC1) ------------------------

host::HostSpec HbaHost(int cpus, const std::string& knobs, const std::string& hba,
                       const std::string& scheduler) {
  const std::string yaml = absl::StrCat(
      "name: hba-host\n"
      "cpus: {count: ", cpus, "}\n"
      "kernel: {hz: 1000}\n"
      "knobs: {", knobs, "}\n"
      "devices:\n"
      "  - name: sdb\n"
      "    hba: {", hba, "}\n"
      "    queue: {scheduler: ", scheduler, "}\n");
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(yaml);
  EXPECT_TRUE(h.ok()) << h.status() << "\n" << yaml;
  return h.ok() ? *h : host::HostSpec{};
}

// kyber keeps per-hctx queues (ELEVATOR_F_MQ_AWARE), so blk_mq_has_sqsched()
// is false for it and sq_sched_runs_own_hctx changes nothing: a SCSI
// completion that runs the queue (here the pre-5.x run-everything rule) still
// runs all four hctxs, where mq-deadline runs only the caller's.
RunResult SqHctxHbaRun(bool own_hctx, const std::string& sched) {
  const host::HostSpec h = HbaHost(
      4,
      absl::StrCat("run_all_hw_queues_on_completion: true, sq_sched_runs_own_hctx: ", own_hctx ? "true" : "false"),
      "nr_hw_queues: 4, can_queue: 256, drives: 4, drive_latency_nsec: 20000, firmware_nsec: 2000", sched);
  return MustRun(h, {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread",
                     "--bs=4k", "--iodepth=16", "--numjobs=4", "--cpus_allowed_policy=split", "--cpus_allowed=0-3",
                     "--norandommap=1", "--runtime=20ms", "--time_based=1"});
}

TEST(Kyber, MqAwareSchedulerRunsEveryHctxRegardless) {
  const RunResult kyber_all = SqHctxHbaRun(false, "kyber");
  const RunResult kyber_own = SqHctxHbaRun(true, "kyber");
  const RunResult dd_own = SqHctxHbaRun(true, "mq-deadline");
  const auto runs_per_io = [](const RunResult& r) {
    return static_cast<double>(CounterOf(r.kernel, "run_hw_queue")) / static_cast<double>(TotalIos(r));
  };
  EXPECT_EQ(Describe(kyber_own), Describe(kyber_all));
  EXPECT_GT(runs_per_io(kyber_own), 4.0) << Describe(kyber_own);  // 5.0
  EXPECT_LT(runs_per_io(dd_own), 3.0) << Describe(dd_own);  // 2.0
}

// RC3: one RAID-0 volume, one submitter at QD128, scheduler none.
RunResult Rc3Run(int hw_queues, bool run_all) {
  const host::HostSpec h = HbaHost(
      4, absl::StrCat("run_all_hw_queues_on_completion: ", run_all ? "true" : "false"),
      absl::StrCat("nr_hw_queues: ", hw_queues,
                   ", can_queue: 4096, drives: 8, drive_latency_nsec: 80000, firmware_nsec: 2000"),
      "none");
  return MustRun(h, {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1",
                     "--rw=randread", "--bs=4k", "--iodepth=128", "--norandommap=1",
                     "--runtime=50ms", "--time_based=1"});
}

// Exposing 128 hw queues makes every completion run all of them
// (scsi_end_request -> blk_mq_run_hw_queues), each checking for pending
// work: IOPS fall and the check functions rise in the profile.
TEST(ScsiHba, Rc3ManyExposedHwQueuesCostARunPerHctxPerCompletion) {
  const RunResult one = Rc3Run(1, true);
  const RunResult many = Rc3Run(128, true);
  EXPECT_LT(RunIops(many), RunIops(one)) << "1: " << Describe(one) << "\n128: " << Describe(many);
  for (const char* fn : {"sbitmap_any_bit_set", "blk_mq_run_hw_queue"}) {
    const double share_one = static_cast<double>(ProfileNs(one.kernel, fn)) / one.kernel.busy_ns;
    const double share_many = static_cast<double>(ProfileNs(many.kernel, fn)) / many.kernel.busy_ns;
    EXPECT_GT(share_many, share_one) << fn;
  }
  EXPECT_GT(CounterOf(many.kernel, "run_hw_queue"), 100 * TotalIos(many) / 2);
}

// The later fix (re-run only after a recorded budget failure,
// sdev->restarts) recovers the loss.
TEST(ScsiHba, Rc3RestartsRuleRecovers) {
  const RunResult before = Rc3Run(128, true);
  const RunResult after = Rc3Run(128, false);
  EXPECT_GT(RunIops(after), RunIops(before)) << Describe(after);
  EXPECT_LT(ProfileNs(after.kernel, "sbitmap_any_bit_set"), ProfileNs(before.kernel, "sbitmap_any_bit_set"));
}

// A firmware that answers SCSI_MLQUEUE_HOST_BUSY (more than fw_queue_depth
// commands outstanding): three CPUs keep it full, a fourth submits one IO
// at a time on its own hctx, 10 us after its last one ended (without the
// pause it would mostly take the slot its own completion just freed).
// `knobs` picks the era of the re-run rules.
RunOutcome HostBusyRun(const std::string& knobs) {
  const host::HostSpec h = HbaHost(
      4, knobs,
      "can_queue: 4096, nr_hw_queues: 4, fw_queue_depth: 4, drives: 8, drive_latency_nsec: 100000, "
      "firmware_nsec: 2000",
      "none");
  return RunArgs(h, {"--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                     "--runtime=200ms", "--time_based=1", "--name=busy", "--iodepth=64", "--numjobs=3",
                     "--cpus_allowed_policy=split", "--cpus_allowed=0-2", "--name=one", "--iodepth=1",
                     "--cpus_allowed=3", "--thinktime=10us"});
}

// RC3's correctness case. In 5.8 a busy answer with other commands of the
// LUN in flight is BLK_STS_DEV_RESOURCE: blk-mq parks the request on
// hctx->dispatch without a delayed re-run, trusting scsi_end_request's
// blk_mq_run_hw_queues. The rejected shortcut (return early without an
// elevator) breaks that promise: a request parked on a hctx with nothing
// else in flight (the lone submitter's, or a busy job's once the others
// drain) waits for a run that never comes, and the run fails as a stall
// naming it.
// Without the shortcut the same run completes.
TEST(ScsiHba, Rc3ShortcutStrandsARequestParkedOnHctxDispatch) {
  const RunOutcome hang =
      HostBusyRun("run_all_hw_queues_on_completion: true, skip_run_queues_without_elevator: true");
  ASSERT_FALSE(hang.result.ok());
  EXPECT_EQ(hang.result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(hang.result.status().message(), HasSubstr("stalled")) << std::string(hang.result.status().message());
  EXPECT_THAT(hang.result.status().message(), HasSubstr("parked on hctx->dispatch of hctx "));
  EXPECT_THAT(hang.result.status().message(), HasSubstr("(SCHED_RESTART set, no queue run or delayed run pending)"));
  const RunOutcome fine =
      HostBusyRun("run_all_hw_queues_on_completion: true, skip_run_queues_without_elevator: false");
  ASSERT_TRUE(fine.result.ok()) << fine.result.status();
  EXPECT_GT(CounterOf(fine.result->kernel, "queue_rq_busy"), 1000u) << Describe(*fine.result);
}

// Since the restarts rule a host-busy answer is BLK_STS_RESOURCE: blk-mq
// re-runs the parked hctx after BLK_MQ_RESOURCE_DELAY, and a completion
// clears host_blocked (scsi_finish_command) and runs the starved LUNs.
TEST(ScsiHba, HostBusyIsRerunAfterTheResourceDelay) {
  const RunOutcome r = HostBusyRun("run_all_hw_queues_on_completion: false");
  ASSERT_TRUE(r.result.ok()) << r.result.status();
  EXPECT_GT(CounterOf(r.result->kernel, "queue_rq_busy"), 1000u);
  EXPECT_GT(CounterOf(r.result->kernel, "run_hw_queue_delayed"), 0u) << Describe(*r.result);
  // The firmware's limit is the ceiling: 4 commands of 102 us at most.
  EXPECT_LT(RunIops(*r.result), 4.0 / 102e-6);
}

// --- scsi_debug behind the mid-layer -------------------------------------------

host::HostSpec ScsiDebugHost(const std::string& params, const std::string& knobs = "") {
  return HostFromYaml(absl::StrCat("name: sdebug\ncpus: {count: 4}\nknobs: {", knobs,
                                   "}\ndevices:\n  - name: sdb\n    scsi_debug: {", params, "}\n"));
}

std::vector<std::string> SdebugJob(const std::vector<std::string>& disks, int iodepth) {
  std::vector<std::string> a = {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                                absl::StrCat("--iodepth=", iodepth), "--runtime=20ms", "--time_based=1"};
  for (const std::string& d : disks) {
    a.push_back("--name=" + d);
    a.push_back("--filename=/dev/" + d);
  }
  return a;
}

// num_tgts x max_luns LUNs per host, add_host hosts, named as sd names them;
// each host is its own tag set (host0, host1).
TEST(ScsiDebug, LunsAndHostsAreNamedAsTheKernelNamesThem) {
  const RunResult r = MustRun(ScsiDebugHost("num_tgts: 2, max_luns: 2, add_host: 2, ndelay: 5000"),
                              SdebugJob({"sdb", "sde", "sdf", "sdi"}, 4));
  ASSERT_EQ(r.clones.size(), 4u);
  for (const auto& c : r.clones) EXPECT_GT(c.result.dir(stats::Dir::kRead).total_ios, 0u) << c.device;
  RunOutcome bad = RunArgs(ScsiDebugHost("num_tgts: 2, max_luns: 2, add_host: 2"), SdebugJob({"sdj"}, 1));
  ASSERT_FALSE(bad.result.ok());
  EXPECT_THAT(bad.result.status().message(), HasSubstr("sdi"));
}

// delay=0 responds inline in the submitter (no interrupt); ndelay defers
// the response to an hrtimer on the submitting CPU, so completion latency
// is at least ndelay.
TEST(ScsiDebug, DelayZeroIsInlineAndNdelayIsAnHrtimer) {
  const RunResult inline_run = MustRun(ScsiDebugHost("delay: 0"), SdebugJob({"sdb"}, 1));
  EXPECT_EQ(CounterOf(inline_run.kernel, "hardirq"), 0u);
  EXPECT_EQ(ProfileNs(inline_run.kernel, "sdebug_q_cmd_hrt_complete"), 0);
  const RunResult timed = MustRun(ScsiDebugHost("ndelay: 50000"), SdebugJob({"sdb"}, 1));
  EXPECT_EQ(CounterOf(timed.kernel, "hardirq"), TotalIos(timed));
  EXPECT_GE(timed.clones[0].result.dir(stats::Dir::kRead).clat.min(), 50000u);
  // QD1 on a 50 us response: under 20,000 IOPS.
  EXPECT_LT(RunIops(timed), 20000.0);
  EXPECT_GT(RunIops(inline_run), 4 * RunIops(timed));
}

// every_nth with SDEBUG_OPT_HOST_BUSY: every n-th command is answered
// SCSI_MLQUEUE_HOST_BUSY, which blocks the host: until a completion clears
// host_blocked, the retry finds commands in flight and starves the LUN (a
// second refusal, by scsi_host_queue_ready). Every refused command is
// issued again and completes.
TEST(ScsiDebug, EveryNthHostBusyIsAnsweredAndRetried) {
  const RunResult r = MustRun(ScsiDebugHost("ndelay: 10000, every_nth: 50, opts: 0x8000"), SdebugJob({"sdb"}, 8));
  const uint64_t busy = CounterOf(r.kernel, "queue_rq_busy");
  const uint64_t attempts = CounterOf(r.kernel, "queue_rq");
  EXPECT_GE(busy + 2, attempts / 50) << Describe(r);
  EXPECT_LE(busy, 3 * attempts / 50) << Describe(r);
  EXPECT_GT(LockOf(r.kernel, "host0:host_lock").acquisitions, 0u);
  // Every busy command was issued again and completed.
  EXPECT_EQ(attempts - busy, TotalIos(r));
  const RunResult quiet = MustRun(ScsiDebugHost("ndelay: 10000, every_nth: 50"), SdebugJob({"sdb"}, 8));
  EXPECT_EQ(CounterOf(quiet.kernel, "queue_rq_busy"), 0u);
}

// Reads and writes copy to or from the shared ram store under its rwlock,
// unless fake_rw.
TEST(ScsiDebug, FakeRwSkipsTheStoreCopy) {
  const RunResult copy = MustRun(ScsiDebugHost("delay: 0"), SdebugJob({"sdb"}, 4));
  const RunResult fake = MustRun(ScsiDebugHost("delay: 0, fake_rw: true"), SdebugJob({"sdb"}, 4));
  // A 4 KiB copy per read (about 180 ns). IOPS are not compared: with
  // inline responses one thread's IOPS depend more on the regime its sleeps
  // and wake-ups settle in (see RC5) than on the copy.
  EXPECT_GT(static_cast<double>(ProfileNs(copy.kernel, "do_device_access")) / static_cast<double>(TotalIos(copy)),
            100.0);
  EXPECT_EQ(ProfileNs(fake.kernel, "do_device_access"), 0);
}

// The SCSI budget: since 5.14 a bit of the LUN's budget_map, an sbitmap
// whose per-CPU hints keep CPUs in different words (lines); before, one
// atomic device_busy every submitting CPU writes. Four CPUs on one LUN pay
// more for the budget per IO with the atomic.
TEST(ScsiDebug, BudgetMapKeepsCpusOnTheirOwnLines) {
  auto budget_ns_per_io = [](const RunResult& r) {
    return static_cast<double>(ProfileNs(r.kernel, "scsi_mq_get_budget") + ProfileNs(r.kernel, "scsi_mq_put_budget")) /
           static_cast<double>(TotalIos(r));
  };
  std::vector<std::string> job = {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1",
                                  "--rw=randread", "--bs=4k", "--iodepth=16", "--numjobs=4",
                                  "--cpus_allowed_policy=split", "--runtime=20ms", "--time_based=1"};
  const RunResult map = MustRun(ScsiDebugHost("ndelay: 20000, submit_queues: 4"), job);
  const RunResult atomic =
      MustRun(ScsiDebugHost("ndelay: 20000, submit_queues: 4", "scsi_atomic_device_busy: true"), job);
  EXPECT_GT(budget_ns_per_io(atomic), 1.5 * budget_ns_per_io(map)) << Describe(map) << "\n" << Describe(atomic);
}

// RC5 patch 1, 4.14 era. scsi_debug answers TASK SET FULL when a LUN's
// queue is nearly full; the mid-layer blocks the LUN (device_blocked = 3)
// and requeues the command onto hctx->dispatch. A blocked LUN gets its
// budget only with nothing in flight, counting device_blocked down once
// per try; before 5.8 blk-mq does not re-run after a budget shortage, so
// once the LUN's last command completes nothing tries again unless the
// budget's own delayed run (SCSI_QUEUE_DELAY) does: without the patch the
// run fails as a stall naming the parked request.
RunOutcome Rc5IdleRun(bool idle_delay_run, int hz = 1000, const std::string& knobs = "") {
  const host::HostSpec h = ScsiDebugHost(
      "ndelay: 1000000, max_queue: 32, every_nth: 1, opts: 0x800",
      absl::StrCat("scsi_debug_qfull_did_ok: true, blk_mq_budget_contention_rerun: false, "
                   "run_all_hw_queues_on_completion: true, sched_batch_dispatch: false, "
                   "dispatch_busy_with_scheduler: false, scsi_budget_idle_delay_run: ",
                   idle_delay_run ? "true" : "false", knobs));
  host::HostSpec hs = h;
  hs.kernel.hz = hz;
  hs.devices[0].queue.scheduler = host::Scheduler::kMqDeadline;
  return RunArgs(hs, SdebugJob({"sdb"}, 64));
}

TEST(ScsiDebug, Rc5BlockedIdleLunStallsWithoutTheDelayedRun) {
  const RunOutcome stall = Rc5IdleRun(false);
  ASSERT_FALSE(stall.result.ok());
  EXPECT_EQ(stall.result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_THAT(stall.result.status().message(), HasSubstr("parked on hctx->dispatch of hctx 0"));
  const RunOutcome fine = Rc5IdleRun(true);
  ASSERT_TRUE(fine.result.ok()) << fine.result.status();
  EXPECT_GT(CounterOf(fine.result->kernel, "run_hw_queue_delayed"), 0u);
  EXPECT_GT(CounterOf(fine.result->kernel, "budget_failure"), 0u) << Describe(*fine.result);
}

// The blocked LUN lives on its budget's delayed runs (SCSI_QUEUE_DELAY,
// 3 ms). At HZ=250 that is one jiffy, and the timer wheel runs a delayed
// work's timer at the jiffy after jiffies + 1: 4-8 ms after it was
// queued, so the LUN gets fewer runs and completes fewer commands than
// with the delay taken exactly (timer_wheel_granularity: false).
TEST(ScsiDebug, Rc5BlockedLunsDelayedRunsComeOnTheTimerWheel) {
  const RunOutcome wheel = Rc5IdleRun(true, 250);
  const RunOutcome exact = Rc5IdleRun(true, 250, ", timer_wheel_granularity: false");
  ASSERT_TRUE(wheel.result.ok()) << wheel.result.status();
  ASSERT_TRUE(exact.result.ok()) << exact.result.status();
  ASSERT_GT(CounterOf(wheel.result->kernel, "run_hw_queue_delayed"), 0u);
  EXPECT_LT(TotalIos(*wheel.result), TotalIos(*exact.result)) << Describe(*wheel.result) << "\n"
                                                              << Describe(*exact.result);
}

// Since 5.17 scsi_debug's TASK SET FULL fails the command (DID_ABORT),
// which blklab cannot report: RARE_TSF is refused by name there.
TEST(ScsiDebug, RareTsfIsRefusedWhereItFailsTheCommand) {
  RunOutcome r = RunArgs(ScsiDebugHost("ndelay: 1000000, max_queue: 32, every_nth: 1, opts: 0x800"),
                         SdebugJob({"sdb"}, 64));
  ASSERT_FALSE(r.result.ok());
  EXPECT_THAT(r.result.status().message(), HasSubstr("knobs.scsi_debug_qfull_did_ok"));
}

// Options that inject what blklab cannot report are refused by name.
// 0x6: SDEBUG_OPT_MEDIUM_ERR (0x2, an I/O error) is refused; SDEBUG_OPT_TIMEOUT
// (0x4) is modelled (the Timeouts tests).
TEST(ScsiDebug, ErrorInjectionBitsAreRefusedByName) {
  RunOutcome r = RunArgs(ScsiDebugHost("every_nth: 10, opts: 0x6"), SdebugJob({"sdb"}, 1));
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.result.status().message(), HasSubstr("devices[0].scsi_debug.opts: bits 0x2 are not modelled"));
  RunOutcome poll = RunArgs(ScsiDebugHost("poll_queues: 1"), SdebugJob({"sdb"}, 1));
  ASSERT_FALSE(poll.result.ok());
  EXPECT_THAT(poll.result.status().message(), HasSubstr("scsi_debug.poll_queues"));
  // The logging bits change nothing.
  RunOutcome noisy = RunArgs(ScsiDebugHost("opts: 0x1"), SdebugJob({"sdb"}, 1));
  EXPECT_TRUE(noisy.result.ok()) << noisy.result.status();
}

// RC5 patch 2. Before it (4.14), a completion on a tag set shared by
// several LUNs walks every queue of the set round robin, starting with the
// other LUNs, testing each hctx's SCHED_RESTART line and kicking the first
// marked one that has work; after it, only its own hctx. With 8 LUNs on 64
// shared tags the walk costs more in blk_mq_sched_restart per IO.
RunResult Rc5Run(bool walk) {
  const host::HostSpec h = ScsiDebugHost("ndelay: 1000000, max_queue: 64, max_luns: 8",
                                         absl::StrCat("restart_walks_shared_tag_queues: ", walk ? "true" : "false"));
  return MustRun(h, SdebugJob({"sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh", "sdi"}, 32));
}

TEST(ScsiDebug, Rc5RestartWalkVisitsTheOtherLunsQueues) {
  const RunResult walk = Rc5Run(true);
  const RunResult own = Rc5Run(false);
  auto per_io = [](const RunResult& r) {
    return static_cast<double>(ProfileNs(r.kernel, "blk_mq_sched_restart")) / static_cast<double>(TotalIos(r));
  };
  EXPECT_GT(CounterOf(walk.kernel, "sched_restart"), 0u) << Describe(walk);
  EXPECT_GT(per_io(walk), 1.5 * per_io(own)) << Describe(walk) << "\n" << Describe(own);
}

// RC1 (scaled down): several LUNs on one host-wide tag set with many hw
// queues and many requests in flight. About 6 s in (BLK_MAX_TIMEOUT plus
// 5.9's rounding slack) each queue's timeout work walks the busy tags;
// before 5.16 every hctx walks the whole shared bitmap, taking tags->lock
// per busy bit, so the timeout works of different queues meet on
// tags->lock. Walking once per queue removes the contention.
RunResult Rc1Run(bool shared_once) {
  const host::HostSpec h = HbaHost(
      2,
      absl::StrCat("tag_busy_iter_shared_once: ", shared_once ? "true" : "false",
                   ", dd_serialize_dispatch: false, dd_insert_side_lists: false, "
                   "dd_skip_merge_if_contended: false, hrtimer_rt_no_slack: false"),
      "lld: 1, can_queue: 4096, nr_hw_queues: 128, virtual_drives: 8, cmd_per_lun: 1024, "
      "drive_latency_nsec: 10000000, firmware_nsec: 1000",
      "mq-deadline");
  std::vector<std::string> args = {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                                   "--iodepth=512", "--norandommap=1", "--runtime=7s",
                                   "--time_based=1"};
  for (const char* dev : {"sdb", "sdc", "sdd", "sde", "sdf", "sdg", "sdh", "sdi"}) {
    args.push_back(absl::StrCat("--name=", dev));
    args.push_back(absl::StrCat("--filename=/dev/", dev));
  }
  return MustRun(h, args);
}

// blk_add_timer's rounding. One LUN at QD1 on a 1 ms drive, submitted from
// CPU 1. Its first IO (at ~0) arms q->timeout: 5.9+ at 5 s +
// roundup_pow_of_two(HZ) jiffies = 6.024 s (HZ=1000); round_jiffies_up
// (before 5.9) at the next whole second less CPU 1's 3-jiffy skew, 5.997 s.
// The run loop stops at the end of the 100 ms slice in which the job ends,
// so a 5.95 s job sees events up to 6.0 s and a 6.05 s job up to 6.1 s.
// With the timer wheel's granularity (`wheel`) the timer, 6 s ahead, sits
// on level 3 of the wheel (512-jiffy buckets) and runs at 6.144 s either
// way.
uint64_t WalksIn(const std::string& runtime, bool relaxed, bool wheel) {
  const host::HostSpec h =
      HbaHost(2,
              absl::StrCat("blk_timeout_relaxed_rounding: ", relaxed ? "true" : "false",
                           ", timer_wheel_granularity: ", wheel ? "true" : "false"),
              "lld: 1, can_queue: 64, nr_hw_queues: 2, virtual_drives: 1, cmd_per_lun: 64, "
              "drives: 1, drive_latency_nsec: 1000000, firmware_nsec: 1000",
              "none");
  const RunResult r = MustRun(h, {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1",
                                  "--rw=randread", "--bs=4k", "--iodepth=1", "--cpus_allowed=1",
                                  absl::StrCat("--runtime=", runtime), "--time_based=1"});
  return CounterOf(r.kernel, "timeout_work");
}

TEST(BlkTimeout, FirstWalkAfterBlkMaxTimeoutPlusTheRoundingSlack) {
  EXPECT_EQ(WalksIn("5950ms", true, false), 0u);
  EXPECT_GT(WalksIn("6050ms", true, false), 0u);
  EXPECT_GT(WalksIn("5950ms", false, false), 0u);
}

TEST(BlkTimeout, TheTimerWheelRunsTheWalkAtItsBucketBoundary) {
  for (bool relaxed : {true, false}) {
    SCOPED_TRACE(relaxed ? "5.9+ rounding" : "whole seconds");
    EXPECT_EQ(WalksIn("6050ms", relaxed, true), 0u);
    EXPECT_GT(WalksIn("6150ms", relaxed, true), 0u);
  }
}

// Inside tags->lock the walk reads tags->rqs[bit] and takes a reference on
// the request: lines the IO path wrote on other CPUs, so each acquisition
// costs more than the walk's own per-bit work.
TEST(BlkTimeout, BusyWalkPaysForTheLinesItTouchesUnderTagsLock) {
  const RunResult before = Rc1Run(false);
  const stats::LockRow* lock = LockNamed(before.kernel, "host0:tags->lock");
  ASSERT_NE(lock, nullptr) << Describe(before);
  ASSERT_GT(lock->acquisitions, 0u);
  const double per_bit_ns =
      static_cast<double>(ProfileNs(before.kernel, "blk_mq_find_and_get_req")) / lock->acquisitions;
  EXPECT_GT(per_bit_ns, 1.5 * host::CalibratedCostTable().busy_iter_per_bit) << Describe(before);
}

// The walk visits the set bits of the shared bitmap, not all of it: each
// hctx's pass takes tags->lock once per request holding a driver tag at
// that moment. Four LUNs at QD64 on 10 ms drives keep 256 of the 4096 host
// tags busy, steadily, so a queue's walk costs 16 passes x 256 acquisitions
// before 5.16 and one pass after. (On RC1's CPU-bound preset the busy count
// is the IOPS times the time a request holds its tag, D2C: the drive's
// latency, a setup fact, sets how much every walk costs.)
RunResult WalkRun(bool shared_once) {
  const host::HostSpec h = HbaHost(
      2, absl::StrCat("tag_busy_iter_shared_once: ", shared_once ? "true" : "false", ", busy_iter_takes_tags_lock: true"),
      "lld: 1, can_queue: 4096, nr_hw_queues: 16, virtual_drives: 4, cmd_per_lun: 1024, "
      "drive_latency_nsec: 10000000, firmware_nsec: 1000",
      "none");
  std::vector<std::string> args = {"--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k",
                                   "--iodepth=64", "--norandommap=1", "--runtime=6300ms", "--time_based=1"};
  for (const char* dev : {"sdb", "sdc", "sdd", "sde"}) {
    args.push_back(absl::StrCat("--name=", dev));
    args.push_back(absl::StrCat("--filename=/dev/", dev));
  }
  return MustRun(h, args);
}

TEST(BlkTimeout, AWalkTakesTagsLockOncePerBusyBitPerHctx) {
  for (bool shared_once : {false, true}) {
    SCOPED_TRACE(shared_once ? "once per queue" : "once per hctx");
    const RunResult r = WalkRun(shared_once);
    const uint64_t walks = CounterOf(r.kernel, "timeout_work");
    ASSERT_GE(walks, 4u) << Describe(r);
    const stats::LockRow* lock = LockNamed(r.kernel, "host0:tags->lock");
    ASSERT_NE(lock, nullptr) << Describe(r);
    const double passes = static_cast<double>(walks) * (shared_once ? 1 : 16);
    const double per_pass = static_cast<double>(lock->acquisitions) / passes;
    EXPECT_GT(per_pass, 0.9 * 256) << Describe(r);
    EXPECT_LE(per_pass, 256.0) << Describe(r);
  }
}

TEST(ScsiHba, Rc1TimeoutWalkPerHctxContendsOnTagsLock) {
  const RunResult before = Rc1Run(false);
  const RunResult after = Rc1Run(true);
  EXPECT_GT(CounterOf(before.kernel, "timeout_work"), 0u) << Describe(before);
  const stats::LockRow* lb = LockNamed(before.kernel, "host0:tags->lock");
  ASSERT_NE(lb, nullptr) << Describe(before);
  EXPECT_GT(lb->contended, 0u);
  const stats::LockRow* la = LockNamed(after.kernel, "host0:tags->lock");
  const uint64_t after_contended = la != nullptr ? la->contended : 0;
  EXPECT_LT(after_contended, lb->contended);
  EXPECT_LT(after.kernel.contention_pct, before.kernel.contention_pct);
  EXPECT_GT(ProfileNs(before.kernel, "blk_mq_find_and_get_req"),
            ProfileNs(after.kernel, "blk_mq_find_and_get_req"));
  EXPECT_GT(ProfileNs(before.kernel, "blk_mq_queue_tag_busy_iter"), 0);
  EXPECT_GT(RunIops(after), RunIops(before)) << "before: " << Describe(before) << "\nafter: " << Describe(after);
}

// mpi3mr's threaded ISR: one LUN, one submitter on CPU 1 (so hctx 1, whose
// reply queue's vector is on CPU 1), 100 us drives.
RunResult Mpi3mrRun(int lld, int iodepth, bool rt_no_slack = false, int can_queue = 4096) {
  const host::HostSpec h =
      HbaHost(2, absl::StrCat("hrtimer_rt_no_slack: ", rt_no_slack ? "true" : "false"),
              absl::StrCat("lld: ", lld, ", can_queue: ", can_queue,
                           ", nr_hw_queues: 2, virtual_drives: 1, cmd_per_lun: 1024, "
                           "drive_latency_nsec: 100000, firmware_nsec: 1000"),
              "none");
  return MustRun(h, {"--name=t", "--filename=/dev/sdb", "--ioengine=libaio", "--direct=1", "--rw=randread",
                     "--bs=4k", absl::StrCat("--iodepth=", iodepth), "--cpus_allowed=1", "--norandommap=1",
                     "--runtime=20ms", "--time_based=1"});
}

// More than 8 commands pending on a reply queue: the ISR disables its vector
// and wakes the queue's irq thread, which polls every 20 us (usleep_range(2,
// 20) on 5.16: the sleeper's hrtimer fires at its hard expiry) and moves its
// CPU between cpupri vectors at each wake-up and sleep. At 8 or fewer
// pending, or with megaraid_sas, every batch of replies is an interrupt.
TEST(ScsiHba, Mpi3mrPollsABusyReplyQueueFromItsIrqThread) {
  const RunResult busy = Mpi3mrRun(1, 32);
  const RunResult light = Mpi3mrRun(1, 8);
  const RunResult megaraid = Mpi3mrRun(0, 32);
  const host::CostTable c = host::CalibratedCostTable();
  const double polls = static_cast<double>(ProfileNs(busy.kernel, "usleep_range_state")) / c.hrtimer_arm;
  // 20 ms at one poll per 20 us plus the poll's own work.
  EXPECT_GT(polls, 600) << Describe(busy);
  EXPECT_LE(polls, 1000) << Describe(busy);
  EXPECT_GT(ProfileNs(busy.kernel, "cpupri_set"), 0);
  // The vector stays disabled while the thread polls: a few interrupts.
  EXPECT_LT(CounterOf(busy.kernel, "hardirq") * 50, TotalIos(busy)) << Describe(busy);
  // Nine in flight is one above the trigger: the thread polls.
  const RunResult edge = Mpi3mrRun(1, 9);
  EXPECT_GT(ProfileNs(edge.kernel, "usleep_range_state"), 0) << Describe(edge);
  EXPECT_LT(CounterOf(edge.kernel, "hardirq") * 2, TotalIos(edge)) << Describe(edge);
  for (const RunResult* r : {&light, &megaraid}) {
    EXPECT_EQ(ProfileNs(r->kernel, "usleep_range_state"), 0) << Describe(*r);
    EXPECT_EQ(ProfileNs(r->kernel, "cpupri_set"), 0);
    EXPECT_GT(CounterOf(r->kernel, "hardirq") * 8, TotalIos(*r)) << Describe(*r);
  }
}

// The thread stops after can_queue replies (max_host_ios) even with commands
// pending and re-enables the vector; a reply that came while it was
// disabled is resent as an interrupt, whose ISR hands the queue back to the
// thread. A small can_queue therefore means many more interrupts, each
// ending a poll run, for the same polling.
TEST(ScsiHba, Mpi3mrIrqThreadStopsAfterCanQueueRepliesAndTheVectorResends) {
  const RunResult big = Mpi3mrRun(1, 32);
  const RunResult small = Mpi3mrRun(1, 32, false, 16);
  EXPECT_GT(ProfileNs(small.kernel, "usleep_range_state"), 0) << Describe(small);
  EXPECT_GT(CounterOf(small.kernel, "hardirq"), 5 * CounterOf(big.kernel, "hardirq") + 50)
      << Describe(small) << Describe(big);
}

// Without slack for a real-time sleeper (6.3's hrtimer change) the same
// usleep_range(2, 20) sleeps 2 us: the thread polls several times as often,
// and each poll's wake-up, switches and cpupri writes cost CPU time per IO
// (the 2024 report: "the new value of just 2us is too low").
TEST(ScsiHba, Mpi3mrPollsEveryTwoMicrosecondsWithoutSlack) {
  const RunResult slack = Mpi3mrRun(1, 32, false);
  const RunResult no_slack = Mpi3mrRun(1, 32, true);
  const host::CostTable c = host::CalibratedCostTable();
  auto polls = [&](const RunResult& r) {
    return static_cast<double>(ProfileNs(r.kernel, "usleep_range_state")) / c.hrtimer_arm;
  };
  EXPECT_GT(polls(no_slack), 3 * polls(slack)) << Describe(no_slack);
  auto cpu_per_io = [](const RunResult& r) { return static_cast<double>(r.kernel.busy_ns) / TotalIos(r); };
  EXPECT_GT(cpu_per_io(no_slack), 1.3 * cpu_per_io(slack)) << Describe(no_slack);
}

// --- CPU placement --------------------------------------------------------

// numa_cpu_nodes= (numactl -N) keeps a job's clones on that node's CPUs:
// on 2 sockets x 4 cores (8 CPUs, node 1 = cores 4..7 = CPUs 4..7),
// split clones of a job bound to node 1 land on CPUs 4, 5, 6.
TEST(CpuPlacement, NumaCpuNodesRestrictsClonesToTheNode) {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(
      "name: numa\ncpus: {count: 8, sockets: 2}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {poll_queues: 0}\n    queue: {scheduler: none}\n");
  ASSERT_TRUE(h.ok()) << h.status();
  const RunResult r = MustRun(*h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                                   "--numa_cpu_nodes=1", "--cpus_allowed_policy=split",
                                   "--numjobs=3", "--runtime=5ms", "--time_based=1"});
  ASSERT_EQ(r.clones.size(), 3u);
  EXPECT_EQ(r.clones[0].cpu, 4);
  EXPECT_EQ(r.clones[1].cpu, 5);
  EXPECT_EQ(r.clones[2].cpu, 6);
  RunOutcome bad = RunArgs(*h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--numa_cpu_nodes=2",
                                "--runtime=5ms", "--time_based=1"});
  ASSERT_FALSE(bad.result.ok());
  EXPECT_THAT(bad.result.status().message(), HasSubstr("numa_cpu_nodes names node 2"));
}

// Periodic load balancing. Two LLCs of two CPUs; job a may run on CPUs 0-1
// only, job b anywhere, and fork balancing starts b's two clones on CPUs 0
// and 1 too. Wake-up placement looks inside the LLC only and an idle CPU
// pulls only cache-cold threads, so b would stay stacked behind a on the
// saturated CPUs 0-1 while 2-3 idle; the overloaded CPUs' ticks move b's
// woken clones to the idle LLC (nohz idle balancing).
// Two LLCs of two CPUs, null_blk as given; job a (4 clones) pinned to CPUs
// 0-1, job b (2 clones) free, with `engine` options before the jobs.
RunResult StackedJobsRun(const std::string& null_blk, const std::vector<std::string>& engine) {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(absl::StrCat(
      "name: lb\ncpus: {count: 4, cores_per_ccx: 2}\nkernel: {hz: 1000}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {", null_blk, ", submit_queues: 4}\n    queue: {scheduler: none}\n"));
  EXPECT_TRUE(h.ok()) << h.status();
  std::vector<std::string> args = {"--filename=/dev/nullb0", "--direct=1", "--rw=randread", "--bs=4k",
                                   "--runtime=100ms", "--time_based=1"};
  args.insert(args.end(), engine.begin(), engine.end());
  for (const char* a : {"--name=a", "--numjobs=4", "--cpus_allowed=0-1", "--name=b", "--numjobs=2"}) args.push_back(a);
  return MustRun(h.ok() ? *h : host::HostSpec{}, args);
}

TEST(CpuPlacement, PeriodicBalancingMovesStackedThreadsToIdleCpus) {
  const RunResult r = StackedJobsRun("irqmode: 2, completion_nsec: 2000", {"--ioengine=psync"});
  ASSERT_EQ(r.clones.size(), 6u);
  auto ios = [&r](size_t i) { return r.clones[i].result.dir(stats::Dir::kRead).total_ios; };
  // b's clones ran on their own CPUs: each did more than any of a's four,
  // which share two CPUs.
  EXPECT_GT(ios(4), ios(0) * 5 / 4) << Describe(r);
  EXPECT_GT(ios(5), ios(0) * 5 / 4) << Describe(r);
  EXPECT_GT(CounterOf(r.kernel, "cpu_migrations"), 0u);
}

// The same with threads that never sleep: null_blk completes inline, so
// libaio's io_getevents always finds events and no clone ever waits for a
// wake-up. b's clones can only move when they are pre-empted at the return
// to user space (PreemptPointMigratable): the ticks of the overloaded CPUs
// 0-1 then move them to the idle CPUs 2-3, as can_migrate_task moves any
// queued task. Left where fork balancing put them they would do a third
// of a CPU's work each, like a's clones.
TEST(CpuPlacement, PeriodicBalancingMovesThreadsThatNeverSleep) {
  const RunResult r = StackedJobsRun("irqmode: 0", {"--ioengine=libaio", "--iodepth=8"});
  ASSERT_EQ(r.clones.size(), 6u);
  // CPUs 2 and 3 did a share of the work (without the move they stay idle:
  // 216 K IOs in all against about 300 K).
  for (int c : {2, 3}) {
    int64_t busy = 0;
    for (const stats::CpuRow& row : r.kernel.cpus) {
      if (row.cpu != c) continue;
      for (int m = 0; m < stats::kNumCpuModes; ++m) busy += m == static_cast<int>(stats::CpuMode::kIdle) ? 0 : row.mode_ns[m];
    }
    EXPECT_GT(busy, r.kernel.elapsed_ns / 4) << "CPU " << c << "\n" << Describe(r);
  }
  EXPECT_GE(CounterOf(r.kernel, "cpu_migrations"), 2u);
}

// Regressions of model bugs found by these tests.
//
// Two io_uring IOPOLL submitters on two CPUs sharing one poll queue: each
// poller ends the other's requests (null_poll completes the whole queue). As
// in the kernel (req->iopoll_completed), the owner's io_do_iopoll must find
// them done; an earlier model sent them to task_work, which the IOPOLL loop
// never ran, and both pollers spun forever.
TEST(ModelRegressions, TwoPollersSharingOnePollQueueDoNotStall) {
  RunOutcome r = RunArgs(NullHost(2, "irqmode: 1, poll_queues: 1"),
                         {"--name=t", "--ioengine=io_uring", "--direct=1", "--hipri=1", "--rw=randread",
                          "--bs=4k", "--iodepth=16", "--numjobs=2", "--runtime=20ms",
                          "--time_based=1"});
  ASSERT_TRUE(r.result.ok()) << r.result.status();
  for (const auto& c : r.result->clones) EXPECT_GT(c.result.dir(stats::Dir::kRead).total_ios, 0u);
}

// io_uring IOPOLL at a queue depth above the poll queue's tags: polled bios
// are REQ_NOWAIT, so a bio that finds no tag ends with -EAGAIN and io_uring
// issues it again, while the submitter keeps polling. An earlier model slept
// the only poller on the tag wait queue, where nobody would ever complete
// the requests holding the tags.
TEST(ModelRegressions, PolledQueueDeeperThanItsTagsReissuesInsteadOfSleeping) {
  RunOutcome r = RunArgs(NullHost(1, "irqmode: 0, poll_queues: 1, hw_queue_depth: 16"),
                         {"--name=t", "--ioengine=io_uring", "--direct=1", "--hipri=1", "--rw=randread", "--bs=512",
                          "--iodepth=64", "--iodepth_batch_submit=16", "--runtime=5ms", "--time_based=1"});
  ASSERT_TRUE(r.result.ok()) << r.result.status();
  EXPECT_GT(TotalIos(*r.result), 0u);
  EXPECT_GT(CounterOf(r.result->kernel, "submit_bio"), CounterOf(r.result->kernel, "requests_completed"))
      << "some bios were issued again";
  EXPECT_EQ(CounterOf(r.result->kernel, "tag_sleep"), 0u);
}

// Clones pinned to one CPU that never sleep (irqmode=0 completes inline)
// share it in time slices, as Linux's CFS would, instead of the first one
// running the whole runtime.
TEST(ModelRegressions, CpuBoundClonesOnOneCpuShareIt) {
  const RunResult r = MustRun(NullHost(1, "irqmode: 0"), LossJob("io_uring", 8, 4));
  ASSERT_EQ(r.clones.size(), 4u);
  const double each = static_cast<double>(TotalIos(r)) / 4;
  for (const auto& c : r.clones) {
    EXPECT_NEAR(static_cast<double>(c.result.dirs[0].total_ios + c.result.dirs[1].total_ios), each,
                0.2 * each)
        << "clone " << c.thread_number;
  }
}

// --- configuration errors name what is wrong -------------------------------

TEST(ConfigErrors, HipriWithoutPollQueuesIsInvalidArgument) {
  RunOutcome r = RunArgs(NullHost(1, "poll_queues: 0"),
                  {"--name=t", "--ioengine=io_uring", "--direct=1", "--hipri=1", "--rw=randread", "--runtime=10ms",
                   "--time_based=1"});
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kInvalidArgument) << r.result.status();
  EXPECT_THAT(r.result.status().message(), HasSubstr("hipri"));
  EXPECT_THAT(r.result.status().message(), HasSubstr("nullb0"));
}

TEST(ConfigErrors, UnknownFilenameListsTheHostsDevices) {
  const host::HostSpec h = Preset("default");
  RunOutcome r = RunArgs(h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--filename=/dev/nvme9n1",
                      "--rw=randread", "--runtime=10ms", "--time_based=1"});
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kInvalidArgument) << r.result.status();
  EXPECT_THAT(r.result.status().message(), HasSubstr("nvme9n1"));
  for (const auto& d : h.devices) EXPECT_THAT(r.result.status().message(), HasSubstr(d.name));
  // The same job against an existing device runs.
  RunOutcome ok = RunArgs(h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--filename=/dev/nullb0",
                       "--rw=randread", "--runtime=10ms", "--time_based=1"});
  EXPECT_TRUE(ok.result.ok()) << ok.result.status();
}

TEST(ConfigErrors, UnknownOptionIsNamed) {
  absl::StatusOr<ParsedFio> p =
      ParseFio({"--name=t", "--ioengine=io_uring", "--direct=1", "--frobnicate_depth=3"}, Preset("default"),
               nullptr, nullptr);
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("frobnicate_depth"));
  // Engine options of another engine are refused too, naming the option.
  absl::StatusOr<ParsedFio> q =
      ParseFio({"--name=t", "--ioengine=libaio", "--direct=1", "--fixedbufs=1"}, Preset("default"), nullptr, nullptr);
  ASSERT_FALSE(q.ok());
  EXPECT_THAT(q.status().message(), HasSubstr("fixedbufs"));
}

// fio's start order (FIO_COMPAT a.7): wait_for=NAME starts a job once every
// clone of NAME has finished, without holding back other jobs; stonewall
// waits for everything before it.
TEST(JobOrdering, WaitForAndStonewall) {
  const RunResult r = MustRun(Preset("null-1cpu"),
                              {"--ioengine=io_uring", "--direct=1", "--rw=randread", "--iodepth=4", "--time_based=1",
                               "--name=a", "--numjobs=2", "--runtime=100ms",        //
                               "--name=b", "--wait_for=a", "--runtime=50ms",        //
                               "--name=c", "--runtime=30ms",                        //
                               "--name=d", "--stonewall", "--runtime=20ms"});
  ASSERT_EQ(r.clones.size(), 5u);
  const CloneResult &a0 = r.clones[0], &a1 = r.clones[1], &b = r.clones[2], &c = r.clones[3], &d = r.clones[4];
  EXPECT_EQ(a0.start_ns, 0);
  EXPECT_EQ(c.start_ns, 0) << "c does not wait";
  EXPECT_GE(b.start_ns, std::max(a0.end_ns, a1.end_ns)) << "b waits for both clones of a";
  EXPECT_LT(b.start_ns, std::max(a0.end_ns, a1.end_ns) + 5 * 1000 * 1000);
  EXPECT_GE(d.start_ns, std::max({a0.end_ns, a1.end_ns, b.end_ns, c.end_ns})) << "stonewall waits for all";
  for (const CloneResult* x : {&a0, &a1, &b, &c, &d}) EXPECT_GT(x->result.dirs[0].total_ios, 0u);
}

// rate_iops on a mixed job (fio's rate_ddir): when the mix picks a
// direction that is ahead of its rate, the job issues the other direction if
// that one is behind, so each direction reaches its own cap instead of both
// being held to the slower one's pace.
TEST(RateLimits, MixedJobSwitchesToTheDirectionBehindItsRate) {
  const RunResult r = MustRun(Preset("null-1cpu"),
                              {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randrw", "--rwmixread=50", "--iodepth=4",
                               "--rate_iops=2000,200", "--runtime=1s", "--time_based=1"});
  ASSERT_EQ(r.clones.size(), 1u);
  const uint64_t reads = r.clones[0].result.dirs[0].total_ios;
  const uint64_t writes = r.clones[0].result.dirs[1].total_ios;
  EXPECT_NEAR(static_cast<double>(reads), 2000, 100) << "reads reach their own cap";
  EXPECT_NEAR(static_cast<double>(writes), 200, 10) << "writes are held to theirs";
}

// --- kyber ----------------------------------------------------------------------

// A null_blk with room for 1024 requests and a 1 ms response: in flight is
// bounded by the scheduler, not the device.
host::HostSpec KyberNullBlk(const std::string& scheduler) {
  return HostFromYaml(absl::StrCat(
      "name: kyber-null\ncpus: {count: 4}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {submit_queues: 4, hw_queue_depth: 1024, irqmode: 2, completion_nsec: 1000000}\n"
      "    queue: {scheduler: ", scheduler, ", nr_requests: 1024}\n"));
}

const std::vector<std::string> kDeepReads = {
    "--name=t", "--filename=/dev/nullb0", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
    "--iodepth=256", "--numjobs=4", "--cpus_allowed_policy=split", "--runtime=100ms", "--time_based=1"};

// kyber's READ domain has 256 tokens for the whole queue (all four hctxs):
// 1024 reads outstanding, 256 on the device, 1 ms each -> 256K IOPS; the
// rest wait in the per-ctx queues (so clat grows to about 4 ms). Without a
// scheduler the same job keeps 1024 on the device.
TEST(Kyber, ReadDomainHoldsTheDeviceToItsTokens) {
  const RunResult kyber = MustRun(KyberNullBlk("kyber"), kDeepReads);
  const RunResult none = MustRun(KyberNullBlk("none"), kDeepReads);
  EXPECT_NEAR(RunIops(kyber), 256e3, 256e3 * 0.03) << Describe(kyber);
  EXPECT_GT(RunIops(none), 900e3) << Describe(none);
  EXPECT_GT(CounterOf(kyber.kernel, "kyber_throttled"), 0u);
  EXPECT_GT(ProfileNs(kyber.kernel, "kyber_dispatch_request"), 0);
}

// Reads fast (200 us), writes slow (20 ms against the 10 ms target): the
// write domain's I/O-latency p90 reports congestion, so the timer shrinks
// the domains whose p99 met their target (reads) and never the congested
// one. Reads alone meet their target: no congestion, no resize.
TEST(Kyber, CongestedWritesThrottleTheReadDomain) {
  const host::HostSpec h = HostFromYaml(
      "name: kyber-nvme\ncpus: {count: 4}\ndevices:\n  - name: nvme0n1\n"
      "    nvme: {latency_nsec: 200000, write_latency_nsec: 20000000}\n"
      "    queue: {scheduler: kyber}\n");
  auto job = [](const char* rw) {
    return std::vector<std::string>{"--name=t", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1",
                                    absl::StrCat("--rw=", rw), "--bs=4k", "--iodepth=64", "--numjobs=4",
                                    "--cpus_allowed_policy=split", "--runtime=1500ms", "--time_based=1"};
  };
  const RunResult mixed = MustRun(h, job("randrw"));
  const RunResult reads = MustRun(h, job("randread"));
  EXPECT_GT(CounterOf(mixed.kernel, "kyber_resize"), 0u) << Describe(mixed);
  EXPECT_EQ(CounterOf(reads.kernel, "kyber_resize"), 0u) << Describe(reads);
  EXPECT_GT(ProfileNs(mixed.kernel, "kyber_timer_fn"), 0);
}

// The iosched directory holds the tunables of the queue's scheduler only.
TEST(Kyber, AnotherSchedulersTunableIsAnErrorNamingIt) {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(
      "name: x\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n    null_blk: {}\n"
      "    queue: {scheduler: kyber, iosched: {fifo_batch: 8}}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.status().message(), HasSubstr("iosched.fifo_batch: a mq-deadline tunable"));
  h = host::ParseHostSpec(
      "name: x\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n    null_blk: {}\n"
      "    queue: {scheduler: mq-deadline, iosched: {read_lat_nsec: 500000}}\n");
  ASSERT_FALSE(h.ok());
  EXPECT_THAT(h.status().message(), HasSubstr("iosched.read_lat_nsec: a kyber tunable"));
  h = host::ParseHostSpec(
      "name: x\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n    null_blk: {}\n"
      "    queue: {scheduler: kyber, iosched: {read_lat_nsec: 500000}}\n");
  EXPECT_TRUE(h.ok()) << h.status();
}

// --- scheduler tag depth for writes (->limit_depth) -------------------------------

// One hw queue of 256 tags on a 1 ms null_blk: mq-deadline's 256 scheduler
// tags are four 64-bit words. Before 39823b47bbd4 (dd_async_depth_scaled:
// false, 6.6-6.10) dd_limit_depth gives writes async_depth = 48 bits of each
// (3/4): 512 writes outstanding keep 192 on the device (192K IOPS) where 512
// reads keep 256 (256K); async_depth=64 lifts it (64 bits a word). Since the
// fix the default is nr_requests (no limit) and a written value is scaled
// to a word: 64 of 256 -> 16 bits a word, 64 writes (64K).
// With CFS's rules (sched_eevdf: false): the completion's restart runs the
// queue from a kworker that takes the CPU from a fio thread at once; under
// EEVDF it may wait for the thread's slice, which lowers all three alike.
TEST(SchedTagDepth, MqDeadlineAsyncDepthThrottlesWrites) {
  auto host = [](const std::string& iosched, bool scaled = false) {
    return HostFromYaml(absl::StrCat(
        "name: dd-depth\ncpus: {count: 2}\nknobs: {sched_eevdf: false, dd_async_depth_scaled: ",
        scaled ? "true" : "false", "}\ndevices:\n  - name: nullb0\n"
        "    null_blk: {submit_queues: 1, hw_queue_depth: 256, irqmode: 2, completion_nsec: 1000000}\n"
        "    queue: {scheduler: mq-deadline, iosched: ", iosched, "}\n"));
  };
  auto job = [](const char* rw) {
    return std::vector<std::string>{"--name=t", "--filename=/dev/nullb0", "--ioengine=io_uring", "--direct=1",
                                    absl::StrCat("--rw=", rw), "--bs=4k", "--iodepth=256", "--numjobs=2",
                                    "--cpus_allowed_policy=split", "--runtime=100ms", "--time_based=1"};
  };
  const RunResult reads = MustRun(host("{}"), job("randread"));
  const RunResult writes = MustRun(host("{}"), job("randwrite"));
  const RunResult lifted = MustRun(host("{async_depth: 64}"), job("randwrite"));
  EXPECT_NEAR(RunIops(reads), 256e3, 256e3 * 0.03) << Describe(reads);
  EXPECT_NEAR(RunIops(writes), 192e3, 192e3 * 0.03) << Describe(writes);
  EXPECT_NEAR(RunIops(lifted), 256e3, 256e3 * 0.03) << Describe(lifted);
  const RunResult scaled_default = MustRun(host("{}", true), job("randwrite"));
  const RunResult scaled_64 = MustRun(host("{async_depth: 64}", true), job("randwrite"));
  EXPECT_NEAR(RunIops(scaled_default), 256e3, 256e3 * 0.03) << Describe(scaled_default);
  EXPECT_NEAR(RunIops(scaled_64), 64e3, 64e3 * 0.03) << Describe(scaled_64);
  // kyber shallows only async requests: trims get 75% of each word, direct
  // writes every tag. With 32 scheduler tags (four 8-bit words) its domain
  // tokens (64 discard, 128 write) do not bind: 24 trims in flight, 32
  // writes.
  auto kyber_host = [] {
    return HostFromYaml(
        "name: kyber-depth\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
        "    null_blk: {submit_queues: 1, hw_queue_depth: 256, irqmode: 2, completion_nsec: 1000000}\n"
        "    queue: {scheduler: kyber, nr_requests: 32}\n");
  };
  const RunResult kyber_trims = MustRun(kyber_host(), job("randtrim"));
  const RunResult kyber_writes = MustRun(kyber_host(), job("randwrite"));
  EXPECT_NEAR(RunIops(kyber_trims), 24e3, 24e3 * 0.05) << Describe(kyber_trims);
  EXPECT_NEAR(RunIops(kyber_writes), 32e3, 32e3 * 0.05) << Describe(kyber_writes);
}

// 6.1.192's blk_mq_update_nr_requests calls dd_depth_updated before it stores
// the new nr_requests: on a 2-tag null_blk (mq-deadline's own nr_requests 4)
// with nr_requests written to 64, async_depth stays 4 and dd_to_word_depth
// makes it ceil(4 x 16 / 64) = 1 bit of each of the four 16-bit words, so a
// QD16 writer holds at most 4 requests and sleeps for tags; with the knob
// off async_depth is 64 and 16 writes fit. With writes_starved=0 and
// fifo_batch=1 against a QD16 reader (the kernel lab's dd-writes-starved-0;
// 6.1 gives the writer 0.82 of the I/Os), the write FIFO runs empty often
// enough that reads get through: without the limit every dispatch is a write.
TEST(SchedTagDepth, MqDeadlineAsyncDepthKeepsTheOldNrRequests) {
  auto host = [](bool old_nr_requests) {
    return HostFromYaml(absl::StrCat(
        "name: dd-old\ncpus: {count: 2}\nknobs: {dd_async_depth_old_nr_requests: ",
        old_nr_requests ? "true" : "false", "}\ndevices:\n  - name: nullb0\n"
        "    null_blk: {submit_queues: 1, hw_queue_depth: 2, irqmode: 2, completion_nsec: 1000000}\n"
        "    queue: {scheduler: mq-deadline, nr_requests: 64, iosched: {writes_starved: 0, fifo_batch: 1}}\n"));
  };
  const std::vector<std::string> writer = {"--name=writer", "--filename=/dev/nullb0", "--ioengine=libaio",
                                           "--direct=1",  "--rw=randwrite",        "--iodepth=16",
                                           "--runtime=300ms", "--time_based=1"};
  const RunResult held = MustRun(host(true), writer);
  const RunResult free = MustRun(host(false), writer);
  EXPECT_GT(CounterOf(held.kernel, "tag_sleep"), 100u) << Describe(held);
  EXPECT_EQ(CounterOf(free.kernel, "tag_sleep"), 0u) << Describe(free);
  std::vector<std::string> both = writer;
  for (const char* a : {"--name=reader", "--filename=/dev/nullb0", "--ioengine=libaio", "--direct=1",
                        "--rw=randread", "--iodepth=16", "--runtime=300ms", "--time_based=1"}) {
    both.push_back(a);
  }
  auto writer_share = [](const RunResult& r) {
    const double w = static_cast<double>(r.clones[0].result.dir(stats::Dir::kWrite).total_ios);
    const double rd = static_cast<double>(r.clones[1].result.dir(stats::Dir::kRead).total_ios);
    return w / (w + rd);
  };
  const RunResult mixed = MustRun(host(true), both);
  EXPECT_GT(writer_share(mixed), 0.6) << Describe(mixed);
  EXPECT_LT(writer_share(mixed), 0.9) << Describe(mixed);
  // Both jobs ran the whole time, the reader served alongside the writer.
  EXPECT_LT(std::abs(mixed.clones[1].start_ns - mixed.clones[0].start_ns), 10'000'000) << Describe(mixed);
}

// --- bfq ------------------------------------------------------------------------

// An NVMe drive whose 800K IOPS ceiling is the contended resource, with bfq
// and two cgroups.
host::HostSpec BfqHost(const std::string& scheduler, const std::string& iosched = "{}") {
  return HostFromYaml(absl::StrCat(
      "name: bfq-nvme\ncpus: {count: 8, threads_per_core: 2}\n"
      "cgroups: {fast: {bfq_weight: 300}, slow: {bfq_weight: 100}}\n"
      "devices:\n  - name: nvme0n1\n    nvme: {latency_nsec: 80000, max_iops: 800000}\n"
      "    queue: {scheduler: ", scheduler, ", iosched: ", iosched, "}\n"));
}

std::vector<std::string> BfqJobs(const std::vector<std::string>& per_job_a, const std::vector<std::string>& per_job_b,
                                 const std::string& runtime = "500ms", const std::string& extra = "") {
  std::vector<std::string> args = {"--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k",
                                   "--iodepth=32", "--direct=1", absl::StrCat("--runtime=", runtime),
                                   "--time_based=1"};
  if (!extra.empty()) args.push_back(extra);
  args.push_back("--name=a");
  args.insert(args.end(), per_job_a.begin(), per_job_a.end());
  args.push_back("--name=b");
  args.insert(args.end(), per_job_b.begin(), per_job_b.end());
  return args;
}

uint64_t CloneIos(const RunResult& r, size_t i) { return r.clones.at(i).result.dirs[0].total_ios; }

// Two cgroups with bfq.weight 300 and 100 share the drive 3:1: with two
// groups holding requests the scenario is asymmetric, so each in-service
// queue keeps the drive (waits for its in-flight requests) until its budget
// is spent, and B-WF2Q+ hands out budgets in proportion to the weights.
// mq-deadline ignores the cgroups.
TEST(Bfq, WeightedCgroupsShareTheDriveInProportion) {
  const RunResult bfq = MustRun(BfqHost("bfq"), BfqJobs({"--cgroup=fast"}, {"--cgroup=slow"}));
  const double ratio = static_cast<double>(CloneIos(bfq, 0)) / static_cast<double>(CloneIos(bfq, 1));
  EXPECT_NEAR(ratio, 3.0, 3.0 * 0.15) << Describe(bfq);
  EXPECT_GT(CounterOf(bfq.kernel, "bfq_expire_budget_exhausted"), 10u) << Describe(bfq);
  const RunResult dd = MustRun(BfqHost("mq-deadline"), BfqJobs({"--cgroup=fast"}, {"--cgroup=slow"}));
  const double dd_ratio = static_cast<double>(CloneIos(dd, 0)) / static_cast<double>(CloneIos(dd, 1));
  EXPECT_NEAR(dd_ratio, 1.0, 0.1) << Describe(dd);
  // Same weights: an even split.
  const RunResult even = MustRun(BfqHost("bfq"), BfqJobs({"--cgroup=slow"}, {"--cgroup=other"}));
  const double even_ratio = static_cast<double>(CloneIos(even, 0)) / static_cast<double>(CloneIos(even, 1));
  EXPECT_NEAR(even_ratio, 1.0, 0.15) << Describe(even);
}

// Idling costs throughput: with one group bfq lets both queues' requests
// into the drive together; with two it serves one group's queue at a time.
TEST(Bfq, GroupIdlingCostsThroughputOnAFastDrive) {
  const RunResult one = MustRun(BfqHost("bfq"), BfqJobs({}, {}));
  const RunResult two = MustRun(BfqHost("bfq"), BfqJobs({"--cgroup=fast"}, {"--cgroup=slow"}));
  EXPECT_GT(RunIops(one), 1.3 * RunIops(two)) << Describe(one) << Describe(two);
  // slice_idle=0 turns idling off: no waiting, no proportion.
  const RunResult no_idle =
      MustRun(BfqHost("bfq", "{slice_idle: 0}"), BfqJobs({"--cgroup=fast"}, {"--cgroup=slow"}));
  EXPECT_GT(RunIops(no_idle), 1.3 * RunIops(two)) << Describe(no_idle);
  const double ratio = static_cast<double>(CloneIos(no_idle, 0)) / static_cast<double>(CloneIos(no_idle, 1));
  EXPECT_LT(ratio, 1.5) << Describe(no_idle);
}

// bfqd->lock: every request takes it four times (merge probe, insert,
// dispatch, completion) with interrupts off. Uncontended, its locked time
// per request is 2.7 times mq-deadline's, the ratio bfq-iosched.rst measured
// (1.9 us vs 0.7 us) from which bfq's four cost rows are derived against the
// fitted mq-deadline bodies: a consistency check of that derivation (it
// fails when dd_sections is refitted and bfq's rows are not re-derived),
// not a prediction. With 16 submitters on one drive the lock is contended.
TEST(Bfq, OneLockForEverythingAndItsContention) {
  auto job = [](int numjobs) {
    return std::vector<std::string>{"--name=t", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                    "--bs=4k", "--iodepth=32", "--direct=1", absl::StrCat("--numjobs=", numjobs),
                                    "--runtime=100ms", "--time_based=1"};
  };
  const RunResult bfq = MustRun(BfqHost("bfq"), job(1));
  const RunResult dd = MustRun(BfqHost("mq-deadline"), job(1));
  const stats::LockRow bl = LockOf(bfq.kernel, "nvme0n1:bfqd->lock");
  const double bfq_hold = static_cast<double>(bl.hold_ns) / static_cast<double>(TotalIos(bfq));
  const double dd_hold =
      static_cast<double>(LockOf(dd.kernel, "nvme0n1:dd->lock").hold_ns + LockOf(dd.kernel, "nvme0n1:dd->insert_lock").hold_ns) /
      static_cast<double>(TotalIos(dd));
  EXPECT_NEAR(static_cast<double>(bl.acquisitions) / static_cast<double>(TotalIos(bfq)), 4.0, 0.2) << Describe(bfq);
  EXPECT_NEAR(bfq_hold / dd_hold, 2.7, 0.2) << bfq_hold << " ns vs " << dd_hold << " ns per request";
  const RunResult many = MustRun(BfqHost("bfq"), job(16));
  const stats::LockRow ml = LockOf(many.kernel, "nvme0n1:bfqd->lock");
  EXPECT_GT(static_cast<double>(ml.contended) / static_cast<double>(ml.acquisitions), 0.2) << Describe(many);
  EXPECT_GT(ml.wait_irqs_off_ns, 0) << Describe(many);
  EXPECT_EQ(bl.contended, 0u);
}

// low_latency: a queue created after a quiet spell is weight-raised; eight
// created within 180 ms are a large burst and are not; low_latency=0 raises
// none.
// Before 5.14 (bfq_stable_merge: false) each clone has its own queue: the
// first seven of a burst of twelve are raised, then the burst is large.
// Since, the clones are merged into the first one's queue at creation, and
// that one queue is raised.
TEST(Bfq, InteractiveWeightRaisingAndLargeBursts) {
  auto job = [](int numjobs) {
    return std::vector<std::string>{"--name=t", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                    "--bs=4k", "--iodepth=8", "--direct=1", absl::StrCat("--numjobs=", numjobs),
                                    "--runtime=50ms", "--time_based=1"};
  };
  host::HostSpec old_host = BfqHost("bfq");
  old_host.knobs.bfq_stable_merge = false;
  EXPECT_EQ(CounterOf(MustRun(old_host, job(2)).kernel, "bfq_wr_raised"), 2u);
  const RunResult burst = MustRun(old_host, job(12));
  EXPECT_EQ(CounterOf(burst.kernel, "bfq_wr_raised"), 7u) << Describe(burst);
  EXPECT_EQ(CounterOf(burst.kernel, "bfq_stable_merged"), 0u) << Describe(burst);
  host::HostSpec low_latency_off = BfqHost("bfq", "{low_latency: false}");
  low_latency_off.knobs.bfq_stable_merge = false;
  EXPECT_EQ(CounterOf(MustRun(low_latency_off, job(2)).kernel, "bfq_wr_raised"), 0u);
  const RunResult merged = MustRun(BfqHost("bfq"), job(12));
  EXPECT_EQ(CounterOf(merged.kernel, "bfq_stable_merged"), 11u) << Describe(merged);
  EXPECT_EQ(CounterOf(merged.kernel, "bfq_wr_raised"), 1u) << Describe(merged);
}

// The kernel lab's bfq-low-latency scenarios, shortened: eight QD1 psync
// clones from t=0 and a QD4 reader from 700 ms (past the 600 ms stable-merge
// window, so it keeps its own queue) on a 4-tag null_blk at 2 ms. The clones
// share one queue (stable merge), and bfq_limit_depth gives a queue holding
// its weight's share of the 8 scheduler tags one bit of each word: the late
// reader is served about as much as the eight together (6.1 in QEMU: 0.27 of
// all I/Os over the run with low_latency off). Without the limit the
// clones' eight requests fill the scheduler and the reader waits for tags.
TEST(Bfq, TagLimitKeepsTheLateReadersShare) {
  auto host = [] {
    return HostFromYaml(
        "name: bfq-late\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
        "    null_blk: {irqmode: 2, completion_nsec: 2000000, hw_queue_depth: 4, submit_queues: 1, poll_queues: 0}\n"
        "    queue: {scheduler: bfq, iosched: {low_latency: false}}\n");
  };
  const std::vector<std::string> args = {
      "--filename=/dev/nullb0", "--direct=1", "--norandommap=1", "--time_based=1", "--rw=randread",
      "--name=a", "--ioengine=psync", "--numjobs=8", "--runtime=1500ms",
      "--name=b", "--ioengine=libaio", "--iodepth=4", "--startdelay=700ms", "--runtime=800ms"};
  const RunResult r = MustRun(host(), args);
  double a = 0, b = 0;
  for (const CloneResult& c : r.clones) (c.job_index == 0 ? a : b) += static_cast<double>(c.result.dirs[0].total_ios);
  EXPECT_EQ(CounterOf(r.kernel, "bfq_stable_merged"), 7u) << Describe(r);
  EXPECT_GT(b / (a + b), 0.15) << Describe(r);
  EXPECT_LT(b / (a + b), 0.40) << Describe(r);
}

// A lone synchronous reader at queue depth 1: bfq idles for it after each
// completion (a lone busy queue always does) and its next request ends the
// wait. With a think time longer than slice_idle the timer fires instead.
TEST(Bfq, IdlesForTheInServiceQueuesNextRequest) {
  auto job = [](const std::string& thinktime) {
    return std::vector<std::string>{"--name=t", "--filename=/dev/nvme0n1", "--ioengine=psync", "--direct=1", "--rw=randread",
                                    "--bs=4k", "--direct=1", absl::StrCat("--thinktime=", thinktime),
                                    "--runtime=200ms", "--time_based=1"};
  };
  const RunResult quick = MustRun(BfqHost("bfq"), job("0"));
  EXPECT_GT(CounterOf(quick.kernel, "bfq_idle_timer_armed"), 1000u) << Describe(quick);
  EXPECT_LT(CounterOf(quick.kernel, "bfq_idle_timer_fired"), 5u) << Describe(quick);
  const RunResult slow = MustRun(BfqHost("bfq"), job("20ms"));
  EXPECT_GT(CounterOf(slow.kernel, "bfq_idle_timer_fired"), 3u) << Describe(slow);
  EXPECT_GT(CounterOf(slow.kernel, "bfq_expire_too_idle"), 3u) << Describe(slow);
}

// fio's cgroup_weight writes blkio.weight, which cgroup2 lacks: refused with
// the host-spec way to say it; threads cannot sit in different cgroups.
TEST(Bfq, CgroupWeightAndThreadedCgroupsAreRefusedByName) {
  RunOutcome w = RunArgs(BfqHost("bfq"), BfqJobs({"--cgroup=fast", "--cgroup_weight=500"}, {}));
  ASSERT_FALSE(w.result.ok());
  EXPECT_THAT(w.result.status().message(), HasSubstr("cgroup_weight"));
  EXPECT_THAT(w.result.status().message(), HasSubstr("bfq_weight: 500"));
  RunOutcome t = RunArgs(BfqHost("bfq"), BfqJobs({"--cgroup=fast"}, {"--cgroup=slow"}, "100ms", "--thread"));
  ASSERT_FALSE(t.result.ok());
  EXPECT_THAT(t.result.status().message(), HasSubstr("threads cannot be in different cgroups"));
}

// --- request timeouts -------------------------------------------------------------

// scsi_debug ignoring every `every_nth`-th command (SDEBUG_OPT_TIMEOUT) on a
// queue with a 100 ms io_timeout.
host::HostSpec TimeoutHost(int every_nth) {
  return HostFromYaml(absl::StrCat(
      "name: tmo\ncpus: {count: 4}\ndevices:\n  - name: sdb\n"
      "    scsi_debug: {ndelay: 100000, max_queue: 32, every_nth: ", every_nth, ", opts: 4, dev_size_mb: 1024}\n"
      "    queue: {scheduler: none, io_timeout: 100}\n"));
}

const std::vector<std::string> kTimeoutJob = {"--name=t", "--filename=/dev/sdb", "--ioengine=io_uring", "--direct=1",
                                              "--rw=randread", "--bs=4k", "--iodepth=4", "--runtime=1s",
                                              "--time_based=1"};

// Each ignored command is found by the timeout work, handed to
// scsi_timeout, aborted HZ/100 later (scsi_debug_abort: SUCCESS) and
// retried; the run completes every I/O. 5.9+'s rounding makes the first
// timeout fire about 1.124 s after the first I/O (deadline + 1.024 s),
// however short io_timeout is.
TEST(Timeouts, IgnoredScsiCommandIsAbortedAndRetried) {
  const RunResult r = MustRun(TimeoutHost(200), kTimeoutJob);
  const uint64_t timed_out = CounterOf(r.kernel, "rq_timed_out");
  EXPECT_GE(timed_out, 1u) << Describe(r);
  EXPECT_EQ(CounterOf(r.kernel, "scsi_eh_abort"), timed_out);
  EXPECT_EQ(CounterOf(r.kernel, "scsi_eh_retry"), timed_out);
  EXPECT_EQ(TotalIos(r), TotalIssued(r));
  const auto& read = r.clones[0].result.dir(stats::Dir::kRead);
  EXPECT_GT(read.clat.max(), 1100u * 1000 * 1000);
  EXPECT_LT(read.clat.max(), 1300u * 1000 * 1000);
  EXPECT_GT(ProfileNs(r.kernel, "scmd_eh_abort_handler"), 0);
}

// The retried command is ignored again: a second timeout of one command
// needs the full error handler, which blklab refuses by name.
TEST(Timeouts, SecondTimeoutOfACommandFailsTheRunNamingTheErrorHandler) {
  const RunOutcome r = RunArgs(TimeoutHost(1), kTimeoutJob);
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.result.status().message(), HasSubstr("sdb: request tag"));
  EXPECT_THAT(r.result.status().message(), HasSubstr("scsi_eh_scmd_add"));
}

// A driver whose ->timeout the model does not follow ends the run naming it.
TEST(Timeouts, UnmodelledTimeoutHandlerFailsTheRunNamingIt) {
  const host::HostSpec h = HostFromYaml(
      "name: tmo2\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {irqmode: 2, completion_nsec: 3000000000}\n"
      "    queue: {scheduler: none, io_timeout: 10}\n");
  const RunOutcome r = RunArgs(h, {"--name=t", "--filename=/dev/nullb0", "--ioengine=io_uring", "--direct=1", "--rw=randread",
                                   "--bs=4k", "--iodepth=1", "--runtime=1s", "--time_based=1"});
  ASSERT_FALSE(r.result.ok());
  EXPECT_EQ(r.result.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(r.result.status().message(), HasSubstr("past io_timeout=10 ms"));
  EXPECT_THAT(r.result.status().message(), HasSubstr("null_timeout_rq"));
}

// --- disk statistics ----------------------------------------------------------------

// update_io_ticks (5.0 to 6.11) counts a jiffy for the first start after
// each jiffy boundary: a device saturated by short requests is 100% busy
// to fio even when no request is in flight most of the time (irqmode=0
// completes inside ->queue_rq), and 100 sparse I/Os a second count 100
// jiffies (10%), as the kernel over-reports them.
TEST(DiskStats, UtilCountsJiffiesAsUpdateIoTicksDoes) {
  const host::HostSpec h = *host::GetPreset("null-1cpu");
  const RunResult busy = MustRun(h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=32",
                                     "--norandommap", "--runtime=200ms", "--time_based=1"});
  ASSERT_EQ(busy.kernel.devices.size(), 1u);
  EXPECT_NEAR(busy.kernel.devices[0].util_pct, 100.0, 0.5);
  const RunResult sparse = MustRun(h, {"--name=t", "--ioengine=io_uring", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=1",
                                       "--rate_iops=100", "--norandommap", "--runtime=1s", "--time_based=1"});
  ASSERT_EQ(sparse.kernel.devices.size(), 1u);
  EXPECT_NEAR(sparse.kernel.devices[0].util_pct, 10.0, 0.5);
}

TEST(Rusage, CtxCountsEverySleepAndPreemption) {
  // psync on an otherwise idle CPU: every read sleeps once in io_schedule
  // (irqmode=2: the completion is a timer, 20 us later).
  const host::HostSpec h = NullHost(1, "irqmode: 2, completion_nsec: 20000");
  const RunResult sync = MustRun(h, {"--name=s", "--filename=/dev/nullb0", "--rw=randread", "--bs=4k",
                                     "--size=4m", "--ioengine=psync", "--direct=1"});
  EXPECT_EQ(sync.clones.at(0).result.cpu.ctx, 1024u) << Describe(sync);
  // Two CPU-bound jobs sharing one CPU (irqmode=0: nothing sleeps): one of
  // them leaves at the end of each 3 ms slice (about 33 in 100 ms), and
  // fio's main thread, waking every 10 ms, pre-empts whichever runs.
  const host::HostSpec inline_host = NullHost(1, "irqmode: 0");
  const RunResult shared = MustRun(inline_host, {"--name=b", "--filename=/dev/nullb0", "--rw=randread", "--bs=4k",
                                                 "--ioengine=io_uring", "--iodepth=8", "--direct=1",
                                                 "--numjobs=2", "--runtime=100ms", "--time_based"});
  const uint64_t ctx = shared.clones.at(0).result.cpu.ctx + shared.clones.at(1).result.cpu.ctx;
  EXPECT_GE(ctx, 33u) << Describe(shared);
  EXPECT_LE(ctx, 50u);
}

}  // namespace
}  // namespace blklab
