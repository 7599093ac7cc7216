// tests/multi_file_test.cc
//
// Jobs over several files or devices (filename=a:b lists, nrfiles=,
// file_service_type: job/file_service.h), each test failing when its
// mechanism is removed:
//
//  * a filename list of two devices sends I/O to both, half each;
//  * a buffered job over four files verifies what it wrote to each (a
//    verify read that went to another file than its write fails);
//  * nrfiles= makes that many files of size=/nrfiles each, and end_fsync
//    syncs each one;
//  * files of different sizes, without size=, are each read whole;
//  * a skewed file choice is refused by name.
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers
using ::testing::HasSubstr;

const char kHost[] =
    "name: files\n"
    "cpus: {count: 4}\n"
    "devices:\n"
    "  - name: nvme0n1\n"
    "    nvme: {latency_nsec: 80000, max_iops: 800000, gb: 16}\n"
    "  - name: nullb0\n"
    "    null_blk: {}\n"
    "  - name: nullb1\n"
    "    null_blk: {}\n"
    "filesystems:\n"
    "  - {path: /mnt, device: nvme0n1}\n";

const stats::DeviceRow& Device(const RunResult& r, const std::string& name) {
  for (const stats::DeviceRow& d : r.kernel.devices) {
    if (d.name == name) return d;
  }
  static const stats::DeviceRow none;
  ADD_FAILURE() << "no device " << name;
  return none;
}

TEST(MultiFile, AListOfTwoDevicesSendsHalfTheIoToEach) {
  const RunResult r = MustRun(HostFromYaml(kHost),
                              {"--name=two", "--filename=/dev/nullb0:/dev/nullb1", "--rw=randread", "--bs=4k",
                               "--direct=1", "--ioengine=libaio", "--iodepth=8", "--number_ios=4000"});
  EXPECT_EQ(TotalIos(r), 4000u);
  EXPECT_EQ(Device(r, "nullb0").read_ios, 2000u) << Describe(r);
  EXPECT_EQ(Device(r, "nullb1").read_ios, 2000u) << Describe(r);
}

TEST(MultiFile, EachFileVerifiesWhatWasWrittenToIt) {
  // fio's t0037: four files, size= shared among them, written and verified
  // every loop through the page cache.
  const RunResult r = MustRun(HostFromYaml(kHost),
                              {"--name=job", "--filename=/mnt/a:/mnt/b:/mnt/c:/mnt/d", "--verify=md5",
                               "--ioengine=libaio", "--iodepth=32", "--size=512k", "--loops=4", "--rw=write",
                               "--end_fsync=1"});
  ASSERT_EQ(r.clones.size(), 1u);
  const stats::JobResult& j = r.clones[0].result;
  EXPECT_EQ(j.error, 0) << Describe(r);
  EXPECT_EQ(j.issued[1], 4u * 128) << "512 KiB of 4 KiB writes per loop";
  EXPECT_EQ(j.issued[0], 4u * 128) << "each loop reads back what it wrote";
  EXPECT_EQ(j.sync.total_ios, 4u * 4) << "end_fsync: each of the four files, every loop";
  ASSERT_TRUE(r.kernel.page_cache.has_value());
  EXPECT_EQ(Device(r, "nvme0n1").write_ios > 0, true) << "the fsyncs wrote the dirty pages";
}

TEST(MultiFile, NrfilesMakesFilesOfAShareOfSizeEach) {
  // Three direct files of 4 MiB, written sequentially one after another:
  // the job ends after size= bytes, every file written once.
  const RunResult r = MustRun(HostFromYaml(kHost),
                              {"--name=n", "--directory=/mnt", "--nrfiles=3", "--size=12m", "--rw=write",
                               "--bs=64k", "--direct=1", "--ioengine=psync", "--file_service_type=sequential",
                               "--end_fsync=1"});
  const stats::JobResult& j = r.clones[0].result;
  EXPECT_EQ(j.error, 0) << Describe(r);
  EXPECT_EQ(j.issued[1], 12u * 16);
  EXPECT_EQ(j.sync.total_ios, 3u);
  EXPECT_EQ(Device(r, "nvme0n1").write_ios, 12u * 16);
}

TEST(MultiFile, FilesOfDifferentSizesAreEachReadWhole) {
  // No size=: the job's total is the files' sizes together (fio's
  // setup_files), not the first file's times two.
  std::string host = kHost;
  host.replace(host.find("{path: /mnt, device: nvme0n1}"), 29,
               "{path: /mnt, device: nvme0n1, files: [{path: /mnt/a, mib: 1}, {path: /mnt/b, mib: 3}]}");
  const RunResult r = MustRun(HostFromYaml(host), {"--name=two", "--filename=/mnt/a:/mnt/b", "--rw=read",
                                                   "--bs=64k", "--direct=1", "--ioengine=psync"});
  EXPECT_EQ(r.clones[0].result.issued[0], 64u) << Describe(r);
}

TEST(MultiFile, ASkewedFileChoiceIsRefusedByName) {
  const RunOutcome o = RunArgs(HostFromYaml(kHost), {"--name=z", "--filename=/mnt/a:/mnt/b", "--size=1m",
                                                     "--rw=read", "--file_service_type=zipf:1.2"});
  ASSERT_FALSE(o.result.ok());
  EXPECT_THAT(o.result.status().message(), HasSubstr("file_service_type=zipf"));
}

}  // namespace
}  // namespace blklab
