// The comparison core's cells (compare/compare.h): their geometry (points,
// indices, seeds), labels, preparation (the host and jobs of a cell), runs,
// and the figures of a finished run.
#include "compare/compare.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "compare/compare_internal.h"
#include "engine/host/driver_type.h"
#include "engine/host/host_overlay.h"
#include "engine/topology.h"
#include "engine/util/doc_node.h"
#include "engine/util/status_macros.h"
#include "engine/workload/t_io_uring.h"

namespace blklab::compare {

// The values of every axis at point `p` (last axis fastest).
std::vector<Setting> PointSettings(const Comparison& c, size_t p) {
  std::vector<Setting> out(c.axes.size());
  for (size_t a = c.axes.size(); a-- > 0;) {
    const Axis& axis = c.axes[a];
    out[a] = Setting{axis.path, axis.values[p % axis.values.size()]};
    p /= axis.values.size();
  }
  return out;
}

size_t NumPoints(const Comparison& c) {
  // Saturates: a product above the cell limit is refused, never wrapped.
  size_t n = 1;
  for (const Axis& a : c.axes) {
    n = a.values.size() != 0 && n > SIZE_MAX / a.values.size() ? SIZE_MAX : n * a.values.size();
  }
  return n;
}

uint64_t CellRandseed(const Comparison& c, int sample) { return sample == 0 ? 0 : c.seed + static_cast<uint64_t>(sample); }

std::vector<Cell> Cells(const Comparison& c) {
  std::vector<Cell> cells;
  for (size_t p = 0; p < NumPoints(c); ++p) {
    for (size_t v = 0; v < c.variants.size(); ++v) {
      for (int s = 0; s < c.samples; ++s) cells.push_back(Cell{p, v, s});
    }
  }
  return cells;
}

size_t CellIndex(const Comparison& c, size_t point, size_t variant, int sample) {
  return (point * c.variants.size() + variant) * static_cast<size_t>(c.samples) + static_cast<size_t>(sample);
}

std::string AxisHeader(const Axis& a) { return IsFioPath(a.path) ? a.path.substr(4) : a.path; }

std::string PointLabel(const Comparison& c, size_t point) {
  std::vector<std::string> parts;
  for (const Setting& s : PointSettings(c, point)) parts.push_back(AxisHeader(Axis{s.path, {}}) + "=" + s.value);
  return absl::StrJoin(parts, " ");
}

std::string CellLabel(const Comparison& c, const Cell& cell) {
  std::string label = "cell " + c.variants[cell.variant].name;
  if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, cell.point), ")");
  if (c.samples > 1) absl::StrAppend(&label, " sample ", cell.sample);
  return label;
}

namespace {

// The host of one cell (the point's and the variant's host settings on the
// baseline host), and its fio.OPTION settings as option lines.
absl::StatusOr<host::HostSpec> CellHost(const Comparison& c, const Cell& cell,
                                        std::vector<workload::OptionLine>* fio_overrides) {
  std::vector<Setting> settings = PointSettings(c, cell.point);
  for (const Setting& s : c.variants[cell.variant].settings) settings.push_back(s);
  std::vector<host::HostOverride> host_overrides;
  const util::DocNode* host_doc = &c.host_doc;
  for (const Setting& s : settings) {
    if (s.path == kFleetAxis && !c.fleet.empty()) {
      for (const auto& [name, doc] : c.fleet) {
        if (name == s.value) host_doc = &doc;
      }
    } else if (IsFioPath(s.path)) {
      fio_overrides->push_back(workload::OptionLine{s.path.substr(4), s.value, "<compare>", 0});
    } else {
      host_overrides.push_back(host::HostOverride{s.path, s.value});
    }
  }
  return host::ApplyHostOverrides(*host_doc, host_overrides);
}

}  // namespace

// The host and jobs of one cell, checked (ValidateRun) but not run.
absl::StatusOr<RunRequest> PrepareCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                       const CellLimits& limits) {
  if (c.tool != Tool::kFio) {
    return absl::FailedPreconditionError("an io_uring comparison's cells run t/io_uring (PrepareIoUringCell)");
  }
  std::vector<workload::OptionLine> fio_overrides;
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, CellHost(c, cell, &fio_overrides));
  if (cell.sample > 0) {
    fio_overrides.push_back(
        workload::OptionLine{"randseed", absl::StrCat(CellRandseed(c, cell.sample)), "<compare>", 0});
  }
  BLKLAB_ASSIGN_OR_RETURN(ParsedFio parsed,
                          ParseFio(c.tool_args, host, inputs.read_file, inputs.lookup_var, fio_overrides));
  RunRequest req;
  req.host = std::move(host);
  req.jobs = std::move(parsed.jobs);
  req.seed = c.seed;
  req.collect_stacks = c.collect_stacks;
  req.limits = limits.run;
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host, limits.host));
  BLKLAB_RETURN_IF_ERROR(ValidateRun(req));
  return req;
}

absl::StatusOr<IoUringRunRequest> PrepareIoUringCell(const Comparison& c, const Cell& cell,
                                                     const CellLimits& limits) {
  if (c.tool != Tool::kIoUring) return absl::FailedPreconditionError("not an io_uring comparison");
  std::vector<workload::OptionLine> fio_overrides;
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, CellHost(c, cell, &fio_overrides));
  if (!fio_overrides.empty()) {  // ParseComparison refuses these; a Comparison built in code may not have been
    return absl::InvalidArgumentError("fio." + fio_overrides[0].name + ": fio options do not apply to t/io_uring");
  }
  BLKLAB_ASSIGN_OR_RETURN(internal::IoUringToolArgs args, internal::ParseIoUringToolArgs(c.tool_args));
  IoUringRunRequest req;
  req.host = std::move(host);
  req.spec = std::move(args.spec);
  workload::TioUringApplyAioLimits(req.spec);  // as the tool does at startup (what it says is not a figure)
  req.cpus = std::move(args.cpus);
  // Samples after the first draw their offsets from another stream.
  req.seed = c.seed + static_cast<uint64_t>(cell.sample);
  req.limits = limits.run;
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host, limits.host));
  return req;
}

namespace {

// A run the engine ended because simulated I/O could never finish.
bool IsStall(const absl::Status& s) {
  return s.code() == absl::StatusCode::kDeadlineExceeded && absl::StrContains(s.message(), "simulated I/O stalled");
}

// A cell's completion-latency percentiles and fio-style histogram bins.
void FillClat(const stats::LatencyHistogram& lat, CellResult* cell) {
  if (lat.total() == 0) return;
  CellResult& r = *cell;
  static constexpr double kPercents[] = {50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  const std::vector<uint64_t> v = lat.Percentiles(kPercents);
  for (size_t i = 0; i < v.size(); ++i) r.clat_percentiles.emplace_back(kPercents[i], v[i]);
  // fio's buckets nest in the quarter-power-of-two bins (below 128 ns a
  // bucket is one value; above, a 64th of its power of two).
  for (int i = 0; i < stats::LatencyHistogram::kNumBuckets; ++i) {
    const uint64_t n = lat.count(i);
    if (n == 0) continue;
    const uint64_t v = std::max<uint64_t>(1, stats::LatencyHistogram::BucketValue(i));
    const int msb = std::bit_width(v) - 1;
    CellResult::HistogramBin bin;
    if (msb < 2) {
      bin.lower_ns = uint64_t{1} << msb;
      bin.upper_ns = bin.lower_ns * 2;
    } else {
      const uint64_t quarter = uint64_t{1} << (msb - 2);
      bin.lower_ns = v / quarter * quarter;
      bin.upper_ns = bin.lower_ns + quarter;
    }
    if (!r.clat_histogram.empty() && r.clat_histogram.back().lower_ns == bin.lower_ns) {
      r.clat_histogram.back().count += n;
    } else {
      bin.count = n;
      r.clat_histogram.push_back(bin);
    }
  }
}

}  // namespace

CellResult CellResultOfIoUring(const IoUringRunRequest& req, const IoUringResult& run) {
  CellResult r;
  r.iops = TioUringMeanIops(run, req.spec);
  r.dir_iops[0] = r.iops;  // t/io_uring reads
  r.bw_bytes = static_cast<uint64_t>(r.iops * static_cast<double>(req.spec.bs));
  r.ios = run.kernel.total_ios;
  r.sys_pct = run.kernel.sys_pct;
  r.kernel_sys_pct = run.kernel.sys_pct;
  r.contention_pct = run.kernel.contention_pct;
  r.jobs.emplace_back("t/io_uring", r.iops);
  stats::LatencyHistogram lat;
  for (const stats::LatencyHistogram& h : run.latency) lat.Merge(h);
  FillClat(lat, &r);
  r.profile = run.kernel.profile;
  r.locks = run.kernel.locks;
  return r;
}

absl::StatusOr<CellResult> RunCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                   const std::atomic<bool>* cancel, const CellLimits& limits) {
  if (c.tool == Tool::kIoUring) {
    BLKLAB_ASSIGN_OR_RETURN(const IoUringRunRequest req, PrepareIoUringCell(c, cell, limits));
    absl::StatusOr<IoUringResult> ran = RunIoUring(req, nullptr, nullptr, cancel);
    if (!ran.ok()) return StalledCell(ran.status());
    if (ran->interrupted) return absl::CancelledError("cancelled");
    return CellResultOfIoUring(req, *ran);
  }
  BLKLAB_ASSIGN_OR_RETURN(const RunRequest req, PrepareCell(c, cell, inputs, limits));
  absl::StatusOr<RunResult> ran = RunFio(req, nullptr, cancel);
  if (!ran.ok()) return StalledCell(ran.status());
  return CellResultOf(req, *ran);
}

absl::StatusOr<CellResult> StalledCell(const absl::Status& run_status) {
  if (!IsStall(run_status)) return run_status;
  CellResult stalled;
  stalled.stalled = std::string(run_status.message());
  return stalled;
}

namespace {

// The log type of a fio log file name: PREFIX_TYPE.N.log or PREFIX_TYPE.log.
std::string LogKind(const std::string& name) {
  std::string stem = name;
  if (absl::EndsWith(stem, ".log")) stem.resize(stem.size() - 4);
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos) {
    const std::string n = stem.substr(dot + 1);
    if (!n.empty() && std::all_of(n.begin(), n.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) stem.resize(dot);
  }
  const size_t underscore = stem.rfind('_');
  return underscore == std::string::npos ? stem : stem.substr(underscore + 1);
}

// The averaged logs as series (CellResult::log_series).
std::vector<CellResult::LogSeries> LogSeriesOf(const std::vector<stats::LogFile>& logs) {
  static constexpr const char* kKinds[] = {"bw", "iops", "lat", "slat", "clat"};
  std::vector<CellResult::LogSeries> out;
  for (const char* kind : kKinds) {
    std::map<int64_t, std::pair<double, int>> at;  // time -> (sum, lines)
    for (const stats::LogFile& f : logs) {
      if (LogKind(f.name) != kind) continue;
      std::map<int64_t, std::pair<double, int>> mine;
      bool averaged = true;
      for (absl::string_view line : absl::StrSplit(f.contents, '\n', absl::SkipEmpty())) {
        const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
        int64_t t = 0, bs = -1;
        double v = 0;
        if (fields.size() < 4 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[0]), &t) ||
            !absl::SimpleAtod(absl::StripAsciiWhitespace(fields[1]), &v) ||
            !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[3]), &bs) || bs != 0) {
          averaged = false;  // a per-IO log (its block size in BS) or not a log line
          break;
        }
        mine[t].first += v;
        ++mine[t].second;
      }
      if (!averaged) continue;
      for (const auto& [t, sv] : mine) {
        at[t].first += sv.first;
        at[t].second += sv.second;
      }
    }
    if (at.empty()) continue;
    const bool sum = std::string(kind) == "bw" || std::string(kind) == "iops";
    std::vector<std::pair<int64_t, double>> points;
    for (const auto& [t, sv] : at) points.emplace_back(t, sum ? sv.first : sv.first / sv.second);
    if (points.size() > CellResult::kMaxLogPoints) {
      const size_t k = (points.size() + CellResult::kMaxLogPoints - 1) / CellResult::kMaxLogPoints;
      std::vector<std::pair<int64_t, double>> merged;
      for (size_t i = 0; i < points.size(); i += k) {
        const size_t end = std::min(points.size(), i + k);
        double total = 0;
        for (size_t j = i; j < end; ++j) total += points[j].second;
        merged.emplace_back(points[end - 1].first, total / static_cast<double>(end - i));
      }
      points = std::move(merged);
    }
    out.push_back(CellResult::LogSeries{kind, std::move(points)});
  }
  return out;
}

}  // namespace

// The device ceiling a run was bound by: the first device (in host order)
// that served at least 98 % of its IOPS or bandwidth ceiling over the run,
// as "nvme0n1 max_iops=800000"; empty when none did.
std::string CeilingBound(const host::HostSpec& host, const stats::KernelReport& k) {
  constexpr double kCeilingShare = 0.98;
  if (k.elapsed_ns <= 0) return "";
  const double seconds = static_cast<double>(k.elapsed_ns) / 1e9;
  for (const Disk& disk : ListDisks(host)) {
    const host::DriverType::Ceilings ceil = host::DriverTypeOf(disk.spec->driver).MediaCeilings(disk.spec->driver);
    for (const stats::DeviceRow& d : k.devices) {
      if (d.name != disk.name) continue;
      const double iops = static_cast<double>(d.read_ios + d.write_ios) / seconds;
      const double bytes = static_cast<double>(d.read_sectors + d.write_sectors) * 512 / seconds;
      if (ceil.max_iops > 0 && iops >= kCeilingShare * static_cast<double>(ceil.max_iops)) {
        return absl::StrCat(d.name, " max_iops=", ceil.max_iops);
      }
      if (ceil.max_bytes_per_sec > 0 && bytes >= kCeilingShare * static_cast<double>(ceil.max_bytes_per_sec)) {
        return absl::StrCat(d.name, " bandwidth ceiling ", ceil.max_bytes_per_sec, " B/s");
      }
    }
  }
  return "";
}

CellResult CellResultOf(const RunRequest& req, const RunResult& run) {
  const report::ReportInput report = BuildReport(req, run, WallClock{}, /*with_kernel_report=*/false);
  CellResult r;
  double clat_sum = 0;
  uint64_t clat_n = 0;
  stats::LatencyHistogram clat_all;
  for (const report::ReportEntry& e : report.entries) {
    for (int dir = 0; dir < stats::kNumDirs; ++dir) {
      const stats::DirResult& d = e.result.dirs[static_cast<size_t>(dir)];
      clat_all.Merge(d.clat_hist);
      r.dir_iops[static_cast<size_t>(dir)] += d.iops();
      r.iops += d.iops();
      r.bw_bytes += d.bw_bytes_per_sec();
      r.ios += d.total_ios;
      clat_sum += d.clat.mean() * static_cast<double>(d.clat.n());
      clat_n += d.clat.n();
    }
    r.usr_pct += e.result.cpu.usr_pct;
    r.sys_pct += e.result.cpu.sys_pct;
    double job_iops = 0;
    for (const stats::DirResult& d : e.result.dirs) job_iops += d.iops();
    r.jobs.emplace_back(e.name, job_iops);
  }
  if (!report.entries.empty()) {
    r.usr_pct /= static_cast<double>(report.entries.size());
    r.sys_pct /= static_cast<double>(report.entries.size());
  }
  r.clat_mean_ns = clat_n == 0 ? 0 : clat_sum / static_cast<double>(clat_n);
  FillClat(clat_all, &r);
  r.contention_pct = run.kernel.contention_pct;
  r.kernel_sys_pct = run.kernel.sys_pct;
  r.bound = CeilingBound(req.host, run.kernel);
  r.profile = run.kernel.profile;
  r.locks = run.kernel.locks;
  r.stacks = run.kernel.stacks;
  r.log_series = LogSeriesOf(run.logs);
  return r;
}

}  // namespace blklab::compare
