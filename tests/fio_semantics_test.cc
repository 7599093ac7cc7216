// tests/fio_semantics_test.cc
//
// fio semantics that fio's own job-file tests check, written afresh and
// measured against fio 3.33 itself on a target larger than `size` (the
// figures below are what fio 3.33 reports for the same job there):
//
//  * a sequential job with holes (rw=read:512k) ends its loop when the
//    position reaches the region's end, before io_size bytes: 86 x 1 MiB
//    reads in a 128 MiB region (an I/O that starts inside the region may
//    run past it); loops=2 does that twice (172); with io_size above size
//    the pass wraps and the job reads io_size (200 of 1 MiB in 100 MiB);
//  * trimwrite's trims do not count against size: every block of the
//    region is trimmed and then written (256 + 256 of 4 KiB in 1 MiB);
//  * filesize bounds where I/O goes, size (if smaller) how much: filesize=1m
//    reads 256 blocks of 4 KiB, with size=2m still 256, with size=512k 128,
//    all inside the first MiB.
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers

const char kHost[] =
    "name: semantics\n"
    "cpus: {count: 1}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {gb: 4, irqmode: 0}\n"
    "    queue: {scheduler: none}\n";

const stats::DirResult& Read(const RunResult& r) { return r.clones.at(0).result.dirs[0]; }

RunResult Holed(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--name=foo", "--rw=read:512k", "--bs=1m", "--norandommap", "--direct=1"};
  args.insert(args.end(), extra.begin(), extra.end());
  return MustRun(HostFromYaml(kHost), args);
}

TEST(FioSemantics, HoledSequentialLoopEndsAtTheRegionsEnd) {
  const RunResult one = Holed({"--size=128m"});
  EXPECT_EQ(Read(one).total_ios, 86u) << Describe(one);
  EXPECT_EQ(Read(one).io_bytes, 86u << 20);
  const RunResult two = Holed({"--size=128m", "--loops=2"});
  EXPECT_EQ(Read(two).total_ios, 172u) << Describe(two);
  const RunResult wrap = Holed({"--size=100m", "--io_size=200m"});
  EXPECT_EQ(Read(wrap).total_ios, 200u) << Describe(wrap);
}

TEST(FioSemantics, TrimwriteTrimsAndWritesEveryBlock) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=t", "--ioengine=io_uring", "--rw=trimwrite", "--bs=4k",
                                                    "--size=1m", "--direct=1"});
  const stats::JobResult& j = r.clones.at(0).result;
  EXPECT_EQ(j.dirs[1].total_ios, 256u) << Describe(r);  // writes
  EXPECT_EQ(j.dirs[2].total_ios, 256u) << Describe(r);  // trims
  const RunResult rnd = MustRun(HostFromYaml(kHost), {"--name=t", "--ioengine=io_uring", "--rw=randtrimwrite",
                                                      "--bs=4k", "--size=1m", "--direct=1"});
  EXPECT_EQ(rnd.clones.at(0).result.dirs[1].total_ios, 256u) << Describe(rnd);
  EXPECT_EQ(rnd.clones.at(0).result.dirs[2].total_ios, 256u) << Describe(rnd);
}

TEST(FioSemantics, FilesizeBoundsTheRegionSizeTheTotal) {
  auto run = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"--name=f", "--rw=randread", "--bs=4k", "--direct=1"};
    args.insert(args.end(), extra.begin(), extra.end());
    return MustRun(HostFromYaml(kHost), args);
  };
  EXPECT_EQ(Read(run({"--filesize=1m"})).total_ios, 256u);
  EXPECT_EQ(Read(run({"--filesize=1m", "--size=2m"})).total_ios, 256u);
  EXPECT_EQ(Read(run({"--filesize=1m", "--size=512k"})).total_ios, 128u);
  const RunResult r = run({"--filesize=1m", "--write_iops_log=f", "--log_offset=1", "--per_job_logs=0"});
  ASSERT_FALSE(r.logs.empty());
  for (absl::string_view line : absl::StrSplit(r.logs[0].contents, '\n', absl::SkipEmpty())) {
    const std::vector<std::string> f = absl::StrSplit(line, ", ");
    ASSERT_EQ(f.size(), 6u) << line;
    uint64_t off = 0;
    ASSERT_TRUE(absl::SimpleAtoi(f[4], &off)) << line;
    EXPECT_LT(off, 1u << 20) << line;
  }
}

}  // namespace
}  // namespace blklab
