// engine/run_types.h
//
// The value types of a simulated fio run, shared by the engine facade
// (engine.h) and the engine's internal builders (topology.h,
// interval_view.h, kernel_report_builder.h) without their including the
// facade:
//
//   RunLimits / RunRequest   what to run: host spec, parsed jobs, seed,
//                            limits, snapshot and status intervals
//   SnapshotInterval         figures of one status interval (deltas of
//                            running counters)
//   Snapshot / SnapshotFn    progress handed out between slices of
//                            virtual time
//   CloneResult / RunResult  per-clone fio statistics, kernel report, logs
//
// Invariants: plain values; RunResult::clones are in thread-number order;
//  SnapshotInterval's per-direction arrays are indexed by stats::Dir.
// Thread-safety: none of their own (values; Snapshot::interim is valid only
//  during the snapshot callback, on the thread that runs the simulation).
// Cost: header only; no code. Copying a RunResult copies every clone's
//  statistics and the kernel report.
#ifndef BLKLAB_ENGINE_RUN_TYPES_H_
#define BLKLAB_ENGINE_RUN_TYPES_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/stats/job_log.h"
#include "engine/stats/job_stats.h"
#include "engine/stats/kernel_report.h"
#include "engine/workload/job_parser.h"

namespace blklab {

// Limits a run must stay within (a server sets them from its flags).
struct RunLimits {
  int64_t max_virtual_ns = 3600LL * 1000 * 1000 * 1000;  // 1 h of virtual time
  uint64_t max_ios = 10ULL * 1000 * 1000 * 1000;         // simulated IOs in all
  // A run that completes no IO for this long while jobs still wait has
  // stalled; it fails with the stuck requests named.
  int64_t stall_ns = 30LL * 1000 * 1000 * 1000;
};

struct RunRequest {
  host::HostSpec host;                 // validated, defaults resolved
  workload::ParsedJobs jobs;
  uint64_t seed = 0;                   // used by jobs with randrepeat=0 and no randseed
  RunLimits limits;
  int64_t snapshot_interval_ns = 0;    // 0: no snapshots
  // Length of the interval view of snapshots (fio's --status-interval; the
  // server's WatchJob intervals): the first snapshot at or after each
  // multiple of it, and the last one, carry Snapshot::interval covering the
  // time since the previous such snapshot. 0: no interval view (no cost).
  // A multiple of the slice length (snapshot_interval_ns) gives intervals
  // of exactly this length.
  int64_t status_interval_ns = 0;
  // Record CPU time by call stack (KernelReport::stacks, flame graphs).
  // Off by default: it costs a hash lookup per charged step.
  bool collect_stacks = false;
};

struct RunResult;

// Figures of one status interval [start_ns, end_ns) of virtual time, built
// from running counters at the interval's end without copying any clone's
// statistics: per-direction IOs, bytes and rates; completion-latency
// percentiles of the IOs completed in the interval (from the difference of
// the clones' running clat histograms against the previous interval);
// CPU time by mode as shares of all the host's CPUs; spinlock slowpath
// share and per-lock counters of the interval.
struct SnapshotInterval {
  // The clat percentiles reported (fio's representative bucket values).
  static constexpr std::array<double, 5> kPercentiles = {50, 90, 99, 99.9, 99.99};

  int64_t start_ns = 0;
  int64_t end_ns = 0;
  // Completed in the interval, ramp_time included (as Snapshot::dir_ios).
  std::array<uint64_t, stats::kNumDirs> ios{};
  std::array<uint64_t, stats::kNumDirs> bytes{};
  std::array<double, stats::kNumDirs> iops{};
  std::array<uint64_t, stats::kNumDirs> bw_bytes_per_sec{};
  // Completion latency of the IOs measured in the interval (after
  // ramp_time): samples and values in ns at kPercentiles (0 without samples).
  std::array<uint64_t, stats::kNumDirs> clat_samples{};
  std::array<std::array<uint64_t, kPercentiles.size()>, stats::kNumDirs> clat_pct_ns{};
  // CPU time by stats::CpuMode (usr, sys, irq, softirq, idle), in percent of
  // the interval's length times the host's CPU count.
  std::array<double, stats::kNumCpuModes> cpu_pct{};
  // native_queued_spin_lock_slowpath time / busy time x 100 in the interval.
  double contention_pct = 0;
  // Locks acquired in the interval (rows summed by name), ascending name;
  // counters cover the interval; max_waiters is 0.
  std::vector<stats::LockRow> locks;

  // Completion latency of the interval's measured IOs, coarsened to a
  // quarter of fio's log-linear groups: bucket i counts the samples below
  // ClatBucketUpperNs(i) and at or above the previous bound (i = 0:
  // everything below 256 ns). The bounds are 2^m x {1, 1.25, 1.5, 1.75} ns
  // for m = 8 .. 33, then 2^34 ns; each is a boundary of fio's buckets
  // (64 per power of two), so every fio bucket lies inside exactly one of
  // these. Samples of 2^34 ns or more, which fio clamps into its last
  // bucket, count in the last one, as in fio's percentiles. clat_sum_ns
  // approximates the samples' sum from the fio buckets' representative
  // values (within 0.78 % of the true sum).
  static constexpr int kClatBucketLog2Min = 8;   // 256 ns
  static constexpr int kClatBucketLog2Max = 34;  // ~17.2 s, fio's last group's end
  static constexpr int kClatSubBuckets = 4;      // per power of two
  static constexpr int kClatBuckets = (kClatBucketLog2Max - kClatBucketLog2Min) * kClatSubBuckets + 1;
  static constexpr double ClatBucketUpperNs(int i) {
    const int m = kClatBucketLog2Min + i / kClatSubBuckets;
    return static_cast<double>(uint64_t{1} << m) * (1.0 + static_cast<double>(i % kClatSubBuckets) / kClatSubBuckets);
  }
  std::array<std::array<uint64_t, kClatBuckets>, stats::kNumDirs> clat_buckets{};
  std::array<double, stats::kNumDirs> clat_sum_ns{};

  // CPU time of all simulated CPUs spent in any function (usr + sys + irq +
  // softirq) in the interval: the denominator of perf top's Overhead.
  int64_t busy_ns = 0;
  // The functions with the most self time in the interval (all modes
  // summed), descending by time then ascending by name; at most
  // kTopFunctions rows.
  static constexpr size_t kTopFunctions = 20;
  struct FunctionTime {
    std::string function;
    int64_t self_ns = 0;
  };
  std::vector<FunctionTime> top_functions;
  // Requests allocated and not yet freed, per device used by the run, at
  // the interval's end (device order of the host spec).
  struct DeviceInflight {
    std::string device;
    uint64_t requests = 0;
  };
  std::vector<DeviceInflight> inflight;
};

// Progress at an interval of virtual time (for status output and streams),
// passed to the SnapshotFn after each slice of snapshot_interval_ns (100 ms
// of virtual time when 0), the last one at or after the end of the run.
struct Snapshot {
  int64_t virtual_ns = 0;         // the slice's end
  int64_t virtual_total_ns = 0;   // expected end: virtual_ns + eta_ns (0 when unknown)
  int64_t eta_ns = -1;            // fio's ETA: the longest remaining clone (-1 unknown)
  uint64_t ios_completed = 0;     // all clones, ramp_time included
  uint64_t bytes_completed = 0;
  std::array<uint64_t, stats::kNumDirs> dir_ios{};    // the same per direction
  std::array<uint64_t, stats::kNumDirs> dir_bytes{};
  uint32_t clones_running = 0;    // started and not done
  uint32_t clones_done = 0;
  // One fio run-state character per clone in thread-number order ('P' not
  // started, '/' ramp, 'r'/'R'/'w'/'W'/'m'/'M'/'d'/'D' running, '_' done).
  std::string run_states;
  uint64_t events = 0;
  // Set at the end of each status interval (RunRequest::status_interval_ns)
  // and on the last snapshot of the run.
  bool has_interval = false;
  SnapshotInterval interval;
  // Builds the run's results as they stand at virtual_ns without disturbing
  // the simulation (per-clone running figures, kernel report; no logs):
  // feed it to BuildReport for fio's --status-interval reports. Valid only
  // during the callback. Cost: one copy of every clone's statistics.
  std::function<RunResult()> interim;
};
using SnapshotFn = std::function<void(const Snapshot&)>;

struct CloneResult {
  uint32_t job_index = 0;
  uint32_t clone_index = 0;
  uint32_t thread_number = 0;
  uint32_t group_id = 0;
  int cpu = 0;
  std::string device;            // "" for ioengine=null
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  stats::JobResult result;
  // What fio prints to stderr for this clone as it runs (failed verify
  // checks), in order.
  std::vector<std::string> messages;
};

struct RunResult {
  std::vector<CloneResult> clones;   // thread-number order
  stats::KernelReport kernel;
  // fio's log files (write_bw_log, write_iops_log, write_lat_log,
  // write_hist_log): names as fio makes them (PREFIX_TYPE.N.log, or
  // PREFIX_TYPE.log with per_job_logs=0, jobs sharing a name appended in
  // thread order) and contents. The engine writes no file: the CLI writes
  // them to its current directory, the server returns them.
  std::vector<stats::LogFile> logs;
  int64_t virtual_ns = 0;            // end of the run
  uint64_t events = 0;
  std::vector<std::string> warnings;
};

}  // namespace blklab

#endif  // BLKLAB_ENGINE_RUN_TYPES_H_
