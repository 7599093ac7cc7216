#include "engine/job/medium_content.h"

#include "gtest/gtest.h"

namespace blklab::job {
namespace {

TEST(MediumContentTest, UnwrittenSectorsAreZeroes) {
  MediumContent m;
  EXPECT_FALSE(m.Compare(0, 100, MediumContent::kZero).has_value());
  EXPECT_EQ(m.Compare(5, 10, MediumContent::PatternId("\x01")), 5u);
  EXPECT_EQ(MediumContent::PatternId(std::string(4, '\0')), MediumContent::kZero);
}

TEST(MediumContentTest, PatternsThatFillAlikeAreOneId) {
  EXPECT_EQ(MediumContent::PatternId("\x01\x01"), MediumContent::PatternId("\x01"));
  EXPECT_EQ(MediumContent::PatternId("abab"), MediumContent::PatternId("ab"));
  EXPECT_NE(MediumContent::PatternId("ab"), MediumContent::PatternId("ba"));
}

TEST(MediumContentTest, WritesOverlayAndMerge) {
  MediumContent m;
  const uint64_t one = MediumContent::PatternId("\x01");
  ASSERT_TRUE(m.Write(0, 20, one));
  ASSERT_TRUE(m.Write(0, 19, MediumContent::kZero));  // WRITE SAME NDOB
  EXPECT_FALSE(m.Compare(0, 19, MediumContent::kZero).has_value());
  EXPECT_EQ(m.Compare(0, 20, MediumContent::kZero), 19u);
  EXPECT_EQ(m.extents(), 1u);
  ASSERT_TRUE(m.Write(10, 5, one));
  EXPECT_EQ(m.Compare(0, 20, MediumContent::kZero), 10u);
  ASSERT_TRUE(m.Write(15, 4, one));
  EXPECT_EQ(m.extents(), 1u) << "[10,15) and [15,20) of one id merge with [19,20)";
  EXPECT_FALSE(m.Compare(10, 10, one).has_value());
  const uint64_t a = m.UniqueId();
  const uint64_t b = m.UniqueId();
  EXPECT_NE(a, b);
  ASSERT_TRUE(m.Write(12, 2, a));
  EXPECT_EQ(m.Compare(10, 10, one), 12u);
  EXPECT_EQ(m.Compare(12, 2, b), 12u);
  EXPECT_FALSE(m.Compare(12, 2, a).has_value());
}

TEST(MediumContentTest, AWriteInsideAnExtentKeepsBothEnds) {
  MediumContent m;
  const uint64_t x = MediumContent::PatternId("x");
  const uint64_t y = MediumContent::PatternId("y");
  ASSERT_TRUE(m.Write(0, 20, x));
  ASSERT_TRUE(m.Write(10, 10, y));  // to the extent's end
  ASSERT_TRUE(m.Write(2, 3, y));    // inside it
  EXPECT_FALSE(m.Compare(0, 2, x).has_value());
  EXPECT_FALSE(m.Compare(2, 3, y).has_value());
  EXPECT_FALSE(m.Compare(5, 5, x).has_value());
  EXPECT_FALSE(m.Compare(10, 10, y).has_value());
  EXPECT_EQ(m.Compare(0, 20, x), 2u);
  for (uint64_t s = 0; s < 200; s += 3) ASSERT_TRUE(m.Write(s, 5, s % 2 ? x : y));
  EXPECT_LE(m.extents(), 200u);
}

}  // namespace
}  // namespace blklab::job
