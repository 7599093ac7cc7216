// Run results and snapshots from the engine to the API proto (convert.h):
// a finished run's JobResult (fio's texts, typed figures, profile, locks,
// scheduler and btt rows, log files), profile and lock rows both ways, and
// WatchJob snapshots.
#include "server/convert.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/report/flame_graph.h"
#include "engine/report/report.h"
#include "server/proto_time.h"

namespace blklab::server {
namespace {

void FillLatency(const stats::RunningStat& s, const stats::LatencyHistogram& h,
                 const std::vector<double>& percentiles, v1::LatencyStats* out) {
  out->set_samples(s.n());
  out->set_min_ns(static_cast<int64_t>(s.min()));
  out->set_max_ns(static_cast<int64_t>(s.max()));
  out->set_mean_ns(s.mean());
  out->set_stddev_ns(s.stddev());
  if (s.n() == 0 || percentiles.empty()) return;
  const std::vector<uint64_t> values = h.Percentiles(percentiles);
  for (size_t i = 0; i < percentiles.size() && i < values.size(); ++i) {
    v1::Percentile* p = out->add_percentiles();
    p->set_percentile(percentiles[i]);
    p->set_value_ns(static_cast<int64_t>(values[i]));
  }
}

void FillDirection(const stats::DirResult& d, const std::vector<double>& percentiles,
                   v1::DirectionStats* out) {
  out->set_io_bytes(d.io_bytes);
  out->set_total_ios(d.total_ios);
  out->set_runtime_ms(d.runtime_ms);
  out->set_bw_bytes_per_sec(d.bw_bytes_per_sec());
  out->set_iops(d.iops());
  if (d.slat.n() > 0) FillLatency(d.slat, d.slat_hist, percentiles, out->mutable_slat());
  FillLatency(d.clat, d.clat_hist, percentiles, out->mutable_clat());
  FillLatency(d.lat, d.lat_hist, percentiles, out->mutable_lat());
}

}  // namespace

v1::JobResult BuildJobResult(const RunRequest& request, const RunResult& run, const WallClock& clock) {
  v1::JobResult out;
  report::ReportInput input = BuildReport(request, run, clock, /*with_kernel_report=*/true);
  // Each format alone, as `--output-format=X` prints it.
  auto write = [&input](bool report::OutputFormats::*format) {
    report::OutputFormats f;
    f.*format = true;
    return report::WriteReport(input, f);
  };
  out.set_fio_json(write(&report::OutputFormats::json));
  out.set_fio_normal(write(&report::OutputFormats::normal));
  out.set_fio_terse(write(&report::OutputFormats::terse));
  out.set_fio_json_plus(write(&report::OutputFormats::json_plus));
  const FioJobErrors job_errors = CollectJobErrors(run);
  for (const std::string& m : job_errors.stderr_lines) out.add_fio_stderr(m);
  out.set_fio_job_errors(job_errors.stdout_lines);

  for (const report::ReportEntry& e : input.entries) {
    v1::JobStats* j = out.add_jobs();
    j->set_job_name(e.name);
    j->set_group_id(e.groupid);
    j->set_error(e.error);
    std::vector<double> pcts = e.display.percentile_list;
    std::sort(pcts.begin(), pcts.end());
    FillDirection(e.result.dir(stats::Dir::kRead), pcts, j->mutable_read());
    FillDirection(e.result.dir(stats::Dir::kWrite), pcts, j->mutable_write());
    FillDirection(e.result.dir(stats::Dir::kTrim), pcts, j->mutable_trim());
    j->set_usr_cpu_pct(e.result.cpu.usr_pct);
    j->set_sys_cpu_pct(e.result.cpu.sys_pct);
    j->set_ctx(e.result.cpu.ctx);
    j->set_job_runtime_ms(e.result.job_runtime_ms);
  }
  const stats::KernelReport& k = run.kernel;
  SetDuration(run.virtual_ns, out.mutable_virtual_time());
  out.set_sys_pct(k.sys_pct);
  out.set_contention_pct(k.contention_pct);
  out.set_total_ios(k.total_ios);
  out.set_events(run.events);
  for (const stats::ProfileRow& p : k.profile) ProfileRowToProto(p, out.add_profile());
  if (!k.stacks.empty()) {
    out.set_stacks_folded(report::FoldedStacks(k.stacks));
    out.set_stacks_folded_bytes(static_cast<int64_t>(out.stacks_folded().size()));
  }
  for (const stats::LogFile& f : run.logs) {
    v1::LogFile* log = out.add_logs();
    log->set_name(f.name);
    log->set_content(f.contents);
    log->set_size_bytes(static_cast<int64_t>(f.contents.size()));
  }
  for (const stats::LockRow& l : k.locks) LockRowToProto(l, out.add_locks());
  for (const stats::SchedRow& t : k.sched) {
    v1::SchedRow* row = out.add_sched();
    row->set_task(t.task);
    row->set_threads(t.threads);
    row->set_policy(t.rt ? "SCHED_FIFO" : "SCHED_OTHER");
    row->set_runtime_ns(t.runtime_ns);
    row->set_switches(t.switches);
    row->set_delay_ns(t.delay_ns);
    row->set_max_delay_ns(t.max_delay_ns);
    row->set_max_delay_at_ns(t.max_delay_at_ns);
  }
  for (const stats::DeviceRow& d : k.devices) {
    for (const auto& [stage, st] : d.stages()) {
      if (st->n == 0) continue;
      v1::BttRow* row = out.add_btt();
      row->set_device(d.name);
      row->set_stage(stage);
      row->set_n(st->n);
      row->set_min_ns(st->min_ns);
      row->set_avg_ns(st->avg_ns);
      row->set_max_ns(st->max_ns);
    }
  }
  return out;
}

void ProfileRowToProto(const stats::ProfileRow& p, v1::ProfileRow* row) {
  row->set_function(p.function);
  row->set_mode(stats::CpuModeName(p.mode));
  row->set_self_ns(p.self_ns);
  row->set_share_pct(p.share_pct);
}

absl::StatusOr<stats::ProfileRow> ProfileRowFromProto(const v1::ProfileRow& row) {
  stats::ProfileRow p;
  p.function = row.function();
  bool known = false;
  for (int m = 0; m < stats::kNumCpuModes; ++m) {
    if (row.mode() == stats::CpuModeName(static_cast<stats::CpuMode>(m))) {
      p.mode = static_cast<stats::CpuMode>(m);
      known = true;
    }
  }
  if (!known) return absl::InvalidArgumentError("profile row " + row.function() + ": unknown mode '" + row.mode() + "'");
  p.self_ns = row.self_ns();
  p.share_pct = row.share_pct();
  return p;
}

void LockRowToProto(const stats::LockRow& l, v1::LockRow* row) {
  row->set_name(l.name);
  row->set_acquisitions(l.acquisitions);
  row->set_contended(l.contended);
  row->set_wait_ns(l.wait_ns);
  row->set_hold_ns(l.hold_ns);
  row->set_max_waiters(l.max_waiters);
  row->set_holder_changes(l.holder_changes);
  row->set_remote_holder_changes(l.remote_holder_changes);
  row->set_line_transfers(l.line_transfers);
  row->set_wait_irqs_off_ns(l.wait_irqs_off_ns);
}

stats::LockRow LockRowFromProto(const v1::LockRow& row) {
  stats::LockRow l;
  l.name = row.name();
  l.acquisitions = row.acquisitions();
  l.contended = row.contended();
  l.wait_ns = row.wait_ns();
  l.hold_ns = row.hold_ns();
  l.max_waiters = row.max_waiters();
  l.holder_changes = row.holder_changes();
  l.remote_holder_changes = row.remote_holder_changes();
  l.line_transfers = row.line_transfers();
  l.wait_irqs_off_ns = row.wait_irqs_off_ns();
  return l;
}

namespace {

void FillSnapshotInterval(const SnapshotInterval& iv, v1::Snapshot* out) {
  SetDuration(iv.end_ns - iv.start_ns, out->mutable_interval());
  v1::IntervalDirection* dirs[stats::kNumDirs] = {out->mutable_read(), out->mutable_write(),
                                                  out->mutable_trim()};
  for (int d = 0; d < stats::kNumDirs; ++d) {
    v1::IntervalDirection* dir = dirs[d];
    dir->set_ios(iv.ios[d]);
    dir->set_iops(iv.iops[d]);
    dir->set_bw_bytes_per_sec(iv.bw_bytes_per_sec[d]);
    if (iv.clat_samples[d] == 0) continue;
    for (size_t k = 0; k < SnapshotInterval::kPercentiles.size(); ++k) {
      v1::Percentile* p = dir->add_clat_percentiles();
      p->set_percentile(SnapshotInterval::kPercentiles[k]);
      p->set_value_ns(static_cast<int64_t>(iv.clat_pct_ns[d][k]));
    }
  }
  v1::CpuShares* cpu = out->mutable_cpu();
  cpu->set_usr_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kUser)]);
  cpu->set_sys_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kSys)]);
  cpu->set_irq_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kIrq)]);
  cpu->set_softirq_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kSoftirq)]);
  cpu->set_idle_pct(iv.cpu_pct[static_cast<int>(stats::CpuMode::kIdle)]);
  out->set_contention_pct(iv.contention_pct);
  // The most contended locks: descending wait, then contended, then name.
  std::vector<const stats::LockRow*> locks;
  for (const stats::LockRow& l : iv.locks) locks.push_back(&l);
  const size_t n = std::min<size_t>(locks.size(), kSnapshotTopLocks);
  std::partial_sort(locks.begin(), locks.begin() + n, locks.end(),
                    [](const stats::LockRow* a, const stats::LockRow* b) {
                      if (a->wait_ns != b->wait_ns) return a->wait_ns > b->wait_ns;
                      if (a->contended != b->contended) return a->contended > b->contended;
                      return a->name < b->name;
                    });
  for (size_t i = 0; i < n; ++i) {
    v1::LockRow* row = out->add_top_locks();
    row->set_name(locks[i]->name);
    row->set_acquisitions(locks[i]->acquisitions);
    row->set_contended(locks[i]->contended);
    row->set_wait_ns(locks[i]->wait_ns);
    row->set_hold_ns(locks[i]->hold_ns);
  }
}

}  // namespace

v1::Snapshot IntervalSnapshot(const std::string& name, uint64_t sequence, int64_t virtual_ns,
                              double progress_fraction, int64_t wall_ns, const SnapshotInterval& interval) {
  v1::Snapshot s;
  s.set_job(name);
  s.set_sequence(sequence);
  s.set_state(v1::Job::RUNNING);
  SetDuration(virtual_ns, s.mutable_virtual_time());
  SetDuration(wall_ns, s.mutable_wall_time());
  s.set_progress_fraction(progress_fraction);
  FillSnapshotInterval(interval, &s);
  return s;
}

void OmitLogContents(v1::Job* job) {
  if (!job->has_result()) return;
  job->mutable_result()->clear_stacks_folded();
  for (v1::LogFile& f : *job->mutable_result()->mutable_logs()) {
    f.set_size_bytes(static_cast<int64_t>(f.content().size()));
    f.clear_content();
  }
}

v1::Snapshot FinalSnapshot(const v1::Job& job, uint64_t sequence) {
  v1::Snapshot s;
  s.set_job(job.name());
  s.set_sequence(sequence);
  s.set_state(job.state());
  if (job.has_result()) *s.mutable_virtual_time() = job.result().virtual_time();
  *s.mutable_wall_time() = job.wall_time();
  s.set_progress_fraction(job.state() == v1::Job::SUCCEEDED ? 1.0 : job.progress_fraction());
  *s.mutable_final_job() = job;
  OmitLogContents(s.mutable_final_job());
  return s;
}

}  // namespace blklab::server
