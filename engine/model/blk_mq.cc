#include "engine/model/blk_mq.h"

#include "engine/model/blk_softirq.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace blklab::model {

namespace {
constexpr uint32_t kBlkMaxRequestCount = 32;  // BLK_MAX_REQUEST_COUNT: plug flushes at 32
}  // namespace

RequestQueue::RequestQueue(Kernel& kernel, std::string name, TagSet& set, BlkMqDriver* driver,
                           const QueueConfig& config)
    : kernel_(kernel),
      name_(std::move(name)),
      set_(set),
      driver_(driver),
      config_(config),
      timeout_(this) {
  fn_blk_execute_rq_ = kernel.Intern("blk_execute_rq");
  {
    const uint32_t lbs = std::max<uint32_t>(512, config_.logical_block_bytes);
    const uint64_t max = uint64_t{std::max<uint32_t>(1, config_.max_sectors)} << kSectorShift;
    max_request_bytes_ = static_cast<uint32_t>(std::max<uint64_t>(lbs, max / lbs * lbs));
  }
  set.AddQueue(this);
  const int ncpus = kernel.machine().num_cpus();
  for (uint32_t i = 0; i < set.nr_hw_queues(); ++i) {
    hctxs_.push_back(std::make_unique<Hctx>(kernel, this, i, &set.tags(i), i >= set.config().nr_hw_queues));
  }
  for (int c = 0; c < ncpus; ++c) {
    auto ctx = std::make_unique<Ctx>(kernel, name_, c);
    for (int type = 0; type < 2; ++type) {
      Hctx* h = hctxs_[set.MapQueue(c, type == 1)].get();
      if (type == 1 && h == ctx->hctx(false)) {
        ctx->hctx_[1] = h;  // no poll queues: one map
        break;
      }
      h->AddCtx(ctx.get(), type);
    }
    ctxs_.push_back(std::move(ctx));
  }
  if (const ElevatorType* type = FindElevatorType(config_.sysfs.scheduler); type != nullptr) {
    // blk_mq_init_sched: nr_requests scheduler tags per hctx, or one
    // queue-wide set when the host shares its tags (5.16+ sched_shared_tags).
    const uint32_t depth = config_.sysfs.nr_requests > 0
                               ? static_cast<uint32_t>(config_.sysfs.nr_requests)
                               : static_cast<uint32_t>(host::DefaultNrRequests(
                                     static_cast<int>(set.config().queue_depth), config_.sysfs.scheduler));
    ElevatorInit init{&kernel, name_, &config_.sysfs, depth};
    init.max_request_bytes = max_request_bytes_;
    init.cgroup_bfq_weights = &config_.cgroup_bfq_weights;
    elevator_ = type->init_sched(init);
    const size_t n = set.config().hctx_shared ? 1 : hctxs_.size();
    for (size_t i = 0; i < n; ++i) {
      sched_tags_.push_back(std::make_unique<Tags>(kernel, name_ + ":sched_tags->lock", depth));
      sched_tags_.back()->InitAsSchedTags();
    }
    for (size_t i = 0; i < hctxs_.size(); ++i) {
      hctxs_[i]->set_sched_tags(sched_tags_[set.config().hctx_shared ? 0 : i].get());
    }
  }
  for (auto& h : hctxs_) h->FinishSetup();
  if (elevator_) {
    for (auto& h : hctxs_) elevator_->InitHctx(h.get());
  }
}

// --- submission -------------------------------------------------------------

void RequestQueue::InitRequest(sim::Cpu& cpu, Request* rq, Bio* bio, Hctx* hctx, Plug* plug) {
  // blk_mq_rq_ctx_init + blk_mq_bio_to_request: the allocating CPU writes
  // the request, last written where it was freed. These are stores: their
  // miss drains through the store buffer while the path goes on, and the
  // next CPU to touch the request pays for the move.
  kernel_.WriteLine(cpu, rq->line);
  rq->state = Request::State::kAllocated;
  rq->q = this;
  rq->mq_hctx = hctx;
  rq->mq_ctx = ctxs_[cpu.id()].get();
  rq->op = bio->op;
  rq->passthrough = bio->passthrough;
  rq->ioprio_class = bio->ioprio_class;
  rq->ioprio_level = bio->ioprio_level;
  rq->blkcg = bio->blkcg;
  rq->ioc = bio->ioc;
  rq->sector = bio->sector;
  rq->bytes = bio->bytes;
  rq->bio = rq->biotail = bio;
  rq->nr_bios = 1;
  bio->bi_next = nullptr;
  rq->alloc_time_ns = cpu.now();
  rq->issue_time_ns = -1;
  rq->queue_time_ns = bio->passthrough ? -1 : bio->queued_ns;
  if (rq->queue_time_ns >= 0) disk_.q2g.Add(rq->alloc_time_ns - rq->queue_time_ns);
  rq->start_time_ns = 0;
  rq->timed_out = false;
  rq->retries = 0;
  rq->eh_abort_scheduled = false;
  // blk_mq_sched_prepare (RQF_USE_SCHED: not for passthrough commands).
  if (elevator_ && !rq->passthrough) elevator_->PrepareRequest(cpu, rq);
  if (NeedTimestamp()) {
    if (plug != nullptr && kernel_.knobs().plug_cache_time) {
      // blk_time_get_ns: one clock read per plug, reused while plugged.
      if (plug->cached_time_ns < 0) plug->cached_time_ns = kernel_.Ktime(cpu);
      rq->start_time_ns = plug->cached_time_ns;
    } else {
      rq->start_time_ns = kernel_.Ktime(cpu);
    }
  }
  ++allocated_;
}

namespace {

// Whether `list` (a ctx's requests of every hctx type) holds one of
// `hctx`'s: the kernel keeps one list per type and tests that one.
bool HoldsRequestsOf(const RequestList& list, const Hctx* hctx) {
  for (const Request* r = list.front(); r != nullptr; r = r->next) {
    if (r->mq_hctx == hctx) return true;
  }
  return false;
}

}  // namespace

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
  if (!elevator_ && tags_shared()) {
    // blk_mq_tag_busy + hctx_may_queue (driver tag taken at allocation).
    hctx->TagBusy(cpu);
    if (!hctx->MayQueue(cpu)) return nullptr;
  }
  // ->limit_depth: the scheduler may shallow this allocation (not for
  // passthrough commands, which take a scheduler tag without RQF_USE_SCHED).
  const uint32_t shallow_depth = elevator_ && !bio->passthrough ? elevator_->LimitDepth(*bio) : 0;
  // Batched allocation (5.16+): with a plug expecting several IOs, no
  // shallow depth and no shared tags, take several tags with one atomic
  // (blk_mq_get_tags; the scheduler's tags when there is one). The plug's
  // count is used up by its first allocation, batched or not
  // (blk_mq_get_new_requests).
  uint32_t nr_tags = 1;
  if (plug != nullptr) {
    nr_tags = plug->nr_ios;
    plug->nr_ios = 1;
  }
  if (nr_tags > 1 && kernel_.knobs().plug_request_cache && shallow_depth == 0 && set_.nr_queues() == 1 &&
      !set_.config().hctx_shared) {
    uint32_t want = std::min<uint32_t>(nr_tags, 64);
    uint32_t bits[64];
    const uint32_t got = bt.GetBatch(cpu, want, bits);
    if (got > 0) {
      for (uint32_t i = 1; i < got; ++i) {
        Request* extra = tags.static_rq(bits[i]);
        tags.SetRq(cpu, bits[i], extra);
        extra->mq_hctx = hctx;
        extra->q = this;
        extra->alloc_time_ns = cpu.now();
        extra->state = Request::State::kAllocated;
        plug->cached_rqs.push_back(extra);
      }
      Request* rq = tags.static_rq(bits[0]);
      tags.SetRq(cpu, bits[0], rq);
      InitRequest(cpu, rq, bio, hctx, plug);
      return rq;
    }
    return nullptr;
  }
  const int bit = bt.Get(cpu, shallow_depth);
  if (bit < 0) return nullptr;
  Request* rq = tags.static_rq(static_cast<uint32_t>(bit));
  tags.SetRq(cpu, static_cast<uint32_t>(bit), rq);
  if (!elevator_ && tags_shared()) hctx->IncActive(cpu);
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
  const bool fair = !elevator_ && tags_shared();
  const uint32_t shallow = elevator_ && !bio->passthrough ? elevator_->LimitDepth(*bio) : 0;
  for (;;) {
    cpu.Charge(kernel_.fn.blk_mq_get_tag, c.sbitmap_get);
    sim::WaitQueue& wq = bt.NextWaitQueue(hctx->wait_index);
    co_await hctx->Run(cpu);
    co_await cpu.Sync();
    int bit = fair && !hctx->MayQueue(cpu) ? -1 : bt.Get(cpu, shallow);
    if (bit < 0) {
      bt.PrepareToWait();
      bit = fair && !hctx->MayQueue(cpu) ? -1 : bt.Get(cpu, shallow);
      if (bit < 0) {
        // schedule() flushes the plug first (sched_submit_work): its
        // requests, and the requests it cached give their tags back. A plug
        // that holds only cached requests is flushed since 5.18
        // (b1f866b013e6 removed blk_needs_flush_plug, which asked for
        // requests or callbacks); 5.16-5.17 slept with it, which no
        // modelled path reaches (io_uring fills the cache and never sleeps
        // for a tag).
        if (plug != nullptr && (!plug->mq_list.empty() || !plug->cached_rqs.empty())) {
          bt.FinishWait();
          co_await FlushPlug(cpu, plug, /*from_schedule=*/true);
          co_await cpu.Sync();
          continue;
        }
        kernel_.Count(Counter::k_tag_sleep);
        cpu.Charge(kernel_.fn.io_schedule, c.line_read_hit);
        co_await wq.IoWait(cpu);  // io_schedule
        co_await cpu.Sync();
        wq.Remove(cpu.current_thread());
        bt.FinishWait();
        // Woken: the submitting CPU is unchanged (threads are pinned).
        continue;
      }
      bt.FinishWait();
    }
    Request* rq = tags.static_rq(static_cast<uint32_t>(bit));
    tags.SetRq(cpu, static_cast<uint32_t>(bit), rq);
    if (fair) hctx->IncActive(cpu);
    InitRequest(cpu, rq, bio, hctx, plug);
    *out = rq;
    co_return;
  }
}

sim::Task RequestQueue::SubmitBio(sim::Cpu& cpu, Bio* bio, Plug* plug) {
  if (bio->bytes > max_request_bytes_ && !bio->passthrough) {
    co_await SubmitSplit(cpu, bio, plug);
    co_return;
  }
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_submit_bio);
  bio->passthrough = false;
  bio->queued_ns = cpu.now();
  const auto& c = kernel_.costs();
  const host::Knobs& k = kernel_.knobs();
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
  if (config_.sysfs.nomerges < 2 && !elevator_) {
    // nomerges=1 (QUEUE_FLAG_NOXMERGES) leaves this simple merge on.
    co_await cpu.Sync();
    if (HoldsRequestsOf(ctx->rq_list(), hctx)) {
      // list_empty_careful(&ctx->rq_lists[type]) passed: blk_bio_list_merge
      // under ctx->lock, this hctx's requests from the newest back, at most
      // 8, until one takes the bio. (Only poll-queue requests in the ctx: no
      // lock.)
      co_await ctx->lock().Lock(cpu);
      const bool merged = SwQueueMerge(cpu, ctx->rq_list(), hctx, bio);
      co_await cpu.Sync();
      ctx->lock().Unlock(cpu);
      if (merged) co_return;
    }
  }
  if (elevator_ && config_.sysfs.nomerges < 2) {
    // blk_mq_sched_bio_merge -> the scheduler's ->bio_merge (dd_bio_merge
    // under dd->lock); with nomerges=1 elv_merge tries only q->last_merge
    // (the scheduler knows), kyber's sw-queue merge runs as with 0.
    co_await cpu.Sync();
    Request* merged = nullptr;
    co_await elevator_->BioMerge(cpu, hctx, bio, &merged);
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
      co_await FlushPlugList(cpu, plug, false);  // the cached requests stay
    }
    if (plug->q != nullptr && plug->q != this) plug->multiple_queues = true;
    plug->q = this;
    plug->mq_list.push_back(rq);
    ++plug->rq_count;
    co_return;
  }
  co_await cpu.Sync();
  if (elevator_ || (hctx->dispatch_busy() != 0 && set_.nr_hw_queues() == 1)) {
    co_await InsertAndRun(cpu, rq, /*run_async=*/true);
    co_return;
  }
  if (!hctx->stopped()) {
    BlkStatus status;
    co_await IssueDirectly(cpu, rq, /*last=*/true, &status);
    if (status == BlkStatus::kResource || status == BlkStatus::kDevResource) {
      co_await IssueDirectlyBusy(cpu, rq);
    }
    co_return;
  }
  co_await InsertAndRun(cpu, rq, /*run_async=*/false);
}

sim::Task RequestQueue::ExecutePassthrough(sim::Cpu& cpu, Bio* bio) {
  // scsi_alloc_request -> blk_mq_alloc_request (a scheduler tag with an
  // elevator, but no scheduler), then blk_execute_rq: blk_mq_insert_request
  // puts a passthrough request on hctx->dispatch, and the hardware queue
  // runs at once (blk_mq_run_hw_queue(hctx, false)).
  sim::StackFrame frame(cpu, fn_blk_execute_rq_);
  bio->passthrough = true;
  co_await cpu.Sync();
  Request* rq = AllocRequestFast(cpu, bio, nullptr);
  if (rq == nullptr) co_await GetRequestSlow(cpu, bio, nullptr, &rq);
  if (rq == nullptr) {
    bio->owner->BioEndio(cpu, bio, BlkStatus::kAgain);
    co_return;
  }
  co_await rq->mq_hctx->BypassInsert(cpu, rq, /*at_head=*/false);
  co_await cpu.Sync();
  co_await rq->mq_hctx->Run(cpu);
}

sim::Task RequestQueue::InsertRequestsSched(sim::Cpu& cpu, RequestList& list, Hctx* hctx,
                                            bool run_async) {
  // blk_mq_insert_request(s) -> dd_insert_requests, then blk_mq_run_hw_queue.
  co_await elevator_->InsertRequests(cpu, hctx, list);
  co_await cpu.Sync();
  if (run_async) {
    hctx->RunAsync(cpu);
  } else {
    co_await hctx->Run(cpu);
  }
}

sim::Task RequestQueue::InsertAndRun(sim::Cpu& cpu, Request* rq, bool run_async) {
  if (elevator_) {
    RequestList one;
    one.push_back(rq);
    co_await InsertRequestsSched(cpu, one, rq->mq_hctx, run_async);
    co_return;
  }
  // blk_mq_insert_request (none): onto the ctx list, mark the ctx pending.
  Ctx* ctx = rq->mq_ctx;
  co_await ctx->lock().Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             ctx->list_line().Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ctx->rq_list().push_back(rq);
  rq->mq_hctx->MarkCtxPending(cpu, ctx);
  kernel_.Count(Counter::k_sw_queue_insert);
  co_await cpu.Sync();
  ctx->lock().Unlock(cpu);
  if (run_async) {
    rq->mq_hctx->RunAsync(cpu);
  } else {
    co_await rq->mq_hctx->Run(cpu);
  }
}

sim::Task RequestQueue::IssueDirectly(sim::Cpu& cpu, Request* rq, bool last, BlkStatus* status_out) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_try_issue_directly);
  // blk_mq_try_issue_directly -> __blk_mq_issue_directly -> ->queue_rq.
  // REQUIRES: the caller has Synced and the hctx is not stopped.
  Hctx* hctx = rq->mq_hctx;
  cpu.Charge(kernel_.fn.rcu_read_lock, kernel_.costs().rcu_read_section);
  kernel_.Count(Counter::k_direct_issue);
  cpu.Charge(kernel_.fn.blk_mq_try_issue_directly, kernel_.costs().line_read_hit);
  // blk_mq_get_budget_and_tag: the driver tag is already held (none).
  if (driver_->has_budget() && rq->budget_token < 0) {
    const int token = driver_->GetBudget(cpu, this);
    if (token < 0) {
      kernel_.Count(Counter::k_queue_rq_busy);
      *status_out = BlkStatus::kResource;
      co_return;
    }
    rq->budget_token = token;
  }
  kernel_.Count(Counter::k_queue_rq);
  BlkStatus status;
  co_await driver_->QueueRq(cpu, hctx, rq, last, &status);
  *status_out = status;
  switch (status) {
    case BlkStatus::kOk:
      hctx->UpdateDispatchBusy(false);
      break;
    case BlkStatus::kResource:
    case BlkStatus::kDevResource:
      kernel_.Count(Counter::k_queue_rq_busy);
      hctx->UpdateDispatchBusy(true);
      UnstartRequest(rq);
      PutRqBudget(cpu, rq);
      break;
    default:
      EndRequest(cpu, rq, status);
      break;
  }
}

sim::Task RequestQueue::IssueDirectlyBusy(sim::Cpu& cpu, Request* rq) {
  // The driver was busy: park the request on hctx->dispatch and run the queue.
  co_await rq->mq_hctx->BypassInsert(cpu, rq, /*at_head=*/false);
  co_await rq->mq_hctx->Run(cpu);
}

sim::Task RequestQueue::FlushPlug(sim::Cpu& cpu, Plug* plug, bool from_schedule) {
  // __blk_flush_plug: the plug's requests, then the requests it cached and
  // did not use, from schedule() too: cached requests hold references to
  // their queue, and a sleeper must not hold up a freeze (c5fc7b931736,
  // merged in the same 5.16 window as the cache itself).
  co_await FlushPlugList(cpu, plug, from_schedule);
  if (!plug->cached_rqs.empty()) {
    co_await cpu.Sync();
    FreeCachedRequests(cpu, plug);
  }
}

sim::Task RequestQueue::FlushPlugList(sim::Cpu& cpu, Plug* plug, bool from_schedule) {
  // blk_mq_flush_plug_list
  if (plug->mq_list.empty()) co_return;
  RequestQueue* q = plug->mq_list.front()->q;
  Kernel& kernel = q->kernel_;
  sim::StackFrame frame(cpu, kernel.fn.blk_mq_flush_plug_list);
  kernel.Count(Counter::k_plug_flush);
  RequestList list;
  list.splice_tail(plug->mq_list);
  plug->rq_count = 0;
  const bool multiple = plug->multiple_queues;
  plug->multiple_queues = false;
  cpu.Charge(kernel.fn.blk_mq_flush_plug_list, kernel.costs().line_read_hit);
  if (!multiple && !q->elevator_ && !from_schedule) {
    // ->queue_rqs (5.17+): the whole plug to the driver at once, unless the
    // tags are shared (queue_rqs would skip the active-request accounting).
    if (q->driver_->has_queue_rqs() && kernel.knobs().queue_rqs && !q->tags_shared()) {
      cpu.Charge(kernel.fn.rcu_read_lock, kernel.costs().rcu_read_section);
      co_await cpu.Sync();
      if (!list.front()->mq_hctx->stopped()) {
        kernel.Count(Counter::k_queue_rq, list.size());
        co_await q->driver_->QueueRqs(cpu, list);
      }
    }
    // blk_mq_plug_issue_direct: each request tried directly, `last` on the final one.
    while (!list.empty()) {
      Request* rq = list.pop_front();
      cpu.Charge(kernel.fn.blk_add_rq_to_plug, kernel.costs().plug_add_flush_per_rq);
      co_await cpu.Sync();
      if (rq->mq_hctx->stopped()) {
        co_await q->InsertAndRun(cpu, rq, /*run_async=*/false);
        continue;
      }
      BlkStatus st;
      co_await q->IssueDirectly(cpu, rq, list.empty(), &st);
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
      if (rq_q->elevator_) {
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
}

void RequestQueue::FreeCachedRequests(sim::Cpu& cpu, Plug* plug) {
  // blk_mq_free_plug_rqs: unused cached requests give their tags back.
  while (!plug->cached_rqs.empty()) {
    // Each through its own queue (blk_mq_free_plug_rqs): the plug's last
    // queue need not be the one whose tags the batch took.
    Request* rq = plug->cached_rqs.pop_front();
    RequestQueue* q = rq->q;
    Tags& tags = q->AllocTags(rq->mq_hctx);
    const uint32_t tag = q->elevator_ ? rq->internal_tag : rq->tag;
    tags.ClearRq(tag);
    rq->state = Request::State::kIdle;
    tags.bitmap_tags().Clear(cpu, tag);
  }
}

void RequestQueue::RunHwQueuesAsync(sim::Cpu& cpu) {
  // blk_mq_run_hw_queues(q, true). RC3's rejected shortcut returns early
  // when the queue has no elevator (and strands parked requests).
  if (kernel_.knobs().skip_run_queues_without_elevator && !elevator_) return;
  const Hctx* sq = SqHctx(&cpu);
  for (auto& h : hctxs_) {
    if (RunsWith(*h, sq)) h->RunAsync(cpu);
  }
}

Hctx* RequestQueue::SqHctx(sim::Cpu* cpu) {
  // blk_mq_get_sq_hctx (5.13+): a scheduler that ignores hardware queues
  // dispatches from the calling CPU's hctx; running the others would only
  // contend on its lock and bounce its lines.
  if (cpu == nullptr || !elevator_ || elevator_->mq_aware() || !kernel_.knobs().sq_sched_runs_own_hctx) {
    return nullptr;
  }
  Hctx* h = MapQueue(cpu->id());
  return h->stopped() ? nullptr : h;
}

bool RequestQueue::RunsWith(const Hctx& h, const Hctx* sq) {
  // blk_mq_run_hw_queues' filter: not stopped, and either no preferred
  // hctx, the preferred one, or one holding requests that bypassed the
  // scheduler on hctx->dispatch.
  return !h.stopped() && (sq == nullptr || sq == &h || h.dispatch_len() > 0);
}

void RequestQueue::RequeueRequest(sim::Cpu& cpu, Request* rq) {
  // __blk_mq_requeue_request, blk_mq_add_to_requeue_list (requeue_lock),
  // blk_mq_kick_requeue_list.
  UnstartRequest(rq);
  cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
             requeue_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  requeue_list_.push_back(rq);
  kernel_.kblockd().Queue(&cpu, &requeue_work_, cpu.id(), 0);
}

sim::Task RequestQueue::RequeueWork::Run(sim::Cpu& cpu) {
  co_await cpu.Sync();
  RequestList list;
  cpu.Charge(q_->kernel_.fn.blk_mq_dispatch_rq_list,
             q_->requeue_line_.Write(q_->kernel_.machine(), cpu.id(), q_->kernel_.costs().atomic_local));
  list.splice_tail(q_->requeue_list_);
  while (!list.empty()) {
    Request* rq = list.pop_front();
    co_await rq->mq_hctx->BypassInsert(cpu, rq, /*at_head=*/false);
  }
  co_await q_->RunHwQueues(cpu);
}

sim::Task RequestQueue::RunHwQueues(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_run_hw_queues);
  if (kernel_.knobs().skip_run_queues_without_elevator && !elevator_) co_return;
  const Hctx* sq = SqHctx(&cpu);
  for (auto& h : hctxs_) {
    if (RunsWith(*h, sq)) co_await h->Run(cpu);
  }
}

void RequestQueue::DelayRunHwQueues(sim::Cpu* cpu, int64_t delay_ns) {
  // blk_mq_delay_run_hw_queues: blk_mq_run_hw_queues' filter; a hctx whose
  // run work is already pending keeps its pending delay.
  const Hctx* sq = SqHctx(cpu);
  for (auto& h : hctxs_) {
    if (!RunsWith(*h, sq) || h->run_work_pending()) continue;
    h->DelayRun(cpu, delay_ns);
  }
}

void RequestQueue::StopHwQueues() {
  for (auto& h : hctxs_) h->set_stopped(true);
}

void RequestQueue::StartStoppedHwQueues(sim::Cpu* cpu) {
  for (auto& h : hctxs_) {
    if (!h->stopped()) continue;
    h->set_stopped(false);
    h->QueueRunWork(cpu, cpu != nullptr ? h->NextCpu(*cpu) : h->cpumask()[0]);
  }
}

void RequestQueue::PutRqBudget(sim::Cpu& cpu, Request* rq) {
  if (rq->budget_token < 0) return;
  const int token = rq->budget_token;
  rq->budget_token = -1;
  driver_->PutBudget(cpu, this, token);
}

// --- completion ---------------------------------------------------------------

void RequestQueue::StartRequest(sim::Cpu& cpu, Request* rq) {
  // blk_mq_start_request: IN_FLIGHT, blk_add_timer.
  kernel_.WriteLine(cpu, rq->line);  // a store (see InitRequest)
  rq->issue_time_ns = cpu.now();
  rq->state = Request::State::kInFlight;
  if (config_.queue_stats) {
    // QUEUE_FLAG_STATS: io_start_time_ns for the stats consumers. RC2's
    // second patch takes the bio's issue time (blkcg_bio_issue_init already
    // read the clock) instead of reading it again.
    rq->io_start_time_ns = kernel_.knobs().config_blk_cgroup && kernel_.knobs().cgroup_inherit_bio_start_time &&
                                   rq->bio != nullptr
                               ? rq->bio->bi_issue
                               : kernel_.Ktime(cpu);
  } else {
    rq->io_start_time_ns = 0;
  }
  timeout_.Add(cpu, rq, config_.timeout_timer);
}

void RequestQueue::CompleteRequest(sim::Cpu& cpu, Request* rq) {
  // blk_mq_complete_request: remote (IPI, BLOCK_SOFTIRQ), else ->complete here.
  if (CompleteRequestRemote(cpu, rq)) return;
  cpu.Charge(kernel_.fn.blk_mq_complete_request, kernel_.costs().complete_request_local);
  driver_->Complete(cpu, rq);
}

bool RequestQueue::CompleteRequestRemote(sim::Cpu& cpu, Request* rq) {
  // blk_mq_complete_request_remote: polled, or the submitter's own CPU on a
  // one-ctx hctx: local. Else an IPI to the submitter when rq_affinity asks
  // (same LLC group, or same CPU with 2); else BLOCK_SOFTIRQ on a
  // single-queue device; else local.
  const int submit_cpu = rq->mq_ctx->cpu();
  if (rq->bio != nullptr && rq->bio->polled) return false;
  if (rq->mq_hctx->nr_ctx() == 1 && submit_cpu == cpu.id()) return false;
  bool need_ipi = false;
  if (config_.sysfs.rq_affinity > 0 && submit_cpu != cpu.id()) {
    const sim::Machine& m = kernel_.machine();
    const bool shares_cache = m.placement(submit_cpu).llc == m.placement(cpu.id()).llc;
    need_ipi = config_.sysfs.rq_affinity == 2 || !shares_cache;
  }
  if (need_ipi) {
    kernel_.cpu_done().SendIpi(cpu, rq, submit_cpu);
    return true;
  }
  if (set_.nr_hw_queues() == 1) {
    kernel_.cpu_done().RaiseSoftirq(cpu, rq);
    return true;
  }
  return false;
}

void RequestQueue::MqOpsComplete(sim::Cpu& cpu, Request* rq) { driver_->Complete(cpu, rq); }

sim::Task RequestQueue::Poll(sim::Cpu& cpu, int* completed) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_hctx_poll);
  // blk_hctx_poll -> ->poll on the poll queue this CPU maps to.
  Hctx* hctx = MapQueue(cpu.id(), /*polled=*/true);
  cpu.Charge(kernel_.fn.blk_hctx_poll, kernel_.costs().io_poll_per_call);
  co_await driver_->Poll(cpu, hctx, completed);
}

void RequestQueue::EndBios(sim::Cpu& cpu, Request* rq, BlkStatus status) {
  // blk_update_request / blk_complete_request: bio_endio for each bio.
  Bio* bio = rq->bio;
  while (bio != nullptr) {
    Bio* next = bio->bi_next;
    bio->bi_next = nullptr;
    bio->owner->BioEndio(cpu, bio, status);
    bio = next;
  }
  rq->bio = rq->biotail = nullptr;
}

void RequestQueue::EndRequest(sim::Cpu& cpu, Request* rq, BlkStatus status) {
  // blk_mq_end_request -> blk_update_request (bio_endio) -> __blk_mq_end_request.
  cpu.Charge(kernel_.fn.blk_mq_end_request, kernel_.costs().end_request_single);
  EndBios(cpu, rq, status);
  sim::SimTime now = cpu.now();
  if (NeedTimestamp()) now = kernel_.Ktime(cpu);
  AccountDone(cpu, rq, now);
  FreeRequest(cpu, rq, /*bulk=*/false);
  kernel_.Count(Counter::k_requests_completed);
}

void RequestQueue::EndRequestBatch(sim::Cpu& cpu, RequestList& list) {
  if (!kernel_.knobs().batched_completion) {
    while (!list.empty()) EndRequest(cpu, list.pop_front(), BlkStatus::kOk);
    return;
  }
  // blk_mq_end_request_batch: one clock read for the batch (need_ts).
  const sim::SimTime now = NeedTimestamp() && !list.empty() ? kernel_.Ktime(cpu) : cpu.now();
  const auto& c = kernel_.costs();
  while (!list.empty()) {
    Request* rq = list.pop_front();
    cpu.Charge(kernel_.fn.blk_mq_end_request_batch, c.end_request_batch);
    EndBios(cpu, rq, BlkStatus::kOk);
    AccountDone(cpu, rq, now);
    FreeRequest(cpu, rq, /*bulk=*/true);
    kernel_.Count(Counter::k_requests_completed);
  }
}

void RequestQueue::FreeRequest(sim::Cpu& cpu, Request* rq, bool bulk) {
  // blk_mq_free_request -> __blk_mq_free_request: tag put(s), restart, queue exit.
  Hctx* hctx = rq->mq_hctx;
  kernel_.WriteLine(cpu, rq->line);  // a store (see InitRequest)
  rq->state = Request::State::kIdle;
  PutRqBudget(cpu, rq);
  ++ended_;
  if (elevator_ && !rq->passthrough) elevator_->FinishRequest(cpu, rq);
  if (rq->tag != kNoTag) {
    // Driver tag (with a scheduler it was taken at dispatch).
    Tags& tags = hctx->tags();
    const uint32_t tag = rq->tag;
    tags.ClearRq(tag);
    if (tags_shared()) hctx->DecActive(cpu);
    if (elevator_) rq->tag = kNoTag;
    tags.bitmap_tags().Clear(cpu, tag, bulk);
    if (!tags.dispatch_waiters.empty()) {
      // blk_mq_dispatch_wake: a hctx waiting for a driver tag runs async.
      Hctx* w = tags.dispatch_waiters.front();
      tags.dispatch_waiters.pop_front();
      w->DispatchWake(cpu);
    }
  }
  if (elevator_) {
    Tags& st = *hctx->sched_tags();
    st.ClearRq(rq->internal_tag);
    st.bitmap_tags().Clear(cpu, rq->internal_tag, bulk);
  }
  hctx->SchedRestart(cpu);
  cpu.Charge(kernel_.fn.percpu_ref_get, kernel_.costs().percpu_ref);  // blk_queue_exit
}

}  // namespace blklab::model
