// BuildReport: turns a run's per-clone results into fio's report input
// (headers, entries merged per group_reporting, group summaries, disk stats).
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/workload/job_spec.h"

namespace blklab {
namespace {

report::JobDisplay DisplayFor(const workload::JobSpec& spec) {
  report::JobDisplay d;
  d.percentile_list = spec.percentile_list;
  d.clat_percentiles = spec.clat_percentiles;
  d.lat_percentiles = spec.lat_percentiles;
  d.slat_percentiles = spec.slat_percentiles;
  d.unified = static_cast<report::UnifiedRw>(static_cast<int>(spec.unified_rw_reporting));
  d.kb_base = static_cast<int>(spec.kb_base);
  d.unit_base = spec.unit_base == 1 ? 1 : 8;
  d.sig_figs = static_cast<int>(spec.sig_figs);
  d.latency_depth = workload::IsSynchronous(spec.ioengine) ? 1 : spec.iodepth;
  d.description = spec.description;
  return d;
}

report::OptionList Options(const std::vector<workload::WrittenOption>& written) {
  report::OptionList out;
  for (const auto& o : written) out.emplace_back(o.name, o.value);
  return out;
}

}  // namespace

report::ReportInput BuildReport(const RunRequest& req, const RunResult& run, const WallClock& clock,
                                bool with_kernel_report) {
  report::ReportInput in;
  in.timestamp_sec = clock.timestamp_sec;
  in.timestamp_ms = clock.timestamp_ms;
  in.time_string = clock.time_string;
  in.global_options = Options(req.jobs.global_options);
  const auto& jobs = req.jobs.jobs;

  // Set-up header lines: one per job, from its first clone.
  for (size_t j = 0; j < jobs.size(); ++j) {
    const workload::JobSpec& spec = jobs[j];
    report::JobHeader h;
    h.name = spec.name;
    for (const auto& c : req.jobs.clones) {
      if (c.job_index == j) {
        h.groupid = static_cast<int>(c.group_id);
        break;
      }
    }
    h.rw = workload::RwPatternName(spec.rw);
    for (int d = 0; d < 3; ++d) {
      h.bs[d].min = workload::MinBlockSize(spec, static_cast<workload::Direction>(d));
      h.bs[d].max = workload::MaxBlockSize(spec, static_cast<workload::Direction>(d));
    }
    h.bs_is_seq_rand = spec.bs_is_seq_rand;
    h.ioengine = spec.ioengine_name;
    h.iodepth = std::to_string(spec.iodepth);
    h.numjobs = static_cast<int>(spec.numjobs);
    in.headers.push_back(h);
    if (spec.thread) {
      in.threads += static_cast<int>(spec.numjobs);
    } else {
      in.processes += static_cast<int>(spec.numjobs);
    }
  }

  // Entries: per clone, or one per group when the group reports merged.
  std::map<uint32_t, std::vector<size_t>> groups;  // group id -> clone indices
  for (size_t i = 0; i < run.clones.size(); ++i) groups[run.clones[i].group_id].push_back(i);
  for (const auto& [gid, members] : groups) {
    bool merged = false;
    for (size_t i : members) merged |= jobs[run.clones[i].job_index].group_reporting;
    std::vector<const stats::JobResult*> results;
    for (size_t i : members) results.push_back(&run.clones[i].result);
    const workload::JobSpec& first = jobs[run.clones[members.front()].job_index];
    if (merged) {
      report::ReportEntry e;
      e.name = first.name;
      e.groupid = static_cast<int>(gid);
      e.pid = 1000 + run.clones[members.front()].thread_number;
      int64_t end = 0;
      for (size_t i : members) end = std::max(end, run.clones[i].end_ns);
      e.elapsed_sec = (end + 999999999) / 1000000000;
      e.job_options = Options(jobs[run.clones[members.back()].job_index].options_written);
      e.result = stats::MergeJobResults(results);
      e.error = e.result.error;
      e.display = DisplayFor(first);
      in.entries.push_back(std::move(e));
    } else {
      for (size_t i : members) {
        const CloneResult& c = run.clones[i];
        const workload::JobSpec& spec = jobs[c.job_index];
        report::ReportEntry e;
        e.name = spec.name;
        e.groupid = static_cast<int>(gid);
        e.pid = 1000 + c.thread_number;
        e.elapsed_sec = (c.end_ns + 999999999) / 1000000000;
        e.job_options = Options(spec.options_written);
        e.result = c.result;
        e.error = c.result.error;
        e.display = DisplayFor(spec);
        in.entries.push_back(std::move(e));
      }
    }
    in.groups.push_back(report::ComputeGroupStatus(static_cast<int>(gid), results, DisplayFor(first)));
  }

  // Disk stats for devices the jobs used, when every job wants them.
  bool disk_util = true;
  for (const auto& spec : jobs) disk_util &= spec.disk_util;
  if (disk_util) in.disk_util = run.kernel.devices;
  if (with_kernel_report) in.kernel = run.kernel;
  return in;
}

FioJobErrors CollectJobErrors(const RunResult& result) {
  FioJobErrors out;
  for (const CloneResult& c : result.clones) {
    out.stderr_lines.insert(out.stderr_lines.end(), c.messages.begin(), c.messages.end());
    if (c.result.error == 0) continue;
    // pid: the report's 1000 + thread number.
    absl::StrAppend(&out.stdout_lines, "fio: pid=", 1000 + c.thread_number, ", err=", c.result.error, "/",
                    c.result.verror, "\n");
    ++out.failed;
  }
  return out;
}

}  // namespace blklab
