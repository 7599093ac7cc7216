// The comparison core's data forms (compare/compare_internal.h): CSV, one
// line per cell, and JSON, the comparison with its cells, rows and changes.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "compare/compare.h"
#include "compare/compare_internal.h"
#include "engine/util/doc_node.h"

namespace blklab::compare {
namespace {

using util::DocNode;

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

DocNode PointDoc(const Comparison& c, size_t point) {
  DocNode m = DocNode::Map();
  for (const Setting& s : PointSettings(c, point)) m.AddEntry(s.path, {}, DocNode::String(s.value));
  return m;
}

// The cells of the JSON form: per cell its identity and figures.
DocNode CellsDoc(const Comparison& c, const Results& res) {
  DocNode cells = DocNode::List();
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const Cell& cell = res.cells[i];
    const CellResult& r = res.results[i];
    DocNode cd = DocNode::Map();
    cd.AddEntry("variant", {}, DocNode::String(c.variants[cell.variant].name));
    cd.AddEntry("point", {}, PointDoc(c, cell.point));
    cd.AddEntry("sample", {}, DocNode::Int(cell.sample));
    cd.AddEntry("randseed", {},
                cell.sample == 0 ? DocNode::Null() : DocNode::Int(static_cast<int64_t>(CellRandseed(c, cell.sample))));
    cd.AddEntry("iops", {}, DocNode::Double(r.iops));
    DocNode dirs = DocNode::Map();
    static constexpr const char* kDirNames[] = {"read", "write", "trim"};
    for (int dir = 0; dir < stats::kNumDirs; ++dir) {
      dirs.AddEntry(kDirNames[dir], {}, DocNode::Double(r.dir_iops[static_cast<size_t>(dir)]));
    }
    cd.AddEntry("dir_iops", {}, std::move(dirs));
    cd.AddEntry("bw_bytes", {}, DocNode::Int(static_cast<int64_t>(r.bw_bytes)));
    cd.AddEntry("usr_pct", {}, DocNode::Double(r.usr_pct));
    cd.AddEntry("sys_pct", {}, DocNode::Double(r.sys_pct));
    cd.AddEntry("contention_pct", {}, DocNode::Double(r.contention_pct));
    cd.AddEntry("kernel_sys_pct", {}, DocNode::Double(r.kernel_sys_pct));
    cd.AddEntry("bound", {}, r.bound.empty() ? DocNode::Null() : DocNode::String(r.bound));
    cd.AddEntry("clat_mean_ns", {}, DocNode::Double(r.clat_mean_ns));
    cd.AddEntry("ios", {}, DocNode::Int(static_cast<int64_t>(r.ios)));
    DocNode jobs = DocNode::List();
    for (const auto& [name, iops] : r.jobs) {
      DocNode j = DocNode::Map();
      j.AddEntry("name", {}, DocNode::String(name));
      j.AddEntry("iops", {}, DocNode::Double(iops));
      jobs.Append(std::move(j));
    }
    cd.AddEntry("jobs", {}, std::move(jobs));
    cd.AddEntry("stalled", {}, r.stalled.empty() ? DocNode::Null() : DocNode::String(r.stalled));
    cells.Append(std::move(cd));
  }
  return cells;
}

// The rows of the JSON form: per (point, variant) its summary.
DocNode RowsDoc(const Comparison& c, const Results& res) {
  DocNode rows = DocNode::List();
  for (const Row& row : res.rows) {
    DocNode rd = DocNode::Map();
    rd.AddEntry("variant", {}, DocNode::String(c.variants[row.variant].name));
    rd.AddEntry("point", {}, PointDoc(c, row.point));
    rd.AddEntry("iops", {}, DocNode::Double(row.iops));
    rd.AddEntry("iops_min", {}, DocNode::Double(row.iops_min));
    rd.AddEntry("iops_max", {}, DocNode::Double(row.iops_max));
    rd.AddEntry("iops_stdev_pct", {}, DocNode::Double(row.iops_stdev_pct));
    rd.AddEntry("usr_pct", {}, DocNode::Double(row.usr_pct));
    rd.AddEntry("sys_pct", {}, DocNode::Double(row.sys_pct));
    rd.AddEntry("contention_pct", {}, DocNode::Double(row.contention_pct));
    rd.AddEntry("kernel_sys_pct", {}, DocNode::Double(row.kernel_sys_pct));
    rd.AddEntry("clat_p50_ns", {}, DocNode::Double(row.clat_p50_ns));
    rd.AddEntry("clat_p99_ns", {}, DocNode::Double(row.clat_p99_ns));
    rd.AddEntry("bound", {}, row.bound.empty() ? DocNode::Null() : DocNode::String(row.bound));
    rd.AddEntry("diff_pct", {}, row.diff_pct ? DocNode::Double(*row.diff_pct) : DocNode::Null());
    rd.AddEntry("stalled", {}, DocNode::Bool(row.stalled));
    rows.Append(std::move(rd));
  }
  return rows;
}

// The changes of the JSON form: per (point, non-baseline variant) what
// changed most in the profile and the locks.
DocNode ChangesDoc(const Comparison& c, const Results& res) {
  DocNode changes = DocNode::List();
  for (const Change& ch : res.changes) {
    DocNode cd = DocNode::Map();
    cd.AddEntry("variant", {}, DocNode::String(c.variants[ch.variant].name));
    cd.AddEntry("point", {}, PointDoc(c, ch.point));
    DocNode prof = DocNode::List();
    for (const ProfileChange& p : ch.profile) {
      DocNode pd = DocNode::Map();
      pd.AddEntry("function", {}, DocNode::String(p.function));
      pd.AddEntry("mode", {}, DocNode::String(p.mode));
      pd.AddEntry("baseline_pct", {}, DocNode::Double(p.baseline_pct));
      pd.AddEntry("variant_pct", {}, DocNode::Double(p.variant_pct));
      prof.Append(std::move(pd));
    }
    cd.AddEntry("profile", {}, std::move(prof));
    DocNode locks = DocNode::List();
    for (const LockChange& l : ch.locks) {
      DocNode ld = DocNode::Map();
      ld.AddEntry("name", {}, DocNode::String(l.name));
      ld.AddEntry("baseline_contended_pct", {}, DocNode::Double(l.baseline_contended_pct));
      ld.AddEntry("variant_contended_pct", {}, DocNode::Double(l.variant_contended_pct));
      ld.AddEntry("baseline_wait_ns_per_io", {}, DocNode::Double(l.baseline_wait_ns_per_io));
      ld.AddEntry("variant_wait_ns_per_io", {}, DocNode::Double(l.variant_wait_ns_per_io));
      locks.Append(std::move(ld));
    }
    cd.AddEntry("locks", {}, std::move(locks));
    changes.Append(std::move(cd));
  }
  return changes;
}

}  // namespace

namespace internal {

std::string WriteCsv(const Comparison& c, const Results& res) {
  std::vector<std::string> header = {"variant"};
  for (const Axis& a : c.axes) header.push_back(CsvField(a.path));
  for (const char* h : {"sample", "randseed", "iops", "bw_bytes", "usr_pct", "sys_pct", "contention_pct",
                        "kernel_sys_pct", "clat_mean_ns", "diff_pct", "stalled"}) {
    header.emplace_back(h);
  }
  std::string out = absl::StrJoin(header, ",") + "\n";
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const Cell& cell = res.cells[i];
    const CellResult& r = res.results[i];
    std::vector<std::string> f = {CsvField(c.variants[cell.variant].name)};
    for (const Setting& s : PointSettings(c, cell.point)) f.push_back(CsvField(s.value));
    f.push_back(absl::StrCat(cell.sample));
    f.push_back(cell.sample == 0 ? "" : absl::StrCat(CellRandseed(c, cell.sample)));
    f.push_back(absl::StrFormat("%.3f", r.iops));
    f.push_back(absl::StrCat(r.bw_bytes));
    f.push_back(absl::StrFormat("%.4f", r.usr_pct));
    f.push_back(absl::StrFormat("%.4f", r.sys_pct));
    f.push_back(absl::StrFormat("%.4f", r.contention_pct));
    f.push_back(absl::StrFormat("%.4f", r.kernel_sys_pct));
    f.push_back(absl::StrFormat("%.1f", r.clat_mean_ns));
    const CellResult& base = res.results[CellIndex(c, cell.point, 0, cell.sample)];
    const bool no_diff = cell.variant == 0 || base.iops <= 0 || !base.stalled.empty() || !r.stalled.empty();
    f.push_back(no_diff ? "" : absl::StrFormat("%.4f", 100.0 * (r.iops / base.iops - 1)));
    f.push_back(CsvField(r.stalled));
    absl::StrAppend(&out, absl::StrJoin(f, ","), "\n");
  }
  return out;
}

std::string WriteJsonOut(const Comparison& c, const Results& res) {
  DocNode root = DocNode::Map();
  root.AddEntry("host", {}, DocNode::String(c.host_label));
  root.AddEntry("seed", {}, DocNode::Int(static_cast<int64_t>(c.seed)));
  root.AddEntry("samples", {}, DocNode::Int(c.samples));
  root.AddEntry("tool", {}, DocNode::String(ToolName(c.tool)));
  DocNode tool_args = DocNode::List();
  for (const std::string& a : c.tool_args) tool_args.Append(DocNode::String(a));
  root.AddEntry(absl::StrCat(ToolName(c.tool), "_args"), {}, std::move(tool_args));
  DocNode variants = DocNode::List();
  for (const Variant& v : c.variants) {
    DocNode vd = DocNode::Map();
    vd.AddEntry("name", {}, DocNode::String(v.name));
    DocNode settings = DocNode::Map();
    for (const Setting& s : v.settings) settings.AddEntry(s.path, {}, DocNode::String(s.value));
    vd.AddEntry("settings", {}, std::move(settings));
    variants.Append(std::move(vd));
  }
  root.AddEntry("baseline", {}, DocNode::String(c.variants[0].name));
  root.AddEntry("variants", {}, std::move(variants));
  DocNode axes = DocNode::List();
  for (const Axis& a : c.axes) {
    DocNode ad = DocNode::Map();
    ad.AddEntry("path", {}, DocNode::String(a.path));
    DocNode values = DocNode::List();
    for (const std::string& v : a.values) values.Append(DocNode::String(v));
    ad.AddEntry("values", {}, std::move(values));
    axes.Append(std::move(ad));
  }
  root.AddEntry("matrix", {}, std::move(axes));
  root.AddEntry("cells", {}, CellsDoc(c, res));
  root.AddEntry("rows", {}, RowsDoc(c, res));
  root.AddEntry("changes", {}, ChangesDoc(c, res));
  return util::WriteJson(root, 2) + "\n";
}

}  // namespace internal
}  // namespace blklab::compare
