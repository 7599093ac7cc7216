// engine/job/job_report.cc
//
// What a JobThread reports: its statistics' start and end (ramp_time, CPU
// usage, fio's error), running figures and ETA for --status-interval and
// the eta line, its log files, and its messages.
#include "engine/job/job_thread.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

namespace blklab::job {

stats::JobResult JobThread::PeekResult(sim::SimTime now) const {
  if (done_) return result_;
  if (stats_started_at_ < 0 || !collector_.started()) return stats::JobResult();
  stats::JobResult r = collector_.Peek(now);
  const int64_t window = std::max<int64_t>(now - stats_started_at_, 1);
  r.cpu.usr_pct = 100.0 * static_cast<double>(thread_->user_ns() - user_ns_at_start_) / window;
  r.cpu.sys_pct = 100.0 * static_cast<double>(thread_->sys_ns() - sys_ns_at_start_) / window;
  r.cpu.ctx = thread_->context_switches() - ctx_at_start_;
  return r;
}

int64_t JobThread::EstimateRemainingNs(sim::SimTime now) const {
  if (done_) return 0;
  const bool started = now >= config_.start_at && ios_issued_ > 0;
  if (!started) {
    if (spec_.runtime_ns <= 0) return -1;
    return std::max<int64_t>(config_.start_at - now, 0) + spec_.ramp_time_ns + spec_.runtime_ns;
  }
  int64_t remaining = -1;
  if (config_.end_at != sim::kSimTimeNever) {
    remaining = std::max<int64_t>(config_.end_at - now, 0);
  } else if (spec_.runtime_ns > 0) {  // still ramping: end_at is set at the stats start
    remaining = std::max<int64_t>(config_.ramp_end - now, 0) + spec_.runtime_ns;
  }
  if (!spec_.time_based && bytes_limit_ > 0 && bytes_issued_ > 0) {
    const long double done = static_cast<long double>(std::min(bytes_issued_, bytes_limit_)) /
                             static_cast<long double>(bytes_limit_);
    const long double elapsed = static_cast<long double>(now - config_.start_at);
    const int64_t by_size = static_cast<int64_t>(elapsed * (1.0L - done) / done);
    remaining = remaining < 0 ? by_size : std::min(remaining, by_size);
  }
  return remaining;
}

char JobThread::RunStateChar(sim::SimTime now) const {
  if (done_) return '_';
  if (now < config_.start_at || ios_issued_ == 0) return 'P';
  if (now < config_.ramp_end) return '/';
  const bool random = workload::IsRandom(spec_.rw);
  if (workload::IsMixed(spec_.rw)) return random ? 'm' : 'M';
  switch (spec_.rw) {
    case workload::RwPattern::kWrite:
    case workload::RwPattern::kRandWrite:
      return random ? 'w' : 'W';
    case workload::RwPattern::kTrim:
    case workload::RwPattern::kRandTrim:
      return random ? 'd' : 'D';
    default:
      return random ? 'r' : 'R';
  }
}

std::vector<stats::LogFile> JobThread::TakeLogFiles() {
  std::vector<stats::LogFile> files;
  if (logger_ != nullptr) files = logger_->TakeFiles();
  if (!spec_.write_iolog.empty()) files.push_back(stats::LogFile{spec_.write_iolog, std::move(iolog_.text)});
  return files;
}

void JobThread::MaybeStartStats() {
  if (stats_started_at_ >= 0 || cpu().now() < config_.ramp_end) return;
  stats_started_at_ = cpu().now();
  collector_.Start(stats_started_at_);
  // runtime= counts from the end of ramp_time, i.e. from here.
  if (spec_.runtime_ns > 0) config_.end_at = stats_started_at_ + spec_.runtime_ns;
  user_ns_at_start_ = thread_->user_ns();
  sys_ns_at_start_ = thread_->sys_ns();
  ctx_at_start_ = thread_->context_switches();
  for (const model::VmArea& vma : vmas_) {
    faults_at_start_ += vma.faults;
    major_faults_at_start_ += vma.major_faults;
  }
}

void JobThread::FinishStats() {
  finished_at_ = cpu().now();
  if (config_.flow != nullptr) {
    // flow_exit_job (at once; fio does it when its main thread reaps the
    // finished thread, within its next poll).
    config_.flow->counter -= rate_.flow_count;
    config_.flow->total_weight -= spec_.flow;
  }
  MaybeStartStats();
  const int64_t window = std::max<int64_t>(finished_at_ - stats_started_at_, 1);
  stats::CpuUsage usage;
  usage.usr_pct = 100.0 * static_cast<double>(thread_->user_ns() - user_ns_at_start_) / window;
  usage.sys_pct = 100.0 * static_cast<double>(thread_->sys_ns() - sys_ns_at_start_) / window;
  usage.ctx = thread_->context_switches() - ctx_at_start_;
  // getrusage's ru_majflt / ru_minflt: the faults of the mmap engine's
  // mappings (fio's own allocations' faults are not modelled).
  uint64_t faults = 0, major = 0;
  for (const model::VmArea& vma : vmas_) {
    faults += vma.faults;
    major += vma.major_faults;
  }
  usage.majf = major - major_faults_at_start_;
  usage.minf = (faults - faults_at_start_) - usage.majf;
  collector_.SetCpuUsage(usage);
  result_ = collector_.Finish(finished_at_);
  if (error_ != 0 && !verror_.empty()) {
    result_.error = error_;
    result_.verror = verror_;
  } else if (error_ != 0) {
    // td_verror at the completion that failed its check (io_u.c).
    result_.error = error_;
    result_.verror = absl::StrCat(workload::IsSynchronous(spec_.ioengine)
                                      ? "file:io_u.c:2152, func=io_u_sync_complete"
                                      : "file:io_u.c:2190, func=io_u_queued_complete",
                                  ", error=Invalid or incomplete multibyte or wide character");
  }
  if (messages_dropped_ > 0) {
    messages_.push_back(absl::StrCat("blklab: ", messages_dropped_, " more verify messages of job '", spec_.name,
                                     "' not shown"));
  }
  done_ = true;
  if (on_done_) on_done_(this);
}

void JobThread::Message(std::string line) {
  if (messages_.size() < kMaxMessages) {
    messages_.push_back(std::move(line));
  } else {
    ++messages_dropped_;
  }
}

}  // namespace blklab::job
