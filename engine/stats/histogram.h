// engine/stats/histogram.h
//
// LatencyHistogram models fio's per-IO latency histogram (the `io_u_plat`
// arrays of fio's stat layer, docs/fio-compatibility.md c.5): a log-linear histogram of
// nanosecond samples with 6 precision bits and 1856 buckets. Values 0..127
// have one bucket each; above that every power-of-two range [2^m, 2^(m+1))
// is split into 64 equal sub-buckets. Percentiles and json+ "bins" are
// computed from these buckets exactly as fio does, so blklab's percentile
// values and bin keys use the same representative values as fio's.
//
// Error bound: a reported value is the middle of its bucket, so its relative
// error is at most 1/2^7 (0.78%) of the true sample. Samples >= 2^34 ns
// (~17.2 s) all land in the last bucket.
//
// Invariants: total() == sum of all bucket counts.
// Thread-safety: thread-compatible (one collector per simulated job).
// Cost: Add() is a count-leading-zeros, a shift and one increment; it never
//   allocates. The buckets (1856 x 8 bytes = 14.5 KiB) are allocated once at
//   construction so the type moves cheaply.
#ifndef BLKLAB_ENGINE_STATS_HISTOGRAM_H_
#define BLKLAB_ENGINE_STATS_HISTOGRAM_H_

#include <bit>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/types/span.h"

namespace blklab::stats {

class LatencyHistogram {
 public:
  static constexpr int kPrecisionBits = 6;
  static constexpr int kBucketsPerGroup = 1 << kPrecisionBits;  // 64
  static constexpr int kGroups = 29;
  static constexpr int kNumBuckets = kGroups * kBucketsPerGroup;  // 1856

  // Bucket of a sample of `ns` nanoseconds (clamped to the last bucket).
  static constexpr int BucketIndex(uint64_t ns) {
    if (ns < 2 * kBucketsPerGroup) return static_cast<int>(ns);
    const int msb = std::bit_width(ns) - 1;  // >= 7
    const int shift = msb - kPrecisionBits;  // low bits dropped
    const uint64_t index = static_cast<uint64_t>(kBucketsPerGroup) * (shift + 1) +
                           ((ns >> shift) & (kBucketsPerGroup - 1));
    return index >= kNumBuckets ? kNumBuckets - 1 : static_cast<int>(index);
  }

  // Representative value of bucket `index` in ns: the bucket itself below
  // 128, else the (truncated) middle of the bucket.
  // REQUIRES: 0 <= index < kNumBuckets.
  static constexpr uint64_t BucketValue(int index) {
    if (index < 2 * kBucketsPerGroup) return static_cast<uint64_t>(index);
    const int shift = (index >> kPrecisionBits) - 1;
    const int k = index & (kBucketsPerGroup - 1);
    const double base = static_cast<double>(uint64_t{1} << (shift + kPrecisionBits));
    const double width = static_cast<double>(uint64_t{1} << shift);
    return static_cast<uint64_t>(base + (k + 0.5) * width);
  }

  LatencyHistogram();
  LatencyHistogram(const LatencyHistogram& other);
  LatencyHistogram& operator=(const LatencyHistogram& other);
  LatencyHistogram(LatencyHistogram&&) noexcept = default;
  LatencyHistogram& operator=(LatencyHistogram&&) noexcept = default;

  // Records one sample. Hot path.
  void Add(uint64_t ns) {
    ++counts_[BucketIndex(ns)];
    ++total_;
  }
  // Records `n` samples in bucket `index` (used to rebuild a histogram from
  // exported counts). REQUIRES: 0 <= index < kNumBuckets.
  void AddToBucket(int index, uint64_t n);

  // Adds all counts of `other` (group_reporting and unified "mixed").
  void Merge(const LatencyHistogram& other);
  void Clear();

  uint64_t total() const { return total_; }
  uint64_t count(int index) const { return counts_[index]; }
  absl::Span<const uint64_t> counts() const {
    return absl::MakeConstSpan(counts_.get(), kNumBuckets);
  }

  // fio's percentile walk. `sorted_percents` must be ascending, each in
  // [0, 100]. Walks the buckets upwards with a running count; percentile P
  // is answered by the first bucket at which the running count reaches
  // P/100 * total(), using that bucket's representative value. Returns one
  // value per requested percentile; empty when total() == 0.
  std::vector<uint64_t> Percentiles(absl::Span<const double> sorted_percents) const;

 private:
  std::unique_ptr<uint64_t[]> counts_;
  uint64_t total_ = 0;
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_HISTOGRAM_H_
