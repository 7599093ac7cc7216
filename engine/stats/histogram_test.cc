// engine/stats/histogram_test.cc
#include "engine/stats/histogram.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"

namespace blklab::stats {
namespace {

using H = LatencyHistogram;

TEST(LatencyHistogramTest, SmallValuesHaveExactBuckets) {
  for (uint64_t v = 0; v < 128; ++v) {
    EXPECT_EQ(H::BucketIndex(v), static_cast<int>(v));
    EXPECT_EQ(H::BucketValue(static_cast<int>(v)), v);
  }
}

TEST(LatencyHistogramTest, HandComputedIndicesAndValues) {
  // 221 ns: msb 7, 1 bit dropped, index 64*2 + (110 & 63) = 174; middle of
  // [220, 222) is 221.
  EXPECT_EQ(H::BucketIndex(221), 174);
  EXPECT_EQ(H::BucketValue(174), 221u);
  EXPECT_EQ(H::BucketIndex(220), 174);
  // 128: first bucket of group 2, [128,130) -> representative 129.
  EXPECT_EQ(H::BucketIndex(128), 128);
  EXPECT_EQ(H::BucketValue(128), 129u);
  // 255 -> last bucket of group 2 (index 191), [254,256) -> 255.
  EXPECT_EQ(H::BucketIndex(255), 191);
  EXPECT_EQ(H::BucketValue(191), 255u);
  // 256: group 3, width 4: [256,260) -> 258.
  EXPECT_EQ(H::BucketIndex(256), 192);
  EXPECT_EQ(H::BucketValue(192), 258u);
  // 44800 (seen in fio output): msb 15, shift 9, (44800>>9)&63 = 23,
  // index 64*10 + 23 = 663; 32768 + 23.5*512 = 44800.
  EXPECT_EQ(H::BucketIndex(44800), 663);
  EXPECT_EQ(H::BucketValue(663), 44800u);
  // Values from fio reference bins: 1204224 and 3948544.
  EXPECT_EQ(H::BucketValue(H::BucketIndex(1204224)), 1204224u);
  EXPECT_EQ(H::BucketValue(H::BucketIndex(3948544)), 3948544u);
}

TEST(LatencyHistogramTest, HugeValuesClampToLastBucket) {
  EXPECT_EQ(H::BucketIndex(uint64_t{1} << 34), H::kNumBuckets - 1);
  EXPECT_EQ(H::BucketIndex(~uint64_t{0}), H::kNumBuckets - 1);
  EXPECT_EQ(H::BucketIndex((uint64_t{1} << 34) - 1), H::kNumBuckets - 1);
  EXPECT_EQ(H::BucketIndex(uint64_t{1} << 33), 64 * 28);
}

TEST(LatencyHistogramTest, RepresentativeWithinHalfBucket) {
  for (uint64_t v = 1; v < (uint64_t{1} << 33); v = v * 3 + 7) {
    const uint64_t rep = H::BucketValue(H::BucketIndex(v));
    const double err = std::abs(static_cast<double>(rep) - static_cast<double>(v));
    EXPECT_LE(err, static_cast<double>(v) / 64.0) << v;
  }
}

TEST(LatencyHistogramTest, PercentileWalkMatchesFio) {
  H h;
  // 90 samples at 100 ns, 9 at 221 ns, 1 at 44800 ns.
  for (int i = 0; i < 90; ++i) h.Add(100);
  for (int i = 0; i < 9; ++i) h.Add(221);
  h.Add(44800);
  EXPECT_EQ(h.total(), 100u);
  const std::vector<double> pcts = {1, 50, 90, 90.01, 99, 99.5, 100};
  const std::vector<uint64_t> v = h.Percentiles(pcts);
  ASSERT_EQ(v.size(), pcts.size());
  EXPECT_EQ(v[0], 100u);
  EXPECT_EQ(v[1], 100u);
  EXPECT_EQ(v[2], 100u);  // running count 90 >= 90
  EXPECT_EQ(v[3], 221u);
  EXPECT_EQ(v[4], 221u);  // running 99 >= 99
  EXPECT_EQ(v[5], 44800u);
  EXPECT_EQ(v[6], 44800u);
}

TEST(LatencyHistogramTest, EmptyHasNoPercentiles) {
  H h;
  const std::vector<double> pcts = {50};
  EXPECT_TRUE(h.Percentiles(pcts).empty());
}

TEST(LatencyHistogramTest, MergeAndCopy) {
  H a, b;
  a.Add(5);
  b.Add(5);
  b.Add(1000);
  a.Merge(b);
  EXPECT_EQ(a.total(), 3u);
  EXPECT_EQ(a.count(5), 2u);
  H c = a;
  EXPECT_EQ(c.count(H::BucketIndex(1000)), 1u);
  c.Clear();
  EXPECT_EQ(c.total(), 0u);
  EXPECT_EQ(a.total(), 3u);
}

}  // namespace
}  // namespace blklab::stats
