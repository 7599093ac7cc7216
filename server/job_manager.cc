#include "server/job_manager.h"

#include <algorithm>
#include <memory>

namespace blklab::server {

JobManager::JobManager(Store* store, const JobManagerOptions& options)
    : worker_count_(options.workers > 0 ? options.workers
                                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()))),
      queue_(store, JobQueueOptions{options.max_queued_jobs, options.observer}),
      runner_(&queue_, options.limits, options.observer) {}

JobManager::~JobManager() { Shutdown(); }

absl::Status JobManager::Start() {
  if (absl::Status s = queue_.Restore(); !s.ok()) return s;
  for (int i = 0; i < worker_count_; ++i) workers_.emplace_back([this] { WorkerLoop(); });
  return absl::OkStatus();
}

void JobManager::Shutdown() {
  queue_.Shutdown();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void JobManager::WorkerLoop() {
  while (std::shared_ptr<ActiveJob> job = queue_.Take()) {
    runner_.Run(*job);
    queue_.Release(*job);
  }
}

}  // namespace blklab::server
