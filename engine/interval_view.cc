#include "engine/interval_view.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

namespace blklab {
namespace {

// Folds fio's log-linear buckets into SnapshotInterval's coarser ones (see
// SnapshotInterval::clat_buckets) and sums their representative values.
void CoarsenClat(const stats::LatencyHistogram& h,
                 std::array<uint64_t, SnapshotInterval::kClatBuckets>& buckets, double& sum_ns) {
  using H = stats::LatencyHistogram;
  using S = SnapshotInterval;
  static_assert(H::kBucketsPerGroup % S::kClatSubBuckets == 0);
  constexpr int kFioPerCoarse = H::kBucketsPerGroup / S::kClatSubBuckets;  // 16
  const absl::Span<const uint64_t> counts = h.counts();
  for (int b = 0; b < H::kNumBuckets; ++b) {
    if (counts[b] == 0) continue;
    // b < 128: single values below 2^7 ns. Above, group g = b / 64 covers
    // [2^(g+5), 2^(g+6)) in 64 equal parts; part k ends at
    // 2^(g+5) x (1 + (k+1)/64), inside coarse part k / 16 + 1 of that power.
    int i = 0;
    if (b >= 2 * H::kBucketsPerGroup) {
      const int log2_low = (b >> H::kPrecisionBits) + 5;
      const int k = b & (H::kBucketsPerGroup - 1);
      i = (log2_low - S::kClatBucketLog2Min) * S::kClatSubBuckets + k / kFioPerCoarse + 1;
    }
    buckets[std::clamp(i, 0, S::kClatBuckets - 1)] += counts[b];
    sum_ns += static_cast<double>(counts[b]) * static_cast<double>(H::BucketValue(b));
  }
}

}  // namespace

void IntervalTracker::Fill(const Simulation& s, sim::SimTime end, SnapshotInterval& out) {
  out.start_ns = start_;
  out.end_ns = end;
  const int64_t len = end - start_;
  start_ = end;
  FillIos(s, len, out);
  FillCpu(*s.machine, len, out);
  FillFunctions(*s.machine, out);

  // Requests in flight per device.
  out.inflight.clear();
  for (size_t dev = 0; dev < s.queues.size(); ++dev) {
    if (s.queues[dev] == nullptr) continue;
    out.inflight.push_back({s.plan.disks[dev].name, s.queues[dev]->requests_outstanding()});
  }
  FillLocks(*s.machine, out);
}

// IOs, bytes and clat histograms per clone and direction.
void IntervalTracker::FillIos(const Simulation& s, int64_t len, SnapshotInterval& out) {
  for (size_t i = 0; i < s.clones.size(); ++i) {
    const job::JobThread& c = *s.clones[i];
    for (int d = 0; d < stats::kNumDirs; ++d) {
      out.ios[d] += c.dir_ios_completed()[d] - ios_[i][d];
      out.bytes[d] += c.dir_bytes_completed()[d] - bytes_[i][d];
      ios_[i][d] = c.dir_ios_completed()[d];
      bytes_[i][d] = c.dir_bytes_completed()[d];
      const stats::LatencyHistogram& h = c.clat_hist(static_cast<stats::Dir>(d));
      if (h.total() == clat_total_[i][d]) continue;
      std::vector<uint64_t>& prev = clat_[i][d];
      if (prev.empty()) prev.assign(stats::LatencyHistogram::kNumBuckets, 0);
      const absl::Span<const uint64_t> counts = h.counts();
      for (int b = 0; b < stats::LatencyHistogram::kNumBuckets; ++b) {
        if (counts[b] == prev[b]) continue;
        scratch_[d].AddToBucket(b, counts[b] - prev[b]);
        prev[b] = counts[b];
      }
      clat_total_[i][d] = h.total();
    }
  }
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (len > 0) {
      out.iops[d] = static_cast<double>(out.ios[d]) * 1e9 / static_cast<double>(len);
      out.bw_bytes_per_sec[d] = static_cast<uint64_t>(static_cast<long double>(out.bytes[d]) * 1e9L /
                                                      static_cast<long double>(len));
    }
    out.clat_samples[d] = scratch_[d].total();
    if (scratch_[d].total() == 0) continue;
    const std::vector<uint64_t> v = scratch_[d].Percentiles(SnapshotInterval::kPercentiles);
    for (size_t k = 0; k < v.size() && k < out.clat_pct_ns[d].size(); ++k) out.clat_pct_ns[d][k] = v[k];
    CoarsenClat(scratch_[d], out.clat_buckets[d], out.clat_sum_ns[d]);
    scratch_[d].Clear();
  }
}

// CPU modes and the spinlock slowpath, summed over the host's CPUs.
void IntervalTracker::FillCpu(const sim::Machine& m, int64_t len, SnapshotInterval& out) {
  std::array<int64_t, 4> modes{};
  int64_t slow = 0;
  for (int c = 0; c < m.num_cpus(); ++c) {
    const sim::Cpu& cpu = m.cpu(c);
    for (int mode = 0; mode < 4; ++mode) {
      const int64_t ns = cpu.mode_ns(static_cast<sim::Mode>(mode));
      modes[mode] += ns - cpu_[c][mode];
      cpu_[c][mode] = ns;
    }
    if (slowpath_fn_ >= 0) {
      int64_t ns = 0;
      for (int mode = 0; mode < 4; ++mode) {
        ns += cpu.fn_ns(static_cast<sim::FnId>(slowpath_fn_), static_cast<sim::Mode>(mode));
      }
      slow += ns - slow_[c];
      slow_[c] = ns;
    }
  }
  const int64_t busy = modes[0] + modes[1] + modes[2] + modes[3];
  const int64_t total = len * m.num_cpus();
  // A CPU may run a step past the interval's end; the next one makes up.
  const double denom = static_cast<double>(std::max(total, busy));
  if (denom > 0) {
    for (int mode = 0; mode < 4; ++mode) out.cpu_pct[mode] = 100.0 * static_cast<double>(modes[mode]) / denom;
    out.cpu_pct[4] = 100.0 * static_cast<double>(std::max<int64_t>(total - busy, 0)) / denom;
  }
  out.contention_pct = busy > 0 ? 100.0 * static_cast<double>(slow) / static_cast<double>(busy) : 0;
  out.busy_ns = busy;
}

// Self time per function, summed over CPUs and modes; the top rows.
void IntervalTracker::FillFunctions(const sim::Machine& m, SnapshotInterval& out) {
  const sim::FunctionRegistry& fns = m.functions();
  if (fn_.size() < fns.size()) fn_.resize(fns.size(), 0);
  out.top_functions.clear();
  std::vector<int64_t> self(fns.size(), 0);  // a composite row split (FunctionRegistry::SetParts)
  for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
    int64_t ns = 0;
    for (int c = 0; c < m.num_cpus(); ++c) {
      for (int mode = 0; mode < 4; ++mode) ns += m.cpu(c).fn_ns(fn, static_cast<sim::Mode>(mode));
    }
    const int64_t delta = ns - fn_[fn];
    fn_[fn] = ns;
    if (delta > 0) fns.SplitTime(fn, delta, [&](sim::FnId part, int64_t part_ns) { self[part] += part_ns; });
  }
  for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
    if (self[fn] > 0) out.top_functions.push_back({fns.name(fn), self[fn]});
  }
  const auto by_time = [](const SnapshotInterval::FunctionTime& a, const SnapshotInterval::FunctionTime& b) {
    return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.function < b.function;
  };
  if (out.top_functions.size() > SnapshotInterval::kTopFunctions) {
    std::partial_sort(out.top_functions.begin(),
                      out.top_functions.begin() + SnapshotInterval::kTopFunctions, out.top_functions.end(),
                      by_time);
    out.top_functions.resize(SnapshotInterval::kTopFunctions);
  } else {
    std::sort(out.top_functions.begin(), out.top_functions.end(), by_time);
  }
}

// Locks, summed by name.
void IntervalTracker::FillLocks(const sim::Machine& m, SnapshotInterval& out) {
  const std::vector<sim::SpinLock*>& locks = m.locks();
  if (locks_.size() < locks.size()) locks_.resize(locks.size());
  std::map<std::string, stats::LockRow> rows;  // ordered by name: deterministic
  for (size_t i = 0; i < locks.size(); ++i) {
    const sim::LockStats& st = locks[i]->stats();
    sim::LockStats& prev = locks_[i];
    // Hold time and line transfers land at the unlock: a section that spans
    // the interval's start counts in this interval even with no new
    // acquisition here.
    if (st.acquisitions != prev.acquisitions || st.hold_ns != prev.hold_ns || st.wait_ns != prev.wait_ns ||
        st.line_transfers != prev.line_transfers || st.wait_irqs_off_ns != prev.wait_irqs_off_ns) {
      stats::LockRow& row = rows[locks[i]->name()];
      row.name = locks[i]->name();
      row.acquisitions += st.acquisitions - prev.acquisitions;
      row.contended += st.contended - prev.contended;
      row.wait_ns += st.wait_ns - prev.wait_ns;
      row.hold_ns += st.hold_ns - prev.hold_ns;
      row.holder_changes += st.holder_changes - prev.holder_changes;
      row.remote_holder_changes += st.remote_holder_changes - prev.remote_holder_changes;
      row.line_transfers += st.line_transfers - prev.line_transfers;
      row.wait_irqs_off_ns += st.wait_irqs_off_ns - prev.wait_irqs_off_ns;
    }
    prev = st;
  }
  out.locks.clear();
  for (auto& [name, row] : rows) out.locks.push_back(std::move(row));
}


}  // namespace blklab
