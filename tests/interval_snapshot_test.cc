// tests/interval_snapshot_test.cc
//
// The interval view of RunFio's snapshots (Snapshot::interval, built from
// running counters at each status interval) checked against the run's
// totals:
//
//  * intervals tile the run: each starts where the previous one ended, at
//    multiples of status_interval_ns, the last at the end of the run;
//  * the interval IOs and bytes of each direction add up to the final
//    totals, and the interval clat samples to the measured IOs;
//  * the interval clat percentiles bracket the whole run's percentiles (a
//    quantile of a mixture lies between the quantiles of its parts);
//  * CPU shares add up to 100 %, and the per-lock interval counters add up
//    to the kernel report's lock table;
//  * the coarse clat buckets hold every interval sample, each in the
//    bucket of its fio bucket; the per-function times add up to the
//    profile's; requests in flight never exceed the queue's tags;
//  * without status_interval_ns no snapshot carries an interval.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/host/host_spec.h"
#include "gtest/gtest.h"

namespace blklab {
namespace {

// Two CPUs meeting on a lock (as in engine_mechanism_test's LockContention):
// two libaio clones on one null_blk queue with mq-deadline (dd->lock).
host::HostSpec ContendedHost() {
  absl::StatusOr<host::HostSpec> h = host::ParseHostSpec(
      "name: test-host\n"
      "cpus: {count: 2}\n"
      "kernel: {hz: 1000}\n"
      "devices:\n"
      "  - name: nullb0\n"
      "    null_blk: {poll_queues: 0, submit_queues: 1, irqmode: 1}\n"
      "    queue: {scheduler: mq-deadline}\n");
  EXPECT_TRUE(h.ok()) << h.status();
  return h.ok() ? *h : host::HostSpec{};
}

struct Recorded {
  std::vector<Snapshot> snapshots;  // interval and counters only (interim dropped)
  RunResult result;
};

Recorded RunRecorded(const std::vector<std::string>& args, int64_t slice_ns, int64_t status_ns) {
  Recorded out;
  const host::HostSpec host = ContendedHost();
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, nullptr, nullptr);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  if (!parsed.ok()) return out;
  RunRequest req;
  req.host = host;
  req.jobs = parsed->jobs;
  req.snapshot_interval_ns = slice_ns;
  req.status_interval_ns = status_ns;
  absl::StatusOr<RunResult> r = RunFio(req, [&](const Snapshot& s) {
    Snapshot copy = s;
    copy.interim = nullptr;
    out.snapshots.push_back(std::move(copy));
  });
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) out.result = *std::move(r);
  return out;
}

constexpr int64_t kMs = 1000 * 1000;

std::vector<std::string> ContendedArgs(const std::string& extra) {
  std::vector<std::string> a = {"--name=t", "--ioengine=libaio", "--rw=randrw", "--bs=4k",
                                "--iodepth=32", "--numjobs=2", "--runtime=250ms", "--time_based=1"};
  if (!extra.empty()) a.push_back(extra);
  return a;
}

// The intervals' lock rows summed by name, and the sums checked against the
// run's totals, field by field.
std::map<std::string, stats::LockRow> SumLocks(const std::vector<const SnapshotInterval*>& intervals) {
  std::map<std::string, stats::LockRow> sums;
  for (const SnapshotInterval* iv : intervals) {
    for (const stats::LockRow& l : iv->locks) {
      stats::LockRow& s = sums[l.name];
      s.acquisitions += l.acquisitions;
      s.contended += l.contended;
      s.holder_changes += l.holder_changes;
      s.remote_holder_changes += l.remote_holder_changes;
      s.line_transfers += l.line_transfers;
      s.hold_ns += l.hold_ns;
      s.wait_ns += l.wait_ns;
    }
  }
  return sums;
}

void ExpectLocksAddUp(const std::vector<const SnapshotInterval*>& intervals, const stats::KernelReport& k) {
  std::map<std::string, stats::LockRow> sums = SumLocks(intervals);
  for (const stats::LockRow& l : k.locks) {
    const stats::LockRow& s = sums[l.name];
    EXPECT_EQ(s.acquisitions, l.acquisitions) << l.name;
    EXPECT_EQ(s.contended, l.contended) << l.name;
    EXPECT_EQ(s.holder_changes, l.holder_changes) << l.name;
    EXPECT_EQ(s.remote_holder_changes, l.remote_holder_changes) << l.name;
    EXPECT_EQ(s.line_transfers, l.line_transfers) << l.name;
    EXPECT_EQ(s.hold_ns, l.hold_ns) << l.name;
    EXPECT_EQ(s.wait_ns, l.wait_ns) << l.name;
  }
}

void CheckAgainstTotals(const Recorded& rec, int64_t status_ns) {
  ASSERT_FALSE(rec.snapshots.empty());
  std::vector<const SnapshotInterval*> intervals;
  int64_t expect_start = 0;
  for (const Snapshot& s : rec.snapshots) {
    if (!s.has_interval) {
      EXPECT_NE(s.virtual_ns % status_ns, 0) << s.virtual_ns;
      continue;
    }
    EXPECT_EQ(s.interval.start_ns, expect_start);
    EXPECT_EQ(s.interval.end_ns, s.virtual_ns);
    expect_start = s.interval.end_ns;
    intervals.push_back(&s.interval);
  }
  ASSERT_GE(intervals.size(), 3u);
  EXPECT_TRUE(rec.snapshots.back().has_interval) << "the last snapshot closes an interval";

  const Snapshot& last = rec.snapshots.back();
  for (int d = 0; d < stats::kNumDirs; ++d) {
    uint64_t ios = 0, bytes = 0, samples = 0;
    for (const SnapshotInterval* iv : intervals) {
      ios += iv->ios[d];
      bytes += iv->bytes[d];
      samples += iv->clat_samples[d];
      const int64_t len = iv->end_ns - iv->start_ns;
      EXPECT_NEAR(iv->iops[d], static_cast<double>(iv->ios[d]) * 1e9 / static_cast<double>(len), 1e-6);
    }
    EXPECT_EQ(ios, last.dir_ios[d]) << "dir " << d;
    EXPECT_EQ(bytes, last.dir_bytes[d]) << "dir " << d;
    uint64_t measured = 0;
    stats::LatencyHistogram whole;
    for (const CloneResult& c : rec.result.clones) {
      measured += c.result.dirs[d].total_ios;
      whole.Merge(c.result.dirs[d].clat_hist);
    }
    EXPECT_EQ(samples, measured) << "dir " << d;
    // The coarse buckets hold the same samples; merged over the run they
    // equal the whole run's fio buckets folded the same way.
    std::array<uint64_t, SnapshotInterval::kClatBuckets> coarse{};
    for (const SnapshotInterval* iv : intervals) {
      uint64_t in_buckets = 0;
      for (int i = 0; i < SnapshotInterval::kClatBuckets; ++i) {
        in_buckets += iv->clat_buckets[d][i];
        coarse[i] += iv->clat_buckets[d][i];
      }
      EXPECT_EQ(in_buckets, iv->clat_samples[d]) << "dir " << d;
      EXPECT_EQ(iv->clat_sum_ns[d] > 0, iv->clat_samples[d] > 0) << "dir " << d;
    }
    for (int b = 0; b < stats::LatencyHistogram::kNumBuckets; ++b) {
      if (whole.count(b) == 0) continue;
      const uint64_t v = stats::LatencyHistogram::BucketValue(b);
      // The coarse bucket whose range holds the fio bucket's value.
      int i = 0;
      while (i + 1 < SnapshotInterval::kClatBuckets &&
             static_cast<double>(v) >= SnapshotInterval::ClatBucketUpperNs(i)) {
        ++i;
      }
      ASSERT_GE(coarse[i], whole.count(b)) << "fio bucket " << b << " (" << v << " ns)";
      coarse[i] -= whole.count(b);
    }
    for (int i = 0; i < SnapshotInterval::kClatBuckets; ++i) EXPECT_EQ(coarse[i], 0u) << "bucket " << i;
    if (measured == 0) continue;
    const std::vector<uint64_t> final_pct = whole.Percentiles(SnapshotInterval::kPercentiles);
    for (size_t k = 0; k < SnapshotInterval::kPercentiles.size(); ++k) {
      uint64_t lo = UINT64_MAX, hi = 0;
      for (const SnapshotInterval* iv : intervals) {
        if (iv->clat_samples[d] == 0) continue;
        lo = std::min(lo, iv->clat_pct_ns[d][k]);
        hi = std::max(hi, iv->clat_pct_ns[d][k]);
      }
      EXPECT_LE(lo, final_pct[k]) << "dir " << d << " p" << SnapshotInterval::kPercentiles[k];
      EXPECT_GE(hi, final_pct[k]) << "dir " << d << " p" << SnapshotInterval::kPercentiles[k];
      EXPECT_GT(lo, 0u);
    }
  }

  for (const SnapshotInterval* iv : intervals) {
    double sum = 0;
    for (double p : iv->cpu_pct) {
      EXPECT_GE(p, 0.0);
      sum += p;
    }
    EXPECT_NEAR(sum, 100.0, 1e-6);
    EXPECT_GE(iv->contention_pct, 0.0);
    EXPECT_LE(iv->contention_pct, 100.0);
    for (const stats::LockRow& l : iv->locks) EXPECT_LE(l.contended, l.acquisitions) << l.name;
  }
  // Function times: sorted, within the busy time, and over the run equal to
  // the profile for every function that made every interval's top rows.
  std::map<std::string, int64_t> fn_ns;
  for (const SnapshotInterval* iv : intervals) {
    int64_t sum = 0;
    ASSERT_LE(iv->top_functions.size(), SnapshotInterval::kTopFunctions);
    for (size_t i = 0; i < iv->top_functions.size(); ++i) {
      sum += iv->top_functions[i].self_ns;
      fn_ns[iv->top_functions[i].function] += iv->top_functions[i].self_ns;
      if (i > 0) {
        EXPECT_GE(iv->top_functions[i - 1].self_ns, iv->top_functions[i].self_ns);
      }
    }
    EXPECT_GT(iv->busy_ns, 0);
    EXPECT_LE(sum, iv->busy_ns);
    ASSERT_EQ(iv->inflight.size(), 1u);
    EXPECT_EQ(iv->inflight[0].device, "nullb0");
    EXPECT_LE(iv->inflight[0].requests, 64u);  // iodepth 32 x 2 clones
  }
  std::map<std::string, int64_t> profile_ns;  // rows are per function and mode
  for (const stats::ProfileRow& p : rec.result.kernel.profile) profile_ns[p.function] += p.self_ns;
  ASSERT_FALSE(profile_ns.empty());
  auto top = std::max_element(profile_ns.begin(), profile_ns.end(),
                              [](const auto& a, const auto& b) { return a.second < b.second; });
  EXPECT_EQ(fn_ns[top->first], top->second) << top->first;
  // Busy intervals: usr and sys time on both CPUs.
  EXPECT_GT(intervals.front()->cpu_pct[static_cast<int>(stats::CpuMode::kUser)], 0.0);
  EXPECT_GT(intervals.front()->cpu_pct[static_cast<int>(stats::CpuMode::kSys)], 0.0);
  ExpectLocksAddUp(intervals, rec.result.kernel);
}

TEST(IntervalSnapshot, AddsUpToTheTotals) {
  const Recorded rec = RunRecorded(ContendedArgs(""), 10 * kMs, 50 * kMs);
  CheckAgainstTotals(rec, 50 * kMs);
  // The run contends: some interval shows the slowpath.
  double max_contention = 0;
  for (const Snapshot& s : rec.snapshots) {
    if (s.has_interval) max_contention = std::max(max_contention, s.interval.contention_pct);
  }
  EXPECT_GT(max_contention, 0.0);
  EXPECT_GT(rec.result.kernel.contention_pct, 0.0);
}

// Hold time lands at the unlock: with intervals of a few microseconds many
// sections span a boundary into an interval where the lock is not taken
// again, and their hold time must still count there.
TEST(IntervalSnapshot, LockTimesAddUpWithShortIntervals) {
  constexpr int64_t kUs = 1000;
  const Recorded rec = RunRecorded(ContendedArgs("--runtime=4ms"), 2 * kUs, 4 * kUs);
  std::vector<const SnapshotInterval*> intervals;
  for (const Snapshot& s : rec.snapshots) {
    if (s.has_interval) intervals.push_back(&s.interval);
  }
  EXPECT_GT(intervals.size(), 500u);
  ASSERT_FALSE(rec.result.kernel.locks.empty());
  ExpectLocksAddUp(intervals, rec.result.kernel);
}

// With ramp_time the IO counts include the ramp, the clat samples do not.
TEST(IntervalSnapshot, RampTimeIsCountedButNotMeasured) {
  const Recorded rec = RunRecorded(ContendedArgs("--ramp_time=30ms"), 10 * kMs, 50 * kMs);
  CheckAgainstTotals(rec, 50 * kMs);
  uint64_t samples = 0;
  for (const Snapshot& s : rec.snapshots) {
    if (s.has_interval && s.interval.end_ns <= 30 * kMs) samples += s.interval.clat_samples[0];
  }
  EXPECT_EQ(samples, 0u);
}

// The interval view does not change the run.
TEST(IntervalSnapshot, ResultsDoNotDependOnIt) {
  const Recorded with = RunRecorded(ContendedArgs(""), 10 * kMs, 50 * kMs);
  const Recorded without = RunRecorded(ContendedArgs(""), 10 * kMs, 0);
  for (const Snapshot& s : without.snapshots) EXPECT_FALSE(s.has_interval);
  ASSERT_EQ(with.result.clones.size(), without.result.clones.size());
  for (size_t i = 0; i < with.result.clones.size(); ++i) {
    for (int d = 0; d < stats::kNumDirs; ++d) {
      EXPECT_EQ(with.result.clones[i].result.dirs[d].total_ios, without.result.clones[i].result.dirs[d].total_ios);
      EXPECT_EQ(with.result.clones[i].result.dirs[d].clat.mean(),
                without.result.clones[i].result.dirs[d].clat.mean());
    }
  }
  EXPECT_EQ(with.result.events, without.result.events);
}

}  // namespace
}  // namespace blklab
