// engine/stats/running_stat.h
//
// RunningStat models fio's `struct io_stat` (min, max, mean and sum of
// squared deviations) over non-negative integer samples (ns for latencies,
// KiB/s or IO/s for bandwidth samples). Where fio runs Welford's update in
// doubles, this keeps the exact integer sum and sum of squares in 128 bits:
// no division per sample, and pooled results are exact.
// stddev() is the sample standard deviation sqrt(S / (N - 1)), 0 when N <= 1,
// as fio reports it (docs/fio-compatibility.md c.6).
//
// Two merges exist, as in fio's group_reporting:
//  - Merge(): pools two populations (latencies): min of mins, max of maxes,
//    sums and sums of squares added.
//  - MergeSum(): adds bandwidth/IOPS sample statistics to get aggregate
//    throughput: mins, maxes, means, S and sample counts are summed.
//
// Invariants: n() == 0 implies min() == max() == 0 and mean() == 0.
// Thread-safety: thread-compatible.
// Cost: Add() is a compare pair, one division and a few flops; no allocation.
#ifndef BLKLAB_ENGINE_STATS_RUNNING_STAT_H_
#define BLKLAB_ENGINE_STATS_RUNNING_STAT_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace blklab::stats {

class RunningStat {
 public:
  // Exact integer moments (sum and sum of squares in 128 bits): no division
  // on the hot path, and pooling is exact. mean/stddev are derived on read.
  void Add(uint64_t x) {
    if (x < min_) min_ = x;
    if (x > max_) max_ = x;
    ++n_;
    sum_ += x;
    sumsq_ += static_cast<unsigned __int128>(x) * x;
  }

  // Pools `other` into this (latency statistics of merged jobs/directions).
  void Merge(const RunningStat& other) {
    if (other.n_ == 0) return;
    n_ += other.n_;
    sum_ += other.sum_;
    sumsq_ += other.sumsq_;
    extra_sum_ += other.extra_sum_;
    extra_sumsq_ += other.extra_sumsq_;
    if (other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
  }

  // Sums `other` into this (bandwidth/IOPS samples of merged jobs, as fio's
  // group_reporting adds them): min, max, mean and the squared deviations
  // add, sample counts add.
  void MergeSum(const RunningStat& other) {
    if (other.n_ == 0) return;
    if (n_ == 0) {
      *this = other;
      return;
    }
    const long double sum_mean = static_cast<long double>(mean()) + other.mean();
    const long double s = SquaredDeviations() + other.SquaredDeviations();
    min_ += other.min_;
    max_ += other.max_;
    n_ += other.n_;
    SetMoments(sum_mean, s);
  }

  uint64_t n() const { return n_; }
  uint64_t min() const { return n_ == 0 ? 0 : min_; }
  uint64_t max() const { return n_ == 0 ? 0 : max_; }
  double mean() const { return n_ == 0 ? 0.0 : static_cast<double>(Sum() / n_); }
  double variance() const {
    return n_ <= 1 ? 0.0 : static_cast<double>(SquaredDeviations() / static_cast<long double>(n_ - 1));
  }
  double stddev() const { return std::sqrt(variance()); }

  // Rebuilds a stat from exported figures (tests, remote snapshots).
  static RunningStat FromMoments(uint64_t n, uint64_t min, uint64_t max, double mean,
                                 double stddev) {
    RunningStat s;
    if (n == 0) return s;
    s.n_ = n;
    s.min_ = min;
    s.max_ = max;
    s.SetMoments(mean, n > 1 ? static_cast<long double>(stddev) * stddev * (n - 1) : 0.0L);
    return s;
  }

 private:
  // Sum of squared deviations from the mean: sumsq - sum^2 / n.
  long double Sum() const { return static_cast<long double>(sum_) + extra_sum_; }
  long double SquaredDeviations() const {
    if (n_ == 0) return 0;
    const long double sum = Sum();
    const long double s = static_cast<long double>(sumsq_) + extra_sumsq_ - sum * sum / n_;
    return s < 0 ? 0 : s;
  }
  // Moments that are not sums of integer samples (imported or summed
  // statistics) live in the long double parts, so they stay exact enough.
  void SetMoments(long double mean, long double s) {
    const long double sum = mean * n_;
    sum_ = 0;
    sumsq_ = 0;
    extra_sum_ = sum;
    extra_sumsq_ = s + sum * sum / n_;
  }

  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
  uint64_t n_ = 0;
  unsigned __int128 sum_ = 0;
  unsigned __int128 sumsq_ = 0;
  long double extra_sum_ = 0;
  long double extra_sumsq_ = 0;
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_RUNNING_STAT_H_
