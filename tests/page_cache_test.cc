// tests/page_cache_test.cc
//
// Buffered I/O (direct=0) through the page cache model (model/page_cache.h),
// each test failing when its mechanism is removed:
//
//  * a sequential read of a file four times the cache streams at the
//    device's speed (readahead keeps it busy; reclaim evicts what was read;
//    nothing is hit), while a file half the cache, read again with
//    invalidate=0, is served from memory after its first pass (75 % hits
//    over four passes) and far faster; fio's default invalidate=1 empties
//    the cache at each loop;
//  * buffered writes dirty pages; end_fsync writes every dirty page back
//    before the job ends (one sync in fio's sync statistics), a small write
//    without it leaves its pages dirty; writers wait at vm.dirty_ratio;
//    fsync=N syncs after every N writes;
//  * io_uring keeps its depth on buffered random reads (a miss waits on its
//    page without blocking the ring) and hands writes to its io-wq worker;
//    a run is byte-identical when repeated;
//  * pre_read fills the cache before the job's clock starts, so the job
//    reads at memory speed; unlink drops a deleted file's dirty pages
//    without writing them;
//  * fio's splice engine reads through the page cache, two calls per
//    pipe-full, slower than pread by that work; direct=1 is refused;
//  * sync=1 (O_SYNC): each buffered write is written back before it returns.
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gtest/gtest.h"
#include "tests/support/sim_test_support.h"

namespace blklab {
namespace {

using namespace ::blklab::testing_support;  // NOLINT: test helpers

const stats::PageCacheRow& Cache(const RunResult& r) { return PageCacheOf(r); }

double ReadMBps(const RunResult& r) {
  const stats::DirResult& d = r.clones.at(0).result.dirs[0];
  return static_cast<double>(d.bw_bytes_per_sec()) / 1e6;
}

std::vector<std::string> SeqRead(const std::string& size, std::vector<std::string> extra = {}) {
  std::vector<std::string> a = {"--name=r", "--filename=/mnt/f", "--size=" + size, "--rw=read", "--bs=128k"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(PageCache, ReadsLargerThanTheCacheStreamAtDeviceSpeed) {
  const host::HostSpec h = PageCacheHost();
  const RunResult buffered = MustRun(h, SeqRead("256m"));
  const stats::PageCacheRow& pc = Cache(buffered);
  EXPECT_EQ(pc.read_accesses, 256u * 256);  // every page of 256 MiB read once
  EXPECT_EQ(pc.read_hits, 0u) << Describe(buffered);
  EXPECT_GE(pc.read_misses, pc.read_accesses);
  EXPECT_EQ(pc.pages_reclaimed, pc.read_misses - pc.capacity_pages);  // all but the last cacheful evicted
  EXPECT_LE(pc.peak_pages, pc.capacity_pages);
  EXPECT_GT(pc.readahead_async, 1000u);  // the stream runs on asynchronous readahead
  // The device's ceiling, reached by direct I/O with enough in flight.
  const RunResult direct = MustRun(h, SeqRead("256m", {"--direct=1", "--ioengine=libaio", "--iodepth=8"}));
  const RunResult direct_qd1 = MustRun(h, SeqRead("256m", {"--direct=1"}));
  EXPECT_GT(ReadMBps(buffered), ReadMBps(direct_qd1)) << "readahead keeps more than one read in flight";
  EXPECT_LE(ReadMBps(buffered), ReadMBps(direct) * 1.02);
  EXPECT_GE(ReadMBps(buffered), ReadMBps(direct) * 0.6)
      << ReadMBps(buffered) << " vs " << ReadMBps(direct) << " MB/s";
}

TEST(PageCache, AFileSmallerThanTheCacheIsReadFromMemoryAfterItsFirstPass) {
  const host::HostSpec h = PageCacheHost();
  const RunResult kept = MustRun(h, SeqRead("32m", {"--loops=4", "--invalidate=0"}));
  const stats::PageCacheRow& pc = Cache(kept);
  EXPECT_EQ(pc.read_accesses, 4u * 32 * 256);
  EXPECT_EQ(pc.read_misses, 32u * 256);  // the first pass only
  EXPECT_NEAR(pc.hit_ratio_pct, 75.0, 0.01);
  EXPECT_EQ(pc.pages_reclaimed, 0u);
  // fio's default invalidate=1 drops the file's pages at each loop's open.
  const RunResult cold = MustRun(h, SeqRead("32m", {"--loops=4"}));
  EXPECT_EQ(Cache(cold).read_hits, 0u);
  EXPECT_GE(Cache(cold).pages_invalidated, 3u * 32 * 256);
  EXPECT_GT(ReadMBps(kept), 2.0 * ReadMBps(cold)) << ReadMBps(kept) << " vs " << ReadMBps(cold) << " MB/s";
}

TEST(PageCache, EndFsyncWritesEveryDirtyPageBeforeTheJobEnds) {
  const host::HostSpec h = PageCacheHost();
  // 4 MiB stays under the background threshold (6.4 MiB): nothing is
  // written back unless the job syncs.
  const std::vector<std::string> job = {"--name=w", "--filename=/mnt/w", "--size=4m", "--rw=write", "--bs=64k"};
  const RunResult lazy = MustRun(h, job);
  EXPECT_EQ(Cache(lazy).pages_dirtied, 1024u);
  EXPECT_EQ(Cache(lazy).pages_written_back, 0u);
  EXPECT_EQ(Cache(lazy).dirty_pages_at_end, 1024u);
  EXPECT_EQ(lazy.clones.at(0).result.sync.total_ios, 0u);

  std::vector<std::string> synced = job;
  synced.push_back("--end_fsync=1");
  const RunResult r = MustRun(h, synced);
  EXPECT_EQ(Cache(r).pages_written_back, 1024u);
  EXPECT_EQ(Cache(r).dirty_pages_at_end, 0u);
  EXPECT_EQ(r.clones.at(0).result.sync.total_ios, 1u);
  // Writing 4 MiB back at 2,000 MB/s takes about 2 ms: the sync waits for it.
  EXPECT_GT(r.clones.at(0).result.sync.lat.mean(), 1.5e6);
  // The runtime includes the sync, as fio's does.
  EXPECT_GT(r.clones.at(0).result.dirs[1].runtime_ms, lazy.clones.at(0).result.dirs[1].runtime_ms);
}

TEST(PageCache, WritersWaitAtTheDirtyLimitAndTheFlusherWritesBack) {
  host::HostSpec h = PageCacheHost();
  const std::vector<std::string> job = {"--name=w", "--filename=/mnt/w", "--size=48m", "--rw=write", "--bs=64k"};
  const RunResult limited = MustRun(h, job);
  EXPECT_GT(Cache(limited).dirty_throttle_waits, 0u);
  EXPECT_GT(Cache(limited).pages_written_back, 0u);  // background writeback above 10 %
  EXPECT_LE(Cache(limited).dirty_pages_at_end, Cache(limited).capacity_pages / 5);
  h.vm.dirty_ratio = 100;
  h.vm.dirty_background_ratio = 99;  // (at or above dirty_ratio the kernel halves it)
  const RunResult free = MustRun(h, job);
  EXPECT_EQ(Cache(free).dirty_throttle_waits, 0u);
  EXPECT_EQ(Cache(free).pages_written_back, 0u);
  // Twice as fast or nearly (fio's runtime is in whole milliseconds: 10
  // against 20 or 21 here).
  EXPECT_GT(free.clones.at(0).result.dirs[1].bw_bytes_per_sec(),
            1.8 * limited.clones.at(0).result.dirs[1].bw_bytes_per_sec());
}

TEST(PageCache, FsyncEveryNWritesIsASyncInFiosStatistics) {
  const host::HostSpec h = PageCacheHost();
  const RunResult r =
      MustRun(h, {"--name=w", "--filename=/mnt/w", "--size=1m", "--rw=write", "--bs=4k", "--fsync=32"});
  // fio 3.33 issues 7: the sync due after the last write would come with
  // the next get_io_u, and there is none.
  EXPECT_EQ(r.clones.at(0).result.sync.total_ios, 7u);
  EXPECT_EQ(Cache(r).pages_written_back, 224u);
  // Direct I/O: the syncs still happen (nothing cached to write back);
  // fdatasyncs are in the sync latencies only, as fio counts them.
  const RunResult d = MustRun(
      h, {"--name=w", "--filename=/mnt/w", "--size=1m", "--rw=write", "--bs=4k", "--fdatasync=64", "--direct=1"});
  EXPECT_EQ(d.clones.at(0).result.sync.total_ios, 0u);
  EXPECT_EQ(d.clones.at(0).result.sync.lat.n(), 3u);
  EXPECT_FALSE(d.kernel.page_cache.has_value());
}

TEST(PageCache, IoUringKeepsItsDepthOnBufferedReadsAndHandsWritesToIoWq) {
  const host::HostSpec h = PageCacheHost();
  auto job = [](const std::string& rw, int depth) {
    return std::vector<std::string>{"--name=u", "--filename=/mnt/f", "--size=256m", "--rw=" + rw, "--bs=4k",
                                    "--ioengine=io_uring", "--iodepth=" + std::to_string(depth),
                                    "--runtime=50ms", "--time_based"};
  };
  // Misses wait on their page without blocking the ring (IOCB_WAITQ): 16
  // random reads in flight go about as fast as direct I/O at that depth.
  const RunResult qd1 = MustRun(h, job("randread", 1));
  const RunResult qd16 = MustRun(h, job("randread", 16));
  std::vector<std::string> direct = job("randread", 16);
  direct.push_back("--direct=1");
  const RunResult d16 = MustRun(h, direct);
  EXPECT_GT(RunIops(qd16), 8 * RunIops(qd1)) << RunIops(qd16) << " vs " << RunIops(qd1);
  EXPECT_GT(RunIops(qd16), 0.8 * RunIops(d16)) << RunIops(qd16) << " vs direct " << RunIops(d16);
  EXPECT_EQ(Cache(qd16).read_hits, 0u);
  // Writes run in the ring's io-wq worker, in the cache.
  const RunResult w = MustRun(h, job("randwrite", 8));
  EXPECT_GT(Cache(w).pages_dirtied, 1000u);
  EXPECT_GT(ProfileNs(w.kernel, "io_wq_worker"), 0);
  // Polled I/O needs direct=1.
  std::vector<std::string> polled = job("randread", 4);
  polled.push_back("--hipri=1");
  const RunOutcome o = RunArgs(h, polled);
  ASSERT_FALSE(o.result.ok());
  EXPECT_NE(o.result.status().message().find("hipri needs direct=1"), std::string::npos) << o.result.status();
}

TEST(PageCache, BufferedRunsAreDeterministic) {
  const host::HostSpec h = PageCacheHost();
  const std::vector<std::string> job = {"--name=m", "--filename=/mnt/m", "--size=96m", "--rw=randrw",
                                        "--bs=16k", "--numjobs=2", "--ioengine=libaio", "--iodepth=4",
                                        "--runtime=30ms", "--time_based"};
  const RunResult a = MustRun(h, job);
  const RunResult b = MustRun(h, job);
  EXPECT_EQ(Describe(a), Describe(b));
  EXPECT_EQ(Cache(a).read_misses, Cache(b).read_misses);
  EXPECT_EQ(Cache(a).pages_written_back, Cache(b).pages_written_back);
  EXPECT_GT(Cache(a).read_accesses, 0u);
}

TEST(PageCache, PreReadFillsTheCacheBeforeTheJob) {
  const host::HostSpec h = PageCacheHost();
  const RunResult cold = MustRun(h, SeqRead("32m"));
  const RunResult warm = MustRun(h, SeqRead("32m", {"--pre_read=1"}));
  EXPECT_EQ(TotalIos(warm), 256u);
  EXPECT_GT(ReadMBps(warm), 3 * ReadMBps(cold)) << Describe(warm);
  EXPECT_GT(ProfileNs(warm.kernel, "__x64_sys_read"), 0) << "the pre-read's read(2) calls";
  EXPECT_GE(Cache(warm).read_hits, Cache(cold).read_hits + 8192 / 2) << "the job's pages were there";
}

TEST(PageCache, UnlinkDropsADeletedFilesDirtyPagesUnwritten) {
  const host::HostSpec h = PageCacheHost();
  const std::vector<std::string> write = {"--name=w", "--filename=/mnt/f", "--size=4m", "--rw=write",
                                          "--bs=64k"};
  const RunResult kept = MustRun(h, write);
  std::vector<std::string> gone = write;
  gone.push_back("--unlink=1");
  const RunResult deleted = MustRun(h, gone);
  EXPECT_EQ(Cache(kept).dirty_pages_at_end, 1024u) << "below dirty_background: nothing written" << Describe(kept);
  EXPECT_EQ(Cache(deleted).dirty_pages_at_end, 0u) << Describe(deleted);
  EXPECT_EQ(Cache(deleted).pages_written_back, 0u);
}

TEST(PageCache, SpliceGoesThroughThePageCacheWithTwoCallsPerPipeFull) {
  const host::HostSpec h = PageCacheHost();
  // A file half the cache, read twice (invalidate=0): the second pass hits.
  const RunResult pread = MustRun(h, SeqRead("32m", {"--invalidate=0", "--loops=2", "--ioengine=psync"}));
  const RunResult splice = MustRun(h, SeqRead("32m", {"--invalidate=0", "--loops=2", "--ioengine=splice"}));
  EXPECT_EQ(TotalIos(splice), TotalIos(pread));
  EXPECT_EQ(Cache(splice).read_hits, Cache(pread).read_hits) << "the same pages from the same cache";
  EXPECT_GT(ProfileNs(splice.kernel, "__x64_sys_vmsplice"), 0) << Describe(splice);
  EXPECT_GT(ProfileNs(splice.kernel, "splice_to_pipe"), 0);
  EXPECT_GT(splice.clones[0].result.cpu.sys_pct, pread.clones[0].result.cpu.sys_pct)
      << "two calls and the pipe per 64 KiB";
  const RunOutcome direct = RunArgs(h, SeqRead("32m", {"--ioengine=splice", "--direct=1"}));
  ASSERT_FALSE(direct.result.ok());
  EXPECT_NE(direct.result.status().message().find("ioengine=splice with direct=1"), std::string::npos);
}

TEST(PageCache, OSyncWritesEachWriteBackBeforeItReturns) {
  const host::HostSpec h = PageCacheHost();
  const std::vector<std::string> write = {"--name=w", "--filename=/mnt/f", "--size=4m", "--rw=write", "--bs=64k"};
  std::vector<std::string> osync = write;
  osync.push_back("--sync=1");
  const RunResult plain = MustRun(h, write);
  const RunResult synced = MustRun(h, osync);
  EXPECT_EQ(Cache(plain).pages_written_back, 0u);
  EXPECT_EQ(Cache(synced).pages_written_back, 1024u) << Describe(synced);
  EXPECT_EQ(Cache(synced).dirty_pages_at_end, 0u);
  EXPECT_GT(synced.virtual_ns, 4 * plain.virtual_ns) << "each write waits for its device write";
}

}  // namespace
// The run ends when the last job does; the flusher's background writeback
// (above the background limit) is still on the device then, as the
// kernel's is after fio exits. It drains after the report instead of
// counting as lost requests; the figures are the run's at its end.
TEST(PageCache, ARunEndsWithBackgroundWritebackStillInFlight) {
  const host::HostSpec h = HostFromYaml(
      "name: page-cache-slow\n"
      "cpus: {count: 2}\n"
      "vm: {memory_mib: 64}\n"
      "devices:\n"
      "  - name: nvme0n1\n"
      "    nvme: {latency_nsec: 80000, max_iops: 2000, max_mbps: 2000, gb: 16}\n"
      "filesystems:\n"
      "  - {path: /mnt, device: nvme0n1}\n");
  const RunResult r =
      MustRun(h, {"--name=w", "--filename=/mnt/w", "--size=64m", "--io_size=7m", "--rw=randwrite", "--bs=4k"});
  const stats::PageCacheRow& pc = Cache(r);
  EXPECT_EQ(pc.pages_dirtied, 1792u);
  EXPECT_GT(pc.writeback_bios, 0u);  // the flusher started above the background limit
  // Some pages were still under writeback when the run ended.
  EXPECT_LT(pc.pages_written_back + pc.dirty_pages_at_end, 1792u) << Describe(r);
}

}  // namespace blklab
