#include "engine/job/verify_content.h"

#include "gtest/gtest.h"

namespace blklab::job {
namespace {

using Fault = DeviceContent::Fault;

TEST(DeviceContent, HeadersEveryIntervalOfAWrite) {
  DeviceContent c;
  ASSERT_TRUE(c.Write(8192, 8192, 4096, 7));
  EXPECT_EQ(c.records(), 2u);
  EXPECT_EQ(c.Verify(8192, 4096, 7).fault, Fault::kNone);
  EXPECT_EQ(c.Verify(12288, 4096, std::nullopt).fault, Fault::kNone);
  EXPECT_EQ(c.Verify(0, 4096, std::nullopt).fault, Fault::kMagic);       // never written
  EXPECT_EQ(c.Verify(8192, 8192, std::nullopt).fault, Fault::kLength);   // another interval
  const DeviceContent::Check n = c.Verify(8192, 4096, 8);
  EXPECT_EQ(n.fault, Fault::kNumberio);
  EXPECT_EQ(n.found_numberio, 7);
}

TEST(DeviceContent, OverwritesReplaceCutOrEraseHeaders) {
  DeviceContent c;
  ASSERT_TRUE(c.Write(0, 16384, 4096, 1));
  // Data without headers over [6k, 10k): the block at 4k loses its tail
  // (checksum), the header at 8k is overwritten (gone).
  ASSERT_TRUE(c.Write(6144, 4096, 0, 0));
  EXPECT_EQ(c.Verify(0, 4096, 1).fault, Fault::kNone);
  EXPECT_EQ(c.Verify(4096, 4096, 1).fault, Fault::kChecksum);
  EXPECT_EQ(c.Verify(8192, 4096, 1).fault, Fault::kMagic);
  EXPECT_EQ(c.Verify(12288, 4096, 1).fault, Fault::kNone);
  // Rewritten with headers: whole again, with the new numberio.
  ASSERT_TRUE(c.Write(4096, 8192, 4096, 2));
  EXPECT_EQ(c.Verify(4096, 4096, 2).fault, Fault::kNone);
  EXPECT_EQ(c.Verify(8192, 4096, 2).fault, Fault::kNone);
  c.Trim(0, 16384);
  EXPECT_EQ(c.records(), 0u);
  EXPECT_EQ(c.Verify(0, 4096, std::nullopt).fault, Fault::kMagic);
}

TEST(DeviceContent, ALongRecordBeforeTheRangeIsFound) {
  DeviceContent c;
  ASSERT_TRUE(c.Write(0, 1 << 20, 1 << 20, 3));
  ASSERT_TRUE(c.Write(1 << 19, 512, 512, 4));  // inside the 1 MiB chunk
  EXPECT_EQ(c.Verify(0, 1 << 20, 3).fault, Fault::kChecksum);
  EXPECT_EQ(c.Verify(1 << 19, 512, 4).fault, Fault::kNone);
}

}  // namespace
}  // namespace blklab::job
