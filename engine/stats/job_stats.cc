// engine/stats/job_stats.cc
#include "engine/stats/job_stats.h"

#include <algorithm>

#include "engine/stats/job_log.h"
#include "engine/util/check.h"

namespace blklab::stats {

const char* DirName(Dir dir) {
  switch (dir) {
    case Dir::kRead:
      return "read";
    case Dir::kWrite:
      return "write";
    case Dir::kTrim:
      return "trim";
  }
  return "?";
}

// --- Distributions -----------------------------------------------------------

void LatencyDistribution::Merge(const LatencyDistribution& other) {
  for (int i = 0; i < kLatNsBuckets; ++i) ns[i] += other.ns[i];
  for (int i = 0; i < kLatUsBuckets; ++i) us[i] += other.us[i];
  for (int i = 0; i < kLatMsBuckets; ++i) ms[i] += other.ms[i];
}

uint64_t LatencyDistribution::total() const {
  uint64_t t = 0;
  for (uint64_t v : ns) t += v;
  for (uint64_t v : us) t += v;
  for (uint64_t v : ms) t += v;
  return t;
}

namespace {

// 100 * count / total, with a non-zero share raised to at least `floor`.
double Share(uint64_t count, uint64_t total, double floor) {
  if (total == 0 || count == 0) return 0.0;
  const double pct = 100.0 * static_cast<double>(count) / static_cast<double>(total);
  return pct < floor ? floor : pct;
}

}  // namespace

std::array<double, kDepthBuckets> DepthShares(const std::array<uint64_t, kDepthBuckets>& counts) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  std::array<double, kDepthBuckets> out{};
  for (int i = 0; i < kDepthBuckets; ++i) out[i] = Share(counts[i], total, 0.1);
  return out;
}

LatencyShares ComputeLatencyShares(const LatencyDistribution& dist) {
  const uint64_t total = dist.total();
  LatencyShares out;
  for (int i = 0; i < kLatNsBuckets; ++i) out.ns[i] = Share(dist.ns[i], total, 0.01);
  for (int i = 0; i < kLatUsBuckets; ++i) out.us[i] = Share(dist.us[i], total, 0.01);
  for (int i = 0; i < kLatMsBuckets; ++i) out.ms[i] = Share(dist.ms[i], total, 0.01);
  return out;
}

// --- Results ------------------------------------------------------------------

uint64_t DirResult::bw_bytes_per_sec() const {
  if (runtime_ms <= 0) return 0;
  return static_cast<uint64_t>(static_cast<unsigned __int128>(io_bytes) * 1000 /
                               static_cast<uint64_t>(runtime_ms));
}

double DirResult::iops() const {
  if (runtime_ms <= 0) return 0.0;
  return 1000.0 * static_cast<double>(total_ios) / static_cast<double>(runtime_ms);
}

void DirResult::Merge(const DirResult& other) {
  io_bytes += other.io_bytes;
  total_ios += other.total_ios;
  short_ios += other.short_ios;
  drop_ios += other.drop_ios;
  runtime_ms = std::max(runtime_ms, other.runtime_ms);
  slat.Merge(other.slat);
  clat.Merge(other.clat);
  lat.Merge(other.lat);
  slat_hist.Merge(other.slat_hist);
  clat_hist.Merge(other.clat_hist);
  lat_hist.Merge(other.lat_hist);
  bw_samples.MergeSum(other.bw_samples);
  iops_samples.MergeSum(other.iops_samples);
}

void SyncResult::Merge(const SyncResult& other) {
  total_ios += other.total_ios;
  lat.Merge(other.lat);
  lat_hist.Merge(other.lat_hist);
}

DirResult JobResult::UnifiedDir() const {
  DirResult mixed = dirs[0];
  for (int d = 1; d < kNumDirs; ++d) mixed.Merge(dirs[d]);
  return mixed;
}

JobResult MergeJobResults(absl::Span<const JobResult* const> results) {
  BLKLAB_CHECK(!results.empty());
  JobResult out = *results[0];
  double usr_weighted = out.cpu.usr_pct * static_cast<double>(out.job_runtime_ms);
  double sys_weighted = out.cpu.sys_pct * static_cast<double>(out.job_runtime_ms);
  for (size_t i = 1; i < results.size(); ++i) {
    const JobResult& r = *results[i];
    for (int d = 0; d < kNumDirs; ++d) out.dirs[d].Merge(r.dirs[d]);
    out.sync.Merge(r.sync);
    for (int k = 0; k < 4; ++k) out.issued[k] += r.issued[k];
    out.job_runtime_ms += r.job_runtime_ms;
    usr_weighted += r.cpu.usr_pct * static_cast<double>(r.job_runtime_ms);
    sys_weighted += r.cpu.sys_pct * static_cast<double>(r.job_runtime_ms);
    out.cpu.ctx += r.cpu.ctx;
    out.cpu.majf += r.cpu.majf;
    out.cpu.minf += r.cpu.minf;
    for (int k = 0; k < kDepthBuckets; ++k) out.iodepth[k] += r.iodepth[k];
    for (int k = 0; k < kBatchBuckets; ++k) {
      out.submit[k] += r.submit[k];
      out.complete[k] += r.complete[k];
    }
    out.lat_dist.Merge(r.lat_dist);
    out.num_jobs += r.num_jobs;
    if (out.error == 0 && r.error != 0) {
      out.error = r.error;
      out.verror = r.verror;
    }
  }
  if (results.size() > 1 && out.job_runtime_ms > 0) {
    out.cpu.usr_pct = usr_weighted / static_cast<double>(out.job_runtime_ms);
    out.cpu.sys_pct = sys_weighted / static_cast<double>(out.job_runtime_ms);
  }
  return out;
}

// --- Collector ----------------------------------------------------------------

JobStatsCollector::JobStatsCollector(const CollectorConfig& config) : config_(config) {}

void JobStatsCollector::Start(int64_t now_ns) {
  result_ = JobResult();
  started_ = true;
  start_ns_ = now_ns;
  auto arm = [now_ns](RateWindow& w, int64_t period) {
    w = RateWindow();
    w.period_ns = period;
    w.last_ns = now_ns;
    w.next_ns = period > 0 ? now_ns + period : std::numeric_limits<int64_t>::max();
  };
  arm(bw_window_, config_.bw_avg_ns);
  arm(iops_window_, config_.iops_avg_ns);
  next_window_ns_ = std::min(bw_window_.next_ns, iops_window_.next_ns);
  if (logger_ != nullptr) logger_->Start();
}

void JobStatsCollector::CloseRateWindows(int64_t now_ns) {
  // One sample per direction that moved since the previous sample, as the
  // rate over the time since that sample (fio skips idle directions).
  auto close = [&](RateWindow& w, bool bytes) {
    if (now_ns < w.next_ns) return;
    const int64_t spent_ns = now_ns - w.last_ns;
    for (int d = 0; d < kNumDirs; ++d) {
      DirResult& dr = result_.dirs[d];
      const uint64_t count = bytes ? dr.io_bytes : dr.total_ios;
      const uint64_t delta = count - w.last_count[d];
      w.last_count[d] = count;
      if (delta == 0 || spent_ns <= 0) continue;
      long double rate = static_cast<long double>(delta) * 1e9L / static_cast<long double>(spent_ns);
      if (bytes) {
        dr.bw_samples.Add(static_cast<uint64_t>(rate / 1024.0L));
      } else {
        dr.iops_samples.Add(static_cast<uint64_t>(rate));
      }
    }
    w.last_ns = now_ns;
    // Next boundary strictly after now, on the grid of the start time.
    const int64_t periods = (now_ns - w.next_ns) / w.period_ns + 1;
    w.next_ns += periods * w.period_ns;
  };
  close(bw_window_, /*bytes=*/true);
  close(iops_window_, /*bytes=*/false);
  next_window_ns_ = std::min(bw_window_.next_ns, iops_window_.next_ns);
}

void JobStatsCollector::LogCompletion(int64_t now_ns, Dir dir, uint32_t bytes, int64_t slat_ns,
                                      int64_t clat_ns, uint64_t offset) {
  logger_->OnCompletion(now_ns - start_ns_, dir, bytes, offset, slat_ns, clat_ns);
}

JobResult JobStatsCollector::Peek(int64_t now_ns) const {
  if (!started_) return JobResult();
  JobResult out = result_;
  const int64_t runtime_ms = std::max<int64_t>(now_ns - start_ns_, 0) / 1'000'000;
  out.job_runtime_ms = runtime_ms;
  for (DirResult& d : out.dirs) d.runtime_ms = d.total_ios > 0 ? runtime_ms : 0;
  return out;
}

JobResult JobStatsCollector::Finish(int64_t now_ns) {
  BLKLAB_CHECK(started_);
  BLKLAB_CHECK(now_ns >= start_ns_);
  const int64_t runtime_ms = (now_ns - start_ns_) / 1'000'000;
  result_.job_runtime_ms = runtime_ms;
  for (DirResult& d : result_.dirs) d.runtime_ms = d.total_ios > 0 ? runtime_ms : 0;
  if (logger_ != nullptr) logger_->Finish(now_ns - start_ns_);
  started_ = false;
  next_window_ns_ = std::numeric_limits<int64_t>::max();
  JobResult out = std::move(result_);
  result_ = JobResult();  // keep the collector usable (histograms allocated)
  return out;
}

}  // namespace blklab::stats
