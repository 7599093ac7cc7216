#include "server/job_queue.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/convert.h"
#include "server/log.h"

namespace blklab::server {
namespace {

void WriteOrLog(Store* store, const JobRecord& record) {
  if (absl::Status s = store->UpdateJob(JobToProto(record)); !s.ok()) {
    Log("error", "store_write_failed", {{"job", record.name()}, {"error", std::string(s.message())}});
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// ActiveJob

JobRecord ActiveJob::record() const {
  absl::MutexLock lock(&mu_);
  return record_;
}

void ActiveJob::Stop(StopReason reason) {
  if (reason == StopReason::kWallLimit) {
    StopReason expected = StopReason::kNone;
    reason_.compare_exchange_strong(expected, reason);
  } else {
    reason_.store(reason);
  }
  stop_.store(true);
  // A shutdown keeps nothing of the run (it runs again at the next start):
  // the engine stops after its current slice.
  if (reason == StopReason::kShutdown) engine_stop_.store(true);
}

std::vector<std::shared_ptr<WatchSink>> ActiveJob::RecordProgress(const JobProgress& progress, bool interval,
                                                                  uint64_t* sequence) {
  absl::MutexLock lock(&mu_);
  record_.progress = progress;
  if (!interval) return {};
  *sequence = next_sequence_++;
  return sinks_;
}

// ---------------------------------------------------------------------------
// JobQueue

absl::Status JobQueue::Restore() {
  absl::StatusOr<std::vector<v1::Job>> unfinished = store_->UnfinishedJobs();
  if (!unfinished.ok()) return unfinished.status();
  absl::MutexLock lock(&mu_);
  for (v1::Job& stored : *unfinished) {
    absl::StatusOr<JobRecord> record = JobFromProto(std::move(stored));
    if (!record.ok()) return record.status();
    const bool was_running = record->state == JobState::kRunning;
    if (record->definition->has_comparison_cell()) {
      // Comparisons live in memory: the one this cell served is gone (a
      // fleet server that sent it has taken it elsewhere).
      record->state = JobState::kCancelled;
      record->end_time = absl::Now();
      record->progress.reset();
      record->error = absl::CancelledError("the server restarted: its comparison, kept in memory, is gone");
      if (absl::Status s = store_->UpdateJob(JobToProto(*record)); !s.ok()) return s;
      Log("info", "job_cancelled", {{"job", record->name()}, {"reason", "comparison cell at restart"}});
      continue;
    }
    record->state = JobState::kQueued;
    record->start_time.reset();
    record->progress.reset();
    if (was_running) {
      if (absl::Status s = store_->UpdateJob(JobToProto(*record)); !s.ok()) return s;
    }
    Log("info", "job_requeued", {{"job", record->name()}, {"was", was_running ? "RUNNING" : "QUEUED"}});
    auto job = std::make_shared<ActiveJob>(*std::move(record));
    active_[job->id()] = job;
    fifo_.push_back(std::move(job));
  }
  return absl::OkStatus();
}

absl::Status JobQueue::Submit(JobRecord record) {
  const v1::Job stored = JobToProto(record);
  auto job = std::make_shared<ActiveJob>(std::move(record));
  absl::MutexLock lock(&mu_);
  if (shutdown_) return absl::UnavailableError("the server is shutting down");
  if (fifo_.size() >= options_.max_queued_jobs) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the job queue is full (max_queued_jobs = ", options_.max_queued_jobs, ")"));
  }
  // Stored before it is queued: a crash after this point re-runs it.
  if (absl::Status s = store_->InsertJob(stored); !s.ok()) return s;
  active_[job->id()] = job;
  fifo_.push_back(std::move(job));
  return absl::OkStatus();
}

absl::StatusOr<JobRecord> JobQueue::Cancel(const std::string& id) {
  std::shared_ptr<ActiveJob> job;
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(id);
    if (it != active_.end()) {
      job = it->second;
      absl::MutexLock job_lock(&job->mu_);
      if (job->record_.state == JobState::kRunning) {
        // The record as it is now: the run stops within one slice.
        job->Stop(StopReason::kCancel);
        return job->record_;
      }
      // Queued: take it out of the FIFO; finish below without the lock.
      fifo_.erase(std::remove(fifo_.begin(), fifo_.end(), job), fifo_.end());
    }
  }
  if (job == nullptr) {
    absl::StatusOr<v1::Job> stored = store_->GetJob(id, /*full=*/false);
    if (!stored.ok()) return stored.status();
    absl::StatusOr<JobRecord> record = JobFromProto(*std::move(stored));
    if (!record.ok() || record->state == JobState::kCancelled) return record;
    return absl::FailedPreconditionError(absl::StrCat(record->name(), " is ", JobStateName(record->state),
                                                      "; only QUEUED or RUNNING jobs can be cancelled"));
  }
  JobRecord record = job->record();
  record.state = JobState::kCancelled;
  record.error = absl::CancelledError("cancelled before it started");
  record.end_time = absl::Now();
  Finish(*job, record);
  return record;
}

bool JobQueue::IsActive(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return active_.count(id) > 0;
}

std::optional<JobProgress> JobQueue::Progress(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(id);
  if (it == active_.end()) return std::nullopt;
  absl::MutexLock job_lock(&it->second->mu_);
  return it->second->record_.progress.value_or(JobProgress{});
}

absl::Status JobQueue::Watch(const std::string& id, std::shared_ptr<WatchSink> sink) {
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return absl::UnavailableError("the server is shutting down");
    auto it = active_.find(id);
    if (it != active_.end()) {
      absl::MutexLock job_lock(&it->second->mu_);
      it->second->sinks_.push_back(std::move(sink));
      return absl::OkStatus();
    }
  }
  // Not active: final (or unknown). The store was written before the job
  // left the active set, so this read sees the final state.
  absl::StatusOr<v1::Job> job = store_->GetJob(id, /*full=*/true);
  if (!job.ok()) return job.status();
  sink->Push(FinalSnapshot(*job, 0));
  return absl::OkStatus();
}

void JobQueue::Unwatch(const std::string& id, const WatchSink* sink) {
  absl::MutexLock lock(&mu_);
  auto it = active_.find(id);
  if (it == active_.end()) return;
  absl::MutexLock job_lock(&it->second->mu_);
  auto& sinks = it->second->sinks_;
  sinks.erase(std::remove_if(sinks.begin(), sinks.end(),
                             [sink](const std::shared_ptr<WatchSink>& s) { return s.get() == sink; }),
              sinks.end());
}

std::shared_ptr<ActiveJob> JobQueue::Take() {
  std::shared_ptr<ActiveJob> job;
  JobRecord running;
  {
    absl::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(
        +[](JobQueue* q) ABSL_EXCLUSIVE_LOCKS_REQUIRED(q->mu_) { return q->shutdown_ || !q->fifo_.empty(); },
        this));
    if (shutdown_) return nullptr;
    job = fifo_.front();
    fifo_.pop_front();
    ++running_;
    absl::MutexLock job_lock(&job->mu_);
    job->record_.state = JobState::kRunning;
    job->record_.start_time = absl::Now();
    running = job->record_;
  }
  WriteOrLog(store_, running);
  return job;
}

void JobQueue::Release(const ActiveJob&) {
  absl::MutexLock lock(&mu_);
  --running_;
}

void JobQueue::Finish(ActiveJob& job, JobRecord final_record) {
  // The store first: nothing is reported done before it is durable.
  const v1::Job stored = JobToProto(final_record);
  if (absl::Status s = store_->UpdateJob(stored); !s.ok()) {
    Log("error", "store_write_failed", {{"job", final_record.name()}, {"error", std::string(s.message())}});
  }
  std::vector<std::shared_ptr<WatchSink>> sinks;
  uint64_t sequence;
  {
    absl::MutexLock lock(&mu_);
    active_.erase(job.id());
    absl::MutexLock job_lock(&job.mu_);
    job.record_ = final_record;
    sinks.swap(job.sinks_);
    sequence = job.next_sequence_++;
  }
  if (options_.observer != nullptr) options_.observer->JobEnded(final_record);
  const v1::Snapshot final_snapshot = FinalSnapshot(stored, sequence);
  for (auto& sink : sinks) sink->Push(final_snapshot);
}

void JobQueue::Shutdown() {
  std::vector<std::shared_ptr<WatchSink>> sinks;
  {
    absl::MutexLock lock(&mu_);
    if (shutdown_) return;
    shutdown_ = true;
    for (auto& [id, job] : active_) {
      job->Stop(StopReason::kShutdown);
      absl::MutexLock job_lock(&job->mu_);
      for (auto& s : job->sinks_) sinks.push_back(s);
      job->sinks_.clear();
    }
  }
  for (auto& s : sinks) s->Close(absl::UnavailableError("the server is shutting down; watch again after it restarts"));
}

size_t JobQueue::queued() const {
  absl::MutexLock lock(&mu_);
  return fifo_.size();
}

size_t JobQueue::running() const {
  absl::MutexLock lock(&mu_);
  return running_;
}

}  // namespace blklab::server
