#include "engine/workload/value_syntax.h"

#include "engine/workload/job_spec.h"

#include "gtest/gtest.h"

namespace blklab::workload {
namespace {

uint64_t Size(const std::string& s, uint32_t kb = 1024) {
  auto r = ParseSize(s, kb);
  EXPECT_TRUE(r.ok()) << s << ": " << r.status();
  return r.ok() ? *r : 0;
}

TEST(ValueSyntaxTest, SizeSuffixesFollowFio) {
  for (const char* s : {"4k", "4K", "4kb", "4ki", "0x1000", "4096", "4096b"}) EXPECT_EQ(Size(s), 4096u) << s;
  EXPECT_EQ(Size("4KiB"), 4000u);
  EXPECT_EQ(Size("4kib"), 4000u);
  EXPECT_EQ(Size("4k", 1000), 4000u);
  EXPECT_EQ(Size("4KiB", 1000), 4096u);
  EXPECT_EQ(Size("1m"), 1048576u);
  EXPECT_EQ(Size("1mi"), 1048576u);  // only the three-letter form swaps
  EXPECT_EQ(Size("1MiB"), 1000000u);
  EXPECT_EQ(Size("1g"), uint64_t{1} << 30);
  EXPECT_EQ(Size("2t"), uint64_t{2} << 40);
  EXPECT_EQ(Size("4kx"), 4096u);  // unknown trailing letters ignored
  EXPECT_EQ(Size("4zz"), 4u);
}

TEST(ValueSyntaxTest, SpaceAfterEqualsDropsSuffix) {
  auto r = ParseSizeDetailed(" 8k", 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->value, 8u);
  EXPECT_TRUE(r->suffix_ignored_quirk);
}

TEST(ValueSyntaxTest, BadSizes) {
  for (const char* s : {"", "abc", "-4k", "k", "99999999999999999999999"}) {
    EXPECT_FALSE(ParseSize(s, 1024).ok()) << s;
  }
}

TEST(ValueSyntaxTest, Percentages) {
  auto r = ParseSizeOrPercent("50%", 1024);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->is_percent());
  EXPECT_EQ(r->Resolve(1000), 500u);
  EXPECT_FALSE(ParseSizeOrPercent("0%", 1024).ok());
  EXPECT_FALSE(ParseSizeOrPercent("101%", 1024).ok());
  EXPECT_EQ(ParseSizeOrPercent("1m", 1024)->Resolve(5), 1048576u);
}

TEST(ValueSyntaxTest, TimesUseDefaultUnitAndQuirks) {
  EXPECT_EQ(*ParseTimeNs("10", TimeUnit::kSeconds), 10 * kNsPerSec);
  EXPECT_EQ(*ParseTimeNs("10", TimeUnit::kMicroseconds), 10'000);
  EXPECT_EQ(*ParseTimeNs("2m", TimeUnit::kMicroseconds), 120 * kNsPerSec);
  EXPECT_EQ(*ParseTimeNs("5ms", TimeUnit::kSeconds), 5'000'000);
  EXPECT_EQ(*ParseTimeNs("5msec", TimeUnit::kSeconds), 5'000'000);
  EXPECT_EQ(*ParseTimeNs("3us", TimeUnit::kSeconds), 3'000);
  EXPECT_EQ(*ParseTimeNs("1h", TimeUnit::kSeconds), 3600 * kNsPerSec);
  EXPECT_EQ(*ParseTimeNs("1d", TimeUnit::kSeconds), 86400 * kNsPerSec);
  EXPECT_EQ(*ParseTimeNs("1S", TimeUnit::kMicroseconds), kNsPerSec);
  EXPECT_EQ(*ParseTimeNs("1sec", TimeUnit::kSeconds), 1'000);  // 3.33: `sec` = µs
  EXPECT_EQ(*ParseTimeNs("7xyz", TimeUnit::kSeconds), 7'000);
  EXPECT_FALSE(ParseTimeNs("x", TimeUnit::kSeconds).ok());
}

TEST(ValueSyntaxTest, Booleans) {
  EXPECT_TRUE(*ParseBool("1"));
  EXPECT_FALSE(*ParseBool("0"));
  EXPECT_FALSE(ParseBool("2").ok());
  EXPECT_FALSE(ParseBool("yes").ok());
}

std::array<std::optional<std::string>, 3> Dirs(const std::string& s) {
  auto r = SplitPerDirection(s);
  EXPECT_TRUE(r.ok()) << s;
  return r.ok() ? *r : std::array<std::optional<std::string>, 3>{};
}

TEST(ValueSyntaxTest, PerDirectionRules) {
  using O = std::optional<std::string>;
  EXPECT_EQ(Dirs("4k"), (std::array<O, 3>{"4k", "4k", "4k"}));
  EXPECT_EQ(Dirs("4k,64k"), (std::array<O, 3>{"4k", "64k", "64k"}));
  EXPECT_EQ(Dirs(",8k"), (std::array<O, 3>{std::nullopt, "8k", "8k"}));
  EXPECT_EQ(Dirs("8k,32k,"), (std::array<O, 3>{"8k", "32k", std::nullopt}));
  EXPECT_EQ(Dirs("1,2,3"), (std::array<O, 3>{"1", "2", "3"}));
  EXPECT_FALSE(SplitPerDirection("1,2,3,4").ok());
}

TEST(ValueSyntaxTest, Ranges) {
  EXPECT_EQ(*ParseSizeRange("1k-16k", 1024), (SizeRange{1024, 16384}));
  EXPECT_EQ(*ParseSizeRange("1k:16k", 1024), (SizeRange{1024, 16384}));
  EXPECT_EQ(*ParseSizeRange("16k-1k", 1024), (SizeRange{1024, 16384}));
  EXPECT_EQ(*ParseSizeRange("4k", 1024), (SizeRange{4096, 4096}));
  auto t = ParseTimeRangeNs("0-5", TimeUnit::kSeconds);
  EXPECT_EQ(t->hi, 5 * kNsPerSec);
}

TEST(ValueSyntaxTest, BsSplit) {
  auto r = ParseBsSplitList("64k/10:4k/50:8k", 1024);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0], (BsSplitEntry{4096, 50}));
  EXPECT_EQ((*r)[1], (BsSplitEntry{8192, 40}));
  EXPECT_EQ((*r)[2], (BsSplitEntry{65536, 10}));
  auto open = ParseBsSplitList("4k/40:8k:16k", 1024);
  EXPECT_EQ((*open)[1].percent, 30u);
  EXPECT_EQ(ParseBsSplitList("4k/200", 1024)->front().percent, 100u);  // clamped
  EXPECT_FALSE(ParseBsSplitList("4k/60:8k/60", 1024).ok());
}

TEST(ValueSyntaxTest, ColonAndCpuLists) {
  EXPECT_EQ(SplitColonList("/dev/a:/dev/b"), (std::vector<std::string>{"/dev/a", "/dev/b"}));
  EXPECT_EQ(SplitColonList("a\\:b:c"), (std::vector<std::string>{"a:b", "c"}));
  EXPECT_EQ(*ParseCpuList("0,5,8-10"), (std::vector<uint32_t>{0, 5, 8, 9, 10}));
  EXPECT_FALSE(ParseCpuList("3-1").ok());
  EXPECT_FALSE(ParseCpuList("0-99999").ok());
  EXPECT_EQ(ParsePercentileList("50:90:99.9", 20)->size(), 3u);
  EXPECT_FALSE(ParsePercentileList("0:50", 20).ok());
}

TEST(ValueSyntaxTest, FioPatterns) {
  EXPECT_EQ(*ParseFioPattern("0x01"), std::string("\x01", 1));
  EXPECT_EQ(*ParseFioPattern("0x00"), std::string(1, '\0'));
  EXPECT_EQ(*ParseFioPattern("0xabc"), std::string("\x0a\xbc", 2));
  EXPECT_EQ(*ParseFioPattern("0xff0x14"), std::string("\xff\x14", 2));
  EXPECT_EQ(*ParseFioPattern("1"), std::string("\x01", 1));
  EXPECT_EQ(*ParseFioPattern("0"), std::string(1, '\0'));
  EXPECT_EQ(*ParseFioPattern("258"), std::string("\x02\x01", 2));
  // fio's t0028: a string, -12, then 0xdeadface.
  EXPECT_EQ(*ParseFioPattern("\"abcd\"-120xdeadface"), std::string("abcd\xf4\xff\xff\xff\xde\xad\xfa\xce", 12));
  EXPECT_FALSE(ParseFioPattern("'file'").ok());
  EXPECT_FALSE(ParseFioPattern("%o").ok());
  EXPECT_FALSE(ParseFioPattern("").ok());
}

}  // namespace
}  // namespace blklab::workload
