// tests/sg_engine_test.cc
//
// fio's sg engine: SCSI commands through SG_IO on a SCSI disk
// (job/engines/sg_engine.cc, RequestQueue::ExecutePassthrough,
// job/medium_content.h), each test failing when its mechanism is removed:
//
//  * a passthrough command skips the I/O scheduler and the disk's I/O
//    accounting, where the same I/O through pread takes both;
//  * fio's sg_write_same_ndob.fio: WRITE SAME with NDOB zeroes 19 blocks,
//    VERIFY with BYTCHK 01 of those 19 against zeroes passes, of 20 fails
//    with EIO on the 20th (the content each command leaves is kept);
//  * what has no counterpart is refused by name;
//  * io_uring_cmd on /dev/ngXnY: NVMe passthrough commands, no bio path
//    (no submit_bio, no disk statistics), and only on that device.
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
    "name: sg\n"
    "cpus: {count: 4}\n"
    "devices:\n"
    "  - name: sdb\n"
    "    hba: {nr_hw_queues: 1, host_tagset: false, can_queue: 32, cmd_per_lun: 32, drives: 1,\n"
    "          drive_latency_nsec: 80000, drive_iops: 100000}\n"
    "    queue: {scheduler: mq-deadline}\n"
    "  - name: nvme0n1\n"
    "    nvme: {}\n";

uint64_t DiskIos(const RunResult& r, const std::string& name) {
  for (const stats::DeviceRow& d : r.kernel.devices) {
    if (d.name == name) return d.read_ios + d.write_ios;
  }
  return 0;
}

TEST(SgEngine, PassthroughSkipsTheSchedulerAndTheAccounting) {
  const host::HostSpec h = HostFromYaml(kHost);
  const std::vector<std::string> job = {"--name=j", "--filename=/dev/sdb", "--rw=randread", "--bs=4k",
                                        "--number_ios=2000"};
  std::vector<std::string> sg = job;
  sg.push_back("--ioengine=sg");
  std::vector<std::string> pread = job;
  pread.insert(pread.end(), {"--ioengine=psync", "--direct=1"});
  const RunResult a = MustRun(h, sg);
  const RunResult b = MustRun(h, pread);
  EXPECT_EQ(TotalIos(a), 2000u);
  EXPECT_GT(ProfileNs(a.kernel, "sg_io"), 0) << Describe(a);
  EXPECT_EQ(CounterOf(a.kernel, "dispatch_list_insert"), 2000u) << "blk_execute_rq: onto hctx->dispatch";
  EXPECT_EQ(ProfileNs(a.kernel, "dd_insert_requests"), 0) << "passthrough goes to hctx->dispatch";
  EXPECT_EQ(DiskIos(a, "sdb"), 0u) << "passthrough requests are not in the disk's statistics";
  EXPECT_GT(ProfileNs(b.kernel, "dd_insert_requests"), 0) << Describe(b);
  EXPECT_EQ(DiskIos(b, "sdb"), 2000u);
}

TEST(SgEngine, WriteSameNdobZeroesAndVerifyComparesWhatTheDiskHolds) {
  // fio's examples/sg_write_same_ndob.fio, its four jobs in turn.
  const std::vector<std::string> args = {
      "--filename=/dev/sdb", "--ioengine=sg", "--rw=write", "--bs=512",
      "--name=precon", "--buffer_pattern=0x01", "--number_ios=20", "--stonewall",
      "--name=write_same_ndob", "--sg_write_mode=write_same_ndob", "--number_ios=19", "--stonewall",
      "--name=verify-pass", "--sg_write_mode=verify_bytchk_01", "--buffer_pattern=0x00", "--number_ios=19",
      "--stonewall",
      "--name=verify-fail", "--sg_write_mode=verify_bytchk_01", "--buffer_pattern=0x00", "--number_ios=20",
      "--stonewall"};
  const RunOutcome o = RunArgs(HostFromYaml(kHost), args);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  const RunResult& r = *o.result;
  ASSERT_EQ(r.clones.size(), 4u);
  EXPECT_EQ(r.clones[0].result.error, 0);
  EXPECT_EQ(r.clones[1].result.error, 0);
  EXPECT_EQ(r.clones[2].result.error, 0) << "19 zeroed blocks compare equal to zeroes";
  EXPECT_EQ(r.clones[3].result.error, 5) << "the 20th still holds 0x01";
  EXPECT_THAT(r.clones[3].result.verror, HasSubstr("fio_sgio_doio"));
  ASSERT_FALSE(r.clones[3].messages.empty());
  EXPECT_THAT(r.clones[3].messages[0], HasSubstr("miscompare at LBA 19"));
}

TEST(SgEngine, WhatHasNoCounterpartIsRefusedByName) {
  const host::HostSpec h = HostFromYaml(kHost);
  auto refused = [&h](std::vector<std::string> extra) {
    std::vector<std::string> a = {"--name=j", "--ioengine=sg", "--rw=write", "--bs=4k", "--number_ios=8"};
    a.insert(a.end(), extra.begin(), extra.end());
    const RunOutcome o = RunArgs(h, a);
    EXPECT_FALSE(o.result.ok());
    return std::string(o.result.ok() ? "" : o.result.status().message());
  };
  EXPECT_THAT(refused({"--filename=/dev/nvme0n1"}), HasSubstr("not a SCSI disk"));
  EXPECT_THAT(refused({"--filename=/dev/sdb", "--sg_write_mode=write_stream"}), HasSubstr("write_stream"));
  EXPECT_THAT(refused({"--filename=/dev/sdb", "--end_fsync=1"}), HasSubstr("SYNCHRONIZE CACHE"));
  EXPECT_THAT(refused({"--filename=/dev/sdb", "--bs=4000"}), HasSubstr("not sector aligned"));
}

TEST(SgEngine, IoUringCmdSendsPassthroughCommandsToTheGenericDevice) {
  const host::HostSpec h = HostFromYaml(kHost);
  const std::vector<std::string> job = {"--name=j", "--rw=randread", "--bs=4k", "--iodepth=16",
                                        "--number_ios=4000", "--direct=1"};
  std::vector<std::string> cmd = job;
  cmd.insert(cmd.end(), {"--ioengine=io_uring_cmd", "--filename=/dev/ng0n1"});
  std::vector<std::string> blk = job;
  blk.insert(blk.end(), {"--ioengine=io_uring", "--filename=/dev/nvme0n1"});
  const RunResult a = MustRun(h, cmd);
  const RunResult b = MustRun(h, blk);
  EXPECT_EQ(TotalIos(a), 4000u);
  EXPECT_EQ(CounterOf(a.kernel, "submit_bio"), 0u) << Describe(a);
  EXPECT_EQ(DiskIos(a, "nvme0n1"), 0u);
  EXPECT_EQ(CounterOf(b.kernel, "submit_bio"), 4000u) << Describe(b);
  EXPECT_EQ(DiskIos(b, "nvme0n1"), 4000u);
  auto refused = [&h](std::vector<std::string> a) {
    const RunOutcome o = RunArgs(h, a);
    EXPECT_FALSE(o.result.ok());
    return std::string(o.result.ok() ? "" : o.result.status().message());
  };
  EXPECT_THAT(refused({"--name=x", "--ioengine=io_uring_cmd", "--filename=/dev/nvme0n1", "--number_ios=8"}),
              HasSubstr("only works with NVMe generic character devices"));
  EXPECT_THAT(refused({"--name=x", "--ioengine=io_uring", "--filename=/dev/ng0n1", "--number_ios=8"}),
              HasSubstr("only ioengine=io_uring_cmd"));
}

}  // namespace
}  // namespace blklab
