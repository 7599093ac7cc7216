#include "engine/model/hctx.h"

#include <algorithm>

#include "engine/model/blk_mq.h"

namespace blklab::model {

namespace {
constexpr int kCpuWorkBatch = 8;                          // BLK_MQ_CPU_WORK_BATCH
constexpr int64_t kResourceDelayNs = 3 * sim::kNsPerMs;   // BLK_MQ_RESOURCE_DELAY
constexpr int kCtxPerMapWord = 8;                         // ctx_map: 8 bits per word
constexpr int64_t kBudgetDelayNs = 3 * sim::kNsPerMs;     // BLK_MQ_BUDGET_DELAY
// blk_mq_do_dispatch_sched hands the rest to kblockd when the CPU is wanted
// (need_resched) or after HZ jiffies of rounds.
constexpr int64_t kMaxSchedLoopNs = sim::kNsPerSec;
}  // namespace

Ctx::Ctx(Kernel& kernel, const std::string& qname, int cpu)
    : cpu_(cpu),
      lock_(kernel.machine(), qname + ":ctx->lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {}

Hctx::Hctx(Kernel& kernel, RequestQueue* q, uint32_t queue_num, Tags* tags, bool is_poll)
    : kernel_(kernel),
      q_(q),
      queue_num_(queue_num),
      is_poll_(is_poll),
      tags_(tags),
      lock_(kernel.machine(), q->name() + ":hctx->lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()),
      run_work_(this) {}

void Hctx::AddCtx(Ctx* ctx, int type) {
  ctx->hctx_[type] = this;
  ctx->index_hw_[type] = static_cast<uint32_t>(ctxs_.size());
  ctxs_.push_back(ctx);
  cpumask_.push_back(ctx->cpu());
}

void Hctx::FinishSetup() {
  if (cpumask_.empty()) cpumask_.push_back(0);
  const size_t words = std::max<size_t>((ctxs_.size() + kCtxPerMapWord - 1) / kCtxPerMapWord, 1);
  ctx_map_.assign(words, 0);
  ctx_map_lines_ = std::vector<sim::CacheLine>(words);
}

sim::Task Hctx::RunWork::Run(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, hctx_->kernel_.fn.blk_mq_run_work_fn);
  // blk_mq_run_work_fn -> __blk_mq_run_hw_queue
  co_await hctx_->DispatchRequests(cpu);
}

// --- queue runs -------------------------------------------------------------

bool Hctx::HasPending(sim::Cpu& cpu) {
  // blk_mq_hctx_has_pending: dispatch list, ctx_map words, elevator.
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, dispatch_line_.Read(m, cpu.id(), c.line_read_hit));
  if (!dispatch_.empty()) return true;
  if (Elevator* e = q_->elevator(); e != nullptr && e->HasWork(cpu, this)) return true;
  return CtxMapAnyBitSet(cpu);
}

bool Hctx::CtxMapAnyBitSet(sim::Cpu& cpu) {
  // sbitmap_any_bit_set(&hctx->ctx_map): the words in order until a set one.
  const sim::Machine& m = kernel_.machine();
  const int64_t per_word = kernel_.costs().sbitmap_any_bit_set_per_word;
  int64_t cost = 0;
  bool any = false;
  for (size_t w = 0; w < ctx_map_.size() && !any; ++w) {
    cost += ctx_map_lines_[w].Read(m, cpu.id(), per_word);
    any = ctx_map_[w] != 0;
  }
  cpu.Charge(kernel_.fn.sbitmap_any_bit_set, cost);
  return any;
}

bool Hctx::DispatchListBusy(sim::Cpu& cpu) {
  // 5.8+: both dispatch loops stop while requests sit on hctx->dispatch
  // (another CPU's leftovers, a flush) and let the caller run again.
  if (!kernel_.knobs().dispatch_loop_checks_dispatch_list) return false;
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue,
             dispatch_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
  return !dispatch_.empty();
}

void Hctx::BudgetDelayRun(sim::Cpu& cpu) {
  // A dispatch that took a budget and got nothing kicks every hctx of the
  // queue after BLK_MQ_BUDGET_DELAY (5.8+): holding the budget may have
  // blocked them.
  if (kernel_.knobs().blk_mq_budget_contention_rerun) q_->DelayRunHwQueues(&cpu, kBudgetDelayNs);
}

uint32_t Hctx::CtxIndex(const Ctx* ctx) const {
  // ctx->index_hw[hctx->type]
  return ctx->index_hw_[this == ctx->hctx_[0] ? 0 : 1];
}

int Hctx::NextCpu(sim::Cpu& cpu) {
  // blk_mq_hctx_next_cpu: a single queue runs where it is kicked; otherwise
  // round robin over the hctx's CPUs, moving on every 8 runs.
  if (q_->tag_set().nr_hw_queues() == 1 || cpumask_.size() == 1) {
    return cpumask_.size() == 1 ? cpumask_[0] : cpu.id();
  }
  if (++next_cpu_batch_ >= kCpuWorkBatch) {
    next_cpu_batch_ = 0;
    next_cpu_index_ = (next_cpu_index_ + 1) % static_cast<int>(cpumask_.size());
  }
  return cpumask_[next_cpu_index_];
}

sim::Task Hctx::Run(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_run_hw_queue);
  // blk_mq_run_hw_queue(hctx, false)
  co_await cpu.Sync();
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, kernel_.costs().run_hw_queue_check);
  kernel_.Count(Counter::k_run_hw_queue);
  if (stopped_ || !HasPending(cpu)) co_return;
  const bool on_cpu = std::find(cpumask_.begin(), cpumask_.end(), cpu.id()) != cpumask_.end();
  if (on_cpu && !q_->tag_set().config().blocking) {
    co_await DispatchRequests(cpu);
    co_return;
  }
  kernel_.Count(Counter::k_run_hw_queue_async);
  kernel_.kblockd().Queue(&cpu, &run_work_, NextCpu(cpu), 0, /*modify=*/true);
}

void Hctx::RunAsync(sim::Cpu& cpu) {
  cpu.Charge(kernel_.fn.blk_mq_run_hw_queue, kernel_.costs().run_hw_queue_check);
  kernel_.Count(Counter::k_run_hw_queue);
  if (stopped_ || !HasPending(cpu)) return;
  kernel_.Count(Counter::k_run_hw_queue_async);
  kernel_.kblockd().Queue(&cpu, &run_work_, NextCpu(cpu), 0, /*modify=*/true);
}

void Hctx::DelayRun(sim::Cpu* cpu, int64_t delay_ns) {
  kernel_.Count(Counter::k_run_hw_queue_delayed);
  const int target = cpu != nullptr ? NextCpu(*cpu) : cpumask_[0];
  kernel_.kblockd().Queue(cpu, &run_work_, target, delay_ns, /*modify=*/true);
}

void Hctx::QueueRunWork(sim::Cpu* cpu, int cpu_id) {
  kernel_.Count(Counter::k_run_hw_queue_async);
  kernel_.kblockd().Queue(cpu, &run_work_, cpu_id, 0, /*modify=*/true);
}

// --- inserts ----------------------------------------------------------------

void Hctx::MarkCtxPending(sim::Cpu& cpu, Ctx* ctx) {
  const uint32_t w = CtxIndex(ctx) / kCtxPerMapWord;
  const uint64_t b = uint64_t{1} << (CtxIndex(ctx) % kCtxPerMapWord);
  if (ctx_map_[w] & b) return;
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             ctx_map_lines_[w].Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ctx_map_[w] |= b;
}

sim::Task Hctx::BypassInsert(sim::Cpu& cpu, Request* rq, bool at_head) {
  co_await lock_.Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_insert_request,
             dispatch_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  if (at_head) {
    dispatch_.push_front(rq);
  } else {
    dispatch_.push_back(rq);
  }
  kernel_.Count(Counter::k_dispatch_list_insert);
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

void Hctx::UpdateDispatchBusy(bool busy) {
  if (q_->elevator() != nullptr && !kernel_.knobs().dispatch_busy_with_scheduler) return;
  uint32_t ewma = dispatch_busy_;
  if (!ewma && !busy) return;
  ewma *= 7;
  if (busy) ewma += 1u << 4;
  ewma /= 8;
  dispatch_busy_ = ewma;
}

// --- dispatch ---------------------------------------------------------------

sim::Task Hctx::FlushBusyCtxs(sim::Cpu& cpu, RequestList& out) {
  // blk_mq_flush_busy_ctxs: for each pending ctx, splice its list under ctx->lock.
  for (size_t w = 0; w < ctx_map_.size(); ++w) {
    co_await cpu.Sync();
    uint64_t bits = ctx_map_[w];
    cpu.Charge(kernel_.fn.sbitmap_any_bit_set,
               ctx_map_lines_[w].Read(kernel_.machine(), cpu.id(), kernel_.costs().sbitmap_any_bit_set_per_word));
    while (bits != 0) {
      const int b = __builtin_ctzll(bits);
      bits &= bits - 1;
      Ctx* ctx = ctxs_[w * kCtxPerMapWord + b];
      co_await ctx->lock_.Lock(cpu);
      cpu.Charge(kernel_.fn.flush_busy_ctx,
                 ctx->list_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
      // Only this hctx's requests (a ctx may also hold poll-queue requests).
      RequestList keep;
      while (!ctx->rq_list_.empty()) {
        Request* r = ctx->rq_list_.pop_front();
        if (r->mq_hctx == this) {
          out.push_back(r);
        } else {
          keep.push_back(r);
        }
      }
      ctx->rq_list_.splice_tail(keep);
      ctx_map_[w] &= ~(uint64_t{1} << b);
      cpu.Charge(kernel_.fn.flush_busy_ctx,
                 ctx_map_lines_[w].Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
      co_await cpu.Sync();
      ctx->lock_.Unlock(cpu);
    }
  }
}

sim::Task Hctx::DispatchRequests(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_sched_dispatch_requests);
  // blk_mq_sched_dispatch_requests. A pass that stopped because requests
  // sat on hctx->dispatch (-EAGAIN, 5.8+) is repeated once at once, then
  // left to kblockd.
  cpu.Charge(kernel_.fn.rcu_read_lock, kernel_.costs().rcu_read_section);
  co_await cpu.Sync();
  if (stopped_) co_return;
  bool again = false;
  co_await SchedDispatchOnce(cpu, &again);
  if (!again) co_return;
  kernel_.Count(Counter::k_sched_dispatch_eagain);
  again = false;
  co_await SchedDispatchOnce(cpu, &again);
  if (!again) co_return;
  co_await cpu.Sync();
  RunAsync(cpu);
}

sim::Task Hctx::SchedDispatchOnce(sim::Cpu& cpu, bool* again) {
  // __blk_mq_sched_dispatch_requests.
  co_await cpu.Sync();
  RequestList list;
  if (!dispatch_.empty()) {
    co_await lock_.Lock(cpu);
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
               dispatch_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    list.splice_tail(dispatch_);
    co_await cpu.Sync();
    lock_.Unlock(cpu);
  }
  const bool had_leftovers = !list.empty();
  if (had_leftovers) {
    // Leftovers first; mark RESTART so a completion re-runs us. Only if
    // they all went does the scheduler get asked for more.
    MarkSchedRestart(cpu);
    bool dispatched = false;
    co_await DispatchRqList(cpu, list, &dispatched);
    if (!dispatched) co_return;
  }
  // The leftovers all went: the elevator, or one request at a time from the
  // software queues (blk_mq_do_dispatch_ctx), as the hctx was busy.
  if (q_->elevator() != nullptr) {
    co_await DoDispatchSched(cpu, again);
    co_return;
  }
  // Otherwise one at a time only while the dispatch-busy average says the
  // hctx is busy (4.19+), else all software queues at once
  // (blk_mq_flush_busy_ctxs). (4.14-4.18 chose by ->get_budget instead; the
  // model's submission path follows 4.19+'s direct-issue rule in every era,
  // so that choice is not modelled.)
  if (had_leftovers || dispatch_busy_ != 0) {
    co_await DoDispatchCtx(cpu, again);
    co_return;
  }
  co_await FlushBusyCtxs(cpu, list);
  if (list.empty()) co_return;
  bool dispatched = false;
  co_await DispatchRqList(cpu, list, &dispatched);
}

sim::Task Hctx::DequeueFromCtx(sim::Cpu& cpu, uint32_t start, Request** out) {
  // blk_mq_dequeue_from_ctx: the ctx_map's set bits from `start`, wrapping;
  // in the first ctx that has one, the oldest request of this hctx, taken
  // under ctx->lock (dispatch_rq_from_ctx), the ctx's bit cleared when
  // that was its last.
  *out = nullptr;
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  const uint32_t n = static_cast<uint32_t>(ctxs_.size());
  for (uint32_t i = 0; i < n && *out == nullptr; ++i) {
    const uint32_t idx = (start + i) % n;
    const uint32_t w = idx / kCtxPerMapWord;
    const uint64_t b = uint64_t{1} << (idx % kCtxPerMapWord);
    if (i == 0 || idx % kCtxPerMapWord == 0) {
      co_await cpu.Sync();
      cpu.Charge(kernel_.fn.sbitmap_any_bit_set,
                 ctx_map_lines_[w].Read(m, cpu.id(), c.sbitmap_any_bit_set_per_word));
    }
    if ((ctx_map_[w] & b) == 0) continue;
    Ctx* ctx = ctxs_[idx];
    co_await ctx->lock_.Lock(cpu);
    cpu.Charge(kernel_.fn.dispatch_rq_from_ctx, ctx->list_line_.Write(m, cpu.id(), c.atomic_local));
    bool more = false;
    for (Request* r = ctx->rq_list_.front(); r != nullptr; r = r->next) {
      if (r->mq_hctx != this) continue;
      if (*out == nullptr) {
        *out = r;
      } else {
        more = true;
        break;
      }
    }
    if (*out != nullptr) ctx->rq_list_.remove(*out);
    if (!more) {
      ctx_map_[w] &= ~b;
      cpu.Charge(kernel_.fn.dispatch_rq_from_ctx, ctx_map_lines_[w].Write(m, cpu.id(), c.atomic_local));
    }
    co_await cpu.Sync();
    ctx->lock_.Unlock(cpu);
  }
}

sim::Task Hctx::DoDispatchCtx(sim::Cpu& cpu, bool* again) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_do_dispatch_ctx);
  // blk_mq_do_dispatch_ctx: a budget, then one request from the software
  // queues, round robin from hctx->dispatch_from, while each goes to the
  // driver; what is not taken stays in its ctx (mergeable, counted there).
  // 5.8+: requests parked on hctx->dispatch end the loop with -EAGAIN.
  BlkMqDriver& driver = q_->driver();
  uint32_t from = dispatch_from_;
  while (true) {
    co_await cpu.Sync();
    if (DispatchListBusy(cpu)) {
      *again = true;
      break;
    }
    if (!CtxMapAnyBitSet(cpu)) break;
    const bool budget = driver.has_budget();
    const int token = budget ? driver.GetBudget(cpu, q_) : -1;
    if (budget && token < 0) break;
    Request* rq = nullptr;
    co_await DequeueFromCtx(cpu, from, &rq);
    if (rq == nullptr) {
      // Another CPU emptied the queues first.
      if (budget) driver.PutBudget(cpu, q_, token);
      BudgetDelayRun(cpu);
      break;
    }
    rq->budget_token = token;
    // blk_mq_next_ctx: round robin for fair dispatch.
    from = (CtxIndex(rq->mq_ctx) + 1) % static_cast<uint32_t>(ctxs_.size());
    RequestList one;
    one.push_back(rq);
    bool dispatched = false;
    co_await DispatchRqList(cpu, one, &dispatched);
    if (!dispatched) break;
  }
  dispatch_from_ = from;
}

void Hctx::ReleaseBudgets(sim::Cpu& cpu, RequestList& list) {
  for (Request* r = list.front(); r != nullptr; r = r->next) q_->PutRqBudget(cpu, r);
}

sim::Task Hctx::DispatchRqList(sim::Cpu& cpu, RequestList& list, bool* dispatched) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_dispatch_rq_list);
  // blk_mq_dispatch_rq_list: per request blk_mq_prep_dispatch_rq (budget,
  // driver tag), then ->queue_rq.
  const auto& c = kernel_.costs();
  BlkMqDriver& driver = q_->driver();
  kernel_.Count(Counter::k_dispatch_rq_list);
  BlkStatus last_status = BlkStatus::kOk;
  uint32_t queued = 0;
  bool no_budget = false;
  bool no_tag = false;
  while (!list.empty()) {
    Request* rq = list.front();
    co_await cpu.Sync();
    if (driver.has_budget() && rq->budget_token < 0) {
      const int token = driver.GetBudget(cpu, q_);
      if (token < 0) {
        no_budget = true;
        break;
      }
      rq->budget_token = token;
    }
    if (rq->tag == kNoTag && !GetDriverTag(cpu, rq)) {
      // blk_mq_mark_tag_wait: not shared -> SCHED_RESTART; shared -> wait
      // on the tag space (blk_mq_dispatch_wake). Then retry once.
      const bool shared = q_->tags_shared() || q_->tag_set().config().hctx_shared;
      if (!shared) {
        sched_restart_ = true;
        cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list, state_line_.Write(kernel_.machine(), cpu.id(), c.atomic_local));
      } else if (!on_dispatch_wait_) {
        on_dispatch_wait_ = true;
        tags_->dispatch_waiters.push_back(this);
      }
      if (!GetDriverTag(cpu, rq)) {
        // "For non-shared tags, the RESTART check will suffice": only a
        // shared tag space re-runs below when its waiter was already woken.
        no_tag = shared;
        break;
      }
    }
    list.pop_front();
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list, c.dispatch_rq_list_per_rq);
    kernel_.Count(Counter::k_queue_rq);
    co_await driver.QueueRq(cpu, this, rq, list.empty(), &last_status);
    if (last_status == BlkStatus::kResource || last_status == BlkStatus::kDevResource) {
      kernel_.Count(Counter::k_queue_rq_busy);
      RequestQueue::UnstartRequest(rq);
      list.push_front(rq);
      break;
    }
    if (last_status != BlkStatus::kOk) {
      q_->EndRequest(cpu, rq, last_status);
    }
    ++queued;
  }
  // The return value: 5.x+ true only when the driver took the whole list
  // (leftovers return false); 4.14 true when it took anything.
  *dispatched = kernel_.knobs().dispatch_loop_checks_dispatch_list ? list.empty() : queued > 0;
  if (list.empty()) {
    UpdateDispatchBusy(false);
    co_return;
  }
  // Leftovers: give their budgets back, commit what was queued, park the
  // rest on hctx->dispatch and decide who runs the queue again.
  ReleaseBudgets(cpu, list);
  if (queued > 0) co_await driver.CommitRqs(cpu, this);
  co_await lock_.Lock(cpu);
  cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list, dispatch_line_.Write(kernel_.machine(), cpu.id(), c.atomic_local));
  // 5.6+ splices them behind what other CPUs parked before; before, in front.
  if (kernel_.knobs().dispatch_leftovers_at_tail) {
    dispatch_.splice_tail(list);
  } else {
    dispatch_.splice_head(list);
  }
  kernel_.Count(Counter::k_dispatch_list_insert);
  co_await cpu.Sync();
  lock_.Unlock(cpu);
  UpdateDispatchBusy(true);
  const bool restart_marked = sched_restart_;
  // Before 5.8 a budget shortage left the re-run to the driver.
  const bool needs_resource =
      (no_budget && kernel_.knobs().blk_mq_budget_contention_rerun) || last_status == BlkStatus::kResource;
  if (!restart_marked || (no_tag && !on_dispatch_wait_)) {
    // Somebody cleared SCHED_RESTART while we dispatched: run again now.
    RunAsync(cpu);
  } else if (needs_resource) {
    DelayRun(&cpu, kResourceDelayNs);
  }
  // BLK_STS_DEV_RESOURCE: the driver promises a re-run when it frees resources.
}

sim::Task Hctx::DoDispatchSched(sim::Cpu& cpu, bool* again) {
  sim::StackFrame frame(cpu, kernel_.fn.blk_mq_do_dispatch_sched);
  // blk_mq_do_dispatch_sched: rounds while each queues all it took; since
  // 5.18 also until the CPU is wanted or a second has gone, then
  // blk_mq_delay_run_hw_queue(hctx, 0). A round that found hctx->dispatch
  // busy ends the loop with -EAGAIN.
  co_await cpu.Sync();
  const bool bounded = kernel_.knobs().dispatch_loop_time_limit;
  const sim::SimTime end = cpu.now() + kMaxSchedLoopNs;
  while (true) {
    bool dispatched = false;
    bool busy = false;
    co_await DoDispatchSchedOnce(cpu, &dispatched, &busy);
    if (busy) {
      *again = true;
      co_return;
    }
    if (!dispatched) co_return;
    if (!bounded) continue;
    co_await cpu.Sync();
    if (cpu.need_resched() || cpu.now() > end) {
      RunAsync(cpu);  // hand the rest to kblockd and yield
      co_return;
    }
  }
}

sim::Task Hctx::DoDispatchSchedOnce(sim::Cpu& cpu, bool* dispatched, bool* busy) {
  // __blk_mq_do_dispatch_sched
  *dispatched = false;
  *busy = false;
  Elevator& e = *q_->elevator();
  BlkMqDriver& driver = q_->driver();
  // max_dispatch: 1 while dispatch is busy, else q->nr_requests (the
  // scheduler depth); 1 always before batching (5.10).
  const uint32_t max_dispatch = dispatch_busy_ != 0 || !kernel_.knobs().sched_batch_dispatch
                                    ? 1
                                    : std::max<uint32_t>(sched_tags_->nr_tags(), 1);
  RequestList list;
  uint32_t count = 0;
  bool run_queue = false;
  bool multi_hctxs = false;
  do {
    co_await cpu.Sync();
    if (!e.HasWork(cpu, this)) break;
    if (DispatchListBusy(cpu)) {
      *busy = true;  // -EAGAIN
      break;
    }
    const bool budget = driver.has_budget();
    // No budget: stop; the driver re-runs the queue (SCSI: its completion
    // rule or the idle LUN's delayed run), not a 3 ms kick per hctx.
    const int token = budget ? driver.GetBudget(cpu, q_) : -1;
    if (budget && token < 0) break;
    Request* rq = nullptr;
    co_await e.DispatchRequest(cpu, this, &rq);
    co_await cpu.Sync();
    if (rq == nullptr) {
      if (budget) driver.PutBudget(cpu, q_, token);
      run_queue = true;
      break;
    }
    rq->budget_token = token;
    if (rq->mq_hctx != this) multi_hctxs = true;
    list.push_back(rq);
    ++count;
    // Stop collecting when no driver tag is left (blk_mq_get_driver_tag).
    if (!rq->mq_hctx->GetDriverTag(cpu, rq)) break;
  } while (count < max_dispatch);
  if (list.empty()) {
    if (run_queue) BudgetDelayRun(cpu);
    co_return;
  }
  if (!multi_hctxs) {
    co_await DispatchRqList(cpu, list, dispatched);
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
    co_await h->DispatchRqList(cpu, mine, &p);
    *dispatched = *dispatched || p;
  }
}

void Hctx::MarkSchedRestart(sim::Cpu& cpu) {
  const sim::Machine& m = kernel_.machine();
  const bool was_set = sched_restart_;
  sched_restart_ = true;
  cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list, state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
  if (!was_set && kernel_.knobs().restart_walks_shared_tag_queues && q_->tags_shared()) {
    // atomic_inc(&q->shared_hctx_restart)
    ++q_->shared_hctx_restart();
    cpu.Charge(kernel_.fn.blk_mq_dispatch_rq_list,
               q_->shared_restart_line().Write(m, cpu.id(), kernel_.costs().atomic_local));
  }
}

bool Hctx::RestartHctx(sim::Cpu& cpu) {
  const sim::Machine& m = kernel_.machine();
  cpu.Charge(kernel_.fn.blk_mq_sched_restart, state_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  if (!sched_restart_) return false;
  sched_restart_ = false;
  cpu.Charge(kernel_.fn.blk_mq_sched_restart, state_line_.Write(m, cpu.id(), kernel_.costs().atomic_local));
  --q_->shared_hctx_restart();
  cpu.Charge(kernel_.fn.blk_mq_sched_restart,
             q_->shared_restart_line().Write(m, cpu.id(), kernel_.costs().atomic_local));
  kernel_.Count(Counter::k_sched_restart);
  if (!HasPending(cpu)) return false;
  RunAsync(cpu);
  return true;
}

void Hctx::RestartWalk(sim::Cpu& cpu) {
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  // if (!atomic_read(&queue->shared_hctx_restart)) return;
  cpu.Charge(kernel_.fn.blk_mq_sched_restart, q_->shared_restart_line().Read(m, cpu.id(), c.line_read_hit));
  if (q_->shared_hctx_restart() == 0) return;
  cpu.Charge(kernel_.fn.rcu_read_lock, c.rcu_read_section);
  // list_for_each_entry_rcu_rr: the set's other queues, starting after ours.
  const std::vector<RequestQueue*>& queues = q_->tag_set().queues();
  size_t self = 0;
  while (queues[self] != q_) ++self;
  for (size_t k = 1; k < queues.size(); ++k) {
    RequestQueue* q2 = queues[(self + k) % queues.size()];
    cpu.Charge(kernel_.fn.blk_mq_sched_restart, c.line_read_hit);  // the list node, queue_hw_ctx
    for (int i = 0; i < q2->nr_hw_queues(); ++i) {
      Hctx* h2 = q2->hctx(i);
      if (h2->tags_ == tags_ && h2->RestartHctx(cpu)) return;
    }
  }
  // Then this queue's hctxs, from the one after ours, ours last.
  const int nr = q_->nr_hw_queues();
  for (int i = 0; i < nr; ++i) {
    Hctx* h2 = q_->hctx((static_cast<int>(queue_num_) + 1 + i) % nr);
    if (h2->tags_ == tags_ && h2->RestartHctx(cpu)) return;
  }
}

void Hctx::SchedRestart(sim::Cpu& cpu) {
  if (kernel_.knobs().restart_walks_shared_tag_queues && q_->tags_shared()) {
    RestartWalk(cpu);
    return;
  }
  // blk_mq_sched_restart: test SCHED_RESTART on the hctx state line.
  cpu.Charge(kernel_.fn.blk_mq_sched_restart,
             state_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
  if (sched_restart_) {
    sched_restart_ = false;
    kernel_.Count(Counter::k_sched_restart);
    RunAsync(cpu);
  }
}

void Hctx::DispatchWake(sim::Cpu& cpu) {
  on_dispatch_wait_ = false;
  RunAsync(cpu);
}

// --- shared tags ---------------------------------------------------------------

bool& Hctx::tag_active() {
  return q_->tag_set().config().hctx_shared ? q_->shared_usage().active : tag_active_;
}

void Hctx::TagBusy(sim::Cpu& cpu) {
  // blk_mq_tag_busy: test the active bit, mark it once and count the user.
  // (The kernel takes tags->lock for the count; the model charges the line.)
  const sim::Machine& m = kernel_.machine();
  bool& active = tag_active();
  cpu.Charge(kernel_.fn.blk_mq_get_tag, state_line_.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  if (active) return;
  active = true;
  ++tags_->active_queues;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, tags_->active_queues_line.Write(m, cpu.id(), kernel_.costs().atomic_local));
}

bool Hctx::MayQueue(sim::Cpu& cpu) {
  // hctx_may_queue: active requests < max(ceil(depth / users), 4).
  const sim::Machine& m = kernel_.machine();
  cpu.Charge(kernel_.fn.blk_mq_get_tag, tags_->active_queues_line.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  const uint32_t users = static_cast<uint32_t>(std::max(tags_->active_queues, 1));
  const uint32_t depth = tags_->nr_tags();
  const uint32_t limit = std::max<uint32_t>((depth + users - 1) / users, 4);
  const bool shared_q = q_->tag_set().config().hctx_shared;
  RequestQueue::SharedTagUsage& u = q_->shared_usage();
  sim::CacheLine& line = shared_q ? u.nr_active_line : nr_active_line_;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, line.Read(m, cpu.id(), kernel_.costs().line_read_hit));
  return (shared_q ? u.nr_active : nr_active_) < limit;
}

void Hctx::IncActive(sim::Cpu& cpu) {
  const bool shared_q = q_->tag_set().config().hctx_shared;
  RequestQueue::SharedTagUsage& u = q_->shared_usage();
  sim::CacheLine& line = shared_q ? u.nr_active_line : nr_active_line_;
  cpu.Charge(kernel_.fn.blk_mq_get_tag, line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ++(shared_q ? u.nr_active : nr_active_);
}

void Hctx::DecActive(sim::Cpu& cpu) {
  const bool shared_q = q_->tag_set().config().hctx_shared;
  RequestQueue::SharedTagUsage& u = q_->shared_usage();
  sim::CacheLine& line = shared_q ? u.nr_active_line : nr_active_line_;
  cpu.Charge(kernel_.fn.sbitmap_queue_clear, line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  --(shared_q ? u.nr_active : nr_active_);
}

bool Hctx::GetDriverTag(sim::Cpu& cpu, Request* rq) {
  // blk_mq_get_driver_tag (scheduler queues).
  if (rq->tag != kNoTag) return true;
  const bool fair = q_->tags_shared();
  if (fair) {
    TagBusy(cpu);
    if (!MayQueue(cpu)) return false;
  }
  const int bit = tags_->bitmap_tags().Get(cpu);
  if (bit < 0) return false;
  rq->tag = static_cast<uint32_t>(bit);
  tags_->SetRq(cpu, rq->tag, rq);
  if (fair) IncActive(cpu);
  return true;
}

}  // namespace blklab::model
