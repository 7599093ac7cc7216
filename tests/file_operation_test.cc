// tests/file_operation_test.cc
//
// fio's file operation engines, falloc and ftruncate
// (job/engines/file_operation_engine.cc), each test failing when its
// mechanism is removed:
//
//  * fallocate over blocks that exist costs only the call; a punched hole
//    frees blocks, and allocating over holes costs an allocation per run;
//  * a punched hole and a truncated tail drop their cached pages;
//  * jobs sharing a file contend on its i_rwsem, jobs on files of their own
//    do not;
//  * what has no counterpart is refused by name.
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
    "filesystems:\n"
    "  - {path: /mnt, device: nvme0n1}\n";

std::vector<std::string> Job(const std::string& name, const std::string& engine, const std::string& rw,
                             std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--name=" + name, "--ioengine=" + engine, "--filename=/mnt/f", "--size=16m",
                                "--rw=" + rw, "--bs=64k"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(FileOperations, FallocateCostsAnAllocationOnlyWhereThereIsAHole) {
  const host::HostSpec h = HostFromYaml(kHost);
  // fio lays the file out in full: allocating what exists is the call alone.
  const RunResult full = MustRun(h, Job("a", "falloc", "randwrite", {"--runtime=20ms", "--time_based"}));
  EXPECT_GT(ProfileNs(full.kernel, "ext4_fallocate"), 0);
  EXPECT_EQ(ProfileNs(full.kernel, "ext4_map_blocks"), 0) << Describe(full);
  EXPECT_EQ(ProfileNs(full.kernel, "ext4_ext_remove_space"), 0);
  // Punching every block, then allocating them all again: each costs a run.
  std::vector<std::string> args = Job("punch", "falloc", "trim");
  const std::vector<std::string> again = Job("alloc", "falloc", "write", {"--stonewall"});
  args.insert(args.end(), again.begin(), again.end());
  const RunResult holes = MustRun(h, args);
  EXPECT_GT(ProfileNs(holes.kernel, "ext4_ext_remove_space"), 0) << Describe(holes);
  EXPECT_GT(ProfileNs(holes.kernel, "ext4_map_blocks"), 0) << Describe(holes);
  ASSERT_EQ(holes.clones.size(), 2u);
  const stats::DirResult& realloc = holes.clones[1].result.dirs[1];
  const stats::DirResult& plain = full.clones[0].result.dirs[1];
  EXPECT_LT(realloc.bw_bytes_per_sec(), plain.bw_bytes_per_sec() * 0.8)
      << "allocating over holes is slower than over allocated blocks";
}

TEST(FileOperations, APunchedHoleAndATruncatedTailDropTheirCachedPages) {
  const host::HostSpec h = HostFromYaml(kHost);
  // 16 MiB read through the page cache and kept (invalidate=0), then punched.
  std::vector<std::string> args = Job("read", "psync", "read", {"--invalidate=0"});
  std::vector<std::string> punch = Job("punch", "falloc", "trim", {"--stonewall", "--size=8m"});
  args.insert(args.end(), punch.begin(), punch.end());
  const RunResult r = MustRun(h, args);
  ASSERT_TRUE(r.kernel.page_cache.has_value());
  EXPECT_EQ(r.kernel.page_cache->pages_invalidated, 8u * 256) << "the punched 8 MiB, page by page";
  // ftruncate to 0 drops the whole file's pages (fio's first sequential
  // write truncates to offset 0).
  args = Job("read", "psync", "read", {"--invalidate=0"});
  std::vector<std::string> shrink = Job("shrink", "ftruncate", "write", {"--stonewall", "--number_ios=1"});
  args.insert(args.end(), shrink.begin(), shrink.end());
  const RunResult t = MustRun(h, args);
  ASSERT_TRUE(t.kernel.page_cache.has_value());
  EXPECT_EQ(t.kernel.page_cache->pages_invalidated, 16u * 256);
  EXPECT_GT(ProfileNs(t.kernel, "ext4_ext_remove_space"), 0);
}

TEST(FileOperations, JobsSharingAFileContendOnItsInodeLock) {
  const host::HostSpec h = HostFromYaml(kHost);
  const RunResult shared =
      MustRun(h, Job("a", "falloc", "randtrim", {"--numjobs=2", "--runtime=20ms", "--time_based", "--bs=4k"}));
  EXPECT_GT(LockOf(shared.kernel, "i_rwsem (down_write)").contended, 100u) << Describe(shared);
  // fio's own files per clone (no filename=): one inode each.
  const RunResult apart = MustRun(h, {"--name=a", "--ioengine=falloc", "--directory=/mnt", "--size=16m",
                                      "--rw=randtrim", "--bs=4k", "--numjobs=2", "--runtime=20ms", "--time_based"});
  EXPECT_EQ(LockOf(apart.kernel, "i_rwsem (down_write)").contended, 0u) << Describe(apart);
  EXPECT_GT(LockOf(apart.kernel, "i_rwsem (down_write)").acquisitions, 100u);
}

TEST(FileOperations, WhatHasNoCounterpartIsRefusedByName) {
  const host::HostSpec h = HostFromYaml(kHost);
  RunOutcome o = RunArgs(h, Job("t", "ftruncate", "randrw"));
  ASSERT_FALSE(o.result.ok());
  EXPECT_THAT(std::string(o.result.status().message()), HasSubstr("ioengine=ftruncate does only writes"));
  o = RunArgs(h, {"--name=d", "--ioengine=falloc", "--filename=/dev/nvme0n1", "--size=1m", "--rw=write"});
  ASSERT_FALSE(o.result.ok());
  EXPECT_THAT(std::string(o.result.status().message()), HasSubstr("ioengine=falloc needs a regular file"));
}

}  // namespace
}  // namespace blklab
