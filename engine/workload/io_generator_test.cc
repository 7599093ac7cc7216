#include "engine/workload/io_generator.h"

#include <map>
#include <set>
#include <vector>

#include "gtest/gtest.h"
#include "engine/workload/job_parser.h"

namespace blklab::workload {
namespace {

JobSpec Spec(const std::string& body) {
  ParseOptions o;
  auto r = ParseJobFile("[j]\n" + body, "t.fio", o);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? r->jobs[0] : JobSpec{};
}

IoGenerator Gen(const JobSpec& s, uint64_t device, uint32_t clone = 0, uint64_t seed = 1) {
  auto plan = ResolveClone(s, clone, device);
  EXPECT_TRUE(plan.ok()) << plan.status();
  auto g = IoGenerator::Create(s, *plan, clone + 1, seed);
  EXPECT_TRUE(g.ok()) << g.status();
  return std::move(*g);
}

TEST(BlockMapTest, FindClearAcrossLevels) {
  BlockMap m(70000);
  for (uint64_t i = 0; i < 70000; ++i) {
    if (i != 65537) m.Set(i);
  }
  EXPECT_EQ(m.FindClear(0), 65537u);
  EXPECT_EQ(m.FindClear(65538), 65537u);  // wraps
  m.Set(65537);
  EXPECT_EQ(m.FindClear(3), m.size());
  m.Clear();
  EXPECT_EQ(m.FindClear(69999), 69999u);
}

TEST(IoGeneratorTest, RandomMapCoversEachBlockOncePerPass) {
  const JobSpec s = Spec("rw=randread\nbs=4k\nsize=4m\n");
  IoGenerator g = Gen(s, 1 << 30);
  const uint64_t nblocks = (4u << 20) / 4096;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int> seen(nblocks, 0);
    for (uint64_t i = 0; i < nblocks; ++i) {
      const GeneratedIo io = g.Next();
      ASSERT_EQ(io.offset % 4096, 0u);
      ASSERT_LT(io.offset, 4u << 20);
      ++seen[io.offset / 4096];
    }
    for (uint64_t b = 0; b < nblocks; ++b) ASSERT_EQ(seen[b], 1) << "pass " << pass << " block " << b;
  }
}

TEST(IoGeneratorTest, NorandommapRepeats) {
  IoGenerator g = Gen(Spec("rw=randread\nbs=4k\nsize=4m\nnorandommap\n"), 1 << 30);
  EXPECT_FALSE(g.random_map_enabled());
  std::map<uint64_t, int> seen;
  for (int i = 0; i < 1024; ++i) ++seen[g.Next().offset];
  EXPECT_LT(seen.size(), 1024u);
}

TEST(IoGeneratorTest, LfsrTouchesEveryBlockOncePerPassWithoutAMap) {
  // fio's t0021: random_generator=lfsr with norandommap still visits every
  // block exactly once per period, in a scrambled (not sequential) order.
  IoGenerator g = Gen(Spec("rw=randread\nbs=4k\nsize=1m\nnorandommap\nrandom_generator=lfsr\n"), 1 << 30);
  EXPECT_FALSE(g.random_map_enabled());
  const uint64_t nblocks = (1u << 20) / 4096;
  for (int pass = 0; pass < 3; ++pass) {
    std::vector<int> seen(nblocks, 0);
    uint64_t ascending = 0, prev = 0;
    for (uint64_t i = 0; i < nblocks; ++i) {
      const uint64_t b = g.Next().offset / 4096;
      ASSERT_LT(b, nblocks);
      ++seen[b];
      if (i > 0 && b == prev + 1) ++ascending;
      prev = b;
    }
    for (uint64_t b = 0; b < nblocks; ++b) ASSERT_EQ(seen[b], 1) << "pass " << pass << " block " << b;
    EXPECT_LT(ascending, nblocks / 8) << "pass " << pass;
  }
  // The default generator samples with repeats.
  IoGenerator t = Gen(Spec("rw=randread\nbs=4k\nsize=1m\nnorandommap\n"), 1 << 30);
  std::set<uint64_t> distinct;
  for (uint64_t i = 0; i < nblocks; ++i) distinct.insert(t.Next().offset);
  EXPECT_LT(distinct.size(), nblocks);
}

TEST(IoGeneratorTest, SequentialWrapsAndGaps) {
  IoGenerator g = Gen(Spec("rw=write:4k\nbs=4k\nsize=32k\n"), 1 << 20);
  std::vector<uint64_t> offs;
  for (int i = 0; i < 6; ++i) offs.push_back(g.Next().offset);
  EXPECT_EQ(offs, (std::vector<uint64_t>{0, 8192, 16384, 24576, 0, 8192}));
  IoGenerator back = Gen(Spec("rw=read:-8k\nbs=4k\nsize=16k\n"), 1 << 20);
  EXPECT_EQ(back.Next().offset, 0u);
  EXPECT_EQ(back.Next().offset, 12288u);  // wrapped to the end
  EXPECT_EQ(back.Next().offset, 8192u);
}

TEST(IoGeneratorTest, OffsetIncrementPerClone) {
  const JobSpec s = Spec("rw=read\nsize=1m\noffset=1m\noffset_increment=10m\nnumjobs=3\n");
  auto p2 = ResolveClone(s, 2, 100 << 20);
  ASSERT_TRUE(p2.ok());
  EXPECT_EQ(p2->region_start, 21u << 20);
  EXPECT_EQ(Gen(s, 100 << 20, 2).Next().offset, 21u << 20);
  EXPECT_FALSE(ResolveClone(s, 20, 100 << 20).ok());
  auto pct = ResolveClone(Spec("size=50%\noffset=25%\n"), 0, 1 << 20);
  EXPECT_EQ(pct->region_start, 1u << 18);
  EXPECT_EQ(pct->region_bytes, 1u << 19);
}

TEST(IoGeneratorTest, RwMixAndBssplit) {
  IoGenerator g = Gen(Spec("rw=randrw\nrwmixread=70\nbssplit=4k/80:64k/20\nnorandommap\n"), 1 << 30);
  int reads = 0, small = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const GeneratedIo io = g.Next();
    reads += io.direction == Direction::kRead;
    small += io.length == 4096;
    ASSERT_TRUE(io.length == 4096 || io.length == 65536);
    ASSERT_LE(io.offset + io.length, uint64_t{1} << 30);
  }
  EXPECT_NEAR(reads / double(n), 0.70, 0.01);
  EXPECT_NEAR(small / double(n), 0.80, 0.01);
}

TEST(IoGeneratorTest, BsrangeIsAlignedToMinimum) {
  IoGenerator g = Gen(Spec("rw=randread\nbsrange=4k-32k\nnorandommap\n"), 1 << 30);
  for (int i = 0; i < 1000; ++i) {
    const uint64_t len = g.Next().length;
    ASSERT_EQ(len % 4096, 0u);
    ASSERT_GE(len, 4096u);
    ASSERT_LE(len, 32768u);
  }
}

TEST(IoGeneratorTest, ZipfIsSkewed) {
  IoGenerator g = Gen(Spec("rw=randread\nrandom_distribution=zipf:1.2\nsize=64m\n"), 1 << 30);
  EXPECT_FALSE(g.random_map_enabled());
  std::map<uint64_t, int> hits;
  const int n = 100000;
  for (int i = 0; i < n; ++i) ++hits[g.Next().offset];
  std::vector<int> counts;
  for (auto& [o, c] : hits) counts.push_back(c);
  std::sort(counts.rbegin(), counts.rend());
  int top = 0;
  for (size_t i = 0; i < std::min<size_t>(counts.size(), 164); ++i) top += counts[i];  // 1% of blocks
  EXPECT_GT(top, n / 2) << "top 1% of blocks should take most accesses";
}

TEST(IoGeneratorTest, ParetoAndNormalAndZonedStayInRegion) {
  for (const char* d : {"pareto:0.8", "normal:10", "zoned:60/10:30/20:10/70", "zoned_abs:50/1m:50/3m",
                        "zipf:0.8:0.5"}) {
    IoGenerator g = Gen(Spec(std::string("rw=randwrite\nsize=16m\nrandom_distribution=") + d + "\n"), 1 << 30);
    for (int i = 0; i < 20000; ++i) {
      const GeneratedIo io = g.Next();
      ASSERT_LE(io.offset + io.length, 16u << 20) << d;
      ASSERT_EQ(io.offset % 4096, 0u) << d;
    }
  }
  IoGenerator z = Gen(Spec("rw=randread\nsize=100m\nrandom_distribution=zoned:90/10:10/90\n"), 1 << 30);
  int hot = 0;
  for (int i = 0; i < 10000; ++i) hot += z.Next().offset < (10u << 20);
  EXPECT_NEAR(hot / 10000.0, 0.9, 0.02);
}

TEST(IoGeneratorTest, DeterministicBySeed) {
  const JobSpec s = Spec("rw=randrw\nbsrange=4k-16k\nrandrepeat=0\n");
  IoGenerator a = Gen(s, 1 << 30, 0, 42), b = Gen(s, 1 << 30, 0, 42), c = Gen(s, 1 << 30, 0, 43);
  bool differs = false;
  for (int i = 0; i < 1000; ++i) {
    const GeneratedIo x = a.Next(), y = b.Next(), z = c.Next();
    ASSERT_EQ(x.offset, y.offset);
    ASSERT_EQ(x.length, y.length);
    ASSERT_EQ(x.direction, y.direction);
    differs |= x.offset != z.offset;
  }
  EXPECT_TRUE(differs);
  // randrepeat=1 (default): the run seed does not matter; clones differ.
  const JobSpec r = Spec("rw=randread\n");
  EXPECT_EQ(Gen(r, 1 << 30, 0, 1).Next().offset, Gen(r, 1 << 30, 0, 2).Next().offset);
  EXPECT_NE(Gen(r, 1 << 30, 0).Next().offset, Gen(r, 1 << 30, 1).Next().offset);
}

TEST(IoGeneratorTest, TrimWritePairs) {
  IoGenerator g = Gen(Spec("rw=trimwrite\nsize=1m\n"), 1 << 20);
  const GeneratedIo t = g.Next(), w = g.Next();
  EXPECT_EQ(t.direction, Direction::kTrim);
  EXPECT_EQ(w.direction, Direction::kWrite);
  EXPECT_EQ(t.offset, w.offset);
}

// Two million random-map IOs over a 64 GiB region stay inside it and aligned.
// (Speed is measured by tests/bench/engine_bench, not by a timed test.)
TEST(IoGeneratorTest, ManyRandomMapIosStayInRegion) {
  IoGenerator g = Gen(Spec("rw=randrw\nbs=4k\n"), uint64_t{64} << 30);
  const int n = 2000000;
  for (int i = 0; i < n; ++i) {
    const GeneratedIo io = g.Next();
    ASSERT_LT(io.offset + io.length, (uint64_t{64} << 30) + 1) << i;
    ASSERT_EQ(io.offset % 4096, 0u) << i;
  }
}

TEST(IoGeneratorTest, StridedZonesReadZonesizeThenSkip) {
  // zonemode=strided: 8 KiB in each zone, the next zone 8k + 16k on; the
  // region's end wraps to its start.
  IoGenerator g = Gen(Spec("rw=read\nbs=4k\nsize=96k\nzonemode=strided\nzonesize=8k\nzoneskip=16k\n"), 1 << 30);
  std::vector<uint64_t> got;
  for (int i = 0; i < 10; ++i) got.push_back(g.Next().offset / 1024);
  EXPECT_EQ(got, (std::vector<uint64_t>{0, 4, 24, 28, 48, 52, 72, 76, 0, 4}));
}

}  // namespace
}  // namespace blklab::workload
