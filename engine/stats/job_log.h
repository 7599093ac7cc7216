// engine/stats/job_log.h
//
// JobLogger produces fio's per-job log files (write_bw_log, write_iops_log,
// write_lat_log, write_hist_log; docs/fio-compatibility.md e) from the completions a
// JobStatsCollector forwards to it. Times are virtual milliseconds since the
// collector's Start().
//
// Line formats (fio 3.33):
//   bw/iops/lat/slat/clat: "TIME, VALUE, DIR, BS, PRIO" (+ OFFSET before
//     PRIO with log_offset). Without log_avg_msec one line per IO (iops
//     value 1, bw value = bytes / IO latency in KiB/s, latency in ns); with
//     log_avg_msec=W one line per direction per window of W ms that had
//     samples, stamped at the window end, value = window average (rounded;
//     the maximum with log_max_value), BS and OFFSET 0. Latency windows
//     still open at Finish() are flushed, stamped at the finish time.
//   clat_hist (log_hist_msec=W): "TIME, DIR, BS, c0, ..., c1855": new clat
//     histogram counts per direction since the previous line.
// File names: PREFIX_TYPE.N.log (per_job_logs, N = thread number) or
// PREFIX_TYPE.log.
//
// Thread-safety: thread-compatible; one logger per job.
// Cost: only paid when attached; per IO it appends text to in-memory
//   buffers (amortised allocation) or updates window accumulators.
#ifndef BLKLAB_ENGINE_STATS_JOB_LOG_H_
#define BLKLAB_ENGINE_STATS_JOB_LOG_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/stats/histogram.h"
#include "engine/stats/job_stats.h"

namespace blklab::stats {

struct JobLogConfig {
  // An empty prefix disables that log (fio: write_*_log not set).
  std::string bw_prefix;
  std::string iops_prefix;
  std::string lat_prefix;   // makes the lat, slat and clat logs
  std::string hist_prefix;  // clat_hist
  int64_t avg_msec = 0;     // log_avg_msec; 0 = one line per IO
  int64_t hist_msec = 0;    // log_hist_msec; 0 = hist log disabled
  bool max_value = false;   // log_max_value
  bool log_offset = false;  // log_offset
  int hist_coarseness = 0;  // log_hist_coarseness: 2^N fio buckets per histogram-log bin
  bool log_prio = false;    // log_prio: print `ioprio` in hex instead of its "is RT" flag
  uint32_t ioprio = 0;      // the job's IO priority, (class << 13) | level
  bool per_job_logs = true; // per_job_logs
  int thread_number = 1;    // 1-based, all jobs and clones in creation order
};

struct LogFile {
  std::string name;
  std::string contents;
};

class JobLogger {
 public:
  explicit JobLogger(JobLogConfig config);
  JobLogger(const JobLogger&) = delete;
  JobLogger& operator=(const JobLogger&) = delete;

  // Called by JobStatsCollector; times are relative to its Start().
  void Start();
  void OnCompletion(int64_t t_ns, Dir dir, uint32_t bytes, uint64_t offset, int64_t slat_ns,
                    int64_t clat_ns);
  void Finish(int64_t t_ns);

  // The finished files, in the order bw, iops, lat, slat, clat, clat_hist
  // (only enabled ones). Leaves the logger empty.
  std::vector<LogFile> TakeFiles();

 private:
  enum Kind { kBw = 0, kIops, kLat, kSlat, kClat, kNumKinds };
  struct Window {  // one direction of one averaged log
    uint64_t sum = 0, count = 0, max = 0;
  };
  void AppendLine(Kind kind, int64_t t_ms, uint64_t value, Dir dir, uint64_t bs, uint64_t offset);
  void FlushAveraged(int64_t stamp_ms, bool latency_only);
  void FlushHist(int64_t stamp_ms);
  std::string FileName(const std::string& prefix, const char* type) const;

  JobLogConfig config_;
  std::array<bool, kNumKinds> enabled_{};
  std::array<std::string, kNumKinds> text_;
  std::array<std::array<Window, kNumDirs>, kNumKinds> windows_{};
  int64_t next_avg_ns_ = 0;
  bool hist_enabled_ = false;
  std::string hist_text_;
  std::string prio_column_;  // the last column of every line, with its newline
  std::array<LatencyHistogram, kNumDirs> hist_window_;
  std::array<uint64_t, kNumDirs> hist_bs_{};
  int64_t next_hist_ns_ = 0;
};

}  // namespace blklab::stats

#endif  // BLKLAB_ENGINE_STATS_JOB_LOG_H_
