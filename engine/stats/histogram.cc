// engine/stats/histogram.cc
#include "engine/stats/histogram.h"

#include <algorithm>

#include "engine/util/check.h"

namespace blklab::stats {

LatencyHistogram::LatencyHistogram() : counts_(new uint64_t[kNumBuckets]()) {}

LatencyHistogram::LatencyHistogram(const LatencyHistogram& other)
    : counts_(new uint64_t[kNumBuckets]), total_(other.total_) {
  std::copy_n(other.counts_.get(), kNumBuckets, counts_.get());
}

LatencyHistogram& LatencyHistogram::operator=(const LatencyHistogram& other) {
  if (this != &other) {
    if (counts_ == nullptr) counts_.reset(new uint64_t[kNumBuckets]);
    std::copy_n(other.counts_.get(), kNumBuckets, counts_.get());
    total_ = other.total_;
  }
  return *this;
}

void LatencyHistogram::AddToBucket(int index, uint64_t n) {
  BLKLAB_CHECK(index >= 0 && index < kNumBuckets);
  counts_[index] += n;
  total_ += n;
}

void LatencyHistogram::Merge(const LatencyHistogram& other) {
  for (int i = 0; i < kNumBuckets; ++i) counts_[i] += other.counts_[i];
  total_ += other.total_;
}

void LatencyHistogram::Clear() {
  std::fill_n(counts_.get(), kNumBuckets, uint64_t{0});
  total_ = 0;
}

std::vector<uint64_t> LatencyHistogram::Percentiles(
    absl::Span<const double> sorted_percents) const {
  std::vector<uint64_t> out;
  if (total_ == 0 || sorted_percents.empty()) return out;
  out.assign(sorted_percents.size(), 0);
  const double n = static_cast<double>(total_);
  size_t next = 0;
  uint64_t running = 0;
  for (int i = 0; i < kNumBuckets && next < sorted_percents.size(); ++i) {
    running += counts_[i];
    // Several percentiles may be answered by the same bucket.
    while (next < sorted_percents.size() &&
           static_cast<double>(running) >= sorted_percents[next] / 100.0 * n) {
      out[next++] = BucketValue(i);
    }
  }
  // Only reachable with a percentile > 100; answer with the last bucket.
  for (; next < sorted_percents.size(); ++next) out[next] = BucketValue(kNumBuckets - 1);
  return out;
}

}  // namespace blklab::stats
