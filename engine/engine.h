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
//               per-clone fio statistics, fio's log files and blklab's
//               kernel report; snapshots of progress (and interim results)
//               go to a callback between slices of virtual time
//   BuildReport turns a run into fio's report input (report/report.h)
//
// The run's value types (RunRequest, Snapshot, RunResult, ...) live in
// run_types.h, which this header includes.
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
#include "engine/run_types.h"
#include "engine/stats/kernel_report.h"
#include "engine/workload/job_parser.h"
#include "engine/workload/t_io_uring.h"

namespace blklab {

// Parses fio-style arguments. `read_file` reads job files and includes
// (nullptr: none may be read); `lookup_var` resolves ${VAR} (nullptr: all
// unset). Host values ($ncpus, $mb_memory) come from `host`.
struct ParsedFio {
  workload::FioInvocation invocation;
  workload::ParsedJobs jobs;
};
// The parser options ParseFio uses for `invocation` on `host` (also for
// --showcmd, which prints rather than runs the jobs).
workload::ParseOptions ParseOptionsFor(const workload::FioInvocation& invocation,
                                       const host::HostSpec& host, workload::FileReader read_file,
                                       workload::VarLookup lookup_var);
// `job_overrides` are applied to every job after its own options
// (workload::ParseOptions::job_overrides).
absl::StatusOr<ParsedFio> ParseFio(const std::vector<std::string>& args, const host::HostSpec& host,
                                   workload::FileReader read_file, workload::VarLookup lookup_var,
                                   std::vector<workload::OptionLine> job_overrides = {});

// The targets the parsed jobs name (every filename= entry, in job order):
// what --host=auto builds devices for (host/auto_host.h).
std::vector<std::string> JobTargets(const workload::ParsedJobs& jobs);
// The regular files the jobs name without size= or filesize= (fio works on
// an existing file's size then), as absolute paths: relative names under
// directory=, else under / (where --host=auto mounts its filesystem).
std::vector<std::string> SizelessFiles(const workload::ParsedJobs& jobs);

// A preset name, or YAML/JSON text of a host spec.
absl::StatusOr<host::HostSpec> ResolveHost(const std::string& preset_or_text);

// Checks that the jobs can run on the host (devices named by filename exist,
// CPUs in cpus_allowed exist, engine options fit the devices, limits hold).
absl::Status ValidateRun(const RunRequest& request);

absl::StatusOr<RunResult> RunFio(const RunRequest& request, const SnapshotFn& on_snapshot = nullptr,
                                 const std::atomic<bool>* cancel = nullptr);

// --- t/io_uring (blklab io_uring) ---------------------------------------------

// fio's t/io_uring benchmark on a simulated host: its threads and loop
// (job/t_io_uring_thread.h) against the host's devices named as files.
struct IoUringRunRequest {
  host::HostSpec host;
  workload::TioUringSpec spec;
  // CPUs the submitter threads run on, round robin (taskset -c LIST); empty:
  // thread i on CPU i (mod the host's CPU count).
  std::vector<uint32_t> cpus;
  uint64_t seed = 0;
  RunLimits limits;
};

// One second of virtual time: the deltas the tool prints (submitted IOs,
// io_uring_enter calls, reaped CQEs), summed over threads.
struct IoUringSecond {
  uint64_t done = 0;
  uint64_t calls = 0;
  uint64_t reaps = 0;
};

struct IoUringResult {
  std::vector<IoUringSecond> seconds;     // every whole second simulated
  std::vector<std::string> thread_files;  // per thread: the last file assigned
  std::vector<int> thread_cpus;
  std::vector<stats::LatencyHistogram> latency;  // per thread (-t1)
  stats::KernelReport kernel;
  int64_t virtual_ns = 0;
  bool interrupted = false;  // stopped by `cancel` (t/io_uring: "Exiting on signal")
};

// Called after each simulated second (t/io_uring's per-second line).
using IoUringSecondFn = std::function<void(const IoUringSecond&)>;

// Whether t/io_uring prints its second `index` (from 0): every one but the
// last of -rN (the tool stops before printing it), every one of a run until
// interrupted (-r0).
bool TioUringPrintsSecond(size_t index, const workload::TioUringSpec& spec);
// How many of the run's seconds it printed.
size_t TioUringPrintedSeconds(const IoUringResult& result, const workload::TioUringSpec& spec);
// The mean IOPS over those seconds (`blklab io_uring`'s "iops"); 0 when
// none was printed (-r1).
double TioUringMeanIops(const IoUringResult& result, const workload::TioUringSpec& spec);

// Runs -r seconds (or, with -r0, until `cancel` is set: the result then
// says interrupted). InvalidArgument / Unimplemented name what is wrong:
// a file that is not a device of the host, a mode blklab does not model;
// FailedPrecondition carries the tool's own failure lines (polled IO on a
// device without poll queues). `on_start` runs once the files are open and
// before any IO, where the tool prints its startup lines.
absl::StatusOr<IoUringResult> RunIoUring(const IoUringRunRequest& request, const std::function<void()>& on_start,
                                         const IoUringSecondFn& on_second, const std::atomic<bool>* cancel = nullptr);

// Wall-clock values for fio's header fields; tests pass fixed ones.
struct WallClock {
  int64_t timestamp_sec = 0;
  int64_t timestamp_ms = 0;
  std::string time_string;  // "Mon Nov 30 02:11:45 2026"
};
report::ReportInput BuildReport(const RunRequest& request, const RunResult& result,
                                const WallClock& clock, bool with_kernel_report);

// What fio prints besides its report for jobs that ended with an error
// (a failed verify): `stderr_lines`, the messages of the clones as they ran
// (thread order); `stdout_lines`, one "fio: pid=N, err=E/VERROR" line per
// failed clone (fio's log_info at the thread's exit); `failed`, fio's exit
// value (one per failed clone).
struct FioJobErrors {
  std::vector<std::string> stderr_lines;
  std::string stdout_lines;
  int failed = 0;
};
FioJobErrors CollectJobErrors(const RunResult& result);

}  // namespace blklab

#endif  // BLKLAB_ENGINE_ENGINE_H_
