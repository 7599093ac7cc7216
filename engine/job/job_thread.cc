#include "engine/job/job_thread.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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
  InitVerify();
}

namespace {
// fio's checksum per verify= type: its name in messages and its cost row
// (nullptr: none over the data).
struct VerifyAlgo {
  const char* option;
  const char* name;
  int64_t host::CostTable::*per_kib;
};
constexpr VerifyAlgo kVerifyAlgos[] = {
    {"md5", "md5", &host::CostTable::fio_verify_md5_per_kib},
    {"crc64", "crc64", &host::CostTable::fio_verify_crc64_per_kib},
    {"crc32", "crc32", &host::CostTable::fio_verify_crc32_per_kib},
    {"crc32c", "crc32c", &host::CostTable::fio_verify_crc32c_per_kib},
    {"crc32c-intel", "crc32c", &host::CostTable::fio_verify_crc32c_per_kib},
    {"crc16", "crc16", &host::CostTable::fio_verify_crc16_per_kib},
    {"crc7", "crc7", &host::CostTable::fio_verify_crc7_per_kib},
    {"sha1", "sha1", &host::CostTable::fio_verify_sha1_per_kib},
    {"sha256", "sha256", &host::CostTable::fio_verify_sha256_per_kib},
    {"sha512", "sha512", &host::CostTable::fio_verify_sha512_per_kib},
    {"sha3-224", "sha3-224", &host::CostTable::fio_verify_sha3_224_per_kib},
    {"sha3-256", "sha3-256", &host::CostTable::fio_verify_sha3_256_per_kib},
    {"sha3-384", "sha3-384", &host::CostTable::fio_verify_sha3_384_per_kib},
    {"sha3-512", "sha3-512", &host::CostTable::fio_verify_sha3_512_per_kib},
    {"xxhash", "xxhash", &host::CostTable::fio_verify_xxhash_per_kib},
    {"meta", "meta", nullptr},
    {"pattern", "pattern", nullptr},
};

int64_t PerKib(int64_t ns_per_kib, uint64_t bytes) {
  return static_cast<int64_t>((static_cast<unsigned __int128>(bytes) * static_cast<uint64_t>(ns_per_kib)) >> 10);
}
}  // namespace

void JobThread::InitVerify() {
  auto& r = kernel_.machine().functions();
  fn_verify_fill_ = r.Intern("fio:populate_verify_io_u");
  fn_verify_check_ = r.Intern("fio:verify_io_u");
  fn_io_sync_ = r.Intern("fio:fio_io_sync");
  fn_pread_file_ = r.Intern("__x64_sys_read");
  fn_fsync_ = r.Intern(spec_.fsync_blocks == 0 && spec_.fdatasync_blocks > 0 ? "__x64_sys_fdatasync" : "__x64_sys_fsync");
  verify_ = !spec_.verify.empty() && spec_.verify != "0";
  if (!verify_) return;
  using workload::Direction;
  const bool writes = workload::DirectionActive(spec_.rw, Direction::kWrite);
  const bool reads = workload::DirectionActive(spec_.rw, Direction::kRead);
  verify_headers_ = spec_.verify != "null";
  // ioengine=null is FIO_FAKEIO: verify_io_u pretends every block checked.
  verify_checks_ = verify_headers_ && config_.files.front().queue != nullptr;
  log_pieces_ = writes && spec_.do_verify && !spec_.experimental_verify;
  piece_list_ = gen_.random_map_enabled();  // file_randommap(): write order, else sorted by offset
  // fixup_options: the header interval.
  const uint64_t wmin = workload::MinBlockSize(spec_, Direction::kWrite);
  const uint64_t wmax = workload::MaxBlockSize(spec_, Direction::kWrite);
  uint64_t iv = spec_.verify_interval;
  if (wmax != wmin && iv == 0) iv = wmin;
  if (iv > wmin) {
    iv = wmin;
  } else if (reads && iv > workload::MinBlockSize(spec_, Direction::kRead)) {
    iv = workload::MinBlockSize(spec_, Direction::kRead);
  }
  if (iv == 0 || wmin % iv != 0 || wmax % iv != 0) iv = std::gcd(wmin, wmax);
  verify_interval_ = static_cast<uint32_t>(std::min<uint64_t>(iv, UINT32_MAX));
  // verify_header checks numberio for jobs that write fixed-size blocks and
  // are not time_based.
  check_numberio_ = writes && wmin == wmax && !spec_.time_based;
  const host::CostTable& c = kernel_.costs();
  verify_fill_per_kib_ = verify_headers_ && spec_.verify_pattern.empty() ? c.fio_verify_fill_per_kib : 0;
  for (const VerifyAlgo& a : kVerifyAlgos) {
    if (spec_.verify != a.option) continue;
    verify_name_ = a.name;
    verify_hash_per_kib_ = a.per_kib != nullptr ? c.*a.per_kib : 0;
  }
  // do_io's total_bytes: size (io_size for random overwrites without a
  // map), and size again for the backlog's verify reads.
  total_bytes_ = config_.plan.region_bytes;
  if (writes && workload::IsRandom(spec_.rw) && spec_.norandommap) {
    total_bytes_ = std::max(total_bytes_, config_.plan.io_limit_bytes);
  }
  if (writes && spec_.verify_backlog > 0) total_bytes_ += config_.plan.region_bytes;
}

void JobThread::Message(std::string line) {
  if (messages_.size() < kMaxMessages) {
    messages_.push_back(std::move(line));
  } else {
    ++messages_dropped_;
  }
}

void JobThread::LogPiece(IoU* u) {
  // log_io_piece: in flight until reaped. Without a random map the log is
  // sorted by offset and a new write drops the entries it overlaps.
  int32_t idx;
  if (!free_pieces_.empty()) {
    idx = free_pieces_.back();
    free_pieces_.pop_back();
  } else {
    if (pieces_.size() >= DeviceContent::kMaxRecords) {
      // fio allocates an io_piece per logged write; the model bounds them
      // as it bounds the device's headers.
      kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
          "job '", spec_.name, "': verify: more than ", DeviceContent::kMaxRecords,
          " written blocks wait to be verified; write less (size=) or verify as the job goes (verify_backlog=)")));
      stopping_ = terminated_ = true;
      return;
    }
    idx = static_cast<int32_t>(pieces_.size());
    pieces_.emplace_back();
  }
  const uint64_t off = u->bio.sector << model::kSectorShift;
  pieces_[idx] = VerifyPiece{off, u->file, u->bio.bytes, u->numberio, /*in_flight=*/true, /*orphan=*/false};
  u->piece = idx;
  ++hist_len_;
  if (piece_list_) {
    hist_list_.push_back(idx);
    return;
  }
  const uint64_t end = off + u->bio.bytes;
  auto it = hist_tree_.lower_bound({u->file, off});
  if (it != hist_tree_.begin()) {
    auto prev = std::prev(it);
    if (prev->first.first == u->file && pieces_[prev->second].offset + pieces_[prev->second].len > off) it = prev;
  }
  while (it != hist_tree_.end() && it->first.first == u->file && it->first.second < end) {
    VerifyPiece& old = pieces_[it->second];
    if (old.in_flight) {
      old.orphan = true;
    } else {
      free_pieces_.push_back(it->second);
    }
    --hist_len_;
    it = hist_tree_.erase(it);
  }
  hist_tree_.emplace(std::make_pair(u->file, off), idx);
}

void JobThread::SetVerifyRead(IoU* u, uint32_t file, uint64_t offset, uint32_t len, uint16_t numberio) {
  SetFile(u, file);
  u->dir = stats::Dir::kRead;
  u->bio.op = model::ReqOp::kRead;
  u->bio.sector = offset >> model::kSectorShift;
  u->bio.bytes = len;
  u->numberio = numberio;
  u->verify = true;
}

bool JobThread::GetNextVerify(IoU* u) {
  // get_next_verify: the first entry, once its write has been reaped.
  int32_t idx = -1;
  if (!hist_tree_.empty()) {
    auto it = hist_tree_.begin();
    if (pieces_[it->second].in_flight) return false;
    idx = it->second;
    hist_tree_.erase(it);
  } else if (!hist_list_.empty()) {
    if (pieces_[hist_list_.front()].in_flight) return false;
    idx = hist_list_.front();
    hist_list_.pop_front();
  } else {
    return false;
  }
  --hist_len_;
  const VerifyPiece p = pieces_[idx];
  free_pieces_.push_back(idx);
  SetVerifyRead(u, p.file, p.offset, p.len, p.numberio);
  u->ver_list = true;
  return true;
}

bool JobThread::CheckGetVerify(IoU* u) {
  // check_get_verify: every verify_backlog logged writes (unless the last
  // reaped I/O was a read), a batch of verify reads.
  if (hist_len_ == 0) return false;
  bool get = verify_batch_ > 0;
  if (!get && hist_len_ % spec_.verify_backlog == 0 && !last_reaped_read_) {
    verify_batch_ = spec_.verify_backlog_batch > 0 ? spec_.verify_backlog_batch : spec_.verify_backlog;
    get = true;
  }
  if (get && GetNextVerify(u)) {
    --verify_batch_;
    return true;
  }
  return false;
}

bool JobThread::NextReplayedVerify(IoU* u) {
  // experimental_verify: replay the job's I/O sequence; reads are skipped,
  // writes (and trims) become verify reads, until the bytes verified reach
  // the bytes written.
  const uint64_t min_bs = config_.plan.min_block;
  for (;;) {
    if (verify_bytes_done_ + min_bs > write_bytes_done_) return false;
    const FileService::Next next = replay_->NextIo();
    const workload::GeneratedIo& io = next.io;
    if (io.direction == workload::Direction::kRead) continue;
    const uint16_t n = static_cast<uint16_t>(verify_read_issues_++);
    SetVerifyRead(u, next.file, io.offset, static_cast<uint32_t>(io.length), n);
    // A trimmed block reads as zeroes (trim_verify_zero): not a header check.
    if (io.direction == workload::Direction::kTrim) u->verify = false;
    return true;
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
  std::vector<stats::LogFile> files;
  if (logger_ != nullptr) files = logger_->TakeFiles();
  if (!spec_.write_iolog.empty()) files.push_back(stats::LogFile{spec_.write_iolog, std::move(iolog_)});
  return files;
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

bool JobThread::Stopping() {
  if (stopping_) return true;
  if (cpu().now() >= config_.end_at) stopping_ = terminated_ = true;
  if (!spec_.time_based) {
    if (spec_.number_ios > 0 && ios_issued_ >= spec_.number_ios) stopping_ = true;
    if (bytes_limit_ > 0 && bytes_issued_ >= bytes_limit_) stopping_ = true;
  }
  // do_io's own byte count (verify reads included) ends a verifying job's
  // round, time_based or not; the verify phase follows.
  if (verify_ && total_bytes_ > 0 && all_bytes_issued_ >= total_bytes_) stopping_ = true;
  return stopping_;
}

bool JobThread::PrepareIo(IoU* u) {
  // get_io_u + fill_io_u: fio's own per-I/O user-space work (half here, half
  // at completion).
  u->verify = false;
  u->ver_list = false;
  u->piece = -1;
  if (spec_.verify_backlog > 0 && log_pieces_ && CheckGetVerify(u)) {
    cpu().Charge(fn_get_io_u_, user_issue_ns_);
    StartIo(u);
    return true;
  }
  FileService::Next next;
  if (has_rate_) {
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
    // numberio = td->io_issues[DDIR_WRITE]; populate_verify_io_u fills the
    // buffer and checksums each header's chunk.
    u->numberio = static_cast<uint16_t>(write_issues_++);
    if (verify_headers_) cpu().Charge(fn_verify_fill_, PerKib(verify_fill_per_kib_ + verify_hash_per_kib_, io.length));
    if (log_pieces_) LogPiece(u);
  } else if (io.direction == workload::Direction::kRead && verify_ && !workload::IsMixed(spec_.rw)) {
    u->verify = true;  // a read-only job checks every read (!td_rw(td))
  }
  StartIo(u);
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
  if (!spec_.write_iolog.empty()) {
    // init_iolog_write: the version line and every file added.
    iolog_start_ = cpu().now();
    iolog_ = "fio version 3 iolog\n";
    iolog_open_.assign(config_.files.size(), false);
    for (size_t f = 0; f < config_.files.size(); ++f) IologFile(f, "add");
  }
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
    write_bytes_done_ = 0;
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
    if (!verify_ || terminated_ || error_ != 0) break;
    if (spec_.do_verify && write_bytes_done_ + hist_len_ > 0) co_await VerifyPhase();
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

void JobThread::SetFile(IoU* u, uint32_t f) {
  const JobFile& file = config_.files[f];
  u->file = f;
  u->queue = file.queue;
  u->inode = file.inode;
  u->mapping = file.mapping;
  u->ra = &ra_[f];
  u->vma = vmas_.empty() ? nullptr : &vmas_[f];
}

void JobThread::OpenRaState(size_t f) {
  const model::AddressSpace* m = config_.files[f].mapping;
  if (m == nullptr) return;
  ra_[f] = model::OpenRaState(*m, FadviseOf(spec_));
}

void JobThread::CloseFiles() {
  for (model::VmArea& vma : vmas_) {
    if (vma.m != nullptr) ctx_.page_cache->Munmap(cpu(), vma);
  }
  for (size_t f = 0; f < config_.files.size(); ++f) IologClose(f);
}

void JobThread::OpenFiles() {
  for (size_t f = 0; f < config_.files.size(); ++f) OpenRaState(f);
}

void JobThread::IologClose(size_t f) {
  if (spec_.write_iolog.empty() || !iolog_open_[f]) return;
  iolog_open_[f] = false;
  IologFile(f, "close");
}

void JobThread::IologFile(size_t f, const char* act) {
  if (spec_.write_iolog.empty()) return;
  absl::StrAppend(&iolog_, (cpu().now() - iolog_start_) / 1000, " ", config_.files[f].name, " ", act, "\n");
}

void JobThread::IologIo(size_t f, const char* ddir, uint64_t offset, uint64_t bytes) {
  if (spec_.write_iolog.empty()) return;
  if (!iolog_open_[f]) {
    iolog_open_[f] = true;
    IologFile(f, "open");
  }
  absl::StrAppend(&iolog_, (cpu().now() - iolog_start_) / 1000, " ", config_.files[f].name, " ", ddir, " ", offset,
                  " ", bytes, "\n");
}

sim::Task JobThread::PreReadFiles() {
  if (!spec_.pre_read || ctx_.page_cache == nullptr) co_return;
  const sim::SimTime started = cpu().now();
  const uint64_t chunk = std::max<uint64_t>(workload::MaxBlockSize(spec_, workload::Direction::kRead), 1);
  for (size_t f = 0; f < config_.files.size(); ++f) {
    model::AddressSpace* m = config_.files[f].mapping;
    if (m == nullptr) continue;
    const uint64_t start = config_.files[f].plan.region_start - m->base_bytes;
    const uint64_t end = start + config_.files[f].plan.region_bytes;
    for (uint64_t pos = start; pos < end && !terminated_; pos += chunk) {
      co_await cpu().Sync();
      sim::Cpu& c = cpu();
      sim::StackFrame frame(c, fn_pread_file_);
      c.Charge(fn_pread_file_, kernel_.costs().syscall_entry_exit);
      co_await ctx_.page_cache->Read(c, ra_[f], *m, pos, static_cast<uint32_t>(std::min(chunk, end - pos)));
      co_await cpu().PreemptPoint();
    }
    OpenRaState(f);  // fio closes the file after its pre-read
  }
  // The job's clock (ramp_time, runtime) starts after the pre-read.
  const sim::SimTime spent = cpu().now() - started;
  config_.ramp_end += spent;
  if (config_.end_at != sim::kSimTimeNever) config_.end_at += spent;
}

void JobThread::UnlinkFiles() {
  for (const JobFile& f : config_.files) {
    if (f.inode == nullptr) continue;  // a device: nothing to delete
    if (f.mapping != nullptr) {
      ctx_.page_cache->TruncateRange(cpu(), *f.mapping, 0, (std::max<uint64_t>(f.mapping->size_bytes, 1) - 1) >> model::kPageShift);
    }
    const uint64_t start = f.inode->base_bytes;
    const uint64_t len = f.inode->size_bytes;
    if (f.content != nullptr) f.content->Trim(start, len);
    if (f.medium != nullptr) f.medium->Write(start >> model::kSectorShift, len >> model::kSectorShift, MediumContent::kZero);
  }
}

void JobThread::ReopenFiles() {
  CloseFiles();
  if (spec_.unlink_each_loop) UnlinkFiles();
  InvalidateFiles();
  OpenFiles();
}

void JobThread::InvalidateFiles() {
  // pre_read clears invalidate: what it read stays.
  if (!spec_.invalidate || spec_.pre_read || ctx_.page_cache == nullptr) return;
  for (const JobFile& f : config_.files) {
    if (f.mapping != nullptr) ctx_.page_cache->Invalidate(cpu(), *f.mapping);
  }
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
    const uint32_t min = std::max<uint32_t>(1, std::min(batch_complete_min_, ctx_.in_flight));
    const uint32_t max = std::max(batch_complete_max_, min);
    if (!TryReapFromRing(min, max)) co_await Reap(min, max);
  }
}

FileService JobThread::FreshFiles() const {
  std::vector<workload::ClonePlan> plans;
  for (const JobFile& f : config_.files) plans.push_back(f.plan);
  absl::StatusOr<FileService> g = FileService::Create(spec_, plans, config_.thread_number, config_.seed);
  BLKLAB_CHECK(g.ok());  // the same inputs made gen_
  return *std::move(g);
}

sim::Task JobThread::VerifyPhase() {
  // do_verify: sync the file first (one syscall: the simulated devices have
  // no volatile cache to flush), then read back what the log holds (or the
  // replayed writes) until it is empty, the runtime is over or a check fails.
  if (config_.files.front().queue != nullptr) cpu().Charge(fn_io_sync_, kernel_.costs().syscall_entry_exit);
  if (spec_.experimental_verify) {
    // The job's sequence from its start: the inputs that made gen_.
    replay_.emplace(FreshFiles());
    // td->verify_read_issues counts on across loops, as the writes' numberio.
    verify_bytes_done_ = 0;
  }
  for (;;) {
    co_await cpu().Sync();
    if (cpu().now() >= config_.end_at) {
      terminated_ = true;
      break;
    }
    if (error_ != 0) break;
    IoU* u = free_.back();
    u->verify = false;
    u->ver_list = false;
    u->piece = -1;
    if (!(spec_.experimental_verify ? NextReplayedVerify(u) : GetNextVerify(u))) break;
    free_.pop_back();
    cpu().Charge(fn_get_io_u_, user_issue_ns_);
    StartIo(u);
    co_await QueueAndMaybeReap(u);
  }
  if (!queued_.empty()) co_await Commit();
  while (ctx_.in_flight > 0) co_await Reap(1, ctx_.in_flight);
}

void JobThread::CompleteVerify(IoU* u) {
  const uint64_t off = u->bio.sector << model::kSectorShift;
  if (u->dir == stats::Dir::kWrite) {
    if (u->piece >= 0) {
      VerifyPiece& p = pieces_[u->piece];
      p.in_flight = false;
      if (p.orphan) free_pieces_.push_back(u->piece);
    }
    if (!u->error) write_bytes_done_ += u->bio.bytes;
    DeviceContent* content = config_.files[u->file].content;
    if (content != nullptr && !u->error &&
        !content->Write(off, u->bio.bytes, verify_headers_ ? verify_interval_ : 0, u->numberio)) {
      kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
          "job '", spec_.name, "': verify: the simulated ", config_.files[u->file].name, " would hold more than ",
          DeviceContent::kMaxRecords, " verify headers (", verify_interval_,
          "-byte verify_interval); write less (size=) or raise verify_interval")));
    }
  } else if (u->dir == stats::Dir::kTrim) {
    if (!u->error) write_bytes_done_ += u->bio.bytes;
    DeviceContent* content = config_.files[u->file].content;
    if (content != nullptr && !u->error) content->Trim(off, u->bio.bytes);
  } else if (u->verify && !u->error) {
    if (spec_.experimental_verify) verify_bytes_done_ += u->bio.bytes;
    if (verify_checks_) VerifyRead(u);
  }
}

void JobThread::VerifyRead(IoU* u) {
  // verify_io_u: the header of each verify_interval chunk, then its
  // checksum. A bad header ends the block's check; a bad checksum too with
  // verify_fatal. Any failure is the job's error (EILSEQ).
  const uint64_t off = u->bio.sector << model::kSectorShift;
  const JobFile& file = config_.files[u->file];
  const uint32_t h = verify_interval_;
  cpu().Charge(fn_verify_check_, PerKib(verify_hash_per_kib_, u->bio.bytes));
  const std::optional<uint16_t> numberio =
      check_numberio_ && (u->ver_list || spec_.experimental_verify) ? std::optional<uint16_t>(u->numberio) : std::nullopt;
  bool failed = false;
  for (uint64_t k = 0; h > 0 && (k + 1) * h <= u->bio.bytes; ++k) {
    const uint64_t at = off + k * h;
    const DeviceContent::Check c = file.content->Verify(at, h, numberio);
    if (c.fault == DeviceContent::Fault::kNone) continue;
    if (c.fault == DeviceContent::Fault::kChecksum && spec_.verify == "meta") continue;  // header only
    failed = true;
    const std::string at_text = absl::StrFormat(
        " at file %s offset %d, length %d (requested block: offset=%d, length=%d)", file.name, at - file.base_bytes, h,
        off - file.base_bytes, u->bio.bytes);
    switch (c.fault) {
      case DeviceContent::Fault::kMagic:
        Message(absl::StrCat("verify: bad magic header 0, wanted acca", at_text));
        break;
      case DeviceContent::Fault::kLength:
        Message(absl::StrCat("verify: bad header length ", c.found_len, ", wanted ", h, at_text));
        break;
      case DeviceContent::Fault::kNumberio:
        Message(absl::StrCat("verify: bad header numberio ", c.found_numberio, ", wanted ", *numberio, at_text));
        break;
      case DeviceContent::Fault::kChecksum:
        Message(absl::StrFormat("%.8s: verify failed at file %s offset %d, length %d (requested block: offset=%d, "
                                "length=%d, flags=%x)",
                                verify_name_, file.name, at - file.base_bytes, h, off - file.base_bytes, u->bio.bytes,
                                u->ver_list ? 0x88 : 0x8));
        break;
      case DeviceContent::Fault::kNone:
        break;
    }
    if (c.fault != DeviceContent::Fault::kChecksum || spec_.verify_fatal) break;
  }
  if (failed && error_ == 0) {
    error_ = 84;  // EILSEQ
    stopping_ = terminated_ = true;
  }
}

void JobThread::CompleteMedium(IoU* u, MediumContent& m) {
  if (u->error) return;
  const uint64_t sector = u->bio.sector;
  const uint64_t count = u->bio.bytes >> model::kSectorShift;
  const bool sg = spec_.ioengine == workload::IoEngine::kSg;
  if (u->dir == stats::Dir::kTrim) {
    m.Write(sector, count, MediumContent::kZero);  // unmapped blocks read as zeroes
    return;
  }
  if (u->dir != stats::Dir::kWrite) return;
  const workload::SgWriteMode mode = spec_.sg_write_mode;
  const uint64_t id = config_.data_id.has_value() ? *config_.data_id : m.UniqueId();
  if (sg && IsSgVerify(mode)) {
    if (mode == workload::SgWriteMode::kVerifyBytchk00) return;  // the medium only, no data compared
    const std::optional<uint64_t> bad = m.Compare(sector, count, id);
    if (!bad.has_value() || error_ != 0) return;
    // CHECK CONDITION, MISCOMPARE: SG_INFO_CHECK, so fio's sg engine sets
    // EIO and td_verror(fio_sgio_doio); io_completed logs the io_u.
    const JobFile& file = config_.files[u->file];
    Message(absl::StrCat("fio: io_u error on file ", file.name, ": Input/output error: write offset=",
                         (u->bio.sector << model::kSectorShift) - file.base_bytes, ", buflen=", u->bio.bytes,
                         " (blklab: VERIFY miscompare at LBA ", *bad - (file.base_bytes >> model::kSectorShift),
                         ")"));
    error_ = 5;  // EIO
    verror_ = "file:engines/sg.c:545, func=fio_sgio_doio, error=Input/output error";
    stopping_ = terminated_ = true;
    return;
  }
  const uint64_t written = sg && mode == workload::SgWriteMode::kWriteSameNdob ? MediumContent::kZero : id;
  if (!m.Write(sector, count, written)) {
    kernel_.Fail(absl::ResourceExhaustedError(absl::StrCat(
        "job '", spec_.name, "': the simulated ", config_.files[u->file].name, "'s content would need more than ",
        MediumContent::kMaxExtents, " extents; write less (size=) or use buffer_pattern=")));
  }
}

void JobThread::FinishStats() {
  finished_at_ = cpu().now();
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

void JobThread::OnEvent(uint32_t, uint64_t gen) {
  if (gen == wake_gen_ && thread_->sleeping()) thread_->Wake(kernel_.machine().sim().Now());
}

sim::Task JobThread::SleepUntil(sim::SimTime t) {
  co_await cpu().Sync();
  if (t <= cpu().now()) co_return;
  ++wake_gen_;
  kernel_.machine().sim().Schedule(t, this, 0, wake_gen_);
  while (cpu().now() < t) {
    co_await cpu().SleepMigratable();
    co_await cpu().Sync();
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
    co_await cpu().Sync();
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
      co_await SleepUntil(cpu().now() + static_cast<int64_t>(spec_.flow_sleep_us) * sim::kNsPerUs);
      continue;
    }
    const sim::SimTime until = std::min(cpu().RunAheadLimit(), config_.end_at);
    cpu().ChargeRaw(fn_flow_, std::max<int64_t>(until - cpu().now(), 1));
  }
}

workload::Direction JobThread::RateDirection(workload::Direction picked) const {
  // fio's rate_ddir: keep the mix's pick if it is not ahead of its rate;
  // else switch to the other direction if that one is behind (and the mix
  // has it); else take whichever may issue first (Throttle then sleeps to
  // its slot). A direction without a rate is never ahead.
  const int d = static_cast<int>(picked);
  const int o = d ^ 1;
  const sim::SimTime now = cpu().now();
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
  if (slot > cpu().now()) {
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
    u->start_time = cpu().now();
  }
}

sim::Task JobThread::ThinkTime(bool issued) {
  // handle_thinktime: every thinktime_blocks IOs, quiesce, spin, then sleep.
  const bool counts = issued == (spec_.thinktime_blocks_type == workload::ThinktimeBlocksType::kIssue);
  if (spec_.thinktime_ns <= 0 || !counts) co_return;
  if (++think_count_ < std::max<uint64_t>(spec_.thinktime_blocks, 1)) co_return;
  think_count_ = 0;
  co_await Quiesce();
  if (spec_.thinktime_spin_ns > 0) cpu().Charge(fn_usec_spin_, spec_.thinktime_spin_ns);
  const int64_t left = spec_.thinktime_ns - spec_.thinktime_spin_ns;
  if (left > 0) co_await SleepUntil(cpu().now() + left);
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
    if (has_rate_) co_await Throttle(u);
    queued_.push_back(u);
    sync_pending_ = SyncDue(u);
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
  const sim::SimTime now = cpu().now();
  for (uint32_t i = 0; i < n; ++i) {
    IoU* u = ctx_.completed.front();
    ctx_.completed.pop_front();
    cpu().Charge(fn_io_completed_, user_complete_ns_);
    if (verify_ || config_.files[u->file].content != nullptr) CompleteVerify(u);
    if (MediumContent* m = config_.files[u->file].medium; m != nullptr) CompleteMedium(u, *m);
    last_reaped_read_ = u->dir == stats::Dir::kRead;
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
    if (has_rate_) co_await Throttle(u);
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
