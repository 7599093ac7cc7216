// engine/job/job_thread.cc
//
// JobThread's constructor and fio's do_io loop (backend.c, io_u.c): get an
// io_u, queue it, commit a batch, reap; the sync io_us of fsync= and
// end_fsync. Verify, files and iolog, rate / flow / thinktime and the
// reports are in job_verify.cc, job_iolog.cc, job_rate.cc, job_report.cc.
#include "engine/job/job_thread.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

namespace blklab::job {

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

JobThread::JobThread(model::Kernel& kernel, const JobThreadConfig& config, FileService files)
    : kernel_(kernel),
      config_(config),
      spec_(*config.spec),
      gen_(std::move(files)),
      thread_(std::make_unique<sim::Thread>(kernel.machine(), "fio/" + config.spec->name, config.cpu)),
      collector_(stats::CollectorConfig{
          .bw_avg_ns = static_cast<int64_t>(config.spec->bwavgtime_ms) * sim::kNsPerMs,
          .iops_avg_ns = static_cast<int64_t>(config.spec->iopsavgtime_ms) * sim::kNsPerMs,
          .record_slat = !config.spec->disable_slat,
          .record_clat = !config.spec->disable_clat,
          .record_lat = !config.spec->disable_lat}),
      ctx_{kernel, *thread_, config.files.front().queue, *config.spec, {}, {}} {
  thread_->set_cpus_allowed(config.cpus_allowed);
  BLKLAB_CHECK(config.files.size() == gen_.count());
  ctx_.page_cache = config.page_cache;
  ra_.resize(config.files.size());
  for (size_t f = 0; f < config.files.size(); ++f) OpenRaState(f);
  if (spec_.ioengine == workload::IoEngine::kMmap) vmas_.resize(config.files.size());
  if (config.files.size() > 1) {
    // IOPOLL polls every disk the files are on.
    for (const JobFile& f : config.files) {
      if (f.queue != nullptr && std::find(ctx_.queues.begin(), ctx_.queues.end(), f.queue) == ctx_.queues.end()) {
        ctx_.queues.push_back(f.queue);
      }
    }
  }
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
    SetFile(&io_us_[i], 0);
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
  rate_.rng = sim::RngStream(spec_.randseed, sim::RngStreamId::kRate, config.thread_number);

  auto& r = kernel.machine().functions();
  fn_get_io_u_ = r.Intern("fio:get_io_u");
  fn_io_completed_ = r.Intern("fio:io_completed");
  const FioUserCosts user = FioUserCostsFor(kernel_.costs(), spec_);
  user_issue_ns_ = user.issue_ns;
  user_complete_ns_ = user.complete_ns;
  fn_usec_spin_ = r.Intern("fio:usec_spin");
  fn_flow_ = r.Intern("fio:flow_threshold_exceeded");
  engine_ = MakeIoEngine(ctx_);
  for (int d = 0; d < 3; ++d) rate_.has_rate |= spec_.rate_iops[d] > 0 || spec_.rate_bps[d] > 0;
  if (std::optional<stats::JobLogConfig> lc = LogConfigFor(spec_, config.thread_number)) {
    logger_ = std::make_unique<stats::JobLogger>(*std::move(lc));
    collector_.set_logger(logger_.get());
  }
  fn_verify_fill_ = r.Intern("fio:populate_verify_io_u");
  fn_verify_check_ = r.Intern("fio:verify_io_u");
  fn_io_sync_ = r.Intern("fio:fio_io_sync");
  fn_pread_file_ = r.Intern("__x64_sys_read");
  fn_fsync_ = r.Intern(spec_.fsync_blocks == 0 && spec_.fdatasync_blocks > 0 ? "__x64_sys_fdatasync" : "__x64_sys_fsync");
  InitVerify();
}

void JobThread::Start() { thread_->Start(Main(), config_.start_at); }

void JobThread::StartAt(sim::SimTime at) {
  const sim::SimTime shift = at - config_.start_at;
  config_.start_at = at;
  config_.ramp_end += shift;
  if (config_.end_at != sim::kSimTimeNever) config_.end_at += shift;
  thread_->Start(Main(), at);
}

bool JobThread::Stopping() {
  if (stopping_) return true;
  if (cpu().now() >= config_.end_at) stopping_ = terminated_ = true;
  if (!spec_.time_based) {
    if (spec_.number_ios > 0 && ios_issued_ >= spec_.number_ios) stopping_ = true;
    if (bytes_limit_ > 0 && bytes_issued_ >= bytes_limit_) stopping_ = true;
  }
  // do_io's own byte count (verify reads included) ends a verifying job's
  // round, time_based or not; the verify phase follows.
  if (verify_.enabled && total_bytes_ > 0 && all_bytes_issued_ >= total_bytes_) stopping_ = true;
  return stopping_;
}

bool JobThread::PrepareIo(IoU* u) {
  // get_io_u + fill_io_u: fio's own per-I/O user-space work (half here, half
  // at completion).
  u->verify = false;
  u->ver_list = false;
  u->piece = -1;
  if (spec_.verify_backlog > 0 && verify_.log_pieces && CheckGetVerify(u)) {
    cpu().Charge(fn_get_io_u_, user_issue_ns_);
    return true;
  }
  FileService::Next next;
  if (rate_.has_rate) {
    auto rate_direction = [this](workload::Direction d) { return RateDirection(d); };
    const absl::FunctionRef<workload::Direction(workload::Direction)> adjust = rate_direction;
    next = gen_.NextIo(&adjust);
  } else {
    next = gen_.NextIo();
  }
  const workload::GeneratedIo& io = next.io;
  cpu().Charge(fn_get_io_u_, user_issue_ns_);
  for (uint32_t f : next.closed) IologClose(f);
  if (io.new_pass && config_.plan.pass_end_ends_loop && ++loops_done_ >= std::max<uint64_t>(spec_.loops, 1)) {
    // The last loop's sequential pass reached the region's end (with holes,
    // rw=read:512k, before io_size bytes): no more I/O, as fio.
    stopping_ = true;
    return false;
  }
  if (io.new_pass && config_.plan.pass_end_ends_loop) ReopenFiles();
  SetFile(u, next.file);
  u->dir = ToStatsDir(io.direction);
  u->bio.op = ToOp(io.direction);
  u->bio.sector = io.offset >> model::kSectorShift;
  u->bio.bytes = static_cast<uint32_t>(io.length);
  if (io.direction == workload::Direction::kWrite) {
    // numberio = td->io_issues[DDIR_WRITE].
    u->numberio = static_cast<uint16_t>(write_issues_++);
    PopulateVerify(u, io.length);
  } else if (io.direction == workload::Direction::kRead && verify_.enabled && !workload::IsMixed(spec_.rw)) {
    u->verify = true;  // a read-only job checks every read (!td_rw(td))
  }
  return true;
}

void JobThread::StartIo(IoU* u) {
  u->bio.bi_next = nullptr;
  u->bio.polled = engine_->polled();
  u->bio.nowait = u->bio.polled;
  u->start_time = cpu().now();
  u->state = IoU::State::kQueued;
  u->error = false;
  last_was_sync_ = false;
  ++ctx_.in_flight;
  ++ios_issued_;
  // io_bytes_exceeded: a job that reads and writes counts both, else only
  // its writes (trimwrite's trims do not count), reads, or trims; verify
  // reads from the log count only in do_io's own total.
  if (!u->ver_list && counts_toward_limit_[static_cast<int>(u->dir)]) bytes_issued_ += u->bio.bytes;
  all_bytes_issued_ += u->bio.bytes;
  if (collector_.started()) collector_.RecordIssue(u->dir, ctx_.in_flight);
  last_offset_ = (u->bio.sector << model::kSectorShift) - config_.files[u->file].base_bytes;
  IologIo(u->file, stats::DirName(u->dir), last_offset_, u->bio.bytes);
}

sim::Task JobThread::Main() {
  co_await cpu().Sync();
  IologInit();
  // td_io_open_file: invalidate=1 drops the file's cached pages.
  InvalidateFiles();
  co_await PreReadFiles();
  MaybeStartStats();
  // thread_main's keep_running loop: do_io, then do_verify unless the job
  // was terminated (runtime over, an error); a job that verifies goes round
  // again, loops= times (each round writes size= and verifies it; without
  // verify one do_io covers every loop) or, time_based, until its runtime
  // is over.
  const uint64_t rounds = std::max<uint64_t>(spec_.loops, 1);
  for (uint64_t round = 0;; ++round) {
    if (round > 0) {
      // clear_io_state: the file is closed and opened again (invalidate=1
      // drops its cached pages) and, with randrepeat, the generators are
      // seeded again: the round repeats the first one's offsets.
      ReopenFiles();
      if (spec_.randrepeat) gen_ = FreshFiles();
    }
    all_bytes_issued_ = 0;
    verify_.write_bytes_done = 0;
    if (workload::IsSynchronous(spec_.ioengine)) {
      co_await SyncLoop();
    } else {
      co_await AsyncLoop();
    }
    // do_io's end: end_fsync and fsync_on_close sync a writing job's file
    // (fio_file_fsync: a sync io_u, in the sync statistics and the job's
    // runtime) unless its last I/O was a sync (should_fsync).
    if ((spec_.end_fsync || spec_.fsync_on_close) && config_.files.front().queue != nullptr && !last_was_sync_ &&
        workload::DirectionActive(spec_.rw, workload::Direction::kWrite)) {
      co_await FileSync();
    }
    if (!verify_.enabled || terminated_ || error_ != 0) break;
    if (spec_.do_verify && verify_.write_bytes_done + verify_.hist_len > 0) co_await VerifyPhase();
    if (terminated_ || error_ != 0) break;
    if (!spec_.time_based && (round + 1 >= rounds || (bytes_limit_ > 0 && bytes_issued_ >= bytes_limit_))) break;
    stopping_ = false;
  }
  co_await cpu().Sync();
  // close_and_free_files: unlink=1 deletes the files as the job ends.
  CloseFiles();
  if (spec_.unlink) UnlinkFiles();
  FinishStats();
}

bool JobThread::SyncDue(const IoU* u) const {
  if (u->dir != stats::Dir::kWrite || config_.files.front().queue == nullptr) return false;
  const uint32_t every = spec_.fsync_blocks > 0 ? spec_.fsync_blocks : spec_.fdatasync_blocks;
  return every > 0 && write_issues_ % every == 0;
}

sim::Task JobThread::FileSync(int file, bool due) {
  // fio's sync io_u: DDIR_DATASYNC for an fdatasync= sync, else DDIR_SYNC.
  const bool datasync = due && spec_.fsync_blocks == 0 && spec_.fdatasync_blocks > 0;
  const char* ddir = datasync ? "datasync" : "sync";
  const size_t first = file >= 0 ? static_cast<size_t>(file) : 0;
  const size_t end = file >= 0 ? first + 1 : config_.files.size();
  for (size_t f = first; f < end; ++f) {
    co_await cpu().Sync();
    const sim::SimTime start = cpu().now();
    IologIo(f, ddir, last_offset_, 0);
    {
      sim::Cpu& c = cpu();  // no migratable sleep below
      sim::StackFrame frame(c, fn_fsync_);
      c.Charge(fn_fsync_, kernel_.costs().syscall_entry_exit);
      if (model::AddressSpace* m = config_.files[f].mapping; m != nullptr) {
        co_await ctx_.page_cache->Fsync(c, *m);
      } else {
        // Direct I/O: nothing cached to write; the devices have no volatile
        // cache to flush.
        c.Charge(fn_fsync_, kernel_.costs().fsync_call);
      }
    }
    co_await cpu().PreemptPoint();
    if (collector_.started()) collector_.RecordSync(cpu().now() - start, datasync);
  }
  last_was_sync_ = true;
}

sim::Task JobThread::QueueAndMaybeReap(IoU* u) {
  const uint32_t depth = static_cast<uint32_t>(io_us_.size());
  queued_.push_back(u);
  if (workload::IsSynchronous(spec_.ioengine)) {
    co_await Commit();
    ReapCompleted(1);
    co_return;
  }
  if (queued_.size() >= batch_submit_ || ctx_.in_flight >= depth) co_await Commit();
  if (ctx_.in_flight >= depth) {
    const auto [min, max] = ReapWindow();
    if (!TryReapFromRing(min, max)) co_await Reap(min, max);
  }
}

sim::Task JobThread::Quiesce() {
  if (!queued_.empty()) co_await Commit();
  if (workload::IsSynchronous(spec_.ioengine)) co_return;
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

sim::Task JobThread::AsyncLoop() {
  const uint32_t depth = static_cast<uint32_t>(io_us_.size());
  for (;;) {
    co_await cpu().Sync();
    MaybeStartStats();
    if (Stopping()) break;
    if (config_.flow != nullptr) {
      co_await FlowHold();
      if (Stopping()) break;
    }
    if (sync_pending_) {
      // The engine takes the sync once what is queued is submitted.
      sync_pending_ = false;
      co_await Commit();
      co_await FileSync(static_cast<int>(gen_.NextSyncFile()), /*due=*/true);
      continue;
    }
    IoU* u = free_.back();
    if (!PrepareIo(u)) break;
    free_.pop_back();
    if (spec_.serialize_overlap) co_await WaitForOverlaps(u);
    StartIo(u);
    if (rate_.has_rate) co_await Throttle(u);
    queued_.push_back(u);
    sync_pending_ = SyncDue(u);
    if (queued_.size() >= batch_submit_ || ctx_.in_flight >= depth) co_await Commit();
    if (spec_.thinktime_ns > 0) co_await ThinkTime(/*issued=*/true);
    if (ctx_.in_flight >= depth) {
      // wait_for_completions: the queue is full, reap at least one.
      const auto [min, max] = ReapWindow();
    if (!TryReapFromRing(min, max)) co_await Reap(min, max);
      if (spec_.thinktime_ns > 0) co_await ThinkTime(/*issued=*/false);
    }
  }
  // Drain: submit what is queued, reap everything in flight.
  if (!queued_.empty()) co_await Commit();
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

// fio's io_u_submit with serialize_overlap=1: an I/O whose range overlaps
// one in flight (queued, submitted, or completed and not yet reaped: fio's
// IO_U_F_FLIGHT) on the same device is FIO_Q_BUSY. fio requeues it, commits
// what is queued and waits for completions (do_io's reap), then tries it
// again.
sim::Task JobThread::WaitForOverlaps(IoU* u) {
  while (OverlapsInFlight(*u)) {
    co_await Commit();
    const auto [min, max] = ReapWindow();
    if (!TryReapFromRing(min, max)) co_await Reap(min, max);
  }
}

bool JobThread::OverlapsInFlight(const IoU& u) const {
  const uint64_t x1 = u.bio.sector << model::kSectorShift;
  const uint64_t x2 = x1 + u.bio.bytes;
  for (const IoU& o : io_us_) {
    if (&o == &u || o.state == IoU::State::kFree || o.queue != u.queue) continue;
    const uint64_t y1 = o.bio.sector << model::kSectorShift;
    if (x1 < y1 + o.bio.bytes && y1 < x2) return true;
  }
  return false;
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
  const sim::SimTime now = cpu().now();
  for (uint32_t i = 0; i < n; ++i) {
    IoU* u = ctx_.completed.front();
    ctx_.completed.pop_front();
    cpu().Charge(fn_io_completed_, user_complete_ns_);
    if (verify_.enabled || config_.files[u->file].content != nullptr) CompleteVerify(u);
    if (MediumContent* m = config_.files[u->file].medium; m != nullptr) CompleteMedium(u, *m);
    verify_.last_reaped_read = u->dir == stats::Dir::kRead;
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

// fio's wait_for_completions: reap at least iodepth_batch_complete_min (all
// in flight if fewer, and at least one), at most iodepth_batch_complete_max.
std::pair<uint32_t, uint32_t> JobThread::ReapWindow() const {
  const uint32_t min = std::max<uint32_t>(1, std::min(batch_complete_min_, ctx_.in_flight));
  return {min, std::max(batch_complete_max_, min)};
}

sim::Task JobThread::Reap(uint32_t min, uint32_t max) {
  co_await engine_->GetEvents(min, max);
  ReapCompleted(max);
}

sim::Task JobThread::SyncLoop() {
  for (;;) {
    co_await cpu().Sync();
    MaybeStartStats();
    if (Stopping()) break;
    if (config_.flow != nullptr) {
      co_await FlowHold();
      if (Stopping()) break;
    }
    if (sync_pending_) {
      sync_pending_ = false;
      co_await FileSync(static_cast<int>(gen_.NextSyncFile()), /*due=*/true);
      continue;
    }
    IoU* u = free_.back();
    if (!PrepareIo(u)) break;
    free_.pop_back();
    StartIo(u);
    if (rate_.has_rate) co_await Throttle(u);
    queued_.push_back(u);
    sync_pending_ = SyncDue(u);
    co_await Commit();
    ReapCompleted(1);
    // One IO is both issued and completed here: it counts for either type.
    if (spec_.thinktime_ns > 0) {
      co_await ThinkTime(spec_.thinktime_blocks_type == workload::ThinktimeBlocksType::kIssue);
    }
  }
}

}  // namespace blklab::job
