#include "engine/engine.h"

#include <algorithm>
#include <limits>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/host/presets.h"
#include "engine/interval_view.h"
#include "engine/kernel_report_builder.h"
#include "engine/topology.h"
#include "engine/util/status_macros.h"

namespace blklab {

workload::ParseOptions ParseOptionsFor(const workload::FioInvocation& invocation,
                                       const host::HostSpec& host, workload::FileReader read_file,
                                       workload::VarLookup lookup_var) {
  workload::ParseOptions opts;
  opts.read_file = std::move(read_file);
  opts.lookup_var = std::move(lookup_var);
  opts.host.ncpus = static_cast<uint32_t>(host.cpus.count);
  opts.sections = invocation.sections;
  // --parse-only accepts what fio accepts, as fio --parse-only does.
  if (invocation.parse_only) opts.accept_unmodelled_engines = true;
  return opts;
}

absl::StatusOr<ParsedFio> ParseFio(const std::vector<std::string>& args, const host::HostSpec& host,
                                   workload::FileReader read_file, workload::VarLookup lookup_var,
                                   std::vector<workload::OptionLine> job_overrides) {
  ParsedFio out;
  BLKLAB_ASSIGN_OR_RETURN(out.invocation, workload::ParseFioArgs(args));
  workload::ParseOptions opts = ParseOptionsFor(out.invocation, host, std::move(read_file), std::move(lookup_var));
  opts.job_overrides = std::move(job_overrides);
  BLKLAB_ASSIGN_OR_RETURN(out.jobs, workload::BuildJobs(out.invocation, opts));
  return out;
}

std::vector<std::string> JobTargets(const workload::ParsedJobs& jobs) {
  std::vector<std::string> targets;
  for (const workload::JobSpec& spec : jobs.jobs) {
    targets.insert(targets.end(), spec.filenames.begin(), spec.filenames.end());
    // No filename but a directory, or several files: fio's own files
    // (there, else in the working directory).
    const std::string own = workload::FioFileName(spec, 0, 0);
    if (spec.filenames.empty() && !spec.directory.empty() && !absl::StartsWith(own, "/")) {
      targets.push_back(spec.directory + (absl::EndsWith(spec.directory, "/") ? "" : "/") + own);
    } else if (spec.filenames.empty() && (spec.nrfiles > 1 || !spec.directory.empty() || !spec.filename_format.empty())) {
      targets.push_back(own);
    }
  }
  return targets;
}

std::vector<std::string> SizelessFiles(const workload::ParsedJobs& jobs) {
  std::vector<std::string> out;
  for (const workload::JobSpec& spec : jobs.jobs) {
    if (spec.size.bytes != 0 || spec.size.is_percent() || spec.filesize.hi != 0) continue;
    for (const std::string& name : spec.filenames) {
      if (absl::StartsWith(name, "/dev/")) continue;
      std::string path = name;
      if (!absl::StartsWith(name, "/")) {
        const std::string dir = absl::StartsWith(spec.directory, "/") ? spec.directory : "/";
        path = dir + (absl::EndsWith(dir, "/") ? "" : "/") + name;
      }
      if (std::find(out.begin(), out.end(), path) == out.end()) out.push_back(path);
    }
  }
  return out;
}

absl::StatusOr<host::HostSpec> ResolveHost(const std::string& preset_or_text) {
  if (preset_or_text.find_first_of(":{\n") == std::string::npos) {
    return host::GetPreset(preset_or_text);
  }
  return host::ParseHostSpec(preset_or_text);
}

// The progress snapshot at `horizon`: completions per direction, each
// clone's run state and the ETA (-1 when some clone cannot estimate).
Snapshot SnapshotAt(const Simulation& s, sim::SimTime horizon) {
  Snapshot snap;
  bool eta_known = true;
  snap.virtual_ns = horizon;
  snap.events = s.machine->sim().events_delivered();
  for (const auto& c : s.clones) {
    for (int d = 0; d < stats::kNumDirs; ++d) {
      snap.dir_ios[d] += c->dir_ios_completed()[d];
      snap.dir_bytes[d] += c->dir_bytes_completed()[d];
    }
    const char state = c->RunStateChar(horizon);
    snap.run_states.push_back(state);
    if (state == '_') {
      ++snap.clones_done;
    } else if (state != 'P') {
      ++snap.clones_running;
    }
    const int64_t remaining = c->EstimateRemainingNs(horizon);
    if (remaining < 0) eta_known = false;
    snap.eta_ns = std::max(snap.eta_ns, remaining);
  }
  if (!eta_known) snap.eta_ns = -1;
  for (int d = 0; d < stats::kNumDirs; ++d) {
    snap.ios_completed += snap.dir_ios[d];
    snap.bytes_completed += snap.dir_bytes[d];
  }
  snap.virtual_total_ns = snap.eta_ns >= 0 ? horizon + snap.eta_ns : 0;
  return snap;
}

// The next slice of virtual time. A run with an IO limit of its own (not the
// default) starts with a 1 ms probe, so that the rate is known before a
// whole slice could pass the limit; near the limit the slices shrink to the
// time the IO rate so far predicts for the IOs left.
int64_t NextSliceNs(const RunLimits& limits, int64_t slice_ns, sim::SimTime horizon, uint64_t ios_so_far) {
  int64_t step = slice_ns;
  if (ios_so_far == 0 && limits.max_ios < RunLimits{}.max_ios) step = std::min(step, sim::kNsPerMs);
  if (ios_so_far > 0 && horizon > 0 && limits.max_ios < std::numeric_limits<uint64_t>::max() / 2) {
    const uint64_t left = limits.max_ios > ios_so_far ? limits.max_ios - ios_so_far : 0;
    const double ns_per_io = static_cast<double>(horizon) / static_cast<double>(ios_so_far);
    step = std::clamp<int64_t>(static_cast<int64_t>(std::min(static_cast<double>(left) * ns_per_io, 1e18)),
                               sim::kNsPerUs, slice_ns);
  }
  return step;
}

// Why a run that can make no more progress stopped: the requests still
// allocated (at most 16) and the jobs flow control holds back.
absl::Status StallError(const Simulation& s, sim::SimTime horizon, uint32_t running, sim::SimTime last_progress) {
  std::vector<std::string> stuck;
  for (size_t dev = 0; dev < s.queues.size(); ++dev) {
    if (s.queues[dev] == nullptr) continue;
    for (const model::Request* rq : s.queues[dev]->StuckRequests(horizon, 0)) {
      stuck.push_back(absl::StrCat(s.plan.disks[dev].name, " tag ", rq->tag, " sector ", rq->sector,
                                   " (allocated at ", rq->alloc_time_ns, " ns, hctx ",
                                   rq->mq_hctx->queue_num(), "): ", s.queues[dev]->DescribeParking(rq)));
      if (stuck.size() >= 16) break;
    }
  }
  std::string held;
  for (const auto& c : s.clones) {
    if (!c->held_by_flow() || c->done()) continue;
    absl::StrAppend(&held, held.empty() ? "; held back by flow control: '" : ", '", c->config().spec->name,
                    "' (flow_id ", c->config().spec->flow_id, ")");
  }
  if (!held.empty()) held += " (fio's flow weights count jobs that have not started yet, as in fio)";
  return absl::DeadlineExceededError(absl::StrCat(
      "simulated I/O stalled at ", horizon / 1000, " us of virtual time: ", running,
      " job(s) still waiting, no I/O completed for ", (horizon - last_progress) / 1000000,
      " ms; stuck requests: ", stuck.empty() ? "none allocated" : absl::StrJoin(stuck, "; "), held));
}

// Each clone's log files into the result. per_job_logs=0: jobs with the same
// prefix share one file, appended to in thread-number order.
void CollectLogFiles(Simulation& s, RunResult& result) {
  for (size_t i = 0; i < s.clones.size(); ++i) {
    for (stats::LogFile& f : s.clones[i]->TakeLogFiles()) {
      auto same = std::find_if(result.logs.begin(), result.logs.end(),
                               [&f](const stats::LogFile& l) { return l.name == f.name; });
      if (same != result.logs.end()) {
        same->contents += f.contents;
      } else {
        result.logs.push_back(std::move(f));
      }
    }
  }
}

absl::Status ValidateRun(const RunRequest& req) { return PlanRun(req).status(); }

absl::StatusOr<RunResult> RunFio(const RunRequest& req, const SnapshotFn& on_snapshot,
                                 const std::atomic<bool>* cancel) {
  BLKLAB_ASSIGN_OR_RETURN(RunPlan plan, PlanRun(req));
  BLKLAB_ASSIGN_OR_RETURN(std::unique_ptr<Simulation> sim_owner, BuildSimulation(req, std::move(plan)));
  Simulation& s = *sim_owner;
  RunResult result;
  result.warnings = req.jobs.warnings;

  // Run virtual time in slices: between slices the caller may cancel, and
  // progress and stalls are checked.
  sim::Machine& m = *s.machine;
  const int64_t slice_ns = req.snapshot_interval_ns > 0 ? req.snapshot_interval_ns : 100 * sim::kNsPerMs;
  sim::SimTime horizon = 0;
  uint64_t last_ios = 0;
  sim::SimTime last_progress = 0;
  std::optional<IntervalTracker> intervals;
  sim::SimTime next_interval_end = req.status_interval_ns;
  if (on_snapshot && req.status_interval_ns > 0) intervals.emplace(s);
  uint64_t ios_so_far = 0;
  while (s.done < s.clones.size()) {
    // The limits stop the run where they fall, not a slice later: the
    // virtual-time limit caps the horizon (plus the grace for I/O in
    // flight), and near the IO limit the slices shrink to the time the IO
    // rate so far predicts for the IOs left.
    const int64_t step = NextSliceNs(req.limits, slice_ns, horizon, ios_so_far);
    horizon = std::min(horizon + step, req.limits.max_virtual_ns + kVirtualLimitGraceNs);
    m.set_horizon(horizon);
    m.sim().Run(horizon);
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return absl::CancelledError("the run was cancelled");
    }
    if (!s.kernel->failure().ok()) return s.kernel->failure();
    uint64_t ios = 0;
    uint32_t running = 0;
    for (const auto& c : s.clones) {
      ios += c->ios_completed();
      if (!c->done()) ++running;
    }
    // The page cache's own I/O (readahead, writeback) is progress too.
    if (s.page_cache != nullptr) ios += s.page_cache->stats().read_bios + s.page_cache->stats().writeback_bios;
    ios_so_far = ios;
    if (on_snapshot) {
      Snapshot snap = SnapshotAt(s, horizon);
      if (intervals && (horizon >= next_interval_end || s.done >= s.clones.size())) {
        snap.has_interval = true;
        intervals->Fill(s, horizon, snap.interval);
        next_interval_end = (horizon / req.status_interval_ns + 1) * req.status_interval_ns;
      }
      snap.interim = [&req, &s, horizon]() {
        RunResult r;
        r.warnings = req.jobs.warnings;
        CollectResults(req, s, horizon, /*final=*/false, r);
        BuildKernelReport(req, s, horizon, /*final=*/false, r).IgnoreError();
        return r;
      };
      on_snapshot(snap);
    }
    if (s.done >= s.clones.size()) break;
    const bool progress = ios != last_ios;
    if (progress) {
      last_ios = ios;
      last_progress = horizon;
    }
    // Nothing but fio's own sleeping threads left to run: idle.
    const bool idle = m.sim().pending_events() == 0 ||
                      (!progress && m.sim().OnlyPendingFor(s.backend->timer_targets()));
    if (idle || (horizon - last_progress > req.limits.stall_ns && !TimeoutAhead(s, horizon))) {
      // Nothing can ever happen again (or nothing has for too long): stalled.
      return StallError(s, horizon, running, last_progress);
    }
    if (horizon >= req.limits.max_virtual_ns + kVirtualLimitGraceNs) {
      return absl::ResourceExhaustedError(
          absl::StrCat("virtual-time limit of ", VirtualLimitText(req.limits.max_virtual_ns), " reached"));
    }
    if (ios >= req.limits.max_ios) {
      return absl::ResourceExhaustedError(absl::StrCat("simulated-IO limit of ", req.limits.max_ios, " reached (",
                                                       ios, " IOs completed at ", horizon / sim::kNsPerUs,
                                                       " us of virtual time)"));
    }
  }

  // Results per clone, logs, and blklab's kernel report.
  sim::SimTime end = 0;
  for (const auto& c : s.clones) end = std::max(end, c->finished_at());
  CollectResults(req, s, end, /*final=*/true, result);
  CollectLogFiles(s, result);
  BLKLAB_RETURN_IF_ERROR(BuildKernelReport(req, s, end, /*final=*/true, result));
  BLKLAB_RETURN_IF_ERROR(DrainInFlight(s, horizon, req.limits));
  return result;
}

}  // namespace blklab
