// engine/stats/job_stats_test.cc
#include "engine/stats/job_stats.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace blklab::stats {
namespace {

constexpr int64_t kMs = 1'000'000;

TEST(RunningStatTest, WelfordMatchesTwoPass) {
  RunningStat s;
  const std::vector<uint64_t> xs = {2, 4, 4, 4, 5, 5, 7, 9};
  for (uint64_t x : xs) s.Add(x);
  EXPECT_EQ(s.n(), 8u);
  EXPECT_EQ(s.min(), 2u);
  EXPECT_EQ(s.max(), 9u);
  EXPECT_DOUBLE_EQ(s.mean(), 5.0);
  EXPECT_NEAR(s.stddev(), std::sqrt(32.0 / 7.0), 1e-12);  // sample stddev
}

TEST(RunningStatTest, EmptyAndSingle) {
  RunningStat s;
  EXPECT_EQ(s.min(), 0u);
  EXPECT_EQ(s.stddev(), 0.0);
  s.Add(7);
  EXPECT_EQ(s.stddev(), 0.0);
  EXPECT_EQ(s.mean(), 7.0);
}

TEST(RunningStatTest, MergePoolsPopulations) {
  RunningStat a, b, all;
  for (uint64_t x : {1, 2, 3, 10}) a.Add(x), all.Add(x);
  for (uint64_t x : {20, 30, 5}) b.Add(x), all.Add(x);
  a.Merge(b);
  EXPECT_EQ(a.n(), all.n());
  EXPECT_EQ(a.min(), 1u);
  EXPECT_EQ(a.max(), 30u);
  EXPECT_NEAR(a.mean(), all.mean(), 1e-12);
  EXPECT_NEAR(a.stddev(), all.stddev(), 1e-9);
}

TEST(RunningStatTest, MergeSumAddsEverything) {
  // Mirrors fio's unified "mixed" bw stats: 3+3 samples summed.
  RunningStat r = RunningStat::FromMoments(3, 14401, 17710, 16460.71, 1796.82);
  RunningStat w = RunningStat::FromMoments(3, 14400, 17718, 16441.03, 1785.44);
  r.MergeSum(w);
  EXPECT_EQ(r.n(), 6u);
  EXPECT_EQ(r.min(), 28801u);
  EXPECT_EQ(r.max(), 35428u);
  EXPECT_NEAR(r.mean(), 32901.74, 1e-6);
  EXPECT_NEAR(r.stddev(), 1602.04, 0.01);  // as printed by fio 3.33
}

TEST(DistributionTest, Buckets) {
  EXPECT_EQ(DepthBucket(0), 0);
  EXPECT_EQ(DepthBucket(1), 0);
  EXPECT_EQ(DepthBucket(3), 1);
  EXPECT_EQ(DepthBucket(32), 5);
  EXPECT_EQ(DepthBucket(63), 5);
  EXPECT_EQ(DepthBucket(64), 6);
  EXPECT_EQ(BatchBucket(0), 0);
  EXPECT_EQ(BatchBucket(1), 1);
  EXPECT_EQ(BatchBucket(4), 1);
  EXPECT_EQ(BatchBucket(5), 2);
  EXPECT_EQ(BatchBucket(8), 2);
  EXPECT_EQ(BatchBucket(9), 3);
  EXPECT_EQ(BatchBucket(33), 5);
  EXPECT_EQ(BatchBucket(64), 5);
  EXPECT_EQ(BatchBucket(65), 6);

  LatencyDistribution d;
  d.Add(1);        // ns "2"
  d.Add(249);      // ns "250"
  d.Add(250);      // ns "500"
  d.Add(999);      // ns "1000"
  d.Add(1000);     // us "2"
  d.Add(999'999);  // us "1000"
  d.Add(1'999'999);      // ms "2"
  d.Add(1'500'000'000);  // ms "2000"
  d.Add(2'000'000'000);  // ms ">=2000"
  EXPECT_EQ(d.ns[0], 1u);
  EXPECT_EQ(d.ns[6], 1u);
  EXPECT_EQ(d.ns[7], 1u);
  EXPECT_EQ(d.ns[9], 1u);
  EXPECT_EQ(d.us[0], 1u);
  EXPECT_EQ(d.us[9], 1u);
  EXPECT_EQ(d.ms[0], 1u);
  EXPECT_EQ(d.ms[10], 1u);
  EXPECT_EQ(d.ms[11], 1u);
  EXPECT_EQ(d.total(), 9u);
}

TEST(DistributionTest, SharesHaveDisplayFloors) {
  std::array<uint64_t, kDepthBuckets> depth{};
  depth[0] = 99999;
  depth[2] = 1;
  const auto s = DepthShares(depth);
  EXPECT_NEAR(s[0], 99.999, 1e-9);
  EXPECT_EQ(s[2], 0.1);
  EXPECT_EQ(s[1], 0.0);
  LatencyDistribution d;
  for (int i = 0; i < 100000; ++i) d.Add(300);
  d.Add(5000);
  const LatencyShares l = ComputeLatencyShares(d);
  EXPECT_EQ(l.us[2], 0.01);
  EXPECT_EQ(l.ms[0], 0.0);
}

TEST(CollectorTest, RecordsDirectionsAndWindows) {
  JobStatsCollector c;
  c.Start(1000 * kMs);
  // 1 read per ms of 4 KiB for 2000 ms, slat 50, clat 200.
  for (int i = 1; i <= 2000; ++i) {
    c.RecordIssue(Dir::kRead, 1);
    c.RecordSubmitCall(1);
    c.RecordCompletion(1000 * kMs + i * kMs, Dir::kRead, 4096, 50, 200);
    c.RecordReapCall(1);
  }
  c.RecordCompletion(1000 * kMs + 1500 * kMs + 1, Dir::kWrite, 8192, kNoSlat, 1000);
  c.SetCpuUsage({.usr_pct = 10, .sys_pct = 5, .ctx = 3, .majf = 0, .minf = 7});
  const JobResult r = c.Finish(3000 * kMs);
  const DirResult& rd = r.dir(Dir::kRead);
  EXPECT_EQ(rd.total_ios, 2000u);
  EXPECT_EQ(rd.io_bytes, 2000u * 4096);
  EXPECT_EQ(rd.runtime_ms, 2000);
  EXPECT_EQ(rd.slat.n(), 2000u);
  EXPECT_EQ(rd.lat.min(), 250u);
  EXPECT_EQ(rd.clat_hist.total(), 2000u);
  EXPECT_EQ(rd.bw_bytes_per_sec(), 4096u * 1000);
  EXPECT_DOUBLE_EQ(rd.iops(), 1000.0);
  // Windows close at 500, 1000, 1500, 2000 ms: 4 samples of 1000 IO/s and
  // 4000 KiB/s.
  EXPECT_EQ(rd.iops_samples.n(), 4u);
  EXPECT_DOUBLE_EQ(rd.iops_samples.mean(), 1000.0);
  EXPECT_EQ(rd.bw_samples.n(), 4u);
  EXPECT_EQ(rd.bw_samples.min(), 4000u);
  const DirResult& wr = r.dir(Dir::kWrite);
  EXPECT_EQ(wr.total_ios, 1u);
  EXPECT_EQ(wr.slat.n(), 0u);  // synchronous: no slat
  EXPECT_EQ(wr.lat.max(), 1000u);
  EXPECT_EQ(wr.bw_samples.n(), 0u);  // the write landed in the unfinished window
  EXPECT_EQ(r.issued[0], 2000u);
  EXPECT_EQ(r.iodepth[0], 2000u);
  EXPECT_EQ(r.submit[1], 2000u);
  EXPECT_EQ(r.complete[1], 2000u);
  EXPECT_EQ(r.lat_dist.ns[6], 2000u);
  EXPECT_EQ(r.cpu.minf, 7u);
  EXPECT_EQ(r.dir(Dir::kTrim).runtime_ms, 0);
  // The collector is reusable after Finish.
  c.Start(0);
  c.RecordCompletion(10, Dir::kRead, 512, 1, 1);
  EXPECT_EQ(c.Finish(20).dir(Dir::kRead).total_ios, 1u);
}

TEST(CollectorTest, PeekIsNonDestructive) {
  JobStatsCollector c;
  EXPECT_EQ(c.Peek(5 * kMs).dirs[0].total_ios, 0u);  // not started: empty
  c.Start(0);
  for (int i = 0; i < 10; ++i) c.RecordCompletion(i * 100 * kMs, Dir::kRead, 4096, 100, 1000);
  const JobResult peek = c.Peek(1000 * kMs);
  EXPECT_EQ(peek.dirs[0].total_ios, 10u);
  EXPECT_EQ(peek.dirs[0].io_bytes, 40960u);
  EXPECT_EQ(peek.dirs[0].runtime_ms, 1000);
  EXPECT_EQ(peek.dirs[1].runtime_ms, 0);
  EXPECT_EQ(peek.job_runtime_ms, 1000);
  EXPECT_TRUE(c.started());
  // Recording goes on; Finish sees everything, Peek's copy is unchanged.
  c.RecordCompletion(1500 * kMs, Dir::kRead, 4096, 100, 1000);
  const JobResult fin = c.Finish(2000 * kMs);
  EXPECT_EQ(fin.dirs[0].total_ios, 11u);
  EXPECT_EQ(fin.dirs[0].runtime_ms, 2000);
  EXPECT_EQ(fin.dirs[0].bw_samples.n(), peek.dirs[0].bw_samples.n() + 1);
  EXPECT_EQ(peek.dirs[0].total_ios, 10u);
}

TEST(CollectorTest, GroupMergeAndUnified) {
  auto run = [](Dir dir, uint32_t bytes, int64_t clat) {
    JobStatsCollector c;
    c.Start(0);
    for (int i = 1; i <= 1000; ++i) c.RecordCompletion(i * 2 * kMs, dir, bytes, 10, clat);
    c.SetCpuUsage({.usr_pct = dir == Dir::kRead ? 50.0 : 100.0, .sys_pct = 0, .ctx = 1});
    return c.Finish(2000 * kMs);
  };
  const JobResult a = run(Dir::kRead, 4096, 100);
  const JobResult b = run(Dir::kRead, 8192, 300);
  const JobResult* both[] = {&a, &b};
  const JobResult m = MergeJobResults(both);
  EXPECT_EQ(m.num_jobs, 2);
  EXPECT_EQ(m.dir(Dir::kRead).total_ios, 2000u);
  EXPECT_DOUBLE_EQ(m.dir(Dir::kRead).clat.mean(), 200.0);
  EXPECT_EQ(m.dir(Dir::kRead).clat_hist.total(), 2000u);
  // bw samples are summed: aggregate throughput.
  EXPECT_NEAR(m.dir(Dir::kRead).bw_samples.mean(),
              a.dir(Dir::kRead).bw_samples.mean() + b.dir(Dir::kRead).bw_samples.mean(), 1e-6);
  EXPECT_EQ(m.dir(Dir::kRead).bw_samples.n(),
            a.dir(Dir::kRead).bw_samples.n() + b.dir(Dir::kRead).bw_samples.n());
  EXPECT_EQ(m.job_runtime_ms, 4000);
  EXPECT_DOUBLE_EQ(m.cpu.usr_pct, 50.0);
  EXPECT_EQ(m.cpu.ctx, 2u);

  const JobResult w = run(Dir::kWrite, 4096, 500);
  const JobResult* rw[] = {&a, &w};
  const JobResult aw = MergeJobResults(rw);
  EXPECT_DOUBLE_EQ(aw.cpu.usr_pct, 75.0);  // weighted by job runtime
  const DirResult mixed = aw.UnifiedDir();
  EXPECT_EQ(mixed.total_ios, 2000u);
  EXPECT_EQ(mixed.runtime_ms, 2000);
  EXPECT_DOUBLE_EQ(mixed.clat.mean(), 300.0);
}

// Not a benchmark, a guard: recording must stay in the tens of ns.
// Many IOs through the hot path: counts and moments stay exact. (Its speed
// is measured by tests/bench/engine_bench, not by a timed test.)
TEST(CollectorTest, ManyIosStayExact) {
  JobStatsCollector c;
  c.Start(0);
  constexpr int kIos = 2'000'000;
  uint64_t clat_sum = 0;
  for (int i = 0; i < kIos; ++i) {
    c.RecordIssue(Dir::kRead, 4);
    const int64_t clat = 150 + (i & 1023);
    clat_sum += static_cast<uint64_t>(clat);
    c.RecordCompletion(int64_t{i} * 200, static_cast<Dir>(i & 1), 4096, 20 + (i & 63), clat);
  }
  const JobResult r = c.Finish(int64_t{kIos} * 200);
  EXPECT_EQ(r.dir(Dir::kRead).total_ios + r.dir(Dir::kWrite).total_ios, uint64_t{kIos});
  RunningStat all = r.dir(Dir::kRead).clat;
  all.Merge(r.dir(Dir::kWrite).clat);
  EXPECT_EQ(all.n(), uint64_t{kIos});
  EXPECT_DOUBLE_EQ(all.mean(), static_cast<double>(clat_sum) / kIos);
  EXPECT_EQ(all.min(), 150u);
  EXPECT_EQ(all.max(), 150u + 1023u);
}

}  // namespace
}  // namespace blklab::stats
