// Comparison bundles and cell figures between the API proto and compare/
// (convert.h): a bundle's inputs, size and parsed comparison; a cell's
// figures both ways.
#include "server/convert.h"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/host/presets.h"
#include "engine/util/status_macros.h"

namespace blklab::server {

absl::StatusOr<compare::Comparison> ParseComparisonBundle(const v1::ComparisonBundle& bundle,
                                                          const compare::Inputs& inputs) {
  BLKLAB_ASSIGN_OR_RETURN(compare::Comparison c,
                          compare::ParseComparison({bundle.args().begin(), bundle.args().end()}, inputs,
                                                   std::string(host::kDefaultPresetName)));
  if (c.tool != compare::Tool::kFio) {
    // A cell is a job of the server's queue, and its jobs run fio.
    return absl::UnimplementedError(absl::StrCat(
        "tool ", compare::ToolName(c.tool),
        ": blklabd runs fio comparisons only; run t/io_uring comparisons with `blklab compare` locally"));
  }
  c.collect_stacks = bundle.collect_stacks();
  return c;
}

size_t BundleBytes(const v1::ComparisonBundle& bundle) {
  size_t total = 0;
  for (const std::string& a : bundle.args()) total += a.size();
  for (const auto& [name, text] : bundle.files()) total += name.size() + text.size();
  for (const auto& [name, value] : bundle.variables()) total += name.size() + value.size();
  return total;
}

compare::Inputs BundleInputs(const v1::ComparisonBundle* bundle) {
  compare::Inputs in;
  in.read_file = [bundle](const std::string& path) -> absl::StatusOr<std::string> {
    auto it = bundle->files().find(path);
    if (it == bundle->files().end()) return absl::NotFoundError(path + ": not in the comparison's bundle.files");
    return it->second;
  };
  in.lookup_var = [bundle](const std::string& name) -> std::optional<std::string> {
    auto it = bundle->variables().find(name);
    if (it == bundle->variables().end()) return std::nullopt;
    return it->second;
  };
  return in;
}

v1::ComparisonCellResult CellResultToProto(const compare::CellResult& r) {
  v1::ComparisonCellResult p;
  p.set_iops(r.iops);
  for (double d : r.dir_iops) p.add_dir_iops(d);
  p.set_bw_bytes(r.bw_bytes);
  p.set_usr_pct(r.usr_pct);
  p.set_sys_pct(r.sys_pct);
  p.set_contention_pct(r.contention_pct);
  p.set_kernel_sys_pct(r.kernel_sys_pct);
  p.set_bound(r.bound);
  p.set_clat_mean_ns(r.clat_mean_ns);
  for (const auto& [pct, ns] : r.clat_percentiles) {
    v1::Percentile* q = p.add_clat_percentiles();
    q->set_percentile(pct);
    q->set_value_ns(static_cast<int64_t>(ns));
  }
  p.set_ios(r.ios);
  for (const auto& [name, iops] : r.jobs) {
    v1::ComparisonCellResult::JobIops* j = p.add_jobs();
    j->set_name(name);
    j->set_iops(iops);
  }
  for (const stats::ProfileRow& row : r.profile) ProfileRowToProto(row, p.add_profile());
  for (const stats::LockRow& row : r.locks) LockRowToProto(row, p.add_locks());
  p.set_stalled(r.stalled);
  for (const compare::CellResult::HistogramBin& b : r.clat_histogram) {
    v1::ComparisonCellResult::HistogramBin* h = p.add_clat_histogram();
    h->set_lower_ns(b.lower_ns);
    h->set_upper_ns(b.upper_ns);
    h->set_count(b.count);
  }
  for (const compare::CellResult::LogSeries& ls : r.log_series) {
    v1::ComparisonCellResult::LogSeries* o = p.add_log_series();
    o->set_kind(ls.kind);
    for (const auto& [t, v] : ls.points) {
      o->add_time_ms(t);
      o->add_value(v);
    }
  }
  for (const stats::StackRow& row : r.stacks) {
    v1::ComparisonCellResult::Stack* st = p.add_stacks();
    st->set_stack(row.stack);
    st->set_ns(row.ns);
  }
  return p;
}

absl::StatusOr<compare::CellResult> CellResultFromProto(const v1::ComparisonCellResult& p) {
  compare::CellResult r;
  if (p.dir_iops_size() != stats::kNumDirs) {
    return absl::InvalidArgumentError(absl::StrCat("dir_iops: ", p.dir_iops_size(), " values, expected ", stats::kNumDirs));
  }
  r.iops = p.iops();
  for (int d = 0; d < stats::kNumDirs; ++d) r.dir_iops[static_cast<size_t>(d)] = p.dir_iops(d);
  r.bw_bytes = p.bw_bytes();
  r.usr_pct = p.usr_pct();
  r.sys_pct = p.sys_pct();
  r.contention_pct = p.contention_pct();
  r.kernel_sys_pct = p.kernel_sys_pct();
  r.bound = p.bound();
  r.clat_mean_ns = p.clat_mean_ns();
  for (const v1::Percentile& q : p.clat_percentiles()) {
    r.clat_percentiles.emplace_back(q.percentile(), static_cast<uint64_t>(q.value_ns()));
  }
  r.ios = p.ios();
  for (const auto& j : p.jobs()) r.jobs.emplace_back(j.name(), j.iops());
  for (const v1::ProfileRow& row : p.profile()) {
    absl::StatusOr<stats::ProfileRow> pr = ProfileRowFromProto(row);
    if (!pr.ok()) return pr.status();
    r.profile.push_back(*std::move(pr));
  }
  for (const v1::LockRow& row : p.locks()) r.locks.push_back(LockRowFromProto(row));
  r.stalled = p.stalled();
  for (const v1::ComparisonCellResult::HistogramBin& b : p.clat_histogram()) {
    r.clat_histogram.push_back(compare::CellResult::HistogramBin{b.lower_ns(), b.upper_ns(), b.count()});
  }
  for (const v1::ComparisonCellResult::LogSeries& ls : p.log_series()) {
    if (ls.time_ms_size() != ls.value_size()) {
      return absl::InvalidArgumentError(absl::StrCat("log_series ", ls.kind(), ": ", ls.time_ms_size(), " times, ",
                                                     ls.value_size(), " values"));
    }
    compare::CellResult::LogSeries out{ls.kind(), {}};
    for (int i = 0; i < ls.time_ms_size(); ++i) out.points.emplace_back(ls.time_ms(i), ls.value(i));
    r.log_series.push_back(std::move(out));
  }
  for (const v1::ComparisonCellResult::Stack& st : p.stacks()) r.stacks.push_back(stats::StackRow{st.stack(), st.ns()});
  return r;
}

}  // namespace blklab::server
