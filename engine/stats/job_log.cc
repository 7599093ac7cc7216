// engine/stats/job_log.cc
#include "engine/stats/job_log.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace blklab::stats {

namespace {
constexpr int64_t kNsPerMs = 1'000'000;
}  // namespace

JobLogger::JobLogger(JobLogConfig config) : config_(std::move(config)) {
  enabled_[kBw] = !config_.bw_prefix.empty();
  enabled_[kIops] = !config_.iops_prefix.empty();
  enabled_[kLat] = enabled_[kSlat] = enabled_[kClat] = !config_.lat_prefix.empty();
  hist_enabled_ = !config_.hist_prefix.empty() && config_.hist_msec > 0;
  // fio's last column: the raw ioprio with log_prio, else 1 for the
  // realtime class (IOPRIO_CLASS_RT = 1, class in bits 13..15).
  prio_column_ = config_.log_prio ? absl::StrFormat("0x%04x\n", config_.ioprio)
                                  : ((config_.ioprio >> 13) == 1 ? "1\n" : "0\n");
  Start();
}

void JobLogger::Start() {
  for (auto& t : text_) t.clear();
  for (auto& k : windows_) k.fill(Window{});
  hist_text_.clear();
  for (auto& h : hist_window_) h.Clear();
  hist_bs_.fill(0);
  next_avg_ns_ = config_.avg_msec * kNsPerMs;
  next_hist_ns_ = config_.hist_msec * kNsPerMs;
}

void JobLogger::AppendLine(Kind kind, int64_t t_ms, uint64_t value, Dir dir, uint64_t bs,
                           uint64_t offset) {
  std::string& out = text_[kind];
  absl::StrAppend(&out, t_ms, ", ", value, ", ", static_cast<int>(dir), ", ", bs, ", ");
  if (config_.log_offset) absl::StrAppend(&out, offset, ", ");
  out += prio_column_;
}

void JobLogger::OnCompletion(int64_t t_ns, Dir dir, uint32_t bytes, uint64_t offset,
                             int64_t slat_ns, int64_t clat_ns) {
  const int d = static_cast<int>(dir);
  const uint64_t clat = static_cast<uint64_t>(clat_ns);
  const uint64_t lat = clat + (slat_ns > 0 ? static_cast<uint64_t>(slat_ns) : 0);
  if (hist_enabled_) {
    while (t_ns >= next_hist_ns_) {
      FlushHist(next_hist_ns_ / kNsPerMs);
      next_hist_ns_ += config_.hist_msec * kNsPerMs;
    }
    hist_window_[d].Add(clat);
    hist_bs_[d] = bytes;
  }
  if (config_.avg_msec <= 0) {
    const int64_t t_ms = t_ns / kNsPerMs;
    if (enabled_[kBw]) {
      const uint64_t kib_s =
          lat > 0 ? static_cast<uint64_t>(static_cast<long double>(bytes) * 1e9L / lat / 1024.0L)
                  : 0;
      AppendLine(kBw, t_ms, kib_s, dir, bytes, offset);
    }
    if (enabled_[kIops]) AppendLine(kIops, t_ms, 1, dir, bytes, offset);
    if (enabled_[kLat]) {
      AppendLine(kLat, t_ms, lat, dir, bytes, offset);
      if (slat_ns >= 0) AppendLine(kSlat, t_ms, static_cast<uint64_t>(slat_ns), dir, bytes, offset);
      AppendLine(kClat, t_ms, clat, dir, bytes, offset);
    }
    return;
  }
  if (t_ns >= next_avg_ns_) {
    const int64_t period = config_.avg_msec * kNsPerMs;
    FlushAveraged(next_avg_ns_ / kNsPerMs, /*latency_only=*/false);
    next_avg_ns_ += ((t_ns - next_avg_ns_) / period + 1) * period;
  }
  auto add = [&](Kind kind, uint64_t v) {
    Window& w = windows_[kind][d];
    w.sum += v;
    ++w.count;
    if (v > w.max) w.max = v;
  };
  add(kBw, bytes);
  add(kIops, 1);
  add(kLat, lat);
  if (slat_ns >= 0) add(kSlat, static_cast<uint64_t>(slat_ns));
  add(kClat, clat);
}

void JobLogger::FlushAveraged(int64_t stamp_ms, bool latency_only) {
  for (int k = 0; k < kNumKinds; ++k) {
    const bool rate = (k == kBw || k == kIops);
    for (int d = 0; d < kNumDirs; ++d) {
      Window& w = windows_[k][d];
      if (w.count == 0 || (latency_only && rate)) continue;
      if (enabled_[k]) {
        uint64_t value;
        if (k == kBw) {  // KiB/s over the window
          value = static_cast<uint64_t>(std::llround(static_cast<double>(w.sum) * 1000.0 /
                                                     static_cast<double>(config_.avg_msec) / 1024.0));
        } else if (k == kIops) {
          value = static_cast<uint64_t>(std::llround(static_cast<double>(w.count) * 1000.0 /
                                                     static_cast<double>(config_.avg_msec)));
        } else {
          value = config_.max_value
                      ? w.max
                      : static_cast<uint64_t>(std::llround(static_cast<double>(w.sum) /
                                                           static_cast<double>(w.count)));
        }
        AppendLine(static_cast<Kind>(k), stamp_ms, value, static_cast<Dir>(d), 0, 0);
      }
      w = Window{};
    }
  }
}

void JobLogger::FlushHist(int64_t stamp_ms) {
  for (int d = 0; d < kNumDirs; ++d) {
    LatencyHistogram& h = hist_window_[d];
    if (h.total() == 0) continue;
    absl::StrAppend(&hist_text_, stamp_ms, ", ", d, ", ", hist_bs_[d]);
    // log_hist_coarseness N: each bin sums 2^N adjacent fio buckets.
    const absl::Span<const uint64_t> counts = h.counts();
    const size_t stride = size_t{1} << std::clamp(config_.hist_coarseness, 0, 16);
    for (size_t j = 0; j < counts.size(); j += stride) {
      uint64_t sum = 0;
      for (size_t k = j; k < std::min(j + stride, counts.size()); ++k) sum += counts[k];
      absl::StrAppend(&hist_text_, ", ", sum);
    }
    hist_text_ += '\n';
    h.Clear();
  }
}

void JobLogger::Finish(int64_t t_ns) {
  if (config_.avg_msec > 0) FlushAveraged(t_ns / kNsPerMs, /*latency_only=*/true);
}

std::string JobLogger::FileName(const std::string& prefix, const char* type) const {
  if (config_.per_job_logs) return absl::StrCat(prefix, "_", type, ".", config_.thread_number, ".log");
  return absl::StrCat(prefix, "_", type, ".log");
}

std::vector<LogFile> JobLogger::TakeFiles() {
  std::vector<LogFile> files;
  auto take = [&](Kind kind, const std::string& prefix, const char* type) {
    if (enabled_[kind]) files.push_back({FileName(prefix, type), std::move(text_[kind])});
    text_[kind].clear();
  };
  take(kBw, config_.bw_prefix, "bw");
  take(kIops, config_.iops_prefix, "iops");
  take(kLat, config_.lat_prefix, "lat");
  take(kSlat, config_.lat_prefix, "slat");
  take(kClat, config_.lat_prefix, "clat");
  if (hist_enabled_) files.push_back({FileName(config_.hist_prefix, "clat_hist"), std::move(hist_text_)});
  hist_text_.clear();
  return files;
}

}  // namespace blklab::stats
