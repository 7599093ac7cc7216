#include "engine/job/job_thread.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace blklab::job {

using workload::IoEngine;

namespace {
stats::Dir ToStatsDir(workload::Direction d) {
  switch (d) {
    case workload::Direction::kRead:
      return stats::Dir::kRead;
    case workload::Direction::kWrite:
      return stats::Dir::kWrite;
    case workload::Direction::kTrim:
      return stats::Dir::kTrim;
  }
  return stats::Dir::kRead;
}
// The JobLogger configuration for a spec's write_*_log options; nullopt
// when it asks for no log.
std::optional<stats::JobLogConfig> LogConfigFor(const workload::JobSpec& spec,
                                                uint32_t thread_number) {
  auto prefix = [&spec](const workload::LogSpec& l) {
    if (!l.enabled) return std::string();
    return l.prefix.empty() ? spec.name : l.prefix;  // bare write_*_log: the job name
  };
  stats::JobLogConfig c;
  c.bw_prefix = prefix(spec.write_bw_log);
  c.iops_prefix = prefix(spec.write_iops_log);
  c.lat_prefix = prefix(spec.write_lat_log);
  c.hist_prefix = prefix(spec.write_hist_log);
  c.avg_msec = static_cast<int64_t>(spec.log_avg_msec);
  c.hist_msec = static_cast<int64_t>(spec.log_hist_msec);
  c.log_offset = spec.log_offset;
  c.max_value = spec.log_max_value;
  c.hist_coarseness = static_cast<int>(spec.log_hist_coarseness);
  c.log_prio = spec.log_prio;
  c.ioprio = spec.prioclass << 13 | spec.prio;
  c.per_job_logs = spec.per_job_logs;
  c.thread_number = static_cast<int>(thread_number);
  const bool hist = !c.hist_prefix.empty() && c.hist_msec > 0;
  if (c.bw_prefix.empty() && c.iops_prefix.empty() && c.lat_prefix.empty() && !hist) {
    return std::nullopt;
  }
  return c;
}

model::ReqOp ToOp(workload::Direction d) {
  switch (d) {
    case workload::Direction::kRead:
      return model::ReqOp::kRead;
    case workload::Direction::kWrite:
      return model::ReqOp::kWrite;
    case workload::Direction::kTrim:
      return model::ReqOp::kDiscard;
  }
  return model::ReqOp::kRead;
}
}  // namespace

FioUserCosts FioUserCostsFor(const host::CostTable& c, const workload::JobSpec& spec) {
  // fio's loop (half at issue, half at completion) plus what its
  // measurements cost (io_u.c): the clock reads at issue and completion
  // unless gtod_reduce(td) (clat, slat and bw all off), the reads only
  // gtod_reduce's time cache removes, and one stat sample per enabled
  // latency (slat only for engines that queue).
  const bool no_reduce = !(spec.disable_clat && spec.disable_slat && spec.disable_bw) && !spec.gtod_reduce;
  const int64_t clock_ns = (no_reduce ? c.fio_gettime_per_io : 0) + (spec.gtod_reduce ? 0 : c.fio_time_cache_per_io);
  FioUserCosts u;
  u.issue_ns = c.fio_user_per_io / 2 + clock_ns / 2 +
               (!spec.disable_slat && !workload::IsSynchronous(spec.ioengine) ? c.fio_slat_sample : 0);
  u.complete_ns = c.fio_user_per_io - c.fio_user_per_io / 2 + (clock_ns - clock_ns / 2) +
                  (spec.disable_lat ? 0 : c.fio_lat_sample) + (spec.disable_clat ? 0 : c.fio_clat_sample);
  return u;
}

JobThread::JobThread(model::Kernel& kernel, const JobThreadConfig& config, workload::IoGenerator gen)
    : kernel_(kernel),
      config_(config),
      spec_(*config.spec),
      gen_(std::move(gen)),
      cpu_(kernel.machine().cpu(config.cpu)),
      thread_(std::make_unique<sim::Thread>(kernel.machine(), "fio/" + config.spec->name, config.cpu)),
      collector_(stats::CollectorConfig{
          .bw_avg_ns = static_cast<int64_t>(config.spec->bwavgtime_ms) * sim::kNsPerMs,
          .iops_avg_ns = static_cast<int64_t>(config.spec->iopsavgtime_ms) * sim::kNsPerMs,
          .record_slat = !config.spec->disable_slat,
          .record_clat = !config.spec->disable_clat,
          .record_lat = !config.spec->disable_lat}),
      ctx_{kernel, cpu_, *thread_, config.queue, *config.spec, {}, {}} {
  const uint32_t depth =
      workload::IsSynchronous(spec_.ioengine) ? 1 : std::max<uint32_t>(spec_.iodepth, 1);
  io_us_.resize(depth);
  queued_.reserve(depth);
  ctx_.completed.Reset(depth);
  submitting_.reserve(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    io_us_[i].bio.owner = this;
    io_us_[i].bio.cookie = i;
    // ioprio_set(IOPRIO_WHO_PROCESS): every bio of the job carries its class
    // and level. fio sets them when prio or prioclass is given, the class
    // defaulting to best effort (ioprio_value); else the task keeps
    // IOPRIO_CLASS_NONE, level task_nice_ioprio (4 at nice 0). Each fio
    // thread has its own io_context (no CLONE_IO) and the job's cgroup.
    const bool ioprio_set = spec_.prio != 0 || spec_.prioclass != 0;
    io_us_[i].bio.ioprio_class = static_cast<uint8_t>(ioprio_set && spec_.prioclass == 0 ? 2 : spec_.prioclass);
    io_us_[i].bio.ioprio_level = static_cast<uint8_t>(ioprio_set ? spec_.prio : 4);
    io_us_[i].bio.ioc = config_.thread_number;
    io_us_[i].bio.blkcg = config_.blkcg;
    io_us_[i].queue = config.queue;
    free_.push_back(&io_us_[depth - 1 - i]);
  }
  batch_submit_ = spec_.iodepth_batch_submit == 0 ? depth : std::min(spec_.iodepth_batch_submit, depth);
  batch_complete_min_ = spec_.iodepth_batch_complete_min;
  batch_complete_max_ = spec_.iodepth_batch_complete_max == 0
                            ? std::max<uint32_t>(batch_complete_min_, 1)
                            : spec_.iodepth_batch_complete_max;
  const uint64_t loops = std::max<uint64_t>(spec_.loops, 1);
  bytes_limit_ = config.plan.io_limit_bytes * loops;
  {
    using workload::Direction;
    const bool reads = workload::DirectionActive(spec_.rw, Direction::kRead);
    const bool writes = workload::DirectionActive(spec_.rw, Direction::kWrite);
    const bool trims = workload::DirectionActive(spec_.rw, Direction::kTrim);
    counts_toward_limit_[static_cast<int>(Direction::kRead)] = reads;
    counts_toward_limit_[static_cast<int>(Direction::kWrite)] = writes;
    counts_toward_limit_[static_cast<int>(Direction::kTrim)] = trims && !reads && !writes;
  }
  rate_rng_ = sim::RngStream(spec_.randseed, sim::RngStreamId::kRate, config.thread_number);

  auto& r = kernel.machine().functions();
  fn_get_io_u_ = r.Intern("fio:get_io_u");
  fn_io_completed_ = r.Intern("fio:io_completed");
  const FioUserCosts user = FioUserCostsFor(kernel_.costs(), spec_);
  user_issue_ns_ = user.issue_ns;
  user_complete_ns_ = user.complete_ns;
  fn_usec_spin_ = r.Intern("fio:usec_spin");
  fn_flow_ = r.Intern("fio:flow_threshold_exceeded");
  engine_ = MakeIoEngine(ctx_);
  for (int d = 0; d < 3; ++d) has_rate_ |= spec_.rate_iops[d] > 0 || spec_.rate_bps[d] > 0;
  if (std::optional<stats::JobLogConfig> lc = LogConfigFor(spec_, config.thread_number)) {
    logger_ = std::make_unique<stats::JobLogger>(*std::move(lc));
    collector_.set_logger(logger_.get());
  }
}

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
  if (logger_ == nullptr) return {};
  return logger_->TakeFiles();
}

void JobThread::Start() { thread_->Start(Main(), config_.start_at); }

void JobThread::StartAt(sim::SimTime at) {
  const sim::SimTime shift = at - config_.start_at;
  config_.start_at = at;
  config_.ramp_end += shift;
  if (config_.end_at != sim::kSimTimeNever) config_.end_at += shift;
  thread_->Start(Main(), at);
}

void JobThread::MaybeStartStats() {
  if (stats_started_at_ >= 0 || cpu_.now() < config_.ramp_end) return;
  stats_started_at_ = cpu_.now();
  collector_.Start(stats_started_at_);
  // runtime= counts from the end of ramp_time, i.e. from here.
  if (spec_.runtime_ns > 0) config_.end_at = stats_started_at_ + spec_.runtime_ns;
  user_ns_at_start_ = thread_->user_ns();
  sys_ns_at_start_ = thread_->sys_ns();
  ctx_at_start_ = thread_->context_switches();
}

bool JobThread::Stopping() {
  if (stopping_) return true;
  if (cpu_.now() >= config_.end_at) stopping_ = true;
  if (!spec_.time_based) {
    if (spec_.number_ios > 0 && ios_issued_ >= spec_.number_ios) stopping_ = true;
    if (bytes_limit_ > 0 && bytes_issued_ >= bytes_limit_) stopping_ = true;
  }
  return stopping_;
}

bool JobThread::PrepareIo(IoU* u) {
  // get_io_u + fill_io_u: fio's own per-I/O user-space work (half here, half
  // at completion).
  const workload::GeneratedIo io = has_rate_ ? gen_.Next([this](workload::Direction d) { return RateDirection(d); })
                                             : gen_.Next();
  cpu_.Charge(fn_get_io_u_, user_issue_ns_);
  if (io.new_pass && config_.plan.pass_end_ends_loop && ++loops_done_ >= std::max<uint64_t>(spec_.loops, 1)) {
    // The last loop's sequential pass reached the region's end (with holes,
    // rw=read:512k, before io_size bytes): no more I/O, as fio.
    stopping_ = true;
    return false;
  }
  u->dir = ToStatsDir(io.direction);
  u->bio.op = ToOp(io.direction);
  u->bio.sector = io.offset >> model::kSectorShift;
  u->bio.bytes = static_cast<uint32_t>(io.length);
  u->bio.bi_next = nullptr;
  u->bio.polled = engine_->polled();
  u->bio.nowait = u->bio.polled;
  u->start_time = cpu_.now();
  u->state = IoU::State::kQueued;
  u->error = false;
  ++ctx_.in_flight;
  ++ios_issued_;
  // io_bytes_exceeded: a job that reads and writes counts both, else only
  // its writes (trimwrite's trims do not count), reads, or trims.
  if (counts_toward_limit_[static_cast<int>(io.direction)]) bytes_issued_ += io.length;
  if (collector_.started()) collector_.RecordIssue(u->dir, ctx_.in_flight);
  return true;
}

sim::Task JobThread::Main() {
  co_await cpu_.Sync();
  MaybeStartStats();
  if (workload::IsSynchronous(spec_.ioengine)) {
    co_await SyncLoop();
  } else {
    co_await AsyncLoop();
  }
  co_await cpu_.Sync();
  FinishStats();
}

void JobThread::FinishStats() {
  finished_at_ = cpu_.now();
  if (config_.flow != nullptr) {
    // flow_exit_job (at once; fio does it when its main thread reaps the
    // finished thread, within its next poll).
    config_.flow->counter -= flow_count_;
    config_.flow->total_weight -= spec_.flow;
  }
  MaybeStartStats();
  const int64_t window = std::max<int64_t>(finished_at_ - stats_started_at_, 1);
  stats::CpuUsage usage;
  usage.usr_pct = 100.0 * static_cast<double>(thread_->user_ns() - user_ns_at_start_) / window;
  usage.sys_pct = 100.0 * static_cast<double>(thread_->sys_ns() - sys_ns_at_start_) / window;
  usage.ctx = thread_->context_switches() - ctx_at_start_;
  collector_.SetCpuUsage(usage);
  result_ = collector_.Finish(finished_at_);
  done_ = true;
  if (on_done_) on_done_(this);
}

void JobThread::OnEvent(uint32_t, uint64_t gen) {
  if (gen == wake_gen_ && thread_->sleeping()) thread_->Wake(kernel_.machine().sim().Now());
}

sim::Task JobThread::SleepUntil(sim::SimTime t) {
  co_await cpu_.Sync();
  if (t <= cpu_.now()) co_return;
  ++wake_gen_;
  kernel_.machine().sim().Schedule(t, this, 0, wake_gen_);
  while (cpu_.now() < t) {
    co_await cpu_.Sleep();
    co_await cpu_.Sync();
  }
}

sim::Task JobThread::Quiesce() {
  if (!queued_.empty()) co_await Commit();
  if (workload::IsSynchronous(spec_.ioengine)) co_return;
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

sim::Task JobThread::FlowHold() {
  // flow_threshold_exceeded at the head of do_io's loop: while this job's
  // share of its flow's count is above its share of the flow's weight, it
  // is held back. Without flow_sleep fio `continue`s its loop: a busy loop
  // in user space, which only the peers' progress (other events) can end,
  // so it is charged up to the next event in one step. With flow_sleep it
  // quiesces (submits and reaps everything) and sleeps. Returns with the
  // I/O counted in the flow, or when the job is stopping.
  FioFlow& flow = *config_.flow;
  for (;;) {
    co_await cpu_.Sync();
    if (Stopping()) {
      flow_held_ = false;
      co_return;
    }
    const double count_ratio = static_cast<double>(flow_count_) / static_cast<double>(flow.counter);
    const double weight_ratio = static_cast<double>(spec_.flow) / static_cast<double>(flow.total_weight);
    flow_held_ = count_ratio > weight_ratio;
    if (!flow_held_) {
      ++flow.counter;
      ++flow_count_;
      co_return;
    }
    if (spec_.flow_sleep_us > 0) {
      co_await Quiesce();
      co_await SleepUntil(cpu_.now() + static_cast<int64_t>(spec_.flow_sleep_us) * sim::kNsPerUs);
      continue;
    }
    const sim::SimTime until = std::min(cpu_.RunAheadLimit(), config_.end_at);
    cpu_.ChargeRaw(fn_flow_, std::max<int64_t>(until - cpu_.now(), 1));
  }
}

workload::Direction JobThread::RateDirection(workload::Direction picked) const {
  // fio's rate_ddir: keep the mix's pick if it is not ahead of its rate;
  // else switch to the other direction if that one is behind (and the mix
  // has it); else take whichever may issue first (Throttle then sleeps to
  // its slot). A direction without a rate is never ahead.
  const int d = static_cast<int>(picked);
  const int o = d ^ 1;
  const sim::SimTime now = cpu_.now();
  if (rate_next_[d] <= now) return picked;
  const uint32_t other_mix = picked == workload::Direction::kRead ? 100 - spec_.rwmixread : spec_.rwmixread;
  if (other_mix == 0) return picked;
  const workload::Direction other = static_cast<workload::Direction>(o);
  if (rate_next_[o] <= now) return other;
  return rate_next_[d] <= rate_next_[o] ? picked : other;
}

sim::Task JobThread::Throttle(IoU* u) {
  // rate / rate_iops (fio's rate_ddir): each direction may issue its next IO
  // only after 1/rate has passed, evenly (linear) or exponentially
  // distributed (poisson).
  const int d = static_cast<int>(u->dir);
  const uint64_t iops = spec_.rate_iops[d];
  const uint64_t bps = spec_.rate_bps[d];
  if (iops == 0 && bps == 0) co_return;
  double gap_ns = 0;
  if (iops > 0) gap_ns = 1e9 / static_cast<double>(iops);
  if (bps > 0) gap_ns = std::max(gap_ns, 1e9 * u->bio.bytes / static_cast<double>(bps));
  if (spec_.rate_process == workload::RateProcess::kPoisson) gap_ns = rate_rng_.Exponential(gap_ns);
  if (rate_next_[d] == 0) rate_next_[d] = config_.start_at;
  const sim::SimTime slot = rate_next_[d];
  rate_next_[d] = slot + static_cast<int64_t>(gap_ns);
  if (slot > cpu_.now()) {
    // fio's rate_ddir quiesces before it sleeps (io_submit_mode=inline):
    // submit what is queued and reap everything in flight except `u`
    // (prepared, counted in ctx_.in_flight, not yet queued); then sleep to the
    // slot.
    if (!queued_.empty()) co_await Commit();
    if (!workload::IsSynchronous(spec_.ioengine)) {
      while (ctx_.in_flight > 1) {
        if (!TryReapFromRing(1, ctx_.in_flight - 1)) co_await Reap(1, ctx_.in_flight - 1);
      }
    }
    co_await SleepUntil(slot);
    u->start_time = cpu_.now();
  }
}

sim::Task JobThread::ThinkTime(bool issued) {
  // handle_thinktime: every thinktime_blocks IOs, quiesce, spin, then sleep.
  const bool counts = issued == (spec_.thinktime_blocks_type == workload::ThinktimeBlocksType::kIssue);
  if (spec_.thinktime_ns <= 0 || !counts) co_return;
  if (++think_count_ < std::max<uint64_t>(spec_.thinktime_blocks, 1)) co_return;
  think_count_ = 0;
  co_await Quiesce();
  if (spec_.thinktime_spin_ns > 0) cpu_.Charge(fn_usec_spin_, spec_.thinktime_spin_ns);
  const int64_t left = spec_.thinktime_ns - spec_.thinktime_spin_ns;
  if (left > 0) co_await SleepUntil(cpu_.now() + left);
}

sim::Task JobThread::AsyncLoop() {
  const uint32_t depth = static_cast<uint32_t>(io_us_.size());
  for (;;) {
    co_await cpu_.Sync();
    MaybeStartStats();
    if (Stopping()) break;
    if (config_.flow != nullptr) {
      co_await FlowHold();
      if (Stopping()) break;
    }
    IoU* u = free_.back();
    if (!PrepareIo(u)) break;
    free_.pop_back();
    if (has_rate_) co_await Throttle(u);
    queued_.push_back(u);
    if (queued_.size() >= batch_submit_ || ctx_.in_flight >= depth) co_await Commit();
    if (spec_.thinktime_ns > 0) co_await ThinkTime(/*issued=*/true);
    if (ctx_.in_flight >= depth) {
      // wait_for_completions: the queue is full, reap at least one.
      const uint32_t min = std::max<uint32_t>(1, std::min(batch_complete_min_, ctx_.in_flight));
      const uint32_t max = std::max(batch_complete_max_, min);
      if (!TryReapFromRing(min, max)) co_await Reap(min, max);
      if (spec_.thinktime_ns > 0) co_await ThinkTime(/*issued=*/false);
    }
  }
  // Drain: submit what is queued, reap everything in flight.
  if (!queued_.empty()) co_await Commit();
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

sim::Task JobThread::Commit() {
  const uint32_t n = static_cast<uint32_t>(queued_.size());
  if (n == 0) co_return;
  // Submission may complete I/O inline and reuse nothing of queued_ (io_us
  // are freed only when reaped), so the batch is stable; move it aside.
  submitting_.swap(queued_);
  queued_.clear();
  co_await engine_->Commit(submitting_);
  collector_.RecordSubmitCall(n);
}

void JobThread::BioEndio(sim::Cpu& cpu, model::Bio* bio, model::BlkStatus status) {
  IoU* u = &io_us_[bio->cookie];
  u->error = status != model::BlkStatus::kOk;
  engine_->Complete(cpu, u, status);
}

void JobThread::ReapCompleted(uint32_t max) {
  const uint32_t n = std::min<uint32_t>(max, static_cast<uint32_t>(ctx_.completed.size()));
  if (n == 0) return;
  const sim::SimTime now = cpu_.now();
  for (uint32_t i = 0; i < n; ++i) {
    IoU* u = ctx_.completed.front();
    ctx_.completed.pop_front();
    cpu_.Charge(fn_io_completed_, user_complete_ns_);
    if (collector_.started() && u->start_time >= stats_started_at_) {
      const int64_t slat = workload::IsSynchronous(spec_.ioengine) ? stats::kNoSlat
                                                                   : u->issue_time - u->start_time;
      collector_.RecordCompletion(now, u->dir, u->bio.bytes, slat, now - u->issue_time,
                                  u->bio.sector << model::kSectorShift);
    }
    ++ios_completed_;
    ++dir_ios_[static_cast<int>(u->dir)];
    dir_bytes_[static_cast<int>(u->dir)] += u->bio.bytes;
    u->state = IoU::State::kFree;
    free_.push_back(u);
    --ctx_.in_flight;
  }
  collector_.RecordReapCall(n);
}

bool JobThread::TryReapFromRing(uint32_t min, uint32_t max) {
  // io_uring's CQ ring (and fio's null engine) are read in user space: with
  // enough completions there, no kernel entry and no suspension.
  if (!engine_->reaps_in_user_space() || ctx_.completed.size() < min) return false;
  ReapCompleted(max);
  return true;
}

sim::Task JobThread::Reap(uint32_t min, uint32_t max) {
  co_await engine_->GetEvents(min, max);
  ReapCompleted(max);
}

sim::Task JobThread::SyncLoop() {
  for (;;) {
    co_await cpu_.Sync();
    MaybeStartStats();
    if (Stopping()) break;
    if (config_.flow != nullptr) {
      co_await FlowHold();
      if (Stopping()) break;
    }
    IoU* u = free_.back();
    if (!PrepareIo(u)) break;
    free_.pop_back();
    if (has_rate_) co_await Throttle(u);
    queued_.push_back(u);
    co_await Commit();
    ReapCompleted(1);
    // One IO is both issued and completed here: it counts for either type.
    if (spec_.thinktime_ns > 0) {
      co_await ThinkTime(spec_.thinktime_blocks_type == workload::ThinktimeBlocksType::kIssue);
    }
  }
}

}  // namespace blklab::job
