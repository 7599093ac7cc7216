#include "engine/model/blk_mq.h"

#include <algorithm>
#include <utility>

namespace blklab::model {

namespace {
constexpr uint32_t kBlkMaxRequestCount = 32;  // BLK_MAX_REQUEST_COUNT: plug flushes at 32
constexpr int kCpuWorkBatch = 8;              // BLK_MQ_CPU_WORK_BATCH
constexpr int64_t kResourceDelayNs = 3 * sim::kNsPerMs;  // BLK_MQ_RESOURCE_DELAY
constexpr int kCtxPerMapWord = 8;             // ctx_map: 8 bits per word
constexpr int64_t kBudgetDelayNs = 3 * sim::kNsPerMs;    // BLK_MQ_BUDGET_DELAY
// blk_mq_do_dispatch_sched gives up the CPU after a while (need_resched or
// about 1 s in the kernel); the model after this many productive rounds.
constexpr int kMaxSchedRounds = 64;
constexpr int64_t kRqTimeoutNs = 30 * sim::kNsPerSec;     // rq_timeout default (30 s)
constexpr int64_t kBlkMaxTimeoutNs = 5 * sim::kNsPerSec;  // BLK_MAX_TIMEOUT
}  // namespace

Ctx::Ctx(Kernel& kernel, const std::string& qname, int cpu)
    : cpu_(cpu),
      lock_(kernel.machine(), qname + ":ctx->lock", kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {}

Hctx::Hctx(Kernel& kernel, RequestQueue* q, uint32_t queue_num, Tags* tags)
    : q_(q),
      queue_num_(queue_num),
      tags_(tags),
      lock_(kernel.machine(), q->name() + ":hctx->lock", kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()),
      run_work_(this) {}

sim::Task Hctx::RunWork::Run(sim::Cpu& cpu) {
  // blk_mq_run_work_fn -> __blk_mq_run_hw_queue
  co_await hctx_->q_->DispatchRequests(cpu, hctx_);
}

RequestQueue::RequestQueue(Kernel& kernel, std::string name, TagSet& set, BlkMqDriver* driver,
                           const QueueConfig& config)
    : kernel_(kernel),
      name_(std::move(name)),
      set_(set),
      driver_(driver),
      config_(config),
      done_softirq_(this),
      completion_ipi_(this),
      timeout_irq_(this),
      timeout_work_(this) {
  set.AddQueue();
  timeout_timer_.Init(&kernel.machine(), 0, &timeout_irq_, 0);
  fn_timeout_timer_ = kernel.Intern("blk_rq_timed_out_timer");
  fn_timeout_work_ = kernel.Intern("blk_mq_timeout_work");
  fn_busy_iter_ = kernel.Intern("bt_iter");
  fn_find_and_get_req_ = kernel.Intern("blk_mq_find_and_get_req");
  fn_for_each_set_ = kernel.Intern("blk_mq_queue_tag_busy_iter");
  fn_check_expired_ = kernel.Intern("blk_mq_check_expired");
  const int ncpus = kernel.machine().num_cpus();
  for (uint32_t i = 0; i < set.nr_hw_queues(); ++i) {
    hctxs_.push_back(std::make_unique<Hctx>(kernel, this, i, &set.tags(i)));
  }
  for (uint32_t i = set.config().nr_hw_queues; i < set.nr_hw_queues(); ++i) {
    hctxs_[i]->is_poll_ = true;
  }
  for (int c = 0; c < ncpus; ++c) {
    auto ctx = std::make_unique<Ctx>(kernel, name_, c);
    for (int type = 0; type < 2; ++type) {
      Hctx* h = hctxs_[set.MapQueue(c, type == 1)].get();
      ctx->hctx_[type] = h;
      if (type == 1 && h == ctx->hctx_[0]) break;  // no poll queues: one map
      ctx->index_hw_[type] = static_cast<uint32_t>(h->ctxs_.size());
      h->ctxs_.push_back(ctx.get());
      h->cpumask_.push_back(c);
    }
    ctxs_.push_back(std::move(ctx));
  }
  for (auto& h : hctxs_) {
    if (h->cpumask_.empty()) h->cpumask_.push_back(0);
  }
  if (config_.scheduler == Elevator::kMqDeadline) {
    // blk_mq_init_sched: nr_requests scheduler tags per hctx, or one
    // queue-wide set when the host shares its tags (5.16+ sched_shared_tags).
    dd_ = std::make_unique<DeadlineSched>(kernel, name_, config_.deadline);
    const uint32_t depth = config_.nr_requests > 0 ? config_.nr_requests
                                                   : 2 * std::min<uint32_t>(set.config().queue_depth, 128);
    const size_t n = set.config().hctx_shared ? 1 : hctxs_.size();
    for (size_t i = 0; i < n; ++i) {
      sched_tags_.push_back(std::make_unique<Tags>(kernel, name_ + ":sched_tags->lock", depth));
      sched_tags_.back()->InitAsSchedTags();
    }
    for (size_t i = 0; i < hctxs_.size(); ++i) {
      hctxs_[i]->sched_tags_ = sched_tags_[set.config().hctx_shared ? 0 : i].get();
    }
  }
  for (auto& h : hctxs_) {
    const size_t words = (h->ctxs_.size() + kCtxPerMapWord - 1) / kCtxPerMapWord;
    h->ctx_map_.assign(std::max<size_t>(words, 1), 0);
    h->ctx_map_lines_ = std::vector<sim::CacheLine>(std::max<size_t>(words, 1));
  }
}

// --- accounting -------------------------------------------------------------

void RequestQueue::AccountStart(sim::Cpu& cpu, Request* rq) {
  if (config_.iostats) {
    cpu.Charge(kernel_.fn.blk_account_io_start, kernel_.costs().blk_account_io_start);
    // update_io_ticks: a cmpxchg on the shared part stamp, at most once per jiffy.
    if (cpu.now() >= next_part_stamp_) {
      const int64_t jiffy = sim::kNsPerSec / kernel_.knobs().hz;
      next_part_stamp_ = (cpu.now() / jiffy + 1) * jiffy;
      cpu.Charge(kernel_.fn.blk_account_io_start,
                 part_stamp_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    }
  }
  if (disk_.in_flight++ == 0) disk_.busy_since = cpu.now();
}

void RequestQueue::AccountDone(sim::Cpu& cpu, Request* rq, sim::SimTime now) {
  if (config_.iostats) {
    cpu.Charge(kernel_.fn.blk_account_io_done, kernel_.costs().blk_account_io_done);
  }
  const int dir = rq->op == ReqOp::kWrite ? 1 : 0;
  disk_.ios[dir] += 1;
  disk_.sectors[dir] += rq->bytes >> kSectorShift;
  disk_.ticks_ns[dir] += now - rq->alloc_time_ns;
  disk_.in_queue_ns += now - rq->alloc_time_ns;
  if (--disk_.in_flight == 0) disk_.io_ticks_ns += now - disk_.busy_since;
}

void RequestQueue::FinishDiskStats(sim::SimTime t) {
  if (disk_.in_flight > 0 && t > disk_.busy_since) {
    disk_.io_ticks_ns += t - disk_.busy_since;
    disk_.busy_since = t;
  }
}

std::vector<const Request*> RequestQueue::StuckRequests(sim::SimTime now, int64_t age_ns) const {
  std::vector<const Request*> out;
  const uint32_t nr_tag_objs = set_.config().hctx_shared ? 1 : set_.nr_hw_queues();
  for (uint32_t i = 0; i < nr_tag_objs; ++i) {
    const Tags& t = set_.tags(i);
    for (uint32_t tag = 0; tag < t.nr_tags(); ++tag) {
      const Request* rq = t.rq(tag);
      if (rq != nullptr && rq->q == this && now - rq->alloc_time_ns > age_ns) out.push_back(rq);
    }
  }
  for (const auto& st : sched_tags_) {
    for (uint32_t tag = 0; tag < st->nr_tags(); ++tag) {
      const Request* rq = st->rq(tag);
      // Requests holding a driver tag were listed above.
      if (rq != nullptr && rq->tag == kNoTag && now - rq->alloc_time_ns > age_ns) out.push_back(rq);
    }
  }
  return out;
}

// --- submission -------------------------------------------------------------

void RequestQueue::InitRequest(sim::Cpu& cpu, Request* rq, Bio* bio, Hctx* hctx, Plug* plug) {
  // blk_mq_rq_ctx_init + blk_mq_bio_to_request
  rq->state = Request::State::kAllocated;
  rq->q = this;
  rq->mq_hctx = hctx;
  rq->mq_ctx = ctxs_[cpu.id()].get();
  rq->op = bio->op;
  rq->sector = bio->sector;
  rq->bytes = bio->bytes;
  rq->bio = rq->biotail = bio;
  rq->nr_bios = 1;
  bio->bi_next = nullptr;
  rq->alloc_time_ns = cpu.now();
  rq->start_time_ns = 0;
  if (NeedTimestamp()) {
    if (kernel_.knobs().config_blk_cgroup && kernel_.knobs().cgroup_inherit_bio_start_time) {
      rq->start_time_ns = bio->bi_issue;  // RC2 patch 2: no extra timestamp
    } else if (plug != nullptr && kernel_.knobs().plug_cache_time) {
      // blk_time_get_ns: one clock read per plug, reused while plugged.
      if (plug->cached_time_ns < 0) plug->cached_time_ns = kernel_.Ktime(cpu);
      rq->start_time_ns = plug->cached_time_ns;
    } else {
      rq->start_time_ns = kernel_.Ktime(cpu);
    }
  }
  ++allocated_;
}

bool RequestQueue::AttemptPlugMerge(sim::Cpu& cpu, Plug* plug, Bio* bio) {
  // blk_attempt_plug_merge: only the last request of the plug, lock-free.
  if (plug == nullptr || plug->mq_list.empty() || config_.nomerges == 2) return false;
  cpu.Charge(kernel_.fn.blk_attempt_plug_merge, kernel_.costs().plug_merge);
  Request* last = plug->mq_list.back();
  if (last->q != this || last->op != bio->op) return false;
  if (last->sector + (last->bytes >> kSectorShift) != bio->sector) return false;
  if (last->bytes + bio->bytes > 512 * 1024) return false;  // max_sectors_kb default 512 KiB
  last->biotail->bi_next = bio;
  last->biotail = bio;
  bio->bi_next = nullptr;
  last->bytes += bio->bytes;
  ++last->nr_bios;
  disk_.merges[bio->op == ReqOp::kWrite ? 1 : 0] += 1;
  kernel_.Count(Counter::k_plug_merge);
  return true;
}

Request* RequestQueue::AllocRequestFast(sim::Cpu& cpu, Bio* bio, Plug* plug) {
  // blk_mq_get_cached_request, then __blk_mq_alloc_requests with a free tag.
  // REQUIRES: the caller has Synced (the sbitmap words are shared).
  Hctx* hctx = MapQueue(cpu.id(), bio->polled);
  if (plug != nullptr && !plug->cached_rqs.empty() && plug->cached_rqs.front()->mq_hctx == hctx) {
    Request* rq = plug->cached_rqs.pop_front();
    InitRequest(cpu, rq, bio, hctx, plug);
    return rq;
  }
  const auto& c = kernel_.costs();
  cpu.Charge(kernel_.fn.percpu_ref_get, c.percpu_ref);  // bio_queue_enter
  Tags& tags = AllocTags(hctx);
  SbitmapQueue& bt = tags.bitmap_tags();
  if (!dd_ && SharedTags()) {
    // blk_mq_tag_busy + hctx_may_queue (driver tag taken at allocation).
    TagBusy(cpu, hctx);
    if (!MayQueue(cpu, hctx)) return nullptr;
  }
  // Batched allocation (5.16+): with a plug expecting several IOs, no
  // scheduler and no shared tags, take several tags with one atomic.
  if (plug != nullptr && plug->nr_ios > 1 && kernel_.knobs().plug_request_cache &&
      config_.scheduler == Elevator::kNone && set_.nr_queues() == 1 && !set_.config().hctx_shared) {
    uint32_t want = std::min<uint32_t>(plug->nr_ios, 64);
    plug->nr_ios = 1;
    uint32_t bits[64];
    const uint32_t got = bt.GetBatch(cpu, want, bits);
    if (got > 0) {
      for (uint32_t i = 1; i < got; ++i) {
        Request* extra = tags.static_rq(bits[i]);
        tags.set_rq(extra->tag, extra);
        extra->mq_hctx = hctx;
        extra->q = this;
        extra->alloc_time_ns = cpu.now();
        extra->state = Request::State::kAllocated;
        plug->cached_rqs.push_back(extra);
      }
      Request* rq = tags.static_rq(bits[0]);
      tags.set_rq(rq->tag, rq);
      InitRequest(cpu, rq, bio, hctx, plug);
      return rq;
    }
    return nullptr;
  }
  const int bit = bt.Get(cpu);
  if (bit < 0) return nullptr;
  Request* rq = tags.static_rq(static_cast<uint32_t>(bit));
  tags.set_rq(static_cast<uint32_t>(bit), rq);
  if (!dd_ && SharedTags()) IncActive(cpu, hctx);
  InitRequest(cpu, rq, bio, hctx, plug);
  return rq;
}

sim::Task RequestQueue::GetRequestSlow(sim::Cpu& cpu, Bio* bio, Plug* plug, Request** out) {
  // blk_mq_get_tag slow path: kick the hardware queue, retry, then sleep on
  // one of the sbitmap wait queues until a batch of tags is freed.
  *out = nullptr;
  if (bio->nowait) co_return;
  const auto& c = kernel_.costs();
  Hctx* hctx = MapQueue(cpu.id(), bio->polled);
  Tags& tags = AllocTags(hctx);
  SbitmapQueue& bt = tags.bitmap_tags();
  const bool fair = !dd_ && SharedTags();
  for (;;) {
    cpu.Charge(kernel_.fn.blk_mq_get_tag, c.sbitmap_get);
    sim::WaitQueue& wq = bt.NextWaitQueue(hctx->wait_index);
    co_await RunHwQueue(cpu, hctx);
    co_await cpu.Sync();
    int bit = fair && !MayQueue(cpu, hctx) ? -1 : bt.Get(cpu);
    if (bit < 0) {
      bt.PrepareToWait();
      bit = fair && !MayQueue(cpu, hctx) ? -1 : bt.Get(cpu);
      if (bit < 0) {
        // schedule() flushes the plug first (sched_submit_work).
        if (plug != nullptr && !plug->mq_list.empty()) {
          bt.FinishWait();
          co_await FlushPlug(cpu, plug, /*from_schedule=*/true);
          co_await cpu.Sync();
          continue;
        }
        kernel_.Count(Counter::k_tag_sleep);
        cpu.Charge(kernel_.fn.io_schedule, c.line_read_hit);
        co_await wq.Wait(cpu);
        co_await cpu.Sync();
        wq.Remove(cpu.current_thread());
        bt.FinishWait();
        // Woken: the submitting CPU is unchanged (threads are pinned).
        continue;
      }
      bt.FinishWait();
    }
    Request* rq = tags.static_rq(static_cast<uint32_t>(bit));
    tags.set_rq(static_cast<uint32_t>(bit), rq);
    if (fair) IncActive(cpu, hctx);
    InitRequest(cpu, rq, bio, hctx, plug);
    *out = rq;
    co_return;
  }
}

sim::Task RequestQueue::SubmitBio(sim::Cpu& cpu, Bio* bio, Plug* plug) {
  const auto& c = kernel_.costs();
  const KernelKnobs& k = kernel_.knobs();
  kernel_.Count(Counter::k_submit_bio);
  // submit_bio -> submit_bio_noacct: checks and the cgroup / throttle hooks.
  if (k.config_blk_cgroup) {
    cpu.Charge(kernel_.fn.bio_associate_blkg, c.blkg_associate);
    bio->bi_issue = kernel_.Ktime(cpu);  // blkcg_bio_issue_init
  }
  cpu.Charge(kernel_.fn.submit_bio_noacct, c.submit_bio_noacct);
  if (k.config_blk_cgroup) {
    if (!k.throttle_fast_path_inline) cpu.Charge(kernel_.fn.blk_throtl_bio, c.blk_throtl_bio_call);
    cpu.Charge(kernel_.fn.blk_cgroup_bio_start, c.blk_cgroup_bio_start);
  }
  cpu.Charge(kernel_.fn.blk_mq_submit_bio, c.blk_mq_submit_bio);

  // Merges: the plug's last request, then the software queue (none).
  if (AttemptPlugMerge(cpu, plug, bio)) co_return;
  Hctx* hctx = MapQueue(cpu.id(), bio->polled);
  Ctx* ctx = ctxs_[cpu.id()].get();
  if (config_.nomerges == 0 && config_.scheduler == Elevator::kNone) {
    co_await cpu.Sync();
    if (!ctx->rq_list_.empty()) {
      // blk_bio_list_merge under ctx->lock, at most the last 8 requests.
      co_await ctx->lock_.Lock(cpu);
      size_t scanned = std::min<size_t>(ctx->rq_list_.size(), 8);
      cpu.Charge(kernel_.fn.blk_mq_attempt_bio_merge,
                 c.sw_queue_merge_base + c.sw_queue_merge_per_rq * static_cast<int64_t>(scanned));
      co_await cpu.Sync();
      ctx->lock_.Unlock(cpu);
    }
  }
  if (dd_ && config_.nomerges == 0) {
    // blk_mq_sched_bio_merge -> dd_bio_merge under dd->lock.
    co_await cpu.Sync();
    Request* merged = nullptr;
    co_await dd_->BioMerge(cpu, bio, &merged);
    if (merged != nullptr) {
      disk_.merges[bio->op == ReqOp::kWrite ? 1 : 0] += 1;
      kernel_.Count(Counter::k_sched_merge);
      co_return;
    }
  }

  co_await cpu.Sync();
  Request* rq = AllocRequestFast(cpu, bio, plug);
  if (rq == nullptr) co_await GetRequestSlow(cpu, bio, plug, &rq);
  if (rq == nullptr) {
    // REQ_NOWAIT and no tag: the bio ends with BLK_STS_AGAIN.
    bio->owner->BioEndio(cpu, bio, BlkStatus::kAgain);
    co_return;
  }
  hctx = rq->mq_hctx;
  AccountStart(cpu, rq);

  if (plug != nullptr) {
    // blk_add_rq_to_plug: flush first when the plug is full or spans queues.
    cpu.Charge(kernel_.fn.blk_add_rq_to_plug, c.plug_add_flush_per_rq);
    if (plug->rq_count >= kBlkMaxRequestCount) {
      co_await FlushPlug(cpu, plug, false);
    }
    if (plug->q != nullptr && plug->q != this) plug->multiple_queues = true;
    plug->q = this;
    plug->mq_list.push_back(rq);
    ++plug->rq_count;
    co_return;
  }
  co_await cpu.Sync();
  if (config_.scheduler != Elevator::kNone ||
      (hctx->dispatch_busy_ != 0 && set_.nr_hw_queues() == 1)) {
    co_await InsertAndRun(cpu, rq, /*run_async=*/true);
    co_return;
  }
  if (!hctx->stopped_) {
    const BlkStatus status = IssueDirectly(cpu, rq, /*last=*/true);
    if (status == BlkStatus::kResource || status == BlkStatus::kDevResource) {
      co_await IssueDirectlyBusy(cpu, rq);
    }
    co_return;
  }
  co_await InsertAndRun(cpu, rq, /*run_async=*/false);
}

sim::Task RequestQueue::InsertRequestsSched(sim::Cpu& cpu, RequestList& list, Hctx* hctx,
                                            bool run_async) {
  // blk_mq_insert_request(s) -> dd_insert_requests, then blk_mq_run_hw_queue.
  co_await dd_->InsertRequests(cpu, list);
  co_await cpu.Sync();
  if (run_async) {
    RunHwQueueAsync(cpu, hctx);
  } else {
    co_await RunHwQueue(cpu, hctx);
  }
}

sim::Task RequestQueue::InsertAndRun(sim::Cpu& cpu, Request* rq, bool run_async) {
  if (dd_) {
    RequestList one;
    one.push_back(rq);
    co_await InsertRequestsSched(cpu, one, rq->mq_hctx, run_async);
    co_return;
  }
  // blk_mq_insert_request (none): onto the ctx list, mark the ctx pending.
  Ctx* ctx = rq->mq_ctx;
  co_await ctx->lock_.Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             ctx->list_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ctx->rq_list_.push_back(rq);
  MarkCtxPending(cpu, ctx, rq->mq_hctx);
  kernel_.Count(Counter::k_sw_queue_insert);
  co_await cpu.Sync();
  ctx->lock_.Unlock(cpu);
  if (run_async) {
    RunHwQueueAsync(cpu, rq->mq_hctx);
  } else {
    co_await RunHwQueue(cpu, rq->mq_hctx);
  }
}

void RequestQueue::MarkCtxPending(sim::Cpu& cpu, Ctx* ctx, Hctx* h) {
  const int type = h == ctx->hctx_[0] ? 0 : 1;
  const uint32_t w = ctx->index_hw_[type] / kCtxPerMapWord;
  const uint64_t b = uint64_t{1} << (ctx->index_hw_[type] % kCtxPerMapWord);
  if (h->ctx_map_[w] & b) return;
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             h->ctx_map_lines_[w].Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  h->ctx_map_[w] |= b;
}

sim::Task RequestQueue::BypassInsert(sim::Cpu& cpu, Request* rq, bool at_head) {
  // blk_mq_request_bypass_insert: onto hctx->dispatch under hctx->lock.
  Hctx* h = rq->mq_hctx;
  co_await h->lock_.Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             h->dispatch_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  if (at_head) {
    h->dispatch_.push_front(rq);
  } else {
    h->dispatch_.push_back(rq);
  }
  kernel_.Count(Counter::k_dispatch_list_insert);
  co_await cpu.Sync();
  h->lock_.Unlock(cpu);
}

void RequestQueue::UpdateDispatchBusy(Hctx* hctx, bool busy) {
  // blk_mq_update_dispatch_busy: EWMA with weight 8, factor 4 (none only).
  if (config_.scheduler != Elevator::kNone) return;
  uint32_t ewma = hctx->dispatch_busy_;
  if (!ewma && !busy) return;
  ewma *= 7;
  if (busy) ewma += 1u << 4;
  ewma /= 8;
  hctx->dispatch_busy_ = ewma;
}

BlkStatus RequestQueue::IssueDirectly(sim::Cpu& cpu, Request* rq, bool last) {
  // blk_mq_try_issue_directly -> __blk_mq_issue_directly -> ->queue_rq.
  // REQUIRES: the caller has Synced and the hctx is not stopped.
  Hctx* hctx = rq->mq_hctx;
  cpu.Charge(kernel_.fn.rcu_read_lock, kernel_.costs().rcu_read_section);
  kernel_.Count(Counter::k_direct_issue);
  cpu.Charge(kernel_.fn.blk_mq_try_issue_directly, kernel_.costs().line_read_hit);
  // blk_mq_get_budget_and_tag: the driver tag is already held (none).
  if (driver_->has_budget() && !rq->budget_held) {
    if (!driver_->GetBudget(cpu, this)) {
      kernel_.Count(Counter::k_queue_rq_busy);
      return BlkStatus::kResource;
    }
    rq->budget_held = true;
  }
  kernel_.Count(Counter::k_queue_rq);
  const BlkStatus status = driver_->QueueRq(cpu, hctx, rq, last);
  switch (status) {
    case BlkStatus::kOk:
      UpdateDispatchBusy(hctx, false);
      break;
    case BlkStatus::kResource:
    case BlkStatus::kDevResource:
      kernel_.Count(Counter::k_queue_rq_busy);
      UpdateDispatchBusy(hctx, true);
      PutRqBudget(cpu, rq);
      break;
    default:
      EndRequest(cpu, rq, status);
      break;
  }
  return status;
}

sim::Task RequestQueue::IssueDirectlyBusy(sim::Cpu& cpu, Request* rq) {
  // The driver was busy: park the request on hctx->dispatch and run the queue.
  co_await BypassInsert(cpu, rq, /*at_head=*/false);
  co_await RunHwQueue(cpu, rq->mq_hctx);
}

sim::Task RequestQueue::FlushPlug(sim::Cpu& cpu, Plug* plug, bool from_schedule) {
  // blk_mq_flush_plug_list
  if (plug->mq_list.empty()) {
    if (!from_schedule && !plug->cached_rqs.empty() && plug->q != nullptr) {
      co_await cpu.Sync();
      plug->q->FreeCachedRequests(cpu, plug);
    }
    co_return;
  }
  RequestQueue* q = plug->mq_list.front()->q;
  Kernel& kernel = q->kernel_;
  kernel.Count(Counter::k_plug_flush);
  RequestList list;
  list.splice_tail(plug->mq_list);
  plug->rq_count = 0;
  const bool multiple = plug->multiple_queues;
  plug->multiple_queues = false;
  cpu.Charge(kernel.fn.blk_mq_flush_plug_list, kernel.costs().line_read_hit);
  if (!multiple && q->config_.scheduler == Elevator::kNone && !from_schedule) {
    // blk_mq_plug_issue_direct: each request tried directly, `last` on the final one.
    while (!list.empty()) {
      Request* rq = list.pop_front();
      cpu.Charge(kernel.fn.blk_add_rq_to_plug, kernel.costs().plug_add_flush_per_rq);
      co_await cpu.Sync();
      if (rq->mq_hctx->stopped_) {
        co_await q->InsertAndRun(cpu, rq, /*run_async=*/false);
        continue;
      }
      const BlkStatus st = q->IssueDirectly(cpu, rq, list.empty());
      if (st == BlkStatus::kResource || st == BlkStatus::kDevResource) {
        co_await q->IssueDirectlyBusy(cpu, rq);
        // The rest goes through the software queues.
        while (!list.empty()) {
          Request* r = list.pop_front();
          co_await r->q->InsertAndRun(cpu, r, /*run_async=*/true);
        }
        break;
      }
    }
  } else {
    // blk_mq_dispatch_plug_list: insert per queue, then run the queues.
    // With an elevator the whole run of one queue's requests goes in with
    // one dd_insert_requests and one (synchronous on unplug) queue run.
    while (!list.empty()) {
      RequestQueue* rq_q = list.front()->q;
      if (rq_q->dd_) {
        Hctx* h = list.front()->mq_hctx;
        RequestList batch;
        while (!list.empty() && list.front()->q == rq_q) batch.push_back(list.pop_front());
        co_await rq_q->InsertRequestsSched(cpu, batch, h, /*run_async=*/from_schedule);
        continue;
      }
      Request* rq = list.pop_front();
      co_await rq->q->InsertAndRun(cpu, rq, /*run_async=*/from_schedule);
    }
  }
  if (!from_schedule && !plug->cached_rqs.empty() && plug->q != nullptr) {
    co_await cpu.Sync();
    plug->q->FreeCachedRequests(cpu, plug);
  }
}

void RequestQueue::FreeCachedRequests(sim::Cpu& cpu, Plug* plug) {
  // blk_mq_free_plug_rqs: unused cached requests give their tags back.
  while (!plug->cached_rqs.empty()) {
    Request* rq = plug->cached_rqs.pop_front();
    Tags& tags = rq->mq_hctx->tags();
    tags.set_rq(rq->tag, nullptr);
    rq->state = Request::State::kIdle;
    tags.bitmap_tags().Clear(cpu, rq->tag);
  }
}

// --- queue runs and dispatch -----------------------------------------------

bool RequestQueue::HasPending(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_hctx_has_pending: dispatch list, ctx_map words, elevator.
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, hctx->dispatch_line_.Read(m, cpu.id(), c.line_read_hit));
  if (!hctx->dispatch_.empty()) return true;
  if (dd_ && dd_->HasWork(cpu)) return true;
  int64_t cost = 0;
  bool any = false;
  for (size_t w = 0; w < hctx->ctx_map_.size(); ++w) {
    cost += std::max<int64_t>(hctx->ctx_map_lines_[w].Read(m, cpu.id(), c.sbitmap_any_bit_set_per_word),
                              c.sbitmap_any_bit_set_per_word);
    if (hctx->ctx_map_[w] != 0) {
      any = true;
      break;
    }
  }
  cpu.Charge(kernel_.fn.sbitmap_any_bit_set, cost);
  return any;
}

int RequestQueue::NextCpu(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_hctx_next_cpu: a single queue runs where it is kicked; otherwise
  // round robin over the hctx's CPUs, moving on every 8 runs.
  if (set_.nr_hw_queues() == 1 || hctx->cpumask_.size() == 1) {
    return hctx->cpumask_.size() == 1 ? hctx->cpumask_[0] : cpu.id();
  }
  if (++hctx->next_cpu_batch_ >= kCpuWorkBatch) {
    hctx->next_cpu_batch_ = 0;
    hctx->next_cpu_index_ = (hctx->next_cpu_index_ + 1) % static_cast<int>(hctx->cpumask_.size());
  }
  return hctx->cpumask_[hctx->next_cpu_index_];
}

sim::Task RequestQueue::RunHwQueue(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_run_hw_queue(hctx, false)
  co_await cpu.Sync();
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, kernel_.costs().run_hw_queue_check);
  kernel_.Count(Counter::k_run_hw_queue);
  if (hctx->stopped_ || !HasPending(cpu, hctx)) co_return;
  const bool on_cpu = std::find(hctx->cpumask_.begin(), hctx->cpumask_.end(), cpu.id()) !=
                      hctx->cpumask_.end();
  if (on_cpu && !set_.config().blocking) {
    co_await DispatchRequests(cpu, hctx);
    co_return;
  }
  kernel_.Count(Counter::k_run_hw_queue_async);
  kernel_.kblockd().Queue(&cpu, &hctx->run_work_, NextCpu(cpu, hctx), 0, /*modify=*/true);
}

void RequestQueue::RunHwQueueAsync(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_run_hw_queue(hctx, true). REQUIRES: the caller has Synced.
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, kernel_.costs().run_hw_queue_check);
  kernel_.Count(Counter::k_run_hw_queue);
  if (hctx->stopped_ || !HasPending(cpu, hctx)) return;
  kernel_.Count(Counter::k_run_hw_queue_async);
  kernel_.kblockd().Queue(&cpu, &hctx->run_work_, NextCpu(cpu, hctx), 0, /*modify=*/true);
}

void RequestQueue::RunHwQueuesAsync(sim::Cpu& cpu) {
  // blk_mq_run_hw_queues(q, true). RC3's rejected shortcut returns early
  // when the queue has no elevator (and strands parked requests).
  if (kernel_.knobs().skip_run_queues_without_elevator && !dd_) return;
  for (auto& h : hctxs_) {
    if (!h->stopped_) RunHwQueueAsync(cpu, h.get());
  }
}

void RequestQueue::DelayRunHwQueue(sim::Cpu* cpu, Hctx* hctx, int64_t delay_ns) {
  kernel_.Count(Counter::k_run_hw_queue_delayed);
  const int target = cpu != nullptr ? NextCpu(*cpu, hctx) : hctx->cpumask_[0];
  kernel_.kblockd().Queue(cpu, &hctx->run_work_, target, delay_ns, /*modify=*/true);
}

void RequestQueue::DelayRunHwQueues(sim::Cpu* cpu, int64_t delay_ns) {
  // blk_mq_delay_run_hw_queues: a hctx whose run work is already pending
  // keeps its pending delay.
  for (auto& h : hctxs_) {
    if (h->stopped_ || h->run_work_.pending()) continue;
    DelayRunHwQueue(cpu, h.get(), delay_ns);
  }
}

void RequestQueue::StopHwQueues() {
  for (auto& h : hctxs_) h->stopped_ = true;
}

void RequestQueue::StartStoppedHwQueues(sim::Cpu* cpu) {
  for (auto& h : hctxs_) {
    if (!h->stopped_) continue;
    h->stopped_ = false;
    const int target = cpu != nullptr ? NextCpu(*cpu, h.get()) : h->cpumask_[0];
    kernel_.Count(Counter::k_run_hw_queue_async);
    kernel_.kblockd().Queue(cpu, &h->run_work_, target, 0, /*modify=*/true);
  }
}

sim::Task RequestQueue::FlushBusyCtxs(sim::Cpu& cpu, Hctx* hctx, RequestList& out) {
  // blk_mq_flush_busy_ctxs: for each pending ctx, splice its list under ctx->lock.
  for (size_t w = 0; w < hctx->ctx_map_.size(); ++w) {
    co_await cpu.Sync();
    uint64_t bits = hctx->ctx_map_[w];
    cpu.Charge(kernel_.fn.sbitmap_any_bit_set,
               hctx->ctx_map_lines_[w].Read(kernel_.machine(), cpu.id(),
                                            kernel_.costs().sbitmap_any_bit_set_per_word));
    while (bits != 0) {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      Ctx* ctx = hctx->ctxs_[w * kCtxPerMapWord + b];
      co_await ctx->lock_.Lock(cpu);
      cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
                 ctx->list_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
      // Only this hctx's requests (a ctx may also hold poll-queue requests).
      RequestList keep;
      while (!ctx->rq_list_.empty()) {
        Request* r = ctx->rq_list_.pop_front();
        if (r->mq_hctx == hctx) {
          out.push_back(r);
        } else {
          keep.push_back(r);
        }
      }
      ctx->rq_list_.splice_tail(keep);
      hctx->ctx_map_[w] &= ~(uint64_t{1} << b);
      cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
                 hctx->ctx_map_lines_[w].Write(kernel_.machine(), cpu.id(),
                                               kernel_.costs().atomic_local));
      co_await cpu.Sync();
      ctx->lock_.Unlock(cpu);
    }
  }
}

sim::Task RequestQueue::DispatchRequests(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_sched_dispatch_requests -> __blk_mq_sched_dispatch_requests (none).
  cpu.Charge(kernel_.fn.rcu_read_lock, kernel_.costs().rcu_read_section);
  co_await cpu.Sync();
  if (hctx->stopped_) co_return;
  RequestList list;
  if (!hctx->dispatch_.empty()) {
    co_await hctx->lock_.Lock(cpu);
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
               hctx->dispatch_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    list.splice_tail(hctx->dispatch_);
    co_await cpu.Sync();
    hctx->lock_.Unlock(cpu);
  }
  if (!list.empty()) {
    // Leftovers first; mark RESTART so a completion re-runs us.
    hctx->sched_restart_ = true;
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
               hctx->state_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    bool progress = false;
    co_await DispatchRqList(cpu, hctx, list, &progress);
    co_await cpu.Sync();
    if (!hctx->dispatch_.empty()) co_return;  // still busy: wait for a restart
  }
  if (dd_) {
    co_await DoDispatchSched(cpu, hctx);
    co_return;
  }
  // Then the software queues: all at once, or (dispatch_busy) one at a time
  // round robin (blk_mq_do_dispatch_ctx).
  co_await FlushBusyCtxs(cpu, hctx, list);
  if (list.empty()) co_return;
  if (hctx->dispatch_busy_ != 0) {
    while (!list.empty()) {
      RequestList one;
      one.push_back(list.pop_front());
      bool progress = false;
      co_await DispatchRqList(cpu, hctx, one, &progress);
      if (!progress || !one.empty()) {
        // Park the rest on hctx->dispatch behind what DispatchRqList left.
        co_await cpu.Sync();
        co_await hctx->lock_.Lock(cpu);
        hctx->dispatch_.splice_tail(list);
        co_await cpu.Sync();
        hctx->lock_.Unlock(cpu);
        break;
      }
    }
    co_return;
  }
  bool progress = false;
  co_await DispatchRqList(cpu, hctx, list, &progress);
}

sim::Task RequestQueue::DispatchRqList(sim::Cpu& cpu, Hctx* hctx, RequestList& list,
                                       bool* progress) {
  // blk_mq_dispatch_rq_list: per request blk_mq_prep_dispatch_rq (budget,
  // driver tag), then ->queue_rq.
  const auto& c = kernel_.costs();
  BlkStatus last_status = BlkStatus::kOk;
  uint32_t queued = 0;
  bool no_budget = false;
  bool no_tag = false;
  while (!list.empty()) {
    Request* rq = list.front();
    co_await cpu.Sync();
    if (driver_->has_budget() && !rq->budget_held) {
      if (!driver_->GetBudget(cpu, this)) {
        no_budget = true;
        break;
      }
      rq->budget_held = true;
    }
    if (rq->tag == kNoTag && !GetDriverTag(cpu, rq)) {
      // blk_mq_mark_tag_wait: not shared -> SCHED_RESTART; shared -> wait
      // on the tag space (blk_mq_dispatch_wake). Then retry once.
      if (!SharedTags() && !set_.config().hctx_shared) {
        hctx->sched_restart_ = true;
        cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
                   hctx->state_line_.Write(kernel_.machine(), cpu.id(), c.atomic_local));
      } else if (!hctx->on_dispatch_wait_) {
        hctx->on_dispatch_wait_ = true;
        hctx->tags().dispatch_waiters.push_back(hctx);
      }
      if (!GetDriverTag(cpu, rq)) {
        no_tag = true;
        break;
      }
    }
    list.pop_front();
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list, c.dispatch_rq_list_per_rq);
    kernel_.Count(Counter::k_queue_rq);
    last_status = driver_->QueueRq(cpu, hctx, rq, list.empty());
    if (last_status == BlkStatus::kResource || last_status == BlkStatus::kDevResource) {
      kernel_.Count(Counter::k_queue_rq_busy);
      list.push_front(rq);
      break;
    }
    if (last_status != BlkStatus::kOk) {
      EndRequest(cpu, rq, last_status);
    }
    ++queued;
  }
  *progress = queued > 0;
  if (list.empty()) {
    UpdateDispatchBusy(hctx, false);
    co_return;
  }
  // Leftovers: give their budgets back (blk_mq_release_budgets), commit what
  // was queued, park the rest on hctx->dispatch and decide who runs the
  // queue again.
  for (Request* r = list.front(); r != nullptr; r = r->next) PutRqBudget(cpu, r);
  if (queued > 0) driver_->CommitRqs(cpu, hctx);
  co_await hctx->lock_.Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
             hctx->dispatch_line_.Write(kernel_.machine(), cpu.id(), c.atomic_local));
  hctx->dispatch_.splice_head(list);
  kernel_.Count(Counter::k_dispatch_list_insert);
  co_await cpu.Sync();
  hctx->lock_.Unlock(cpu);
  UpdateDispatchBusy(hctx, true);
  const bool restart_marked = hctx->sched_restart_;
  const bool needs_resource = no_budget || last_status == BlkStatus::kResource;
  if (!restart_marked || (no_tag && !hctx->on_dispatch_wait_)) {
    // Somebody cleared SCHED_RESTART while we dispatched: run again now.
    RunHwQueueAsync(cpu, hctx);
  } else if (needs_resource) {
    DelayRunHwQueue(&cpu, hctx, kResourceDelayNs);
  }
  // BLK_STS_DEV_RESOURCE: the driver promises a re-run when it frees resources.
}

sim::Task RequestQueue::DoDispatchSched(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_do_dispatch_sched: loop while a round makes progress; newer
  // kernels stop after a while and queue the run again.
  for (int round = 0; round < kMaxSchedRounds; ++round) {
    bool progress = false;
    co_await DoDispatchSchedOnce(cpu, hctx, &progress);
    if (!progress) co_return;
  }
  co_await cpu.Sync();
  RunHwQueueAsync(cpu, hctx);
}

sim::Task RequestQueue::DoDispatchSchedOnce(sim::Cpu& cpu, Hctx* hctx, bool* progress) {
  // __blk_mq_do_dispatch_sched
  *progress = false;
  const sim::Machine& m = kernel_.machine();
  // max_dispatch: 1 while dispatch is busy, else q->nr_requests (the
  // scheduler depth).
  const uint32_t max_dispatch = hctx->dispatch_busy_ != 0 ? 1 : std::max<uint32_t>(hctx->sched_tags_->nr_tags(), 1);
  RequestList list;
  uint32_t count = 0;
  bool run_queue = false;
  bool multi_hctxs = false;
  do {
    co_await cpu.Sync();
    if (!dd_->HasWork(cpu)) break;
    cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, hctx->dispatch_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit));
    if (!hctx->dispatch_.empty()) break;
    const bool budget = driver_->has_budget();
    // No budget: stop; the driver re-runs the queue (SCSI: its completion
    // rule or the idle LUN's delayed run), not a 3 ms kick per hctx.
    if (budget && !driver_->GetBudget(cpu, this)) break;
    Request* rq = nullptr;
    co_await dd_->DispatchRequest(cpu, &rq);
    co_await cpu.Sync();
    if (rq == nullptr) {
      if (budget) driver_->PutBudget(cpu, this);
      run_queue = true;
      break;
    }
    rq->budget_held = budget;
    if (rq->mq_hctx != hctx) multi_hctxs = true;
    list.push_back(rq);
    ++count;
    // Stop collecting when no driver tag is left (blk_mq_get_driver_tag).
    if (!GetDriverTag(cpu, rq)) break;
  } while (count < max_dispatch);
  if (list.empty()) {
    if (run_queue) DelayRunHwQueues(&cpu, kBudgetDelayNs);
    co_return;
  }
  if (!multi_hctxs) {
    co_await DispatchRqList(cpu, hctx, list, progress);
    co_return;
  }
  // Requests of one elevator may belong to several hctxs: dispatch each
  // hctx's share in hctx order.
  while (!list.empty()) {
    Hctx* h = list.front()->mq_hctx;
    for (Request* r = list.front(); r != nullptr; r = r->next) {
      if (r->mq_hctx->queue_num_ < h->queue_num_) h = r->mq_hctx;
    }
    RequestList mine, rest;
    while (!list.empty()) {
      Request* r = list.pop_front();
      if (r->mq_hctx == h) {
        mine.push_back(r);
      } else {
        rest.push_back(r);
      }
    }
    list.splice_tail(rest);
    bool p = false;
    co_await DispatchRqList(cpu, h, mine, &p);
    *progress = *progress || p;
  }
}

// --- shared tags ---------------------------------------------------------------

void RequestQueue::TagBusy(sim::Cpu& cpu, Hctx* hctx) {
  // blk_mq_tag_busy: test the active bit, mark it once and count the user.
  // (The kernel takes tags->lock for the count; the model charges the line.)
  const sim::Machine& m = kernel_.machine();
  Tags& tags = hctx->tags();
  bool& active = set_.config().hctx_shared ? hctx_active_ : hctx->tag_active_;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, hctx->state_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  if (active) return;
  active = true;
  ++tags.active_queues;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, tags.active_queues_line.Write(m, cpu.id(), kernel_.costs().atomic_local));
}

bool RequestQueue::MayQueue(sim::Cpu& cpu, Hctx* hctx) {
  // hctx_may_queue: active requests < max(ceil(depth / users), 4).
  const sim::Machine& m = kernel_.machine();
  Tags& tags = hctx->tags();
  cpu.Charge(kernel_.fn.blk_mq_get_tag, tags.active_queues_line.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  const uint32_t users = static_cast<uint32_t>(std::max(tags.active_queues, 1));
  const uint32_t depth = tags.nr_tags();
  const uint32_t limit = std::max<uint32_t>((depth + users - 1) / users, 4);
  const bool shared_q = set_.config().hctx_shared;
  sim::CacheLine& line = shared_q ? nr_active_shared_line_ : hctx->nr_active_line_;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, line.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  return (shared_q ? nr_active_shared_ : hctx->nr_active_) < limit;
}

void RequestQueue::IncActive(sim::Cpu& cpu, Hctx* hctx) {
  const bool shared_q = set_.config().hctx_shared;
  sim::CacheLine& line = shared_q ? nr_active_shared_line_ : hctx->nr_active_line_;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ++(shared_q ? nr_active_shared_ : hctx->nr_active_);
}

void RequestQueue::DecActive(sim::Cpu& cpu, Hctx* hctx) {
  const bool shared_q = set_.config().hctx_shared;
  sim::CacheLine& line = shared_q ? nr_active_shared_line_ : hctx->nr_active_line_;
  cpu.Charge(kernel_.fn.sbitmap_queue_clear, line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  --(shared_q ? nr_active_shared_ : hctx->nr_active_);
}

bool RequestQueue::GetDriverTag(sim::Cpu& cpu, Request* rq) {
  // blk_mq_get_driver_tag (scheduler queues). REQUIRES: Synced.
  if (rq->tag != kNoTag) return true;
  Hctx* hctx = rq->mq_hctx;
  const bool fair = SharedTags();
  if (fair) {
    TagBusy(cpu, hctx);
    if (!MayQueue(cpu, hctx)) return false;
  }
  Tags& tags = hctx->tags();
  const int bit = tags.bitmap_tags().Get(cpu);
  if (bit < 0) return false;
  rq->tag = static_cast<uint32_t>(bit);
  tags.set_rq(rq->tag, rq);
  if (fair) IncActive(cpu, hctx);
  return true;
}

void RequestQueue::PutRqBudget(sim::Cpu& cpu, Request* rq) {
  if (!rq->budget_held) return;
  rq->budget_held = false;
  driver_->PutBudget(cpu, this);
}

// --- completion ---------------------------------------------------------------

void RequestQueue::StartRequest(sim::Cpu& cpu, Request* rq) {
  // blk_mq_start_request: IN_FLIGHT, blk_add_timer.
  rq->state = Request::State::kInFlight;
  rq->io_start_time_ns = cpu.now();
  rq->deadline = cpu.now() + kRqTimeoutNs;
  if (!config_.timeout_timer) return;
  // blk_add_timer: arm q->timeout for min(deadline, now + BLK_MAX_TIMEOUT)
  // rounded up to a second; a pending timer moves only if the new expiry is
  // at least HZ/2 earlier (so under steady IO it is left alone). The arming
  // is priced inside blk_mq_start_request's share of the path.
  // The expiry is never before min(deadline, now + BLK_MAX_TIMEOUT), so a
  // timer due before that plus HZ/2 cannot move: skip the rounding (the
  // common case, once per IO).
  if (timeout_timer_.pending() &&
      timeout_timer_.expires() < std::min(rq->deadline, cpu.now() + kBlkMaxTimeoutNs) + sim::kNsPerSec / 2) {
    return;
  }
  const sim::SimTime expiry = TimeoutExpiry(cpu.id(), rq->deadline, cpu.now());
  if (!timeout_timer_.pending() || expiry + sim::kNsPerSec / 2 <= timeout_timer_.expires()) {
    timeout_timer_.set_cpu(cpu.id());
    timeout_timer_.Start(expiry);
  }
}

sim::SimTime RequestQueue::TimeoutExpiry(int cpu, sim::SimTime deadline, sim::SimTime now) const {
  // blk_rq_timeout + round_jiffies_up: a whole second, skewed by 3 jiffies
  // per CPU (added before rounding, taken off after).
  const int64_t jiffy = sim::kNsPerSec / kernel_.knobs().hz;
  // A request past its deadline (the model does not time requests out)
  // re-arms for the next jiffy, never in the past.
  const sim::SimTime t = std::max(now + jiffy, std::min(deadline, now + kBlkMaxTimeoutNs));
  const int64_t skew = int64_t{3} * cpu * jiffy;
  sim::SimTime r = (t + skew + sim::kNsPerSec - 1) / sim::kNsPerSec * sim::kNsPerSec - skew;
  if (r < t) r += sim::kNsPerSec;
  return r;
}

sim::Task RequestQueue::TimeoutTimer::Handle(sim::Cpu& cpu, uint64_t) {
  // blk_rq_timed_out_timer -> kblockd_schedule_work(&q->timeout_work) on
  // the CPU the timer fired on.
  Kernel& k = q_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(q_->fn_timeout_timer_, k.costs().timeout_timer_fire);
  co_await cpu.Sync();
  k.kblockd().Queue(&cpu, &q_->timeout_work_, cpu.id(), 0);
}

sim::Task RequestQueue::TimeoutWork::Run(sim::Cpu& cpu) {
  // blk_mq_timeout_work: walk the busy tags for expired requests (none
  // expire in the model: no command outlives rq_timeout), re-arm the timer
  // for the earliest deadline, or mark the queue idle on its tag set.
  RequestQueue* q = q_;
  Kernel& k = q->kernel_;
  k.Count(Counter::k_timeout_work);
  cpu.Charge(q->fn_timeout_work_, k.costs().percpu_ref);
  sim::SimTime next = 0;
  const bool host_shared = q->set_.config().hctx_shared;
  if (host_shared && k.knobs().tag_busy_iter_shared_once) {
    // 5.16: with host-shared tags the bitmap is walked once for the queue.
    co_await q->BusyIter(cpu, q->hctxs_[0]->tags(), nullptr, &next);
  } else {
    // Every hctx walks its tags, which with host-shared tags is the whole
    // shared bitmap each time (RC1's "before").
    for (auto& h : q->hctxs_) co_await q->BusyIter(cpu, h->tags(), h.get(), &next);
  }
  co_await cpu.Sync();
  if (next != 0) {
    const sim::SimTime expiry = q->TimeoutExpiry(cpu.id(), next, cpu.now());
    cpu.Charge(k.fn.hrtimer_start, k.costs().hrtimer_arm);
    q->timeout_timer_.set_cpu(cpu.id());
    q->timeout_timer_.Start(expiry);
    co_return;
  }
  // blk_mq_tag_idle for every hctx: leave the set's active users.
  for (auto& h : q->hctxs_) {
    bool& active = host_shared ? q->hctx_active_ : h->tag_active_;
    if (!active) continue;
    active = false;
    Tags& tags = h->tags();
    --tags.active_queues;
    cpu.Charge(q->fn_timeout_work_,
               tags.active_queues_line.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  }
}

sim::Task RequestQueue::BusyIter(sim::Cpu& cpu, Tags& tags, Hctx* hctx, sim::SimTime* next) {
  // blk_mq_queue_tag_busy_iter -> bt_for_each -> sbitmap_for_each_set ->
  // bt_iter per set bit: blk_mq_find_and_get_req (tags->lock irqsave, read
  // rqs[bit], rq->ref++), the queue/hctx filter, blk_mq_check_expired,
  // blk_mq_put_rq_ref. tags->lock is taken and dropped per busy bit, as in
  // the kernel (5.14+), so concurrent walkers hand it over bit by bit.
  const auto& c = kernel_.costs();
  SbitmapQueue& bt = tags.bitmap_tags();
  const uint32_t per_word = bt.bits_per_word();
  const bool take_lock = kernel_.knobs().busy_iter_takes_tags_lock;
  for (int w = 0; w < bt.words(); ++w) {
    co_await cpu.Sync();
    cpu.Charge(fn_for_each_set_, bt.ReadWordCost(cpu, w, c.sbitmap_any_bit_set_per_word));
    const uint32_t first = static_cast<uint32_t>(w) * per_word;
    const uint32_t last = std::min(first + per_word, tags.nr_tags());
    uint32_t busy = 0;
    for (uint32_t t = first; t < last; ++t) busy += tags.rq(t) != nullptr ? 1 : 0;
    if (busy == 0) continue;
    if (!take_lock) cpu.Charge(fn_busy_iter_, int64_t{busy} * c.busy_iter_per_bit);
    uint32_t matched = 0;
    for (uint32_t t = first; t < last; ++t) {
      if (tags.rq(t) == nullptr) continue;
      if (take_lock) {
        co_await tags.lock().Lock(cpu);
        cpu.Charge(fn_find_and_get_req_, c.busy_iter_per_bit);
      }
      // Read under the lock: the slot may have been freed meanwhile.
      const Request* rq = tags.rq(t);
      if (rq != nullptr && rq->q == this && (hctx == nullptr || rq->mq_hctx == hctx) &&
          rq->state == Request::State::kInFlight) {
        ++matched;
        if (*next == 0 || rq->deadline < *next) *next = rq->deadline;
      }
      if (take_lock) {
        co_await cpu.Sync();
        tags.lock().Unlock(cpu);
      }
    }
    cpu.Charge(fn_check_expired_, int64_t{matched} * c.line_read_hit);
  }
}

void RequestQueue::CompleteRequest(sim::Cpu& cpu, Request* rq) {
  // blk_mq_complete_request -> blk_mq_complete_request_remote
  const auto& c = kernel_.costs();
  const int submit_cpu = rq->mq_ctx->cpu();
  const bool single_ctx = rq->mq_hctx->ctxs_.size() == 1;
  if (rq->bio != nullptr && rq->bio->polled) {
    cpu.Charge(kernel_.fn.blk_mq_complete_request, c.complete_request_local);
    driver_->Complete(cpu, rq);
    return;
  }
  if (single_ctx && submit_cpu == cpu.id()) {
    cpu.Charge(kernel_.fn.blk_mq_complete_request, c.complete_request_local);
    driver_->Complete(cpu, rq);
    return;
  }
  bool need_ipi = false;
  if (config_.rq_affinity > 0 && submit_cpu != cpu.id()) {
    const sim::Machine& m = kernel_.machine();
    const bool shares_cache = m.placement(submit_cpu).llc == m.placement(cpu.id()).llc;
    need_ipi = config_.rq_affinity == 2 || !shares_cache;
  }
  if (need_ipi) {
    cpu.Charge(kernel_.fn.smp_call_function_single_async, c.ipi_send);
    kernel_.Count(Counter::k_ipi);
    kernel_.machine().cpu(submit_cpu).RaiseHardirq(cpu.now() + c.ipi_delivery_latency,
                                                   &completion_ipi_,
                                                   reinterpret_cast<uint64_t>(rq));
    return;
  }
  if (set_.nr_hw_queues() == 1) {
    cpu.Charge(kernel_.fn.blk_mq_raise_softirq, c.raise_softirq);
    cpu.RaiseSoftirq(&done_softirq_, reinterpret_cast<uint64_t>(rq));
    return;
  }
  cpu.Charge(kernel_.fn.blk_mq_complete_request, c.complete_request_local);
  driver_->Complete(cpu, rq);
}

sim::Task RequestQueue::CompletionIpi::Handle(sim::Cpu& cpu, uint64_t arg) {
  Kernel& k = q_->kernel_;
  k.Count(Counter::k_hardirq);
  // ipi_receive covers the hardirq and the BLOCK_SOFTIRQ it raises; the
  // softirq charges its own entry/exit, the hardirq the rest.
  cpu.Charge(k.fn.generic_smp_call_function_single_interrupt,
             std::max<int64_t>(k.costs().ipi_receive - k.costs().softirq_entry_exit, 0));
  cpu.RaiseSoftirq(&q_->done_softirq_, arg);
  co_return;
}

sim::Task RequestQueue::DoneSoftirq::Handle(sim::Cpu& cpu, uint64_t arg) {
  Kernel& k = q_->kernel_;
  k.Count(Counter::k_block_softirq);
  cpu.Charge(k.fn.blk_done_softirq, k.costs().softirq_entry_exit);
  co_await cpu.Sync();
  q_->driver_->Complete(cpu, reinterpret_cast<Request*>(arg));
}

int RequestQueue::Poll(sim::Cpu& cpu) {
  // blk_hctx_poll -> ->poll on the poll queue this CPU maps to.
  Hctx* hctx = MapQueue(cpu.id(), /*polled=*/true);
  cpu.Charge(kernel_.fn.blk_hctx_poll, kernel_.costs().io_poll_per_call);
  return driver_->Poll(cpu, hctx);
}

void RequestQueue::EndRequest(sim::Cpu& cpu, Request* rq, BlkStatus status, bool batched) {
  // blk_mq_end_request -> blk_update_request (bio_endio) -> __blk_mq_end_request
  // (or blk_mq_end_request_batch for an io_comp_batch).
  const auto& c = kernel_.costs();
  const bool batch = batched && kernel_.knobs().batched_completion;
  cpu.Charge(batch ? kernel_.fn.blk_mq_end_request_batch : kernel_.fn.blk_mq_end_request,
             batch ? c.end_request_batch : c.end_request_single);
  Bio* bio = rq->bio;
  while (bio != nullptr) {
    Bio* next = bio->bi_next;
    bio->bi_next = nullptr;
    bio->owner->BioEndio(cpu, bio, status);
    bio = next;
  }
  rq->bio = rq->biotail = nullptr;
  sim::SimTime now = cpu.now();
  if (NeedTimestamp()) now = kernel_.Ktime(cpu);
  AccountDone(cpu, rq, now);
  FreeRequest(cpu, rq, batch);
  kernel_.Count(Counter::k_requests_completed);
}

void RequestQueue::FreeRequest(sim::Cpu& cpu, Request* rq, bool bulk) {
  // blk_mq_free_request -> __blk_mq_free_request: tag put(s), restart, queue exit.
  Hctx* hctx = rq->mq_hctx;
  rq->state = Request::State::kIdle;
  PutRqBudget(cpu, rq);
  ++ended_;
  if (dd_) dd_->FinishRequest(cpu, rq);
  if (rq->tag != kNoTag) {
    // Driver tag (with a scheduler it was taken at dispatch).
    Tags& tags = hctx->tags();
    const uint32_t tag = rq->tag;
    tags.set_rq(tag, nullptr);
    if (SharedTags()) DecActive(cpu, hctx);
    if (dd_) rq->tag = kNoTag;
    tags.bitmap_tags().Clear(cpu, tag, bulk);
    if (!tags.dispatch_waiters.empty()) {
      // blk_mq_dispatch_wake: a hctx waiting for a driver tag runs async.
      Hctx* w = tags.dispatch_waiters.front();
      tags.dispatch_waiters.pop_front();
      w->on_dispatch_wait_ = false;
      w->q_->RunHwQueueAsync(cpu, w);
    }
  }
  if (dd_) {
    Tags& st = *hctx->sched_tags_;
    st.set_rq(rq->internal_tag, nullptr);
    st.bitmap_tags().Clear(cpu, rq->internal_tag, bulk);
  }
  // blk_mq_sched_restart: test SCHED_RESTART on the hctx state line.
  cpu.Charge(kernel_.fn.blk_mq_sched_restart,
             hctx->state_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
  if (hctx->sched_restart_) {
    hctx->sched_restart_ = false;
    kernel_.Count(Counter::k_sched_restart);
    RunHwQueueAsync(cpu, hctx);
  }
  cpu.Charge(kernel_.fn.percpu_ref_get, kernel_.costs().percpu_ref);  // blk_queue_exit
}

}  // namespace blklab::model
