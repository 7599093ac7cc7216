// engine/report/report_common.cc
//
// Group status, output-format selection and helpers shared by the writers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "engine/report/report.h"
#include "engine/report/report_internal.h"

namespace blklab::report {

namespace {

void AddJobDir(GroupDirStatus& g, uint64_t io_bytes, int64_t runtime_ms, bool first) {
  if (runtime_ms <= 0) return;
  const uint64_t bw = static_cast<uint64_t>(static_cast<unsigned __int128>(io_bytes) * 1000 /
                                            static_cast<uint64_t>(runtime_ms));
  if (first || g.max_run_ms == 0) {
    g.min_bw = g.max_bw = bw;
    g.min_run_ms = g.max_run_ms = runtime_ms;
  } else {
    g.min_bw = std::min(g.min_bw, bw);
    g.max_bw = std::max(g.max_bw, bw);
    g.min_run_ms = std::min(g.min_run_ms, runtime_ms);
    g.max_run_ms = std::max(g.max_run_ms, runtime_ms);
  }
  g.io_bytes += io_bytes;
}

void FinishAgg(GroupDirStatus& g) {
  g.agg_bw = g.max_run_ms > 0 ? static_cast<uint64_t>(static_cast<unsigned __int128>(g.io_bytes) *
                                                       1000 / static_cast<uint64_t>(g.max_run_ms))
                              : 0;
}

}  // namespace

GroupStatus ComputeGroupStatus(int groupid, absl::Span<const stats::JobResult* const> jobs,
                               const JobDisplay& display) {
  GroupStatus g;
  g.groupid = groupid;
  g.unified = display.unified;
  g.kb_base = display.kb_base;
  g.unit_base = display.unit_base;
  g.sig_figs = display.sig_figs;
  for (const stats::JobResult* job : jobs) {
    for (int d = 0; d < stats::kNumDirs; ++d) {
      AddJobDir(g.dirs[d], job->dirs[d].io_bytes, job->dirs[d].runtime_ms, false);
    }
    if (display.unified == UnifiedRw::kMixed) {
      const stats::DirResult m = job->UnifiedDir();
      AddJobDir(g.mixed, m.io_bytes, m.runtime_ms, false);
    }
  }
  for (auto& d : g.dirs) FinishAgg(d);
  if (display.unified == UnifiedRw::kBoth) {
    // fio 3.33 quirk: the MIXED line's min/max are those of the per-direction
    // job bandwidths; bytes and aggregate cover all directions.
    bool any = false;
    for (const auto& d : g.dirs) {
      if (d.max_run_ms == 0) continue;
      g.mixed.io_bytes += d.io_bytes;
      g.mixed.min_bw = any ? std::min(g.mixed.min_bw, d.min_bw) : d.min_bw;
      g.mixed.max_bw = any ? std::max(g.mixed.max_bw, d.max_bw) : d.max_bw;
      g.mixed.min_run_ms = any ? std::min(g.mixed.min_run_ms, d.min_run_ms) : d.min_run_ms;
      g.mixed.max_run_ms = std::max(g.mixed.max_run_ms, d.max_run_ms);
      any = true;
    }
  }
  FinishAgg(g.mixed);
  return g;
}

absl::StatusOr<OutputFormats> ParseOutputFormats(absl::string_view spec) {
  OutputFormats f;
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part == "normal") {
      f.normal = true;
    } else if (part == "terse") {
      f.terse = true;
    } else if (part == "json") {
      f.json = true;
    } else if (part == "json+") {
      f.json = f.json_plus = true;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("output-format: unknown format '", std::string(part),
                       "' (want normal, terse, json or json+)"));
    }
  }
  return f;
}

std::string WriteReport(const ReportInput& input, const OutputFormats& formats) {
  std::string out;
  if (formats.terse) out += WriteTerse(input);
  if (formats.json || formats.json_plus) out += WriteJson(input, formats.json_plus);
  if (formats.normal) out += WriteNormal(input);
  return out;
}

namespace internal {

std::vector<DirBlock> DirBlocks(const ReportInput& input, const ReportEntry& entry) {
  const GroupStatus* group = nullptr;
  for (const GroupStatus& g : input.groups) {
    if (g.groupid == entry.groupid) group = &g;
  }
  std::vector<DirBlock> blocks;
  static const char* const kLabels[] = {"read", "write", "trim"};
  if (entry.display.unified != UnifiedRw::kMixed) {
    for (int d = 0; d < stats::kNumDirs; ++d) {
      DirBlock b;
      b.label = kLabels[d];
      b.dir_index = d;
      b.result = entry.result.dirs[d];
      b.group_agg_bw = group != nullptr ? group->dirs[d].agg_bw : 0;
      blocks.push_back(std::move(b));
    }
  }
  if (entry.display.unified != UnifiedRw::kNone) {
    DirBlock b;
    b.label = "mixed";
    b.dir_index = -1;
    b.result = entry.result.UnifiedDir();
    b.group_agg_bw = group != nullptr ? group->mixed.agg_bw : 0;
    blocks.push_back(std::move(b));
  }
  return blocks;
}

std::vector<double> SortedPercentiles(const JobDisplay& display) {
  std::vector<double> list = display.percentile_list;
  std::sort(list.begin(), list.end());
  if (list.size() > 20) list.resize(20);
  return list;
}

int PercentilePrecision(const std::vector<double>& list) {
  int precision = 0;
  for (double p : list) {
    int d = 0;
    double scaled = p;
    while (d < 6 && std::fabs(scaled - std::round(scaled)) > 1e-6) {
      scaled *= 10;
      ++d;
    }
    precision = std::max(precision, d);
  }
  return precision;
}

double BwShare(double mean_kib, uint64_t agg_bw, double if_no_agg) {
  const uint64_t agg_kib = agg_bw / 1024;
  if (agg_kib == 0) return if_no_agg;
  const double share = mean_kib * 100.0 / static_cast<double>(agg_kib);
  return share > 100.0 ? 100.0 : share;
}

uint64_t IopsInt(const stats::DirResult& d) {
  if (d.runtime_ms <= 0) return 0;
  return d.total_ios * 1000 / static_cast<uint64_t>(d.runtime_ms);
}

}  // namespace internal
}  // namespace blklab::report
