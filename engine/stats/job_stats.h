// engine/stats/job_stats.h
//
// Per-job IO statistics as fio keeps them in `struct thread_stat` (fio's
// stat layer), split into a hot-path recorder and a plain result value:
//
//  - JobStatsCollector is fed by the engine once per simulated event
//    (issue, submit call, reap call, completion) with *virtual* times in
//    int64 nanoseconds. It never reads a clock.
//  - JobResult is what the collector hands over at Finish(): per direction
//    (read, write, trim) bytes, IO counts, slat/clat/lat RunningStats and
//    log-linear histograms, runtime, bandwidth and IOPS *sample* statistics
//    (one sample per `bwavgtime` / `iopsavgtime` window, docs/fio-compatibility.md c.6),
//    plus the sync block, IO depth / batch / latency distributions and the
//    CPU figures the engine sets. report/ writes it in fio's formats.
//  - MergeJobResults() combines the results of one reporting group as fio's
//    group_reporting does (docs/fio-compatibility.md a.7); UnifiedDir() builds the
//    "mixed" direction of unified_rw_reporting the same way.
//
// Invariants: for each direction, clat.n() == clat_hist.total() ==
//   total_ios unless clat recording is off (disable_clat: both 0), the same
//   for lat; slat is only recorded when the engine reports one (kNoSlat
//   marks synchronous engines, as fio has no slat for them) and it is on.
// Thread-safety: thread-compatible; one collector per simulated job.
// Cost: RecordCompletion() is three moment updates, three histogram
//   increments, one distribution increment and one predictable branch for
//   the bandwidth windows (a slow path every 500 ms of virtual time); it
//   never allocates. With no JobLogger attached logging costs one
//   never-taken branch.
#ifndef BLKLAB_ENGINE_STATS_JOB_STATS_H_
#define BLKLAB_ENGINE_STATS_JOB_STATS_H_

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <string>

#include "absl/types/span.h"
#include "engine/stats/histogram.h"
#include "engine/stats/running_stat.h"

namespace blklab::stats {

class JobLogger;

// IO direction, numbered as fio's DDIR_READ/WRITE/TRIM (also the DIR column
// of fio's logs).
enum class Dir : uint8_t { kRead = 0, kWrite = 1, kTrim = 2 };
inline constexpr int kNumDirs = 3;
const char* DirName(Dir dir);  // "read", "write", "trim"

// Passed as slat_ns by engines that have no submission latency (psync...).
inline constexpr int64_t kNoSlat = -1;

// ---------------------------------------------------------------------------
// Distributions ("IO depths", "submit", "complete", "lat (nsec/usec/msec)").

// IO depth buckets 1, 2, 4, 8, 16, 32, >=64: depth d falls in the bucket of
// the largest power of two <= d.
inline constexpr int kDepthBuckets = 7;
inline constexpr const char* kDepthLabels[kDepthBuckets] = {"1",  "2",  "4",   "8",
                                                            "16", "32", ">=64"};
inline int DepthBucket(uint32_t depth) {
  if (depth >= 64) return 6;
  if (depth <= 1) return 0;
  return std::bit_width(depth) - 1;
}

// Submit/complete batch buckets 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64.
inline constexpr int kBatchBuckets = 7;
inline constexpr const char* kBatchLabels[kBatchBuckets] = {"0",  "4",  "8",   "16",
                                                            "32", "64", ">=64"};
inline int BatchBucket(uint32_t n) {
  if (n == 0) return 0;
  if (n <= 4) return 1;
  if (n > 64) return 6;
  return std::bit_width(n - 1) - 1;  // 5-8 -> 2, 9-16 -> 3, 17-32 -> 4, 33-64 -> 5
}

// Completion-latency distribution: ns, us and ms buckets labelled by their
// exclusive upper bound (2 4 10 20 50 100 250 500 750 1000, ms adds 2000 and
// >=2000).
inline constexpr int kLatNsBuckets = 10;
inline constexpr int kLatUsBuckets = 10;
inline constexpr int kLatMsBuckets = 12;
inline constexpr const char* kLatLabels[kLatMsBuckets] = {
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000"};

struct LatencyDistribution {
  std::array<uint64_t, kLatNsBuckets> ns{};
  std::array<uint64_t, kLatUsBuckets> us{};
  std::array<uint64_t, kLatMsBuckets> ms{};

  void Add(uint64_t clat_ns) {
    if (clat_ns < 1000) {
      ++ns[Bucket(clat_ns)];
    } else if (clat_ns < 1000000) {
      ++us[Bucket(clat_ns / 1000)];
    } else {
      const uint64_t msec = clat_ns / 1000000;
      ++ms[msec >= 2000 ? 11 : msec >= 1000 ? 10 : Bucket(msec)];
    }
  }
  void Merge(const LatencyDistribution& other);
  uint64_t total() const;

 private:
  // Bucket of v in [0, 1000) against bounds 2 4 10 20 50 100 250 500 750 1000.
  static int Bucket(uint64_t v) {
    if (v < 100) return v < 10 ? (v < 2 ? 0 : v < 4 ? 1 : 2) : (v < 20 ? 3 : v < 50 ? 4 : 5);
    return v < 250 ? 6 : v < 500 ? 7 : v < 750 ? 8 : 9;
  }
};

// Shares in percent as fio displays them: a non-zero share below the floor
// is raised to it (0.1 % for depths/batches, 0.01 % for latencies).
std::array<double, kDepthBuckets> DepthShares(const std::array<uint64_t, kDepthBuckets>& counts);
struct LatencyShares {
  std::array<double, kLatNsBuckets> ns{};
  std::array<double, kLatUsBuckets> us{};
  std::array<double, kLatMsBuckets> ms{};
};
LatencyShares ComputeLatencyShares(const LatencyDistribution& dist);

// ---------------------------------------------------------------------------
// Results.

struct DirResult {
  uint64_t io_bytes = 0;
  uint64_t total_ios = 0;  // completed IOs
  uint64_t short_ios = 0;
  uint64_t drop_ios = 0;
  int64_t runtime_ms = 0;  // 0 when the direction did no IO
  RunningStat slat, clat, lat;  // ns
  LatencyHistogram slat_hist, clat_hist, lat_hist;
  RunningStat bw_samples;    // KiB/s, one per bwavgtime window
  RunningStat iops_samples;  // IO/s, one per iopsavgtime window

  // bw_bytes of fio's JSON: 1000 * bytes / runtime_ms (integer B/s).
  uint64_t bw_bytes_per_sec() const;
  // IOPS as a float, 1000 * total_ios / runtime_ms.
  double iops() const;

  // Adds `other` as fio's group_reporting sums two thread_stats: counts
  // summed, latencies pooled, bw/iops samples summed, runtime max.
  void Merge(const DirResult& other);
};

struct SyncResult {
  uint64_t total_ios = 0;
  RunningStat lat;
  LatencyHistogram lat_hist;
  void Merge(const SyncResult& other);
};

// Set by the engine from its CPU model (not measured by the collector).
struct CpuUsage {
  double usr_pct = 0;
  double sys_pct = 0;
  uint64_t ctx = 0;
  uint64_t majf = 0;
  uint64_t minf = 0;
};

struct JobResult {
  std::array<DirResult, kNumDirs> dirs;
  SyncResult sync;
  std::array<uint64_t, 4> issued{};  // read, write, trim, sync ("issued rwts")
  int64_t job_runtime_ms = 0;        // summed over merged jobs
  CpuUsage cpu;
  std::array<uint64_t, kDepthBuckets> iodepth{};
  std::array<uint64_t, kBatchBuckets> submit{};
  std::array<uint64_t, kBatchBuckets> complete{};
  LatencyDistribution lat_dist;  // completion latency of all directions
  int num_jobs = 1;              // jobs merged into this record
  // fio's td->error and td->verror ("file:io_u.c:2190, func=..., error=...")
  // of the job (the first one's for merged records); 0 and empty: none.
  int error = 0;
  std::string verror;

  const DirResult& dir(Dir d) const { return dirs[static_cast<int>(d)]; }
  // The "mixed" direction of unified_rw_reporting: read, write and trim
  // merged with DirResult::Merge.
  DirResult UnifiedDir() const;
};

// Combines the results of one reporting group (group_reporting). Directions
// merge with DirResult::Merge; distributions and issue counts add; CPU
// percentages are weighted by job runtime and ctx/majf/minf summed;
// job_runtime_ms and num_jobs are summed. REQUIRES: !results.empty().
JobResult MergeJobResults(absl::Span<const JobResult* const> results);

// ---------------------------------------------------------------------------
// Collector.

struct CollectorConfig {
  int64_t bw_avg_ns = 500'000'000;    // bwavgtime; <= 0 disables bw samples
  int64_t iops_avg_ns = 500'000'000;  // iopsavgtime; <= 0 disables IOPS samples
  // fio's disable_slat / disable_clat / disable_lat (all three set by
  // gtod_reduce): that latency is not recorded, so its lines, percentiles
  // and (for clat) the "lat (nsec/usec/msec)" distribution are absent.
  bool record_slat = true;
  bool record_clat = true;
  bool record_lat = true;
};

class JobStatsCollector {
 public:
  explicit JobStatsCollector(const CollectorConfig& config = {});
  JobStatsCollector(const JobStatsCollector&) = delete;
  JobStatsCollector& operator=(const JobStatsCollector&) = delete;

  // Attaches a log sink (not owned; must outlive the collector's use).
  // nullptr (the default) means no logs and no logging cost.
  void set_logger(JobLogger* logger) { logger_ = logger; }

  // Starts (or restarts, e.g. at the end of ramp_time) the measured window:
  // clears everything recorded so far.
  void Start(int64_t now_ns);

  // An IO of direction `dir` was issued; `depth_after_issue` IOs are now in
  // flight (fio's "IO depths").
  void RecordIssue(Dir dir, uint32_t depth_after_issue) {
    ++result_.issued[static_cast<int>(dir)];
    ++result_.iodepth[DepthBucket(depth_after_issue)];
  }
  // One submit call handed `n` IOs to the device / one reap call returned `n`.
  void RecordSubmitCall(uint32_t n) { ++result_.submit[BatchBucket(n)]; }
  void RecordReapCall(uint32_t n) { ++result_.complete[BatchBucket(n)]; }

  // An IO completed at `now_ns`. slat = issue - submit (or kNoSlat),
  // clat = completion - issue; lat = slat + clat. `offset` is only used by
  // logs with log_offset. REQUIRES: Start() was called, clat_ns >= 0.
  void RecordCompletion(int64_t now_ns, Dir dir, uint32_t bytes, int64_t slat_ns,
                        int64_t clat_ns, uint64_t offset = 0) {
    DirResult& d = result_.dirs[static_cast<int>(dir)];
    d.io_bytes += bytes;
    ++d.total_ios;
    const uint64_t clat = static_cast<uint64_t>(clat_ns);
    uint64_t lat = clat;
    if (slat_ns >= 0) {
      const uint64_t slat = static_cast<uint64_t>(slat_ns);
      lat += slat;
      if (config_.record_slat) {
        d.slat.Add(slat);
        d.slat_hist.Add(slat);
      }
    }
    if (config_.record_clat) {
      d.clat.Add(clat);
      d.clat_hist.Add(clat);
      result_.lat_dist.Add(clat);
    }
    if (config_.record_lat) {
      d.lat.Add(lat);
      d.lat_hist.Add(lat);
    }
    if (now_ns >= next_window_ns_) [[unlikely]] CloseRateWindows(now_ns);
    if (logger_ != nullptr) [[unlikely]] LogCompletion(now_ns, dir, bytes, slat_ns, clat_ns, offset);
  }
  void RecordShortIo(Dir dir) { ++result_.dirs[static_cast<int>(dir)].short_ios; }
  void RecordDroppedIo(Dir dir) { ++result_.dirs[static_cast<int>(dir)].drop_ios; }
  // A sync/fsync/fdatasync completed with latency `lat_ns` ("sync" block).
  // Only an fsync (fio's DDIR_SYNC) counts in total_ios and the fourth
  // "issued rwts" number; an fdatasync is in the latencies alone.
  void RecordSync(int64_t lat_ns, bool datasync = false) {
    if (!datasync) {
      ++result_.issued[3];
      ++result_.sync.total_ios;
    }
    result_.sync.lat.Add(static_cast<uint64_t>(lat_ns));
    result_.sync.lat_hist.Add(static_cast<uint64_t>(lat_ns));
  }
  // Optional: lets bandwidth windows close while no IO completes.
  void AdvanceTime(int64_t now_ns) {
    if (now_ns >= next_window_ns_) CloseRateWindows(now_ns);
  }

  void SetCpuUsage(const CpuUsage& cpu) { result_.cpu = cpu; }

  // Ends the measured window and returns the result; the collector is then
  // idle until the next Start(). REQUIRES: now_ns >= start time.
  JobResult Finish(int64_t now_ns);

  // The running result as Finish(now_ns) would return it (runtimes up to
  // now_ns), without ending the window, closing bandwidth windows or
  // touching the logger: for fio's interim reports (--status-interval).
  // Before Start() it returns an empty result. Cost: one copy of the result
  // (its histograms, ~130 KiB); not for the hot path.
  JobResult Peek(int64_t now_ns) const;

  bool started() const { return started_; }
  // The running result itself (no runtimes, no copy): for cheap interval
  // views that diff its counters. Empty before Start() and after Finish().
  const JobResult& running() const { return result_; }

 private:
  struct RateWindow {
    int64_t period_ns = 0;
    int64_t next_ns = std::numeric_limits<int64_t>::max();
    int64_t last_ns = 0;
    std::array<uint64_t, kNumDirs> last_count{};
  };
  void CloseRateWindows(int64_t now_ns);
  void LogCompletion(int64_t now_ns, Dir dir, uint32_t bytes, int64_t slat_ns, int64_t clat_ns,
                     uint64_t offset);

  CollectorConfig config_;
  JobLogger* logger_ = nullptr;
  JobResult result_;
  bool started_ = false;
  int64_t start_ns_ = 0;
  int64_t next_window_ns_ = std::numeric_limits<int64_t>::max();
  RateWindow bw_window_;
  RateWindow iops_window_;
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_JOB_STATS_H_
