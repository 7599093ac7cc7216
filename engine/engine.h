// engine/engine.h
//
// The engine facade: everything outside engine/ (the CLI, the server) runs
// simulations through these functions and types only.
//
//   ParseFio    fio command-line arguments (+ job files through a reader
//               callback) -> typed jobs, or an error naming option/file/line
//   ResolveHost a host spec from YAML/JSON text or a preset name
//   RunFio      builds the topology (CPUs, kernel, devices) from the host
//               spec, starts one simulated fio thread per job clone, runs
//               virtual time until every clone is done, and returns the
//               per-clone fio statistics and blklab's kernel report
//   BuildReport turns a run into fio's report input (report/report.h)
//
// Determinism: RunFio's result depends only on (host spec, jobs, seed); it
// reads no clock and no environment. Wall-clock fields of fio's output are
// supplied by the caller to BuildReport.
// Thread-safety: each call is independent; runs may proceed in parallel on
//  different threads (each owns its simulation).
#ifndef BLKLAB_ENGINE_ENGINE_H_
#define BLKLAB_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"
#include "engine/report/report.h"
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
};

// Progress at an interval of virtual time (for status output and streams).
struct Snapshot {
  int64_t virtual_ns = 0;
  int64_t virtual_total_ns = 0;   // expected end (0 when unknown)
  uint64_t ios_completed = 0;
  uint64_t bytes_completed = 0;
  uint32_t clones_running = 0;
  uint64_t events = 0;
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
};

struct RunResult {
  std::vector<CloneResult> clones;   // thread-number order
  stats::KernelReport kernel;
  int64_t virtual_ns = 0;            // end of the run
  uint64_t events = 0;
  std::vector<std::string> warnings;
};

// Parses fio-style arguments. `read_file` reads job files and includes
// (nullptr: none may be read); `lookup_var` resolves ${VAR} (nullptr: all
// unset). Host values ($ncpus, $mb_memory) come from `host`.
struct ParsedFio {
  workload::FioInvocation invocation;
  workload::ParsedJobs jobs;
};
absl::StatusOr<ParsedFio> ParseFio(const std::vector<std::string>& args, const host::HostSpec& host,
                                   workload::FileReader read_file, workload::VarLookup lookup_var);

// A preset name, or YAML/JSON text of a host spec.
absl::StatusOr<host::HostSpec> ResolveHost(const std::string& preset_or_text);

// Checks that the jobs can run on the host (devices named by filename exist,
// CPUs in cpus_allowed exist, engine options fit the devices, limits hold).
absl::Status ValidateRun(const RunRequest& request);

absl::StatusOr<RunResult> RunFio(const RunRequest& request, const SnapshotFn& on_snapshot = nullptr,
                                 const std::atomic<bool>* cancel = nullptr);

// Wall-clock values for fio's header fields; tests pass fixed ones.
struct WallClock {
  int64_t timestamp_sec = 0;
  int64_t timestamp_ms = 0;
  std::string time_string;  // "Mon Nov 30 02:11:45 2026"
};
report::ReportInput BuildReport(const RunRequest& request, const RunResult& result,
                                const WallClock& clock, bool with_kernel_report);

}  // namespace blklab

#endif  // BLKLAB_ENGINE_ENGINE_H_
