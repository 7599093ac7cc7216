// tests/fio_semantics_test.cc
//
// fio semantics that fio's own job-file tests check, written afresh and
// measured against fio 3.33 itself on a target larger than `size` (the
// figures below are what fio 3.33 reports for the same job there):
//
//  * a sequential job with holes (rw=read:512k) ends its loop when the
//    position reaches the region's end, before io_size bytes: 86 x 1 MiB
//    reads in a 128 MiB region of a larger device (an I/O that starts
//    inside the region may run past it); loops=2 does that twice (172);
//    with no filename fio lays out a file of exactly size bytes, whose end
//    stops the 86th read: 85 (fio's t0007 checks 87,040 KiB); with io_size
//    above size the pass wraps and the job reads io_size (200 of 1 MiB in
//    100 MiB);
//  * trimwrite's trims do not count against size: every block of the
//    region is trimmed and then written (256 + 256 of 4 KiB in 1 MiB);
//  * filesize bounds where I/O goes, size (if smaller) how much: filesize=1m
//    reads 256 blocks of 4 KiB, with size=2m still 256, with size=512k 128,
//    all inside the first MiB;
//  * bsrange draws minbs + maxbs x r aligned down (512-4k: each of the 8
//    sizes about 1/8, mean 2304 B); with a range or split the offset comes
//    first and the size must fit before the region's end; the random map
//    cuts an I/O at the first block it already has, so a randtrimwrite over
//    filesize=1m with bsrange=512-4k touches each of the 2048 sectors once
//    (fio's t0023/t0024 check exactly that), and the mean size of a
//    bssplit over a filling map is fio's (20,866 B for 4k/50:64k/50);
//  * flow control (flow.c): jobs of one flow_id are held to the ratio of
//    their flow= weights. fio 3.33 on the development machine: t0011's
//    pair (flow 1 at rate_iops=1000, flow 8) gives 1,000 / 8,000 IOPS with
//    the held job at 99% usr (a busy loop); t0012's 1:5:10 with
//    flow_sleep=100 gives 1,875 / 9,375 / 18,751 IOPS at 2-5% CPU each
//    (the held jobs sleep); in t0014 a job leaving its flow gives its share
//    to the others.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
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

// serialize_overlap=1 (fio's io_u_submit: an I/O that overlaps one in
// flight is BUSY until it completes): on a region of two 4 KiB blocks at
// iodepth=16, at most two writes are ever in flight, and the rate falls to
// what two at a time allow. Without it the queue fills.
TEST(FioSemantics, SerializeOverlapKeepsOverlappingWritesApart) {
  const char kSlowHost[] =
      "name: slow\n"
      "cpus: {count: 1}\n"
      "devices:\n"
      "  - name: nvme0n1\n"
      "    nvme: {latency_nsec: 80000}\n";
  auto run = [&kSlowHost](bool serialize) {
    std::vector<std::string> args = {"--name=w", "--filename=/dev/nvme0n1", "--ioengine=io_uring", "--direct=1",
                                     "--rw=randwrite", "--bs=4k", "--size=8k", "--norandommap", "--iodepth=16",
                                     "--runtime=20ms", "--time_based"};
    if (serialize) args.push_back("--serialize_overlap=1");
    return MustRun(HostFromYaml(kSlowHost), args);
  };
  const RunResult serial = run(true);
  const RunResult free_run = run(false);
  const auto& serial_depths = serial.clones.at(0).result.iodepth;
  uint64_t serial_deep = 0;
  for (size_t b = 2; b < serial_depths.size(); ++b) serial_deep += serial_depths[b];
  EXPECT_EQ(serial_deep, 0u) << "no more than two 4 KiB writes in flight on an 8 KiB region";
  const auto& free_depths = free_run.clones.at(0).result.iodepth;
  uint64_t free_deep = 0;
  for (size_t b = 2; b < free_depths.size(); ++b) free_deep += free_depths[b];
  EXPECT_GT(free_deep, 0u);
  const double serial_ios = static_cast<double>(serial.clones.at(0).result.dirs[1].total_ios);
  const double free_ios = static_cast<double>(free_run.clones.at(0).result.dirs[1].total_ios);
  EXPECT_LT(serial_ios, 0.3 * free_ios) << serial_ios << " vs " << free_ios;
  EXPECT_GT(serial_ios, 0.0);
}

TEST(FioSemantics, HoledSequentialLoopEndsAtTheRegionsEnd) {
  const RunResult one = Holed({"--size=128m", "--filename=/dev/nullb0"});
  EXPECT_EQ(Read(one).total_ios, 86u) << Describe(one);
  EXPECT_EQ(Read(one).io_bytes, 86u << 20);
  const RunResult two = Holed({"--size=128m", "--loops=2", "--filename=/dev/nullb0"});
  EXPECT_EQ(Read(two).total_ios, 172u) << Describe(two);
  // No filename: a file of 128 MiB, whose end the 86th read would cross.
  const RunResult file = Holed({"--size=128m"});
  EXPECT_EQ(Read(file).io_bytes, uint64_t{87040} << 10) << Describe(file);
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

// Sectors (512 B) each write of a write_bw_log with log_offset=1 covers.
std::vector<uint64_t> WrittenSectors(const RunResult& r) {
  std::vector<uint64_t> out;
  for (const stats::LogFile& f : r.logs) {
    for (absl::string_view line : absl::StrSplit(f.contents, '\n', absl::SkipEmpty())) {
      const std::vector<std::string> v = absl::StrSplit(line, ", ");
      uint64_t dir = 0, bs = 0, off = 0;
      if (v.size() < 5 || !absl::SimpleAtoi(v[2], &dir) || !absl::SimpleAtoi(v[3], &bs) ||
          !absl::SimpleAtoi(v[4], &off) || dir != 1) {
        continue;
      }
      for (uint64_t s = off / 512; s < (off + bs) / 512; ++s) out.push_back(s);
    }
  }
  return out;
}

TEST(FioSemantics, BsrangeDrawsAsFioDoes) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=b", "--ioengine=null", "--rw=randread",
                                                    "--bsrange=512-4k", "--norandommap", "--size=1g",
                                                    "--number_ios=20000"});
  const double mean = static_cast<double>(Read(r).io_bytes) / static_cast<double>(Read(r).total_ios);
  EXPECT_NEAR(mean, 2304, 60) << Describe(r);  // uniform over 512 .. 4096 inclusive: 2304
}

// The random map with a split of sizes: as the map fills, a 64 KiB I/O is
// cut at the first block the pass already has, so the mean size falls well
// below the split's 34 KiB. fio 3.33 on tests/data/fio-reference/jobs/
// 05-randrw-unified-latpct.fio (bssplit=4k/50:64k/50 over 1 GiB, 2 s):
// 20,866 B per read (out/05-randrw-unified-latpct.json).
TEST(FioSemantics, RandomMapCutsSplitSizesAsFioDoes) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=m", "--ioengine=null", "--rw=randrw", "--rwmixread=50",
                                                    "--bssplit=4k/50:64k/50", "--iodepth=8", "--size=1g",
                                                    "--runtime=100ms", "--time_based=1"});
  const double mean = static_cast<double>(Read(r).io_bytes) / static_cast<double>(Read(r).total_ios);
  EXPECT_NEAR(mean, 20866, 20866 * 0.05) << Describe(r);
}

TEST(FioSemantics, RangedTrimwriteTouchesEverySectorOnce) {
  for (const char* rw : {"--rw=randtrimwrite", "--rw=trimwrite"}) {
    for (const char* bs : {"--bsrange=512-4k", "--bssplit=512/25:1k/25:2k/25:4k/25"}) {
      const RunResult r = MustRun(HostFromYaml(kHost), {"--name=t", "--ioengine=null", rw, bs, "--filesize=1m",
                                                        "--write_bw_log=t", "--log_offset=1", "--per_job_logs=0"});
      std::vector<uint64_t> sectors = WrittenSectors(r);
      std::sort(sectors.begin(), sectors.end());
      EXPECT_EQ(sectors.size(), 2048u) << rw << " " << bs << " " << Describe(r);
      EXPECT_TRUE(std::adjacent_find(sectors.begin(), sectors.end()) == sectors.end()) << rw << " " << bs;
      ASSERT_FALSE(sectors.empty());
      EXPECT_EQ(sectors.front(), 0u);
      EXPECT_EQ(sectors.back(), 2047u) << rw << " " << bs;
    }
  }
}

const char kFlowHost[] =
    "name: flows\n"
    "cpus: {count: 4}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {gb: 4, irqmode: 0}\n"
    "    queue: {scheduler: none}\n";

std::vector<std::string> FlowJobs(const std::vector<std::vector<std::string>>& jobs,
                                  const std::vector<std::string>& global) {
  std::vector<std::string> args = {"--ioengine=null", "--bs=4k", "--size=100g", "--flow_id=1"};
  args.insert(args.end(), global.begin(), global.end());
  for (size_t i = 0; i < jobs.size(); ++i) {
    args.push_back(absl::StrCat("--name=flow", i + 1));
    args.insert(args.end(), jobs[i].begin(), jobs[i].end());
  }
  return args;
}

uint64_t Ios(const RunResult& r, size_t clone) { return r.clones.at(clone).result.dirs[0].total_ios; }

TEST(FioSemantics, FlowHoldsAJobToItsWeightWithABusyLoop) {
  const RunResult r = MustRun(HostFromYaml(kFlowHost),
                              FlowJobs({{"--flow=1", "--rate_iops=1000"}, {"--flow=8"}}, {"--runtime=500ms"}));
  EXPECT_NEAR(static_cast<double>(Ios(r, 0)), 500, 2) << Describe(r);
  // flow.c's counter starts at 1: the weight-8 job may be up to 8 ahead,
  // and 8 more when the run ends while the rate-limited job waits for its
  // next slot with that IO already counted in the flow (do_io counts it
  // before the rate wait) but not yet done.
  EXPECT_GE(Ios(r, 1), 8 * Ios(r, 0)) << Describe(r);
  EXPECT_LE(Ios(r, 1), 8 * (Ios(r, 0) + 2)) << Describe(r);
  // The held job spins in user space (fio `continue`s do_io's loop).
  EXPECT_GT(r.clones.at(1).result.cpu.usr_pct, 95) << Describe(r);
  // Without flow= the same jobs are not held.
  const RunResult free = MustRun(HostFromYaml(kFlowHost),
                                 FlowJobs({{"--rate_iops=1000"}, {}}, {"--runtime=500ms"}));
  EXPECT_GT(Ios(free, 1), 100 * Ios(r, 1)) << Describe(free);
}

TEST(FioSemantics, FlowSleepQuiescesAndSleeps) {
  const RunResult r = MustRun(HostFromYaml(kFlowHost),
                              FlowJobs({{"--flow=1"}, {"--flow=5"}, {"--flow=10"}},
                                       {"--runtime=500ms", "--flow_sleep=100", "--thread"}));
  const double one = static_cast<double>(Ios(r, 0));
  EXPECT_GT(one, 100) << Describe(r);
  EXPECT_NEAR(static_cast<double>(Ios(r, 1)) / one, 5, 0.1) << Describe(r);
  EXPECT_NEAR(static_cast<double>(Ios(r, 2)) / one, 10, 0.2) << Describe(r);
  for (const auto& c : r.clones) EXPECT_LT(c.result.cpu.usr_pct + c.result.cpu.sys_pct, 20) << Describe(r);
}

// A job that ends leaves its flow (flow_exit_job): its weight and its count
// go, and the others share what is left.
TEST(FioSemantics, AJobLeavingItsFlowGivesUpItsShare) {
  const RunResult r = MustRun(
      HostFromYaml(kFlowHost),
      FlowJobs({{"--flow=1"}, {"--flow=2"}, {"--flow=3", "--runtime=50ms"}},
               {"--runtime=100ms", "--time_based", "--thread", "--write_iops_log=fl", "--log_avg_msec=25"}));
  ASSERT_EQ(r.clones.size(), 3u);
  EXPECT_NEAR(static_cast<double>(Ios(r, 1)) / static_cast<double>(Ios(r, 0)), 2, 0.01) << Describe(r);
  // Per 25 ms window: while all three run, 1:2:3; then 1:2 with the third
  // job's share spread over the other two.
  auto samples = [&](size_t clone) {
    std::vector<double> v;
    for (const stats::LogFile& f : r.logs) {
      if (f.name != absl::StrCat("fl_iops.", clone + 1, ".log")) continue;
      for (absl::string_view line : absl::StrSplit(f.contents, '\n', absl::SkipEmpty())) {
        const std::vector<std::string> fields = absl::StrSplit(line, ", ");
        double x = 0;
        if (fields.size() > 1 && absl::SimpleAtod(fields[1], &x)) v.push_back(x);
      }
    }
    return v;
  };
  const std::vector<double> one = samples(0), three = samples(2);
  ASSERT_GE(one.size(), 3u) << Describe(r);
  ASSERT_GE(three.size(), 1u) << Describe(r);
  EXPECT_NEAR(three[0] / one[0], 3, 0.05) << Describe(r);
  EXPECT_GT(one[2], 1.3 * one[0]) << Describe(r);
}

TEST(FioSemantics, FlowWeightAboveFiosMaximumIsRefused) {
  const RunOutcome o = RunArgs(HostFromYaml(kFlowHost), FlowJobs({{"--flow=1001"}}, {"--runtime=10ms"}));
  ASSERT_FALSE(o.result.ok());
  EXPECT_THAT(std::string(o.result.status().message()), ::testing::HasSubstr("flow"));
  // fio counts a later wave's weight from the start: the first job is held
  // for good once ahead of its half, and the stall names it.
  const RunOutcome hung = RunArgs(HostFromYaml(kFlowHost), FlowJobs({{"--flow=1"}, {"--flow=1", "--stonewall"}}, {}));
  ASSERT_FALSE(hung.result.ok());
  EXPECT_THAT(std::string(hung.result.status().message()),
              ::testing::HasSubstr("held back by flow control: 'flow1' (flow_id 1)"));
}

}  // namespace
}  // namespace blklab
