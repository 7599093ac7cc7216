#include "server/job_runner.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "engine/util/status_macros.h"
#include "server/log.h"

namespace blklab::server {
namespace {

// The wall clock fio's output reports: the job's report_time, else now.
WallClock ReportClock(const PreparedJob& job) {
  return job.report_time_ms ? WallClockAt(*job.report_time_ms) : WallClockNow();
}

JobProgress ProgressOf(const Snapshot& snap) {
  JobProgress p;
  p.virtual_ns = snap.virtual_ns;
  p.fraction = snap.virtual_total_ns > 0
                   ? std::min(1.0, static_cast<double>(snap.virtual_ns) / static_cast<double>(snap.virtual_total_ns))
                   : 0.0;
  return p;
}

// Holds a REALTIME-paced run's virtual time to wall time: sleeps until
// `virtual_ns` of wall time have passed since `start`, in steps short
// enough to notice a stop at once.
void PaceTo(const ActiveJob& job, absl::Time start, int64_t virtual_ns) {
  const absl::Time target = start + absl::Nanoseconds(virtual_ns);
  while (!job.stopping()) {
    const absl::Duration left = target - absl::Now();
    if (left <= absl::ZeroDuration()) break;
    absl::SleepFor(std::min(left, absl::Milliseconds(10)));
  }
}

}  // namespace

void JobRunner::Run(ActiveJob& job) const {
  JobRecord record = job.record();
  const absl::Time start = absl::Now();
  Log("info", "job_started", {{"job", record.name()}});

  const absl::StatusOr<PreparedJob> prepared = Prepare(record);
  absl::StatusOr<RunResult> run = absl::UnknownError("not run");
  std::optional<RunContext> context;
  if (!prepared.ok()) {
    run = prepared.status();
  } else {
    if (observer_ != nullptr) {
      const auto& specs = prepared->request.jobs.jobs;
      observer_->JobStarted(record, specs.empty() ? std::string() : specs.front().name);
    }
    context.emplace(RunContext{job, record.name(), start, prepared->limits.max_wall_ns, prepared->realtime,
                               prepared->request.limits,
                               prepared->request.snapshot_interval_ns > 0 ? prepared->request.snapshot_interval_ns
                                                                          : int64_t{100000000},  // RunFio's default slice, 100 ms
                               std::nullopt});
    run = RunFio(
        prepared->request, [&](const Snapshot& snap) { OnSnapshot(*context, snap); }, job.stop_flag());
  }

  const StopReason reason = job.stop_reason();
  if (reason == StopReason::kShutdown) {
    // Leave the stored state RUNNING: the next start re-runs the job.
    Log("info", "job_interrupted", {{"job", record.name()}, {"reason", "shutdown"}});
    return;
  }
  const absl::Time end = absl::Now();
  const RunResult* partial = context && context->partial ? &*context->partial : nullptr;
  JobRecord final_record = FinalRecord(job, std::move(record), reason, prepared, run, partial, start, end);
  Log("info", "job_done",
      {{"job", final_record.name()},
       {"state", JobStateName(final_record.state)},
       {"wall_ms", absl::StrCat(absl::ToInt64Milliseconds(end - start))},
       {"error", std::string(final_record.error.message())}});
  queue_->Finish(job, std::move(final_record));
}

absl::StatusOr<PreparedJob> JobRunner::Prepare(const JobRecord& record) const {
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, HostSpecFromProto(record.definition->resolved_host(), limits_.host));
  return PrepareJob(*record.definition, host, limits_);
}

void JobRunner::OnSnapshot(RunContext& run, const Snapshot& snap) const {
  const int64_t wall_ns = absl::ToInt64Nanoseconds(absl::Now() - run.start);
  const JobProgress progress = ProgressOf(snap);
  uint64_t sequence = 0;
  const std::vector<std::shared_ptr<WatchSink>> sinks =
      run.job.RecordProgress(progress, snap.has_interval, &sequence);
  if (!sinks.empty()) {
    const v1::Snapshot proto =
        IntervalSnapshot(run.name, sequence, progress.virtual_ns, progress.fraction, wall_ns, snap.interval);
    for (const auto& sink : sinks) sink->Push(proto);
  }
  if (observer_ != nullptr) observer_->JobProgress(run.job.id(), snap, wall_ns);
  // A limit reached at this snapshot (the wall clock here, the engine's
  // virtual-time and IO limits as RunFio checks them after it): keep the
  // results as they stand.
  const bool wall = wall_ns > run.max_wall_ns;
  const bool engine_limit = snap.virtual_ns > run.limits.max_virtual_ns + run.slice_ns ||
                            snap.ios_completed > run.limits.max_ios;
  if ((wall || engine_limit) && !run.partial) run.partial = snap.interim();
  if (wall) run.job.Stop(StopReason::kWallLimit);
  if (run.realtime) PaceTo(run.job, run.start, snap.virtual_ns);
  // A stop asked for (CancelJob, or the wall limit above; a shutdown has
  // stopped the engine already): as the CLI does at Ctrl-C, keep the results
  // as they stand at this snapshot, then stop the engine (it notices between
  // slices; what it simulates after this snapshot is not reported).
  if (run.job.stopping()) {
    if (!run.partial && run.job.stop_reason() == StopReason::kCancel) run.partial = snap.interim();
    run.job.StopEngine();
  }
}

JobRecord JobRunner::FinalRecord(const ActiveJob& job, JobRecord record, StopReason reason,
                                 const absl::StatusOr<PreparedJob>& prepared, const absl::StatusOr<RunResult>& run,
                                 const RunResult* partial, absl::Time start, absl::Time end) const {
  record.end_time = end;
  record.wall_time = end - start;
  if (run.ok()) {
    auto result = std::make_shared<v1::JobResult>(BuildJobResult(prepared->request, *run, ReportClock(*prepared)));
    if (prepared->comparison_cell) {
      *result->mutable_comparison_cell() = CellResultToProto(compare::CellResultOf(prepared->request, *run));
      // A cell keeps its averaged logs as series (comparison_cell), not
      // fio's files, as `blklab compare` writes none.
      result->clear_logs();
    }
    record.progress = JobProgress{run->virtual_ns, 1.0};
    bool keep = true;
    record.error = CheckResultSize(*result, &keep);
    record.state = record.error.ok() ? JobState::kSucceeded : JobState::kFailed;
    if (keep) record.result = std::move(result);
    return record;
  }
  switch (reason) {
    case StopReason::kCancel:
      record.error = absl::CancelledError("cancelled by CancelJob");
      break;
    case StopReason::kWallLimit:
      record.error = absl::ResourceExhaustedError(
          absl::StrCat("wall-time limit (max_wall_time = ",
                       absl::FormatDuration(absl::Nanoseconds(prepared->limits.max_wall_ns)), ") reached"));
      break;
    default:
      record.error = run.status();
  }
  record.state = record.error.code() == absl::StatusCode::kCancelled ? JobState::kCancelled : JobState::kFailed;
  if (prepared.ok() && prepared->comparison_cell) {
    // A comparison reports a cell that stalled as that cell's result.
    if (absl::StatusOr<compare::CellResult> stalled = compare::StalledCell(record.error); stalled.ok()) {
      auto result = std::make_shared<v1::JobResult>();
      *result->mutable_comparison_cell() = CellResultToProto(*stalled);
      record.result = std::move(result);
    }
  }
  // Stopped by a limit (FAILED) or by CancelJob (CANCELLED; not a
  // comparison's cell, which its comparison reports as cancelled): the
  // figures up to the stop are kept as the job's result, fio's texts being
  // the report of what ran, as the CLI prints it at Ctrl-C.
  const bool keeps_partial =
      record.error.code() == absl::StatusCode::kResourceExhausted ||
      (record.error.code() == absl::StatusCode::kCancelled && prepared.ok() && !prepared->comparison_cell);
  if (keeps_partial && partial != nullptr && prepared.ok()) {
    auto result = std::make_shared<v1::JobResult>(BuildJobResult(prepared->request, *partial, ReportClock(*prepared)));
    bool keep = true;
    const absl::Status size = CheckResultSize(*result, &keep);
    if (keep) record.result = std::move(result);
    // The code stays the stop's (a cancelled job's error code is CANCELLED).
    if (!size.ok()) {
      record.error = absl::Status(record.error.code(), absl::StrCat(record.error.message(), "; ", size.message()));
    }
  }
  // How far it came: the last progress the run recorded.
  record.progress = job.record().progress.value_or(JobProgress{});
  return record;
}

absl::Status JobRunner::CheckResultSize(v1::JobResult& result, bool* keep) const {
  *keep = true;
  int64_t log_bytes = 0;
  for (const v1::LogFile& f : result.logs()) log_bytes += static_cast<int64_t>(f.content().size());
  absl::Status status;
  if (log_bytes > limits_.max_log_bytes) {
    status = absl::ResourceExhaustedError(absl::StrCat(
        "the run's log files total ", log_bytes, " bytes, above the server's max_log_bytes = ", limits_.max_log_bytes,
        " bytes: the logs are not kept (average them with log_avg_msec=, shorten the run, or raise "
        "blklabd --max_log_bytes)"));
    result.clear_logs();
  }
  // What GetJob returns in one message: everything but the log contents and
  // the stacks (which are read as artifacts too).
  int64_t rest = static_cast<int64_t>(result.ByteSizeLong());
  for (const v1::LogFile& f : result.logs()) rest -= static_cast<int64_t>(f.content().size());
  rest -= static_cast<int64_t>(result.stacks_folded().size());
  // A cell's stacks too: the same stacks again, for its comparison's charts.
  for (const v1::ComparisonCellResult::Stack& st : result.comparison_cell().stacks()) {
    rest -= static_cast<int64_t>(st.ByteSizeLong());
  }
  if (rest > limits_.max_result_bytes) {
    *keep = false;
    return absl::ResourceExhaustedError(absl::StrCat(status.ok() ? "" : absl::StrCat(status.message(), "; "),
        "the run's result (fio's outputs and figures, logs aside) is ", rest,
        " bytes, above the server's max_result_bytes = ", limits_.max_result_bytes,
        " bytes: no result is kept (fewer jobs or group_reporting=1 make it smaller, or raise "
        "blklabd --max_result_bytes)"));
  }
  return status;
}

}  // namespace blklab::server
