// tests/fio_verify_test.cc
//
// fio's verify (verify.c, backend.c do_verify, io_u.c check_get_verify),
// written afresh from what fio 3.33 does and what its own job-file tests
// check:
//
//  * a writing job with verify= reads back every block it wrote after its
//    write phase (do_verify=1, the default): as many bytes read as written;
//  * verify_backlog=N verifies as the job goes, N logged writes at a time;
//    with the sync engine and 100 MiB written, 100 MiB are read (t0005);
//  * a sequential read/write mix with verify_backlog=1 reads exactly `size`
//    (its own reads plus one verify read per write; t0008); a random mix
//    with a backlog reads twice what it writes (t0006);
//  * experimental_verify replays the write sequence instead of a log and
//    reads back what was written (t0025);
//  * the device remembers the headers: a read-only job with verify= fails
//    on blocks nobody wrote (bad magic), on blocks written with another
//    block size (bad header length, t0003), and on blocks a later write
//    without verify cut into (the checksum) - each with fio's message, error
//    84 (EILSEQ) and the job stopped;
//  * the checksum costs CPU in the fio thread (md5 far more than crc32c);
//  * what is not modelled is refused by name: verify_only, verify_async with
//    an engine that does I/O, loops>1 with a verify phase.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers
using ::testing::HasSubstr;

const char kHost[] =
    "name: verify\n"
    "cpus: {count: 1}\n"
    "devices:\n"
    "  - name: nullb0\n"
    "    null_blk: {gb: 4, irqmode: 0}\n"
    "    queue: {scheduler: none}\n";

const stats::JobResult& Job(const RunResult& r, size_t i = 0) { return r.clones.at(i).result; }
uint64_t ReadKib(const RunResult& r, size_t i = 0) { return Job(r, i).dirs[0].io_bytes >> 10; }
uint64_t WriteKib(const RunResult& r, size_t i = 0) { return Job(r, i).dirs[1].io_bytes >> 10; }

std::vector<std::string> AllMessages(const RunResult& r) {
  std::vector<std::string> out;
  for (const CloneResult& c : r.clones) out.insert(out.end(), c.messages.begin(), c.messages.end());
  return out;
}

TEST(FioVerify, AWriteJobReadsBackWhatItWrote) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=w", "--ioengine=libaio", "--iodepth=8", "--direct=1",
                                                    "--rw=randwrite", "--bs=4k", "--size=8m", "--verify=crc32c"});
  EXPECT_EQ(Job(r).error, 0) << Describe(r);
  EXPECT_EQ(WriteKib(r), 8192u);
  EXPECT_EQ(ReadKib(r), 8192u) << Describe(r);
  EXPECT_TRUE(AllMessages(r).empty());
  const RunResult none = MustRun(HostFromYaml(kHost), {"--name=w", "--ioengine=libaio", "--iodepth=8", "--direct=1",
                                                       "--rw=randwrite", "--bs=4k", "--size=8m", "--verify=crc32c",
                                                       "--do_verify=0"});
  EXPECT_EQ(ReadKib(none), 0u);
}

TEST(FioVerify, BacklogVerifiesAsTheJobGoes) {
  // t0005: sync engine, 100 MiB written, every block verified once.
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=write", "--bs=4k", "--ioengine=sync", "--size=100m",
                                                    "--direct=1", "--verify=md5", "--verify_backlog=32",
                                                    "--rw=write"});
  EXPECT_EQ(ReadKib(r), 102400u) << Describe(r);
  EXPECT_EQ(WriteKib(r), 102400u);
  EXPECT_EQ(Job(r).error, 0);
}

TEST(FioVerify, MixedJobsCountVerifyReadsApartFromSize) {
  // t0008: sequential read/write over 32 MiB, each write verified at once:
  // the job's own reads and writes make up size, the verify reads add the
  // writes again, so the reads come to exactly size.
  const RunResult seq = MustRun(HostFromYaml(kHost), {"--name=foo", "--bs=4k", "--verify=crc32c", "--rw=readwrite",
                                                      "--direct=1", "--size=32m", "--do_verify=1",
                                                      "--verify_backlog=1"});
  EXPECT_EQ(ReadKib(seq), 32768u) << Describe(seq);
  EXPECT_NEAR(static_cast<double>(WriteKib(seq)), 16384.0, 16384.0 * 0.03);
  // t0006: random mix through libaio with a 1024-block backlog.
  const RunResult rnd = MustRun(HostFromYaml(kHost), {"--name=ver-test", "--rw=randrw", "--bs=4k", "--direct=1",
                                                      "--ioengine=libaio", "--iodepth=32", "--verify=meta",
                                                      "--verify_backlog=1024", "--verify_fatal=1", "--size=256m",
                                                      "--verify_pattern=0xaaa"});
  const double ratio = static_cast<double>(ReadKib(rnd)) / static_cast<double>(WriteKib(rnd));
  EXPECT_GT(ratio, 1.99) << Describe(rnd);
  EXPECT_LT(ratio, 2.01) << Describe(rnd);
  EXPECT_EQ(Job(rnd).error, 0);
}

TEST(FioVerify, ExperimentalVerifyReplaysTheWrites) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=job", "--size=128k", "--readwrite=write", "--do_verify=1",
                                                    "--verify=md5", "--experimental_verify=1"});
  EXPECT_EQ(ReadKib(r), 128u) << Describe(r);
  EXPECT_EQ(Job(r).error, 0);
}

TEST(FioVerify, EachLoopWritesThenVerifiesAndRepeatsTheFirstLoopsOffsets) {
  // fio's t0026: thread_main runs do_io and do_verify once per loop, and
  // clear_io_state seeds the generators again (randrepeat), so the replay
  // of every loop matches its writes and their numberio counts on.
  const RunResult r =
      MustRun(HostFromYaml(kHost), {"--name=job1", "--size=1m", "--readwrite=randwrite", "--loops=8", "--do_verify=1",
                                    "--verify=md5", "--experimental_verify=1"});
  EXPECT_EQ(Job(r).error, 0) << Describe(r);
  EXPECT_TRUE(AllMessages(r).empty()) << AllMessages(r).front();
  EXPECT_EQ(WriteKib(r), 8u * 1024);
  EXPECT_EQ(ReadKib(r), 8u * 1024);
  const RunResult logged = MustRun(HostFromYaml(kHost), {"--name=w", "--size=1m", "--rw=randwrite", "--loops=3",
                                                         "--verify=crc32c"});
  EXPECT_EQ(Job(logged).error, 0) << Describe(logged);
  EXPECT_EQ(WriteKib(logged), 3u * 1024);
  EXPECT_EQ(ReadKib(logged), 3u * 1024);
}

TEST(FioVerify, ReadingUnwrittenBlocksFailsWithBadMagic) {
  const RunResult r = MustRun(HostFromYaml(kHost), {"--name=v", "--rw=read", "--bs=4k", "--size=64k", "--verify=md5",
                                                    "--ioengine=libaio", "--iodepth=4", "--direct=1"});
  EXPECT_EQ(Job(r).error, 84) << Describe(r);
  EXPECT_THAT(Job(r).verror, HasSubstr("func=io_u_queued_complete"));
  const std::vector<std::string> m = AllMessages(r);
  ASSERT_FALSE(m.empty());
  EXPECT_EQ(m[0],
            "verify: bad magic header 0, wanted acca at file /dev/nullb0 offset 0, length 4096 "
            "(requested block: offset=0, length=4096)");
  // The job stops at the failure: the four in flight, not the 16 blocks.
  EXPECT_EQ(Job(r).dirs[0].total_ios, 4u);
}

TEST(FioVerify, TheDeviceRemembersWhatWasWrittenAcrossJobs) {
  // Written with verify, then read back by another job: clean.
  const RunResult ok = MustRun(HostFromYaml(kHost),
                               {"--name=w", "--rw=write", "--bs=4k", "--size=1m", "--verify=md5", "--do_verify=0",
                                "--name=r", "--stonewall", "--rw=read", "--bs=4k", "--size=1m", "--verify=md5"});
  EXPECT_EQ(Job(ok, 1).error, 0) << Describe(ok);
  EXPECT_EQ(ReadKib(ok, 1), 1024u);
  // t0003: written in 512 B blocks, read back in 1 MiB ones.
  const RunResult len = MustRun(HostFromYaml(kHost),
                                {"--name=w", "--rw=write", "--bs=512", "--size=1m", "--verify=md5", "--do_verify=0",
                                 "--name=r", "--stonewall", "--rw=read", "--bs=1m", "--size=1m", "--verify=md5"});
  EXPECT_EQ(Job(len, 1).error, 84) << Describe(len);
  EXPECT_THAT(AllMessages(len).at(0), HasSubstr("verify: bad header length 512, wanted 1048576"));
  // A later write without verify cuts into the second 4 KiB block (its
  // header stays, its checksum fails) and covers the third's header.
  const RunResult cut = MustRun(
      HostFromYaml(kHost),
      {"--name=w", "--rw=write", "--bs=4k", "--size=16k", "--verify=md5", "--do_verify=0", "--name=x", "--stonewall",
       "--rw=write", "--bs=4k", "--offset=6k", "--size=4k", "--name=r", "--stonewall", "--rw=read", "--bs=4k",
       "--size=16k", "--verify=md5", "--iodepth=1"});
  EXPECT_EQ(Job(cut, 2).error, 84) << Describe(cut);
  EXPECT_THAT(AllMessages(cut).at(0), HasSubstr("md5: verify failed at file /dev/nullb0 offset 4096, length 4096"));
  EXPECT_EQ(Job(cut, 2).dirs[0].total_ios, 2u);  // the first block passed, the second failed
}

TEST(FioVerify, ChecksumsCostCpuInTheFioThread) {
  auto usr = [](const std::string& verify) {
    const RunResult r = MustRun(HostFromYaml(kHost), {"--name=w", "--rw=write", "--bs=64k", "--size=64m",
                                                      "--ioengine=io_uring", "--iodepth=8", "--direct=1",
                                                      "--verify=" + verify});
    return ProfileNs(r.kernel, "fio:verify_io_u") + ProfileNs(r.kernel, "fio:populate_verify_io_u");
  };
  const int64_t md5 = usr("md5");
  const int64_t crc = usr("crc32c");
  EXPECT_GT(crc, 0);
  EXPECT_GT(md5, 8 * crc);
}

TEST(FioVerify, WhatIsNotModelledIsRefusedByName) {
  const host::HostSpec h = HostFromYaml(kHost);
  EXPECT_THAT(RunArgs(h, {"--name=w", "--rw=write", "--size=1m", "--verify=md5", "--verify_only"}).result.status()
                  .message(),
              HasSubstr("verify_only"));
  EXPECT_THAT(RunArgs(h, {"--name=w", "--rw=write", "--size=1m", "--verify=md5", "--verify_async=2"}).result.status()
                  .message(),
              HasSubstr("verify_async=2"));
  // With fio's null engine nothing is checked (FIO_FAKEIO): verify_async is moot.
  const RunResult null = MustRun(h, {"--name=w", "--ioengine=null", "--rw=randwrite", "--size=16m", "--verify=crc32c",
                                     "--verify_async=2", "--verify_backlog=64"});
  EXPECT_EQ(Job(null).error, 0);
  EXPECT_EQ(ReadKib(null), 16384u) << Describe(null);
}

}  // namespace
}  // namespace blklab
