// engine/report/num2str_test.cc
#include "engine/report/num2str.h"

#include "engine/report/json.h"
#include "gtest/gtest.h"

namespace blklab::report {
namespace {

TEST(Num2StrTest, CasesFromFioReference) {
  // IOPS=1512k: 3025231 IOs in 2001 ms.
  EXPECT_EQ(Num2Str(3025231ull * 1000 / 2001, 4, false, NumUnit::kNone), "1512k");
  // 01: BW=5906MiB/s (6193MB/s)(11.5GiB/2001msec)
  const uint64_t bytes = 3025231ull * 4096;
  const uint64_t bw = bytes * 1000 / 2001;
  EXPECT_EQ(Num2Str(bw, 4, true, NumUnit::kBytesPerSec), "5906MiB/s");
  EXPECT_EQ(Num2Str(bw, 4, false, NumUnit::kBytesPerSec), "6193MB/s");
  EXPECT_EQ(Num2Str(bytes, 4, true, NumUnit::kBytes), "11.5GiB");
  EXPECT_EQ(Num2Str(bytes, 4, false, NumUnit::kBytes), "12.4GB");
  // Latency max with 6 digits.
  EXPECT_EQ(Num2Str(1089100, 6, false, NumUnit::kNone), "1089.1k");
  EXPECT_EQ(Num2Str(130043, 6, false, NumUnit::kNone), "130043");
  EXPECT_EQ(Num2Str(12052345, 6, false, NumUnit::kNone), "12052k");
  // Block sizes in the header line.
  EXPECT_EQ(Num2Str(16384, 4, true, NumUnit::kBytes), "16.0KiB");
  EXPECT_EQ(Num2Str(65536, 4, true, NumUnit::kBytes), "64.0KiB");
  EXPECT_EQ(Num2Str(131072, 4, true, NumUnit::kBytes), "128KiB");
  EXPECT_EQ(Num2Str(1048576, 4, true, NumUnit::kBytes), "1024KiB");
  EXPECT_EQ(Num2Str(4096, 4, true, NumUnit::kBytes), "4096B");
  // 06: BW=7996KiB/s (8188kB/s), io=8000KiB (8192kB)
  EXPECT_EQ(Num2Str(8188000, 4, true, NumUnit::kBytesPerSec), "7996KiB/s");
  EXPECT_EQ(Num2Str(8188000, 4, false, NumUnit::kBytesPerSec), "8188kB/s");
  EXPECT_EQ(Num2Str(8192000, 4, true, NumUnit::kBytes), "8000KiB");
  EXPECT_EQ(Num2Str(0, 4, true, NumUnit::kBytes), "0B");
  EXPECT_EQ(Num2Str(1999, 4, false, NumUnit::kNone), "1999");
}

TEST(Num2StrTest, RoundingCarriesIntoInteger) {
  // 10235 B = 9.995 KiB: two decimals fit, rounding carries into the
  // integer part.
  EXPECT_EQ(Num2Str(10235, 4, true, NumUnit::kBytes), "10.00KiB");
  EXPECT_EQ(Num2Str(1000, 4, false, NumUnit::kBitsPerSec), "8000bit/s");
}

TEST(JsonTest, PrintsLikeFio) {
  Json root = Json::Object();
  root.Add("fio version", "fio-3.33");
  root.AddInt("n", -3);
  root.AddDouble("f", 100);
  root.Add("empty", Json::Object());
  Json arr = Json::Array();
  Json o = Json::Object();
  o.Add("s", "a\"b\\c");
  arr.Push(std::move(o));
  root.Add("jobs", std::move(arr));
  root.Add("none", Json::Array());
  EXPECT_EQ(root.Print(),
            "{\n"
            "  \"fio version\" : \"fio-3.33\",\n"
            "  \"n\" : -3,\n"
            "  \"f\" : 100.000000,\n"
            "  \"empty\" : {\n\n  },\n"
            "  \"jobs\" : [\n"
            "    {\n"
            "      \"s\" : \"a\\\"b\\\\c\"\n"
            "    }\n"
            "  ],\n"
            "  \"none\" : [\n  ]\n"
            "}");
}

}  // namespace
}  // namespace blklab::report
