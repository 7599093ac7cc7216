// The comparison core's text forms (compare/compare.h): the table and
// Markdown renderings of a summarised comparison, the format names, Render
// (which hands CSV and JSON to compare_render_data.cc) and --dry-run's text.
#include "compare/compare.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compare/compare_internal.h"

namespace blklab::compare {
namespace {

std::string FormatIops(double iops) {
  if (iops >= 1e5) return absl::StrFormat("%.0fK", iops / 1e3);
  if (iops >= 1e4) return absl::StrFormat("%.1fK", iops / 1e3);
  return absl::StrFormat("%.0f", iops);
}
std::string Pct(double v) { return absl::StrFormat("%.1f%%", v); }
// A latency in the unit that keeps it short: 850ns, 82.4us, 12.1ms.
std::string FormatLatency(double ns) {
  if (ns < 1e3) return absl::StrFormat("%.0fns", ns);
  if (ns < 1e6) return absl::StrFormat(ns < 1e5 ? "%.1fus" : "%.0fus", ns / 1e3);
  return absl::StrFormat(ns < 1e8 ? "%.1fms" : "%.0fms", ns / 1e6);
}
std::string SignedPct(double v) { return absl::StrFormat("%+.1f%%", v); }

// The rows of the kernel-list table: header, then one per (point, variant).
std::vector<std::vector<std::string>> TableCells(const Comparison& c, const Results& res) {
  std::vector<std::vector<std::string>> t;
  std::vector<std::string> header = {"Variant"};
  for (const Axis& a : c.axes) header.push_back(AxisHeader(a));
  for (const char* h : {"IOPS", "p50", "p99", "kernel CPU", "fio usr/sys", "contention", "diff"}) header.emplace_back(h);
  if (c.samples > 1) header.emplace_back("spread");
  t.push_back(header);
  for (const Row& row : res.rows) {
    std::vector<std::string> line = {c.variants[row.variant].name};
    for (const Setting& s : PointSettings(c, row.point)) line.push_back(s.value);
    line.push_back(row.stalled ? "stalled" : FormatIops(row.iops));
    line.push_back(row.stalled || row.clat_p50_ns <= 0 ? "-" : FormatLatency(row.clat_p50_ns));
    line.push_back(row.stalled || row.clat_p99_ns <= 0 ? "-" : FormatLatency(row.clat_p99_ns));
    line.push_back(row.stalled ? "-" : Pct(row.kernel_sys_pct));
    line.push_back(row.stalled ? "-" : absl::StrFormat("%.1f/%.1f%%", row.usr_pct, row.sys_pct));
    line.push_back(row.stalled ? "-" : Pct(row.contention_pct));
    line.push_back(row.diff_pct ? SignedPct(*row.diff_pct) : "");
    if (c.samples > 1) line.push_back(absl::StrFormat("±%.1f%%", row.iops_stdev_pct));
    t.push_back(std::move(line));
  }
  return t;
}

// The rows whose runs served at a device's own ceiling: their IOPS say what
// the device admits, not what the kernel's path costs.
std::string CeilingText(const Comparison& c, const Results& res) {
  std::string out;
  for (const Row& row : res.rows) {
    if (row.bound.empty()) continue;
    if (out.empty()) out = "\nat a device's ceiling (IOPS there measure the device, not the kernel's path):\n";
    std::string label = c.variants[row.variant].name;
    if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, row.point), ")");
    absl::StrAppend(&out, "  ", label, ": ", row.bound, "\n");
  }
  return out;
}

// The stalled cells, each with the engine's message (cut to a few stuck
// requests).
std::string StalledText(const Comparison& c, const Results& res) {
  std::string out;
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const std::string& msg = res.results[i].stalled;
    if (msg.empty()) continue;
    if (out.empty()) out = "\nstalled cells (the run could never finish):\n";
    absl::StrAppend(&out, "  ", CellLabel(c, res.cells[i]), ": ",
                    msg.size() > 400 ? msg.substr(0, 400) + " ..." : msg, "\n");
  }
  return out;
}

// With several jobs (or groups) in a cell, each one's IOPS per row (mean over
// the samples): how a scheduler splits the device shows here, not in the sum.
std::string JobsText(const Comparison& c, const Results& res) {
  size_t most = 0;
  for (const CellResult& r : res.results) most = std::max(most, r.jobs.size());
  if (most < 2) return "";
  std::vector<std::string> names(most);
  for (const CellResult& r : res.results) {
    for (size_t j = 0; j < r.jobs.size(); ++j) {
      if (names[j].empty()) names[j] = r.jobs[j].first;
    }
  }
  std::string out = "\nIOPS per job\n";
  for (const Row& row : res.rows) {
    std::vector<double> sum(most, 0);
    int n = 0;
    for (size_t i = 0; i < res.cells.size(); ++i) {
      if (res.cells[i].point != row.point || res.cells[i].variant != row.variant) continue;
      ++n;
      for (size_t j = 0; j < res.results[i].jobs.size(); ++j) sum[j] += res.results[i].jobs[j].second;
    }
    std::string label = c.variants[row.variant].name;
    if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, row.point), ")");
    std::vector<std::string> parts;
    for (size_t j = 0; j < most; ++j) {
      parts.push_back(absl::StrCat(names[j], " ", FormatIops(n == 0 ? 0 : sum[j] / n)));
    }
    absl::StrAppend(&out, "  ", label, ": ", absl::StrJoin(parts, ", "), "\n");
  }
  return out;
}

std::string ChangesText(const Comparison& c, const Results& res) {
  std::string out;
  for (const Change& ch : res.changes) {
    std::string label = c.variants[ch.variant].name + " vs " + c.variants[0].name;
    if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, ch.point), ")");
    absl::StrAppend(&out, "\n", label, ": what changed most\n");
    absl::StrAppend(&out, "  profile (share of busy CPU time)\n");
    for (const ProfileChange& p : ch.profile) {
      absl::StrAppend(&out, absl::StrFormat("    %-44s %-8s %6.2f%% -> %6.2f%%  (%+.2f)\n", p.function, p.mode,
                                            p.baseline_pct, p.variant_pct, p.variant_pct - p.baseline_pct));
    }
    if (!ch.locks.empty()) absl::StrAppend(&out, "  locks (contended acquisitions, spin time per IO)\n");
    for (const LockChange& l : ch.locks) {
      absl::StrAppend(&out, absl::StrFormat("    %-32s %6.2f%% -> %6.2f%%   %8.1f ns -> %8.1f ns\n", l.name,
                                            l.baseline_contended_pct, l.variant_contended_pct,
                                            l.baseline_wait_ns_per_io, l.variant_wait_ns_per_io));
    }
  }
  return out;
}

std::string Header(const Comparison& c, const Results& res) {
  return absl::StrCat("blklab compare: host ", c.host_label, ", ", res.cells.size(), " cells (",
                      NumPoints(c), c.axes.empty() ? " point" : " points", " x ", c.variants.size(), " variants x ",
                      c.samples, c.samples == 1 ? " sample" : " samples", "), seed ", c.seed, "\n",
                      ToolName(c.tool), ": ", absl::StrJoin(c.tool_args, " "), "\n");
}

// The variants, the baseline first: every diff is against it.
std::string VariantsText(const Comparison& c) {
  std::string out = absl::StrCat("baseline: ", c.variants[0].name, " (every diff is against it)\n");
  for (const Variant& v : c.variants) {
    std::vector<std::string> s;
    for (const Setting& x : v.settings) s.push_back(x.path + "=" + x.value);
    absl::StrAppend(&out, "  ", v.name, ": ", s.empty() ? "(as given)" : absl::StrJoin(s, ", "), "\n");
  }
  return out;
}

// For a fleet: per variant, the host types by IOPS change against the
// baseline, largest gain first.
std::string FleetRankingText(const Comparison& c, const Results& res) {
  if (c.fleet.empty() || c.variants.size() < 2) return "";
  std::string out;
  for (size_t v = 1; v < c.variants.size(); ++v) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const Row& row : res.rows) {
      if (row.variant != v || !row.diff_pct) continue;
      ranked.emplace_back(*row.diff_pct, PointLabel(c, row.point));
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    absl::StrAppend(&out, "\n", c.variants[v].name, " vs ", c.variants[0].name,
                    ": host types by IOPS change, largest gain first\n");
    for (const auto& [pct, label] : ranked) absl::StrAppend(&out, absl::StrFormat("  %+8.1f%%  %s\n", pct, label));
  }
  return out;
}

std::string WriteTable(const Comparison& c, const Results& res) {
  const std::vector<std::vector<std::string>> t = TableCells(c, res);
  std::vector<size_t> width(t[0].size(), 0);
  for (const auto& line : t) {
    for (size_t i = 0; i < line.size(); ++i) {
      // "±" is two bytes and one column.
      const size_t cols = line[i].size() - (absl::StrContains(line[i], "±") ? 1 : 0);
      width[i] = std::max(width[i], cols);
    }
  }
  std::string out = Header(c, res) + VariantsText(c) + "\n";
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  for (size_t r = 0; r < t.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < t[r].size(); ++i) {
      const size_t cols = t[r][i].size() - (absl::StrContains(t[r][i], "±") ? 1 : 0);
      line += t[r][i];
      if (i + 1 < t[r].size()) line.append(width[i] - cols + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
    if (r == 0) absl::StrAppend(&out, std::string(total - 2, '='), "\n");
  }
  absl::StrAppend(&out, "p50, p99: fio's completion latency (clat) over every job; kernel CPU: sys + irq + softirq\n"
                        "time of the CPUs that ran, over the run; fio usr/sys: fio's own, of its job threads\n");
  return out + CeilingText(c, res) + JobsText(c, res) + StalledText(c, res) + FleetRankingText(c, res) +
         ChangesText(c, res);
}

std::string WriteMarkdown(const Comparison& c, const Results& res) {
  const std::vector<std::vector<std::string>> t = TableCells(c, res);
  std::string out = "`blklab compare` on host `" + c.host_label + "`, seed " + absl::StrCat(c.seed) + ": `" + ToolName(c.tool) + " " +
                    absl::StrJoin(c.tool_args, " ") + "`; baseline **" + c.variants[0].name + "**\n\n";
  for (const Variant& v : c.variants) {
    std::vector<std::string> s;
    for (const Setting& x : v.settings) s.push_back("`" + x.path + "=" + x.value + "`");
    absl::StrAppend(&out, "- **", v.name, "**: ", s.empty() ? "as given" : absl::StrJoin(s, ", "), "\n");
  }
  out += "\n";
  for (size_t r = 0; r < t.size(); ++r) {
    absl::StrAppend(&out, "| ", absl::StrJoin(t[r], " | "), " |\n");
    if (r == 0) {
      std::vector<std::string> align;
      for (size_t i = 0; i < t[0].size(); ++i) align.push_back(i <= c.axes.size() ? "---" : "---:");
      absl::StrAppend(&out, "|", absl::StrJoin(align, "|"), "|\n");
    }
  }
  std::string changes =
      CeilingText(c, res) + JobsText(c, res) + StalledText(c, res) + FleetRankingText(c, res) + ChangesText(c, res);
  if (!changes.empty()) absl::StrAppend(&out, "\n```", changes, "```\n");
  return out;
}

}  // namespace

absl::StatusOr<Format> ParseFormat(const std::string& name) {
  if (name == "table") return Format::kTable;
  if (name == "markdown") return Format::kMarkdown;
  if (name == "csv") return Format::kCsv;
  if (name == "json") return Format::kJson;
  return absl::InvalidArgumentError("--format: expected table, markdown, csv or json, got " + name);
}

std::string Render(const Comparison& c, const Results& res, Format format) {
  switch (format) {
    case Format::kJson:
      return internal::WriteJsonOut(c, res);
    case Format::kCsv:
      return internal::WriteCsv(c, res);
    case Format::kMarkdown:
      return WriteMarkdown(c, res);
    case Format::kTable:
      break;
  }
  return WriteTable(c, res);
}

absl::StatusOr<std::string> DryRunText(const Comparison& c, const Inputs& inputs) {
  Results res;
  res.cells = Cells(c);
  std::string out = Header(c, res) + VariantsText(c);
  for (const Cell& cell : res.cells) {
    if (c.tool == Tool::kIoUring) {
      absl::StatusOr<IoUringRunRequest> req = PrepareIoUringCell(c, cell);
      if (!req.ok()) return absl::Status(req.status().code(), CellLabel(c, cell) + ": " + std::string(req.status().message()));
      absl::StrAppend(&out, CellLabel(c, cell), ": t/io_uring, ", req->spec.nthreads, " submitter",
                      req->spec.nthreads == 1 ? "" : "s", " on ", req->host.name, ", seed ", req->seed, "\n");
      continue;
    }
    absl::StatusOr<RunRequest> req = PrepareCell(c, cell, inputs);
    if (!req.ok()) return absl::Status(req.status().code(), CellLabel(c, cell) + ": " + std::string(req.status().message()));
    absl::StrAppend(&out, CellLabel(c, cell), ": ", req->jobs.clones.size(), " fio threads on ", req->host.name,
                    cell.sample > 0 ? absl::StrCat(", randseed=", CellRandseed(c, cell.sample)) : "", "\n");
  }
  return out;
}

}  // namespace blklab::compare
