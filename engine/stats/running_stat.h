// engine/stats/running_stat.h
//
// RunningStat models fio's `struct io_stat` (min, max, running mean and sum
// of squared deviations): Welford's online algorithm over non-negative
// integer samples (ns for latencies, KiB/s or IO/s for bandwidth samples).
// stddev() is the sample standard deviation sqrt(S / (N - 1)), 0 when N <= 1,
// as fio reports it (FIO_COMPAT.md c.6).
//
// Two merges exist, as in fio's group_reporting:
//  - Merge(): pools two populations (latencies): min of mins, max of maxes,
//    combined mean and S (Chan et al. parallel formula).
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
  void Add(uint64_t x) {
    if (x < min_) min_ = x;
    if (x > max_) max_ = x;
    ++n_;
    const double v = static_cast<double>(x);
    const double delta = v - mean_;
    mean_ += delta / static_cast<double>(n_);
    s_ += delta * (v - mean_);
  }

  // Pools `other` into this (latency statistics of merged jobs/directions).
  void Merge(const RunningStat& other) {
    if (other.n_ == 0) return;
    if (n_ == 0) {
      *this = other;
      return;
    }
    const double n1 = static_cast<double>(n_), n2 = static_cast<double>(other.n_);
    const double delta = other.mean_ - mean_;
    const double n = n1 + n2;
    mean_ += delta * n2 / n;
    s_ += other.s_ + delta * delta * n1 * n2 / n;
    n_ += other.n_;
    if (other.min_ < min_) min_ = other.min_;
    if (other.max_ > max_) max_ = other.max_;
  }

  // Sums `other` into this (bandwidth/IOPS samples of merged jobs).
  void MergeSum(const RunningStat& other) {
    if (other.n_ == 0) return;
    if (n_ == 0) {
      *this = other;
      return;
    }
    min_ += other.min_;
    max_ += other.max_;
    mean_ += other.mean_;
    s_ += other.s_;
    n_ += other.n_;
  }

  uint64_t n() const { return n_; }
  uint64_t min() const { return n_ == 0 ? 0 : min_; }
  uint64_t max() const { return n_ == 0 ? 0 : max_; }
  double mean() const { return n_ == 0 ? 0.0 : mean_; }
  double variance() const { return n_ <= 1 ? 0.0 : s_ / static_cast<double>(n_ - 1); }
  double stddev() const { return std::sqrt(variance()); }

  // Rebuilds a stat from exported figures (tests, remote snapshots).
  static RunningStat FromMoments(uint64_t n, uint64_t min, uint64_t max, double mean,
                                 double stddev) {
    RunningStat s;
    if (n == 0) return s;
    s.n_ = n;
    s.min_ = min;
    s.max_ = max;
    s.mean_ = mean;
    s.s_ = n > 1 ? stddev * stddev * static_cast<double>(n - 1) : 0.0;
    return s;
  }

 private:
  uint64_t min_ = std::numeric_limits<uint64_t>::max();
  uint64_t max_ = 0;
  uint64_t n_ = 0;
  double mean_ = 0;
  double s_ = 0;  // sum of squared deviations from the mean
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_RUNNING_STAT_H_
