// The comparison core's summary (compare/compare.h): the rows of the table
// (a (point, variant) over its samples, its difference to the baseline) and
// what changed most in the profile and the locks against the baseline.
#include "compare/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace blklab::compare {
namespace {

Change Diff(const CellResult& base, const CellResult& var, size_t point, size_t variant) {
  constexpr size_t kProfileRows = 6;
  constexpr size_t kLockRows = 3;
  Change ch;
  ch.point = point;
  ch.variant = variant;
  std::map<std::pair<std::string, std::string>, ProfileChange> prof;
  for (const stats::ProfileRow& p : base.profile) {
    ProfileChange& pc = prof[{p.function, stats::CpuModeName(p.mode)}];
    pc.function = p.function;
    pc.mode = stats::CpuModeName(p.mode);
    pc.baseline_pct = p.share_pct;
  }
  for (const stats::ProfileRow& p : var.profile) {
    ProfileChange& pc = prof[{p.function, stats::CpuModeName(p.mode)}];
    pc.function = p.function;
    pc.mode = stats::CpuModeName(p.mode);
    pc.variant_pct = p.share_pct;
  }
  for (auto& [key, pc] : prof) ch.profile.push_back(pc);
  std::stable_sort(ch.profile.begin(), ch.profile.end(), [](const ProfileChange& a, const ProfileChange& b) {
    return std::fabs(a.variant_pct - a.baseline_pct) > std::fabs(b.variant_pct - b.baseline_pct);
  });
  if (ch.profile.size() > kProfileRows) ch.profile.resize(kProfileRows);
  std::map<std::string, LockChange> locks;
  auto add = [&locks](const stats::LockRow& l, uint64_t ios, bool is_base) {
    LockChange& lc = locks[l.name];
    lc.name = l.name;
    const double cont = l.acquisitions == 0 ? 0 : 100.0 * static_cast<double>(l.contended) / static_cast<double>(l.acquisitions);
    const double wait = ios == 0 ? 0 : static_cast<double>(l.wait_ns) / static_cast<double>(ios);
    (is_base ? lc.baseline_contended_pct : lc.variant_contended_pct) = cont;
    (is_base ? lc.baseline_wait_ns_per_io : lc.variant_wait_ns_per_io) = wait;
  };
  for (const stats::LockRow& l : base.locks) add(l, base.ios, true);
  for (const stats::LockRow& l : var.locks) add(l, var.ios, false);
  for (auto& [name, lc] : locks) ch.locks.push_back(lc);
  std::stable_sort(ch.locks.begin(), ch.locks.end(), [](const LockChange& a, const LockChange& b) {
    return std::fabs(a.variant_wait_ns_per_io - a.baseline_wait_ns_per_io) >
           std::fabs(b.variant_wait_ns_per_io - b.baseline_wait_ns_per_io);
  });
  if (ch.locks.size() > kLockRows) ch.locks.resize(kLockRows);
  return ch;
}

// A cell's clat p50 and p99, when it completed I/O.
std::optional<std::pair<uint64_t, uint64_t>> P50P99(const CellResult& r) {
  std::optional<uint64_t> p50, p99;
  for (const auto& [pct, ns] : r.clat_percentiles) {
    if (pct == 50) p50 = ns;
    if (pct == 99) p99 = ns;
  }
  if (!p50 || !p99) return std::nullopt;
  return std::make_pair(*p50, *p99);
}

}  // namespace

void Summarize(const Comparison& c, Results& res) {
  const size_t points = NumPoints(c);
  for (size_t p = 0; p < points; ++p) {
    for (size_t v = 0; v < c.variants.size(); ++v) {
      Row row;
      row.point = p;
      row.variant = v;
      double sum = 0, sum2 = 0, usr = 0, sys = 0, cont = 0, ksys = 0, p50 = 0, p99 = 0;
      int with_clat = 0;
      row.iops_min = 1e300;
      for (int s = 0; s < c.samples; ++s) {
        const CellResult& r = res.results[CellIndex(c, p, v, s)];
        if (!r.stalled.empty()) row.stalled = true;
        sum += r.iops;
        sum2 += r.iops * r.iops;
        usr += r.usr_pct;
        sys += r.sys_pct;
        cont += r.contention_pct;
        ksys += r.kernel_sys_pct;
        if (row.bound.empty()) row.bound = r.bound;
        if (const std::optional<std::pair<uint64_t, uint64_t>> q = P50P99(r)) {
          p50 += static_cast<double>(q->first);
          p99 += static_cast<double>(q->second);
          ++with_clat;
        }
        row.iops_min = std::min(row.iops_min, r.iops);
        row.iops_max = std::max(row.iops_max, r.iops);
      }
      const double n = c.samples;
      row.iops = sum / n;
      row.usr_pct = usr / n;
      row.sys_pct = sys / n;
      row.contention_pct = cont / n;
      row.kernel_sys_pct = ksys / n;
      if (with_clat > 0) {
        row.clat_p50_ns = p50 / with_clat;
        row.clat_p99_ns = p99 / with_clat;
      }
      if (c.samples > 1 && row.iops > 0) {
        const double var = std::max(0.0, (sum2 - sum * sum / n) / (n - 1));
        row.iops_stdev_pct = 100.0 * std::sqrt(var) / row.iops;
      }
      res.rows.push_back(row);
    }
    const Row& base = res.rows[res.rows.size() - c.variants.size()];
    for (size_t v = 1; v < c.variants.size(); ++v) {
      Row& row = res.rows[res.rows.size() - c.variants.size() + v];
      if (base.stalled || row.stalled) continue;  // no difference to a run that never finished
      if (base.iops > 0) row.diff_pct = 100.0 * (row.iops / base.iops - 1.0);
      res.changes.push_back(Diff(res.results[CellIndex(c, p, 0, 0)], res.results[CellIndex(c, p, v, 0)], p, v));
    }
  }
}

}  // namespace blklab::compare
