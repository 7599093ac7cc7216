// tests/mmap_test.cc
//
// fio's mmap engine over the page cache's fault path (PageCache::MmapAccess)
// and fio's fadvise_hint, each test failing when its mechanism is removed:
//
//  * a sequential pass maps 16 pages per minor fault (fault-around), and
//    its misses come in readahead windows, so faults are a small fraction
//    of the pages;
//  * random reads under fio's default MADV_RANDOM read one page per fault;
//    without the advice a fault reads ra_pages around itself, and later
//    faults find their pages cached;
//  * a store to a page not cached reads it first (a write(2) of a whole page
//    does not); a store after writeback faults again (page_mkclean), so
//    msync every few writes makes nearly every write fault;
//  * a mapping larger than memory is reclaimed through unmapping; a second
//    loop over a cached file takes only minor faults;
//  * fio's own refusals (bs below a page with direct=1) and the model's
//    (trims, thp=1) name what they refuse; runs are deterministic;
//  * fadvise_hint=1 doubles a sequential buffered read's readahead window
//    (POSIX_FADV_SEQUENTIAL) against fadvise_hint=0.
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers

const stats::PageCacheRow& Cache(const RunResult& r) { return PageCacheOf(r); }

const stats::CpuUsage& Cpu(const RunResult& r) { return r.clones.at(0).result.cpu; }

std::vector<std::string> Mmap(const std::string& rw, const std::string& size, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--name=m", "--filename=/mnt/f", "--size=" + size, "--rw=" + rw, "--bs=4k",
                                "--ioengine=mmap"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(Mmap, ASequentialPassFaultsOncePerSixteenPages) {
  const host::HostSpec h = PageCacheHost();
  const RunResult r = MustRun(h, Mmap("read", "32m"));
  const uint64_t pages = 32u * 256;
  const stats::PageCacheRow& pc = Cache(r);
  EXPECT_EQ(TotalIos(r), pages);
  EXPECT_EQ(pc.mmap_faults, Cpu(r).majf + Cpu(r).minf) << "fio's majf and minf are the job's faults";
  EXPECT_GT(Cpu(r).majf, 0u) << Describe(r);
  // Fault-around maps the 64 KiB around a fault; it leaves each readahead
  // window's marker page (one per 64 pages) to a fault of its own.
  EXPECT_LE(pc.mmap_faults, pages / 16 + pages / 64 + 16) << Describe(r);
  EXPECT_GE(pc.mmap_faults, pages / 16);
  EXPECT_EQ(pc.read_misses, pages) << "every page read once";
  EXPECT_LT(pc.read_bios, pages / 16) << "in readahead windows";
  EXPECT_GT(pc.readahead_async, 0u);
  EXPECT_GT(ProfileNs(r.kernel, "filemap_map_pages"), 0);
  EXPECT_GT(ProfileNs(r.kernel, "fio:memcpy"), 0);
  EXPECT_EQ(ProfileNs(r.kernel, "__x64_sys_pread64"), 0) << "no system call per I/O";
}

TEST(Mmap, RandomReadsUnderMadvRandomReadOnePagePerFault) {
  const host::HostSpec h = PageCacheHost();
  const RunResult advised = MustRun(h, Mmap("randread", "32m", {"--runtime=50ms"}));
  const stats::PageCacheRow& a = Cache(advised);
  EXPECT_GT(a.mmap_major_faults, 100u);
  EXPECT_EQ(a.read_bios, a.mmap_major_faults) << "one page read per fault: " << Describe(advised);
  EXPECT_EQ(a.read_misses, a.mmap_major_faults);
  EXPECT_EQ(a.readahead_sync, 0u);
  // fadvise_hint=0: no madvise, so a fault reads ra_pages around itself
  // and later random faults find their pages cached.
  const RunResult around = MustRun(h, Mmap("randread", "32m", {"--runtime=50ms", "--fadvise_hint=0"}));
  const stats::PageCacheRow& n = Cache(around);
  EXPECT_GT(n.read_misses, 8 * n.mmap_major_faults) << Describe(around);
  EXPECT_GT(n.mmap_faults, n.mmap_major_faults + 100) << "minor faults on read-around pages";
  EXPECT_GT(TotalIos(around), 2 * TotalIos(advised));
}

TEST(Mmap, AStoreToAPageNotCachedReadsItFirst) {
  const host::HostSpec h = PageCacheHost();
  const RunResult mm = MustRun(h, Mmap("write", "8m"));
  const RunResult pwrite = MustRun(h, {"--name=m", "--filename=/mnt/f", "--size=8m", "--rw=write", "--bs=4k"});
  EXPECT_EQ(Cache(pwrite).read_misses, 0u) << "a whole-page write(2) reads nothing";
  EXPECT_EQ(Cache(mm).read_misses, 8u * 256) << Describe(mm);
  EXPECT_EQ(Cache(mm).pages_dirtied, 8u * 256);
  // A store fault maps one page (no fault-around): one fault per page.
  EXPECT_EQ(Cache(mm).mmap_faults, 8u * 256);
  EXPECT_GT(ProfileNs(mm.kernel, "ext4_page_mkwrite"), 0);
}

TEST(Mmap, AStoreAfterWritebackFaultsAgain) {
  const host::HostSpec h = PageCacheHost();
  // 1 MiB rewritten over and over, msync (fio's fsync=) every 16 writes:
  // each msync cleans the pages and write-protects their entries.
  const RunResult r = MustRun(h, Mmap("randwrite", "1m", {"--norandommap", "--fsync=16", "--io_size=16m"}));
  const stats::PageCacheRow& pc = Cache(r);
  EXPECT_EQ(TotalIos(r), 4096u);
  EXPECT_GT(pc.pages_written_back, 2000u) << Describe(r);
  EXPECT_GT(pc.mmap_faults, 3000u) << "a store to a cleaned page faults (page_mkclean)";
  // Without the msyncs a page faults for a store once.
  const RunResult once = MustRun(h, Mmap("randwrite", "1m", {"--norandommap", "--io_size=16m"}));
  EXPECT_LE(Cache(once).mmap_faults, 256u) << Describe(once);
}

TEST(Mmap, AMappingLargerThanMemoryIsReclaimedByUnmapping) {
  host::HostSpec h = PageCacheHost();
  h.vm.memory_mib = 16;
  const RunResult r = MustRun(h, Mmap("read", "64m"));
  const stats::PageCacheRow& pc = Cache(r);
  EXPECT_EQ(TotalIos(r), 64u * 256);
  EXPECT_LE(pc.peak_pages, pc.capacity_pages);
  EXPECT_GT(pc.pages_reclaimed, 10000u);
  EXPECT_GT(pc.pages_unmapped, 10000u) << "reclaim unmaps a mapped page first: " << Describe(r);
  EXPECT_GT(ProfileNs(r.kernel, "try_to_unmap"), 0);
}

TEST(Mmap, ASecondLoopOverACachedFileTakesOnlyMinorFaults) {
  const host::HostSpec h = PageCacheHost();
  const RunResult one = MustRun(h, Mmap("read", "16m", {"--invalidate=0"}));
  const RunResult two = MustRun(h, Mmap("read", "16m", {"--invalidate=0", "--loops=2"}));
  EXPECT_EQ(Cpu(two).majf, Cpu(one).majf) << "the second loop finds every page cached";
  EXPECT_GE(Cpu(two).minf, Cpu(one).minf + 16u * 256 / 16 - 16) << "its new mapping faults again";
  EXPECT_EQ(Cache(two).read_misses, 16u * 256);
}

TEST(Mmap, RefusalsNameWhatTheyRefuse) {
  const host::HostSpec h = PageCacheHost();
  const RunOutcome small = RunArgs(h, Mmap("randread", "8m", {"--bs=512", "--direct=1"}));
  ASSERT_FALSE(small.result.ok());
  EXPECT_NE(small.result.status().message().find("mmap options dictate a minimum block size of 4096"),
            std::string::npos)
      << small.result.status();
  const RunOutcome trims = RunArgs(h, Mmap("randtrim", "8m"));
  ASSERT_FALSE(trims.result.ok());
  EXPECT_NE(trims.result.status().message().find("ioengine=mmap with trims"), std::string::npos);
  const RunOutcome thp = RunArgs(h, Mmap("randread", "8m", {"--thp=1"}));
  ASSERT_FALSE(thp.result.ok());
  EXPECT_NE(thp.result.status().message().find("thp=1"), std::string::npos) << thp.result.status();
  // bs=512 without direct=1 or fsync= is fio's to run.
  EXPECT_TRUE(RunArgs(h, Mmap("randread", "8m", {"--bs=512", "--number_ios=100"})).result.ok());
}

TEST(Mmap, DirectMsyncsEachWrite) {
  const host::HostSpec h = PageCacheHost();
  const RunResult r = MustRun(h, Mmap("write", "4m", {"--direct=1"}));
  EXPECT_EQ(Cache(r).pages_written_back, 4u * 256);
  EXPECT_EQ(Cache(r).dirty_pages_at_end, 0u);
  EXPECT_GT(ProfileNs(r.kernel, "__x64_sys_msync"), 0);
}

TEST(Mmap, RunsAreDeterministic) {
  const host::HostSpec h = PageCacheHost();
  const std::vector<std::string> job = Mmap("randrw", "96m", {"--numjobs=2", "--runtime=30ms", "--time_based"});
  const RunResult a = MustRun(h, job);
  const RunResult b = MustRun(h, job);
  EXPECT_EQ(Describe(a), Describe(b));
  EXPECT_EQ(Cache(a).mmap_faults, Cache(b).mmap_faults);
  EXPECT_EQ(Cache(a).read_misses, Cache(b).read_misses);
  EXPECT_GT(Cache(a).mmap_faults, 0u);
}

TEST(Fadvise, SequentialAdviceDoublesTheReadaheadWindow) {
  const host::HostSpec h = PageCacheHost();
  const std::vector<std::string> job = {"--name=r", "--filename=/mnt/f", "--size=64m", "--rw=read", "--bs=4k"};
  std::vector<std::string> none = job;
  none.push_back("--fadvise_hint=0");
  const RunResult advised = MustRun(h, job);
  const RunResult plain = MustRun(h, none);
  EXPECT_EQ(Cache(advised).read_misses, Cache(plain).read_misses);
  // 64 pages per window against 32.
  EXPECT_LT(Cache(advised).read_bios * 10, Cache(plain).read_bios * 6)
      << Cache(advised).read_bios << " vs " << Cache(plain).read_bios;
}

}  // namespace
}  // namespace blklab
