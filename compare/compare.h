// compare/compare.h
//
// A comparison: one fio job over a baseline and variants of a host (and
// over a matrix of axes, a fleet inventory's host types, repeated samples),
// run as independent cells and summarised in the kernel-list layout. The
// core shared by `blklab compare` (clients/cli) and blklabd's
// ComparisonService (server/), which runs the same cells on its workers and
// on a fleet of servers: both parse the same arguments with this code, run
// each cell with RunCell and render with Render, so a comparison prints the
// same bytes wherever its cells ran.
//
// Arguments (ParseComparison), as `blklab compare` takes them without its
// local flags (--jobs, --format, --plot, --dry-run):
//   --host=PRESET|FILE | --fleet=INVENTORY   --variant NAME:PATH=V[,PATH=V...]
//   --matrix PATH=V1,V2,...   --samples=N   --seed=N   --baseline=NAME
//   [--tool=fio|io_uring] -- ARGS...
// or one spec file (YAML: host or fleet, fio or io_uring, seed, samples,
// baseline, variants, matrix). PATH is a host-spec path
// (knobs.dd_serialize_dispatch, devices.nullb0.queue.scheduler, cpus.count)
// or fio.OPTION.
//
// The tool: fio (its job arguments), or fio's t/io_uring as `blklab
// io_uring` runs it (its command line, with `--cpus=LIST` for taskset's
// mask; -rN with N >= 2, as the tool prints every second but the last).
// An io_uring cell's IOPS is the mean of the printed seconds, its "sys" the
// kernel's share (sys, irq, softirq) of the time of the CPUs that did any
// work, as t/io_uring reports none; fio.OPTION settings do not apply.
// blklabd runs fio cells only and refuses an io_uring comparison by name.
//
// Cells: (point of the axes' product, variant, sample), point-major. A
// cell's run depends only on the comparison and the cell's identity: its
// host is the baseline host with the point's and the variant's overlays,
// its jobs the fio arguments with the fio.* settings applied to every job,
// and samples after the first get randseed = seed + sample. So a cell's
// result does not depend on where, when or in which order it runs.
//
// Every file (spec, inventory, host files, job files and includes) and
// every ${VAR} is read through Inputs: the local disk and environment for
// the CLI, a request's bundle on a server.
//
// Thread-safety: a parsed Comparison is immutable; RunCell may run on many
//   threads at once (each run owns its simulation), given thread-safe Inputs.
// Cost: parsing is linear in the inputs; a cell is one engine run.
#ifndef BLKLAB_COMPARE_COMPARE_H_
#define BLKLAB_COMPARE_COMPARE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/engine.h"
#include "engine/util/doc_node.h"

namespace blklab::compare {

constexpr int kMaxCells = 4096;
constexpr int kMaxSamples = 1000;

// Where a comparison's files and variables come from.
struct Inputs {
  workload::FileReader read_file;  // spec, inventory, host files, job files
  workload::VarLookup lookup_var;  // ${VAR} in job files (nullptr: all unset)
};

// PATH=VALUE: a host-spec path, or fio.OPTION.
struct Setting {
  std::string path;
  std::string value;
};

struct Variant {
  std::string name;
  std::vector<Setting> settings;
};

struct Axis {
  std::string path;
  std::vector<std::string> values;
};

// The axis a fleet inventory adds: its values are host type names.
inline constexpr char kFleetAxis[] = "host";

enum class Tool { kFio, kIoUring };
// "fio", "io_uring".
const char* ToolName(Tool tool);

struct Comparison {
  util::DocNode host_doc;  // as written
  // A fleet inventory (--fleet / fleet:): host type names and their host
  // documents; the comparison's first axis ("host") runs over them.
  std::vector<std::pair<std::string, util::DocNode>> fleet;
  std::string baseline;  // the baseline variant's name (empty: the default rule)
  std::string host_label;
  Tool tool = Tool::kFio;
  std::vector<std::string> tool_args;  // fio's arguments, or t/io_uring's
  std::vector<Variant> variants;  // [0] is the baseline
  std::vector<Axis> axes;
  int samples = 1;
  uint64_t seed = 0;
  bool collect_stacks = false;  // cells record call stacks for flame graphs
};

struct Cell {
  size_t point = 0;  // index into the axes' product
  size_t variant = 0;
  int sample = 0;
};

struct CellResult {
  double iops = 0;
  std::array<double, stats::kNumDirs> dir_iops{};  // read, write, trim
  uint64_t bw_bytes = 0;
  double usr_pct = 0;
  double sys_pct = 0;         // fio's sys_cpu (mean over the report's entries)
  double contention_pct = 0;  // the slowpath's share of busy CPU time
  double kernel_sys_pct = 0;  // sys + irq + softirq of all CPUs
  // The device ceiling the cell ran at ("nvme0n1 max_iops 800000"): a
  // device served at least kCeilingShare of its IOPS or bandwidth ceiling
  // over the run. Empty: no device was at its ceiling.
  std::string bound;
  double clat_mean_ns = 0;
  // clat percentiles (p50 ... p99.99) over every job and direction.
  std::vector<std::pair<double, uint64_t>> clat_percentiles;
  // The clat distribution over every job and direction: fio's buckets
  // merged into four bins per power of two of nanoseconds (one each below
  // 4 ns), ascending, empty bins left out. Bin b holds [lower_ns, upper_ns).
  struct HistogramBin {
    uint64_t lower_ns = 0;
    uint64_t upper_ns = 0;
    uint64_t count = 0;
  };
  std::vector<HistogramBin> clat_histogram;
  // fio's averaged logs (write_bw_log / write_iops_log / write_lat_log with
  // log_avg_msec) as time series, one per log type in the order bw, iops,
  // lat, slat, clat: per window end (ms of the job's time) the sum over the
  // cell's jobs and directions for bw (KiB/s) and iops, the mean for the
  // latencies (ns). Per-IO logs (no log_avg_msec) are left out. At most
  // kMaxLogPoints points (consecutive windows averaged beyond).
  struct LogSeries {
    std::string kind;  // "bw", "iops", "lat", "slat", "clat"
    std::vector<std::pair<int64_t, double>> points;  // (time_ms, value)
  };
  static constexpr size_t kMaxLogPoints = 1000;
  std::vector<LogSeries> log_series;
  uint64_t ios = 0;
  // Each report entry's IOPS (a job, or a group_reporting group), in order.
  std::vector<std::pair<std::string, double>> jobs;
  std::vector<stats::ProfileRow> profile;
  std::vector<stats::LockRow> locks;
  std::vector<stats::StackRow> stacks;  // with collect_stacks only
  // Non-empty when the cell's run stalled (a result of the configuration,
  // e.g. RC3's shortcut): the engine's message; the figures above are 0.
  std::string stalled;
};

// One row of the table: a (point, variant) over its samples.
struct Row {
  size_t point = 0;
  size_t variant = 0;
  double iops = 0, iops_min = 0, iops_max = 0, iops_stdev_pct = 0;
  double usr_pct = 0, sys_pct = 0, contention_pct = 0;  // usr, sys: fio's, of its job threads
  double kernel_sys_pct = 0;                // the machine's sys + irq + softirq (CellResult::kernel_sys_pct)
  double clat_p50_ns = 0, clat_p99_ns = 0;  // over the samples with completions (0: none)
  std::string bound;                        // the first sample's CellResult::bound
  std::optional<double> diff_pct;  // vs the baseline at the same point
  bool stalled = false;            // some sample of it stalled
};

struct ProfileChange {
  std::string function;
  std::string mode;
  double baseline_pct = 0, variant_pct = 0;
};
struct LockChange {
  std::string name;
  double baseline_contended_pct = 0, variant_contended_pct = 0;
  double baseline_wait_ns_per_io = 0, variant_wait_ns_per_io = 0;
};
struct Change {
  size_t point = 0;
  size_t variant = 0;
  std::vector<ProfileChange> profile;
  std::vector<LockChange> locks;
};

struct Results {
  std::vector<Cell> cells;
  std::vector<CellResult> results;  // per cell
  std::vector<Row> rows;            // per (point, variant); Summarize
  std::vector<Change> changes;      // per (point, non-baseline variant); Summarize
};

// A preset by name, else the host spec (YAML or JSON) in the file of that
// name, read relative to `base_dir` when that is not empty. Errors name the
// argument.
absl::StatusOr<util::DocNode> LoadHostDoc(const std::string& host_arg, const std::string& base_dir,
                                          const workload::FileReader& read_file);

// Parses the arguments (see the file comment) and checks every host as
// given and every variant's overlay on it, so a typo fails before any cell
// runs. `default_host_arg` serves when neither --host nor --fleet is given.
// Errors are INVALID_ARGUMENT naming the argument, file and line;
// RESOURCE_EXHAUSTED above kMaxCells.
absl::StatusOr<Comparison> ParseComparison(const std::vector<std::string>& args, const Inputs& inputs,
                                           const std::string& default_host_arg);

// An error in how the command line is written (an unknown option, a flag
// without its value, arguments that do not go together): INVALID_ARGUMENT
// carrying kUsagePayload, which the CLI answers with its usage and exit 2.
inline constexpr char kUsagePayload[] = "blklab.dev/usage";
absl::Status UsageError(const std::string& message);
bool IsUsageError(const absl::Status& s);

// args[i] as `flag=VALUE`, or `flag VALUE` (then i moves to the value):
// true with *value set; false when args[i] is another argument;
// INVALID_ARGUMENT when the value is missing.
absl::StatusOr<bool> FlagValue(const std::vector<std::string>& args, size_t& i, const std::string& flag,
                               std::string* value);

// The cells, point-major, then variant, then sample.
std::vector<Cell> Cells(const Comparison& c);
size_t CellIndex(const Comparison& c, size_t point, size_t variant, int sample);
size_t NumPoints(const Comparison& c);
// The values of every axis at point `p` (last axis fastest).
std::vector<Setting> PointSettings(const Comparison& c, size_t p);
// "randseed" of a sample after the first (the first keeps fio's default).
uint64_t CellRandseed(const Comparison& c, int sample);
bool IsFioPath(const std::string& path);
std::string AxisHeader(const Axis& a);
std::string PointLabel(const Comparison& c, size_t point);
// "cell before (iodepth=4) sample 1".
std::string CellLabel(const Comparison& c, const Cell& cell);

// What a cell may use: its host's size and its run's virtual time and IOs
// (a server's per-job limits; the defaults are the engine's).
struct CellLimits {
  host::HostLimits host;
  RunLimits run;
};

// The host and jobs of one cell, checked (ValidateHostSpec within
// limits.host, ValidateRun) but not run.
absl::StatusOr<RunRequest> PrepareCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                       const CellLimits& limits = {});

// An io_uring comparison's cell (Tool::kIoUring), checked but not run.
absl::StatusOr<IoUringRunRequest> PrepareIoUringCell(const Comparison& c, const Cell& cell,
                                                     const CellLimits& limits = {});

// What ParseComparison leaves to the cells, checked without running one
// (for a server to refuse at once what would fail cell by cell): each
// variant's settings (host paths and fio.OPTIONs together), and each value
// of each axis alone, applied to the job as given on every host (each fleet
// host type) and prepared as a cell is (PrepareCell within `limits`, or
// PrepareIoUringCell): an unknown fio option, fio.iodepth=abc, a host path
// or value the host lacks, a host beyond the limits. Errors name the
// variant ("variant x: ...") or the axis and value ("--matrix
// fio.iodepth=abc: ..."), INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a
// limit). A job that does not prepare as given on a host is left to the
// cells there (a setting may be what makes it run). At most kMaxCells
// preparations; settings beyond those are left to the cells too.
absl::Status CheckSettings(const Comparison& c, const Inputs& inputs, const CellLimits& limits = {});

// The figures of a finished t/io_uring run of `req`.
CellResult CellResultOfIoUring(const IoUringRunRequest& req, const IoUringResult& run);

// Runs one cell. A run the engine ends because simulated I/O could never
// finish is a result (CellResult::stalled), not an error; a run stopped by
// `cancel` is CANCELLED.
absl::StatusOr<CellResult> RunCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                   const std::atomic<bool>* cancel = nullptr, const CellLimits& limits = {});
// RunCell's two halves after RunFio, for a cell run elsewhere (a job of
// blklabd): the figures of a finished run of `req`, and of a failed one (a
// stall is a result; any other error is returned).
CellResult CellResultOf(const RunRequest& req, const RunResult& run);
absl::StatusOr<CellResult> StalledCell(const absl::Status& run_status);

// Rows and changes from res.cells and res.results (one per cell).
void Summarize(const Comparison& c, Results& res);

enum class Format { kTable, kMarkdown, kCsv, kJson };
// "table", "markdown", "csv", "json".
absl::StatusOr<Format> ParseFormat(const std::string& name);
// The summarised comparison in `format`.
std::string Render(const Comparison& c, const Results& res, Format format);
// --dry-run: per cell its label and what it would run, or the first cell's
// error.
absl::StatusOr<std::string> DryRunText(const Comparison& c, const Inputs& inputs);

}  // namespace blklab::compare

#endif  // BLKLAB_COMPARE_COMPARE_H_
