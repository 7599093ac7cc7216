#include "engine/job/t_io_uring_thread.h"

#include <algorithm>
#include <bit>
#include <string>
#include <utility>

namespace blklab::job {

namespace {
// The fio job the engine models see: io_uring (or libaio / pvsync2) with the
// tool's flags and depth.
workload::JobSpec EngineSpec(const workload::TioUringSpec& s) {
  workload::JobSpec j;
  j.name = "t/io_uring";
  j.ioengine = s.aio ? workload::IoEngine::kLibaio
               : s.use_sync ? workload::IoEngine::kPvsync2
                            : workload::IoEngine::kIoUring;
  j.ioengine_name = s.aio ? "libaio" : s.use_sync ? "pvsync2" : "io_uring";
  j.iodepth = static_cast<uint32_t>(std::max(s.depth, 1));
  j.engine_flags.hipri = s.polled && !s.aio;
  j.engine_flags.fixedbufs = s.fixedbufs && !s.aio;
  j.engine_flags.registerfiles = s.register_files && !s.aio;
  return j;
}
}  // namespace

TioUringThread::TioUringThread(model::Kernel& kernel, const TioUringThreadConfig& config)
    : kernel_(kernel),
      config_(config),
      spec_(*config.spec),
      engine_spec_(EngineSpec(*config.spec)),
      cpu_(kernel.machine().cpu(config.cpu)),
      thread_(std::make_unique<sim::Thread>(kernel.machine(), "io_uring/" + std::to_string(config.index),
                                            config.cpu)),
      ctx_{kernel, *thread_, config.files.empty() ? nullptr : config.files[0].queue, engine_spec_, {}, {}},
      rng_(config.seed, sim::RngStreamId::kOffset, static_cast<uint64_t>(config.index) + 1) {
  const uint32_t depth = static_cast<uint32_t>(std::max(spec_.depth, 1));
  io_us_.resize(depth);
  for (uint32_t i = 0; i < depth; ++i) {
    io_us_[i].bio.owner = this;
    io_us_[i].bio.cookie = i;
    free_.push_back(&io_us_[depth - 1 - i]);
  }
  prepped_.reserve(depth);
  ctx_.completed.Reset(depth);
  for (const TioUringFile& f : config.files) {
    if (std::find(ctx_.queues.begin(), ctx_.queues.end(), f.queue) == ctx_.queues.end()) {
      ctx_.queues.push_back(f.queue);
    }
    // max_blocks = size / bs, less one; offsets cover [0, max_blocks - 1).
    const uint64_t blocks = f.size_bytes / static_cast<uint64_t>(std::max(spec_.bs, 1));
    max_blocks_.push_back(blocks > 1 ? blocks - 1 : 1);
  }
  pending_.assign(config.files.size(), 0);
  cur_off_.assign(config.files.size(), 0);
  const uint32_t nfiles = static_cast<uint32_t>(std::max<size_t>(config.files.size(), 1));
  file_depth_ = (depth + nfiles - 1) / nfiles;
  if (spec_.stats) {
    const uint32_t per = depth / static_cast<uint32_t>(std::max(spec_.batch_submit, 1));
    clock_batch_.assign(std::max<uint32_t>(std::bit_ceil(std::max<uint32_t>(per, 1)), 2), 0);
  }
  auto& r = kernel.machine().functions();
  fn_user_ = r.Intern("t/io_uring:submitter_fn", /*user=*/true);
  fn_enter_ = r.Intern("__x64_sys_io_uring_enter");
  fn_fget_ = r.Intern("fget");
  engine_ = MakeIoEngine(ctx_);
}

void TioUringThread::Start() { thread_->Start(Main(), 0); }

uint64_t TioUringThread::NextOffset(uint32_t file) {
  const uint64_t bs = static_cast<uint64_t>(spec_.bs);
  if (spec_.random_io) {
    const uint64_t span = max_blocks_[file] > 1 ? max_blocks_[file] - 1 : 1;
    return rng_.UniformBelow(span) * bs;
  }
  const uint64_t off = cur_off_[file];
  cur_off_[file] += bs;
  if (cur_off_[file] + bs > config_.files[file].size_bytes) cur_off_[file] = 0;
  return off;
}

void TioUringThread::Prep(uint32_t n) {
  // init_io per SQE: file choice, offset, the SQE's fields.
  const auto& c = kernel_.costs();
  const bool polled = engine_->polled();
  for (uint32_t i = 0; i < n; ++i) {
    IoU* u = free_.back();
    free_.pop_back();
    uint32_t f = 0;
    if (config_.files.size() > 1) {
      f = cur_file_;
      if (pending_[f] >= file_depth_) {
        cur_file_ = (cur_file_ + 1) % static_cast<uint32_t>(config_.files.size());
        f = cur_file_;
      }
    }
    u->file = f;
    u->bio.op = model::ReqOp::kRead;
    if (!config_.files.empty()) {  // -N1 needs no file
      ++pending_[f];
      u->queue = config_.files[f].queue;
      u->bio.sector = NextOffset(f) >> model::kSectorShift;
    }
    u->bio.bytes = static_cast<uint32_t>(spec_.bs);
    u->bio.bi_next = nullptr;
    u->bio.polled = polled;
    u->bio.nowait = polled;
    u->start_time = cpu_.now();
    u->state = IoU::State::kQueued;
    u->tag = clock_batch_.empty() || cpu_.now() < config_.stats_from ? 0 : clock_index_;
    cpu_.Charge(fn_user_, c.t_io_uring_per_io / 2);
    prepped_.push_back(u);
  }
  ctx_.in_flight += n;
  if (!clock_batch_.empty()) {
    // One rdtsc for the batch, then the next slot.
    clock_batch_[clock_index_] = cpu_.now();
    clock_index_ = (clock_index_ + 1) & static_cast<uint32_t>(clock_batch_.size() - 1);
  }
}

void TioUringThread::Reap() {
  // One pass over the CQ ring from user space.
  const auto& c = kernel_.costs();
  const sim::SimTime now = cpu_.now();
  uint32_t n = 0;
  uint32_t group_tag = 0, group_len = 0;
  auto flush_group = [&]() {
    if (group_len > 0 && group_tag != 0) {
      latency_.AddToBucket(stats::LatencyHistogram::BucketIndex(static_cast<uint64_t>(now - clock_batch_[group_tag])), group_len);
    }
    group_len = 0;
  };
  while (!ctx_.completed.empty()) {
    IoU* u = ctx_.completed.front();
    ctx_.completed.pop_front();
    cpu_.Charge(fn_user_, c.t_io_uring_per_io - c.t_io_uring_per_io / 2);
    if (!pending_.empty()) --pending_[u->file];
    if (!clock_batch_.empty()) {
      if (u->tag != group_tag) flush_group();
      group_tag = u->tag;
      ++group_len;
    }
    u->state = IoU::State::kFree;
    free_.push_back(u);
    ++n;
  }
  if (!clock_batch_.empty()) flush_group();
  ctx_.in_flight -= n;
  reaps_ += n;
}

sim::Task TioUringThread::Main() {
  const uint32_t depth = static_cast<uint32_t>(std::max(spec_.depth, 1));
  const uint32_t batch_submit = static_cast<uint32_t>(spec_.batch_submit);
  const uint32_t batch_complete = static_cast<uint32_t>(spec_.batch_complete);
  const auto& c = kernel_.costs();
  for (;;) {
    co_await cpu_.Sync();
    if (cpu_.now() >= config_.end_at) break;
    if (prepped_.empty() && ctx_.in_flight < depth) {
      Prep(spec_.use_sync ? 1 : std::min(depth - ctx_.in_flight, batch_submit));
    }
    const uint32_t to_submit = static_cast<uint32_t>(prepped_.size());
    const uint32_t to_wait =
        to_submit > 0 && ctx_.in_flight + to_submit <= depth ? 0 : std::min(ctx_.in_flight + to_submit, batch_complete);
    if (spec_.use_sync) {
      // preadv2 of one IO; the tool counts it as done and as a call, never
      // as a reap.
      co_await engine_->Commit(prepped_);
      prepped_.clear();
      ++done_;
      ++calls_;
      co_await cpu_.Sync();
      const uint64_t reaps = reaps_;
      Reap();
      reaps_ = reaps;
      continue;
    }
    if (spec_.nop) {
      // IORING_OP_NOP: the enter issues and completes each SQE in place.
      cpu_.Charge(fn_enter_, c.syscall_entry_exit);
      for (IoU* u : prepped_) {
        cpu_.Charge(fn_enter_, c.io_uring_issue_sqe + c.io_uring_cqe_post);
        ctx_.Post(u);
      }
      done_ += to_submit;
      prepped_.clear();
      ++calls_;
      Reap();
      continue;
    }
    // io_uring_enter(to_submit, to_wait, GETEVENTS if waiting); legacy aio:
    // io_submit, then io_getevents(to_wait) as a call of its own.
    if (!spec_.register_ring && !spec_.aio) cpu_.Charge(fn_fget_, c.fget_fput);
    if (to_submit > 0) {
      co_await engine_->Commit(prepped_);
      if (!spec_.aio) done_ += to_submit;
      prepped_.clear();
      if (spec_.aio) ++calls_;
      if (to_wait > 0) co_await engine_->GetEvents(to_wait, ctx_.in_flight, /*in_call=*/!spec_.aio);
    } else if (to_wait > 0) {
      co_await engine_->GetEvents(to_wait, ctx_.in_flight, /*in_call=*/false);
    }
    if (!spec_.aio || to_wait > 0) ++calls_;
    co_await cpu_.Sync();
    const uint64_t before = reaps_;
    Reap();
    if (spec_.aio) done_ += reaps_ - before;  // aio counts completions
  }
  // The tool exits without draining; the model lets what is in flight end
  // so that no request is left behind.
  co_await cpu_.Sync();
  finished_at_ = cpu_.now();
  finished_ = true;
  while (ctx_.in_flight > static_cast<uint32_t>(prepped_.size())) {
    co_await engine_->GetEvents(1, ctx_.in_flight, /*in_call=*/false);
    co_await cpu_.Sync();
    Reap();
  }
  exited_at_ = cpu_.now();
  exited_ = true;
}

void TioUringThread::BioEndio(sim::Cpu& cpu, model::Bio* bio, model::BlkStatus status) {
  IoU* u = &io_us_[bio->cookie];
  u->error = status != model::BlkStatus::kOk;
  engine_->Complete(cpu, u, status);
}

}  // namespace blklab::job
