// engine/report/report.h
//
// Writers for fio 3.33's output formats (docs/fio-compatibility.md c.1-c.4; structure of
// /work/shared/fio-reference/out/) plus blklab's own sections:
//
//  - WriteNormal: the human report (set-up lines, per-entry blocks, "Run
//    status group" lines, "Disk stats"), then blklab's CPU-mode summary,
//    perf-top-style profile and lockstat-style table when a KernelReport is
//    given.
//  - WriteTerse: terse version 3 (121 fields per entry, +41 for a unified
//    "both" mixed block, +9 per disk).
//  - WriteJson: fio's JSON (json_plus adds "bins"), plus a top-level
//    "blklab" object with the KernelReport.
//  - WriteReport: several formats in fio's fixed order terse, json, normal.
//  - WritePerfTop: the profile alone, for `--perf-top`.
//
// Everything the writers print comes from ReportInput: report/ never reads a
// clock, the environment or a file. Callers supply timestamps and pids.
//
// Thread-safety: stateless functions over const inputs.
// Cost: linear in the size of the report; not on a hot path.
#ifndef BLKLAB_ENGINE_REPORT_REPORT_H_
#define BLKLAB_ENGINE_REPORT_REPORT_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/report/json.h"
#include "engine/stats/job_stats.h"
#include "engine/stats/kernel_report.h"

namespace blklab::report {

// Options as written in the job file / command line, in order.
using OptionList = std::vector<std::pair<std::string, std::string>>;

enum class UnifiedRw { kNone = 0, kMixed = 1, kBoth = 2 };  // unified_rw_reporting

struct BsRange {
  uint64_t min = 4096;
  uint64_t max = 4096;
};

// fio's default percentile_list.
inline const std::vector<double>& DefaultPercentiles() {
  static const std::vector<double> kList = {1,  5,  10, 20, 30, 40,   50,   60,   70,
                                            80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  return kList;
}

// Per-entry settings the writers need (taken from the job's options).
struct JobDisplay {
  std::vector<double> percentile_list = DefaultPercentiles();  // at most 20 used
  bool clat_percentiles = true;
  bool lat_percentiles = false;
  bool slat_percentiles = false;
  UnifiedRw unified = UnifiedRw::kNone;
  int kb_base = 1024;    // 1024: IEC first; 1000: SI first
  int unit_base = 8;     // 8 (or 0): bytes; 1: bits
  int sig_figs = 4;
  // latency_target feature ("latency   :" line, latency_* JSON keys).
  uint64_t latency_target = 0;
  uint64_t latency_window = 0;
  double latency_percentile = 100.0;
  uint32_t latency_depth = 1;  // = iodepth unless latency_target lowered it
  std::string description;     // "description" option; empty = none
};

// One "NAME: (g=G): rw=..., bs=..., ioengine=..., iodepth=..." set-up line
// (normal output only). A job with numjobs > 1 gets a "..." line after it.
struct JobHeader {
  std::string name;
  int groupid = 0;
  std::string rw = "read";
  std::array<BsRange, 3> bs;  // read, write, trim
  bool bs_is_seq_rand = false;
  std::string ioengine = "psync";
  std::string iodepth = "1";  // as given
  int numjobs = 1;
};

// One reported record: a job, a clone, or a group merged by group_reporting.
struct ReportEntry {
  std::string name;  // for a merged group: the first job's name
  int groupid = 0;
  int error = 0;
  int64_t pid = 0;          // caller-supplied
  int64_t elapsed_sec = 0;  // since the start of the whole run
  OptionList job_options;   // for a merged group: the last job's options
  stats::JobResult result;  // result.num_jobs = jobs merged ("jobs=N")
  JobDisplay display;
};

// Aggregates of one reporting group for the "Run status group" lines and
// for each entry's bandwidth share (per=, bw_agg).
struct GroupDirStatus {
  uint64_t io_bytes = 0;
  uint64_t agg_bw = 0;  // B/s: 1000 * io_bytes / max_run_ms
  uint64_t min_bw = 0;  // B/s, slowest job
  uint64_t max_bw = 0;  // B/s, fastest job
  int64_t min_run_ms = 0;
  int64_t max_run_ms = 0;
};
struct GroupStatus {
  int groupid = 0;
  std::array<GroupDirStatus, stats::kNumDirs> dirs;
  GroupDirStatus mixed;  // used when unified != kNone
  UnifiedRw unified = UnifiedRw::kNone;
  int kb_base = 1024;
  int unit_base = 8;
  int sig_figs = 4;
};

// Builds a group's status from the *unmerged* results of its jobs.
GroupStatus ComputeGroupStatus(int groupid, absl::Span<const stats::JobResult* const> jobs,
                               const JobDisplay& display);

struct ReportInput {
  std::string fio_version = "fio-3.33";
  int64_t timestamp_sec = 0;  // wall clock at report time, caller-supplied
  int64_t timestamp_ms = 0;
  std::string time_string;    // ctime-style, no newline: "Mon Nov 30 02:11:45 2026"
  OptionList global_options;
  std::vector<JobHeader> headers;
  int processes = 0;  // "Starting N processes" / "Starting N threads"
  int threads = 0;
  std::vector<std::string> info_lines;  // e.g. "job: Laying out IO file (1 file / 64MiB)"
  std::vector<ReportEntry> entries;
  std::vector<GroupStatus> groups;
  std::vector<stats::DeviceRow> disk_util;
  std::optional<stats::KernelReport> kernel;  // blklab extras
  // Normal output starts with the preamble (set-up lines, version,
  // "Starting ...", info lines). fio prints it once, when the jobs start: a
  // caller that printed it already (WriteNormalPreamble, before a run with
  // --status-interval or --eta) sets this to false for the reports after.
  bool with_preamble = true;
};

std::string WriteNormal(const ReportInput& input);
// Only the preamble of normal output (see ReportInput::with_preamble).
std::string WriteNormalPreamble(const ReportInput& input);
std::string WriteTerse(const ReportInput& input);
std::string WriteJson(const ReportInput& input, bool json_plus);

// Output format set, as parsed from --output-format.
struct OutputFormats {
  bool normal = false;
  bool terse = false;
  bool json = false;
  bool json_plus = false;  // implies json
};
// Parses a comma list of normal, terse, json, json+ (fio's --output-format).
absl::StatusOr<OutputFormats> ParseOutputFormats(absl::string_view spec);
// All selected formats in fio's order: terse, json, normal.
std::string WriteReport(const ReportInput& input, const OutputFormats& formats);

// blklab's kernel report as the JSON object under the "blklab" key.
Json KernelReportJson(const stats::KernelReport& kernel);

// blklab's extra normal-output sections (CPU modes, profile, locks).
std::string WriteKernelSections(const stats::KernelReport& kernel);
// A perf-top-style table of the `top_n` hottest functions (all if <= 0).
std::string WritePerfTop(const stats::KernelReport& kernel, int top_n);

}  // namespace blklab::report

#endif  // BLKLAB_ENGINE_REPORT_REPORT_H_
