#include "server/job_manager.h"

#include <algorithm>
#include <array>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "server/log.h"
#include "server/proto_time.h"

namespace blklab::server {
namespace {

// The final snapshot of a stream: the whole job (FULL view).
v1::Snapshot FinalSnapshot(const v1::Job& job, uint64_t sequence) {
  v1::Snapshot s;
  s.set_job(job.name());
  s.set_sequence(sequence);
  s.set_state(job.state());
  if (job.has_result()) *s.mutable_virtual_time() = job.result().virtual_time();
  *s.mutable_wall_time() = job.wall_time();
  s.set_progress_fraction(job.state() == v1::Job::SUCCEEDED ? 1.0 : job.progress_fraction());
  *s.mutable_final_job() = job;
  return s;
}

// A RUNNING snapshot: progress and the interval figures of one engine
// snapshot that closes a status interval.
v1::Snapshot IntervalSnapshot(const std::string& name, uint64_t sequence, const Snapshot& snap,
                              int64_t wall_ns) {
  v1::Snapshot s;
  s.set_job(name);
  s.set_sequence(sequence);
  s.set_state(v1::Job::RUNNING);
  SetDuration(snap.virtual_ns, s.mutable_virtual_time());
  SetDuration(wall_ns, s.mutable_wall_time());
  s.set_progress_fraction(snap.virtual_total_ns > 0
                              ? std::min(1.0, static_cast<double>(snap.virtual_ns) /
                                                  static_cast<double>(snap.virtual_total_ns))
                              : 0.0);
  FillSnapshotInterval(snap.interval, &s);
  return s;
}

}  // namespace

JobManager::JobManager(Store* store, const JobManagerOptions& options) : store_(store), options_(options) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  absl::StatusOr<std::vector<v1::Job>> unfinished = store_->UnfinishedJobs();
  if (!unfinished.ok()) return unfinished.status();
  {
    absl::MutexLock lock(&mu_);
    for (v1::Job& job : *unfinished) {
      const bool was_running = job.state() == v1::Job::RUNNING;
      job.set_state(v1::Job::QUEUED);
      job.clear_start_time();
      job.clear_progress_virtual_time();
      job.clear_progress_fraction();
      if (was_running) {
        if (absl::Status s = store_->UpdateJob(job); !s.ok()) return s;
      }
      auto a = std::make_shared<Active>();
      a->job = job;
      const std::string id = job.name().substr(5);
      active_[id] = a;
      queue_.push_back(a);
      Log("info", "job_requeued", {{"job", job.name()}, {"was", was_running ? "RUNNING" : "QUEUED"}});
    }
  }
  int n = options_.workers;
  if (n <= 0) n = std::max(1u, std::thread::hardware_concurrency());
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  return absl::OkStatus();
}

absl::Status JobManager::Submit(const v1::Job& job) {
  auto a = std::make_shared<Active>();
  a->job = job;
  const std::string id = job.name().substr(5);
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  if (queue_.size() >= options_.max_queued_jobs) {
    return absl::ResourceExhaustedError(absl::StrCat("the job queue is full (max_queued_jobs = ",
                                                     options_.max_queued_jobs, ")"));
  }
  // Stored before it is queued: a crash after this point re-runs it.
  if (absl::Status s = store_->InsertJob(job); !s.ok()) return s;
  active_[id] = a;
  queue_.push_back(a);
  return absl::OkStatus();
}

bool JobManager::IsActive(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return active_.count(id) > 0;
}

void JobManager::FillProgress(v1::Job* job) const {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(job->name().substr(5));
  if (it == active_.end()) return;
  *job->mutable_progress_virtual_time() = it->second->job.progress_virtual_time();
  job->set_progress_fraction(it->second->job.progress_fraction());
}

size_t JobManager::queued() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

size_t JobManager::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

size_t JobManager::workers() const { return workers_.size(); }

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& id) {
  std::shared_ptr<Active> a;
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(id);
    if (it != active_.end()) {
      a = it->second;
      if (a->running) {
        a->reason = kCancel;
        a->stop = true;
        v1::Job j = a->job;
        return j;
      }
      // Queued: take it out of the queue; finish below without the lock.
      queue_.erase(std::remove(queue_.begin(), queue_.end(), a), queue_.end());
    }
  }
  if (a == nullptr) {
    absl::StatusOr<v1::Job> job = store_->GetJob(id, /*full=*/false);
    if (!job.ok()) return job.status();
    if (job->state() == v1::Job::CANCELLED) return job;
    return absl::FailedPreconditionError(
        absl::StrCat(job->name(), " is ", v1::Job::State_Name(job->state()), "; only QUEUED or RUNNING jobs can be cancelled"));
  }
  v1::Job job = a->job;
  job.set_state(v1::Job::CANCELLED);
  job.mutable_error()->set_code(static_cast<int>(absl::StatusCode::kCancelled));
  job.mutable_error()->set_message("cancelled before it started");
  SetTimestamp(absl::Now(), job.mutable_end_time());
  Finish(a, job);
  return job;
}

absl::Status JobManager::Watch(const std::string& id, std::shared_ptr<WatchSink> sink) {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    auto it = active_.find(id);
    if (it != active_.end()) {
      it->second->sinks.push_back(std::move(sink));
      return absl::OkStatus();
    }
  }
  // Not active: final (or unknown). The store was written before the job
  // left active_, so this read sees the final state.
  absl::StatusOr<v1::Job> job = store_->GetJob(id, /*full=*/true);
  if (!job.ok()) return job.status();
  sink->Push(FinalSnapshot(*job, 0));
  return absl::OkStatus();
}

void JobManager::Unwatch(const std::string& id, const WatchSink* sink) {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(id);
  if (it == active_.end()) return;
  auto& sinks = it->second->sinks;
  sinks.erase(std::remove_if(sinks.begin(), sinks.end(),
                             [sink](const std::shared_ptr<WatchSink>& s) { return s.get() == sink; }),
              sinks.end());
}

void JobManager::Shutdown() {
  std::vector<std::shared_ptr<WatchSink>> sinks;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    for (auto& [id, a] : active_) {
      a->reason = kShutdown;
      a->stop = true;
      for (auto& s : a->sinks) sinks.push_back(s);
      a->sinks.clear();
    }
  }
  for (auto& s : sinks) s->Close(absl::UnavailableError("the server is shutting down; watch again after it restarts"));
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void JobManager::WorkerLoop() {
  for (;;) {
    std::shared_ptr<Active> a;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](JobManager* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->mu_) { return m->shutdown_ || !m->queue_.empty(); },
          this));
      if (shutdown_) return;
      a = queue_.front();
      queue_.pop_front();
      a->running = true;
      ++running_;
      a->job.set_state(v1::Job::RUNNING);
      SetTimestamp(absl::Now(), a->job.mutable_start_time());
    }
    RunOne(a);
    absl::MutexLock lock(&mu_);
    --running_;
  }
}

void JobManager::RunOne(const std::shared_ptr<Active>& a) {
  v1::Job job;
  {
    absl::MutexLock lock(&mu_);
    job = a->job;
  }
  const absl::Time start = absl::Now();
  if (absl::Status s = store_->UpdateJob(job); !s.ok()) {
    Log("error", "store_write_failed", {{"job", job.name()}, {"error", std::string(s.message())}});
  }
  Log("info", "job_started", {{"job", job.name()}});

  auto fail = [&](const absl::Status& status) {
    job.set_state(status.code() == absl::StatusCode::kCancelled ? v1::Job::CANCELLED : v1::Job::FAILED);
    job.mutable_error()->set_code(static_cast<int>(status.code()));
    job.mutable_error()->set_message(std::string(status.message()));
  };

  absl::StatusOr<host::HostSpec> host = HostSpecFromProto(job.resolved_host(), options_.limits.host);
  absl::StatusOr<PreparedJob> prepared =
      host.ok() ? PrepareJob(job, *host, options_.limits) : absl::StatusOr<PreparedJob>(host.status());
  absl::StatusOr<RunResult> run = prepared.ok() ? absl::StatusOr<RunResult>() : prepared.status();
  if (prepared.ok()) {
    if (options_.observer != nullptr) {
      const auto& specs = prepared->request.jobs.jobs;
      options_.observer->JobStarted(job, specs.empty() ? std::string() : specs.front().name);
    }
    const bool realtime = job.pace() == v1::Job::REALTIME;
    const int64_t max_wall_ns = prepared->limits.max_wall_ns;
    SnapshotFn on_snapshot = [&](const Snapshot& snap) {
      const int64_t wall_ns = absl::ToInt64Nanoseconds(absl::Now() - start);
      std::vector<std::shared_ptr<WatchSink>> sinks;
      v1::Snapshot proto;
      {
        absl::MutexLock lock(&mu_);
        SetDuration(snap.virtual_ns, a->job.mutable_progress_virtual_time());
        a->job.set_progress_fraction(snap.virtual_total_ns > 0
                                         ? std::min(1.0, static_cast<double>(snap.virtual_ns) /
                                                             static_cast<double>(snap.virtual_total_ns))
                                         : 0.0);
        if (snap.has_interval) {
          const uint64_t seq = a->next_sequence++;
          if (!a->sinks.empty()) sinks = a->sinks;
          if (!sinks.empty()) proto = IntervalSnapshot(job.name(), seq, snap, wall_ns);
        }
      }
      for (auto& s : sinks) s->Push(proto);
      if (options_.observer != nullptr) options_.observer->JobProgress(job.name(), snap, wall_ns);
      if (wall_ns > max_wall_ns) {
        int expected = kNone;
        a->reason.compare_exchange_strong(expected, kWallLimit);
        a->stop = true;
      }
      if (realtime) {
        // Hold virtual time to wall time; wake promptly for a stop.
        const absl::Time target = start + absl::Nanoseconds(snap.virtual_ns);
        while (!a->stop.load()) {
          const absl::Duration left = target - absl::Now();
          if (left <= absl::ZeroDuration()) break;
          absl::SleepFor(std::min(left, absl::Milliseconds(10)));
        }
      }
    };
    run = RunFio(prepared->request, on_snapshot, &a->stop);
  }

  const int reason = a->reason.load();
  if (reason == kShutdown) {
    // Leave the stored state RUNNING: the next start re-runs the job.
    Log("info", "job_interrupted", {{"job", job.name()}, {"reason", "shutdown"}});
    return;
  }
  const absl::Time end = absl::Now();
  SetTimestamp(end, job.mutable_end_time());
  SetDuration(absl::ToInt64Nanoseconds(end - start), job.mutable_wall_time());
  if (run.ok()) {
    job.set_state(v1::Job::SUCCEEDED);
    *job.mutable_result() = BuildJobResult(prepared->request, *run, WallClockNow());
    *job.mutable_progress_virtual_time() = job.result().virtual_time();
    job.set_progress_fraction(1.0);
  } else if (reason == kCancel) {
    fail(absl::CancelledError("cancelled by CancelJob"));
  } else if (reason == kWallLimit) {
    fail(absl::ResourceExhaustedError(absl::StrCat("wall-time limit (max_wall_time = ",
                                                   prepared->limits.max_wall_ns / 1000000000, " s) reached")));
  } else {
    fail(run.status());
  }
  {
    absl::MutexLock lock(&mu_);
    *job.mutable_progress_virtual_time() = a->job.progress_virtual_time();
    if (job.state() != v1::Job::SUCCEEDED) job.set_progress_fraction(a->job.progress_fraction());
  }
  if (job.state() == v1::Job::SUCCEEDED) {
    *job.mutable_progress_virtual_time() = job.result().virtual_time();
    job.set_progress_fraction(1.0);
  }
  Log("info", "job_done",
      {{"job", job.name()},
       {"state", v1::Job::State_Name(job.state())},
       {"wall_ms", absl::StrCat(absl::ToInt64Milliseconds(end - start))},
       {"error", job.error().message()}});
  Finish(a, std::move(job));
}

void JobManager::Finish(const std::shared_ptr<Active>& a, v1::Job job) {
  // The store first: nothing is reported done before it is durable.
  if (absl::Status s = store_->UpdateJob(job); !s.ok()) {
    Log("error", "store_write_failed", {{"job", job.name()}, {"error", std::string(s.message())}});
  }
  std::vector<std::shared_ptr<WatchSink>> sinks;
  uint64_t seq;
  {
    absl::MutexLock lock(&mu_);
    active_.erase(job.name().substr(5));
    sinks.swap(a->sinks);
    seq = a->next_sequence++;
  }
  if (options_.observer != nullptr) options_.observer->JobEnded(job);
  const v1::Snapshot final_snapshot = FinalSnapshot(job, seq);
  for (auto& s : sinks) s->Push(final_snapshot);
}

}  // namespace blklab::server
