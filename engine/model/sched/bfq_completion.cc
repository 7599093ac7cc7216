// engine/model/sched/bfq_completion.cc: bfq's request completion and idle
// slice (block/bfq-iosched.c): bfq_finish_requeue_request and
// bfq_completed_request (directly, or from an irq work item when bfqd->lock
// is held), the hardware-tag detection, the in-service queue's expiry or
// idling after a completion, and the idle slice timer. The rest of bfq is in
// bfq.cc (bfq.h describes the whole).
#include <algorithm>
#include <cstdint>

#include "engine/model/blk_mq.h"
#include "engine/model/sched/bfq.h"

namespace blklab::model {
void BfqSched::CompletedRequest(sim::Cpu& cpu, Request* rq, sim::SimTime now) {
  // bfq_finish_requeue_request -> bfq_completed_request under
  // spin_lock_irqsave. The completion chain is not a coroutine: a free lock
  // is taken here and now; a held one is spun for by an irq work item queued
  // on this CPU, which runs as soon as the completing context steps.
  Queue* q = static_cast<Queue*>(rq->elv_priv);
  if (q == nullptr) return;
  rq->elv_priv = nullptr;
  const bool waited = rq == waited_rq_;
  if (waited) waited_rq_ = nullptr;  // the pointer is not kept past the free
  if (!lock_.TryLock(cpu)) {
    ++stats_.completion_lock_busy;
    deferred_done_[cpu.id()].push_back(Done{q, BicKey(rq->ioc, rq->blkcg), waited});
    cpu.RaiseHardirq(cpu.now(), &done_irq_, 0);
    return;
  }
  CompleteLocked(cpu, q, BicKey(rq->ioc, rq->blkcg), waited, now);
  lock_.Unlock(cpu);
  // bfq_schedule_dispatch when the drive is empty.
  if (rq_in_driver_ == 0 && queued_ > 0 && q_ != nullptr) q_->RunHwQueuesAsync(cpu);
}

sim::Task BfqSched::DoneIrq(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, fn_completed_);
  co_await cpu.Sync();
  sim::PooledDeque<Done>& pending = deferred_done_[cpu.id()];
  if (pending.empty()) co_return;
  const Done d = pending.front();
  pending.pop_front();
  co_await lock_.Lock(cpu);
  CompleteLocked(cpu, d.q, d.bic, d.waited, cpu.now());
  co_await cpu.Sync();
  lock_.Unlock(cpu);
  if (rq_in_driver_ == 0 && queued_ > 0 && q_ != nullptr) q_->RunHwQueuesAsync(cpu);
}

void BfqSched::CompleteLocked(sim::Cpu& cpu, Queue* q, uint64_t bic, bool waited, sim::SimTime now) {
  // bfq_finish_requeue_request: the inject limit, bfq_completed_request,
  // then the request's reference on the queue.
  now_ = now;
  if (waited) UpdateInjectLimit(q, now);
  --bic_requests_[bic];
  --q->entity.allocated;  // bfqq_request_freed
  if (q->entity.parent != &root_) --q->entity.parent->entity.allocated;
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().bfq_completed_request);
  ac.Store(bfqd_line_);
  ac.Store(q->line);
  // bfq_update_hw_tag (the in-driver count before this completion).
  max_rq_in_driver_ = std::max(max_rq_in_driver_, rq_in_driver_);
  if (hw_tag_ != 1 && rq_in_driver_ + queued_ > static_cast<uint32_t>(kHwQueueThreshold) &&
      !(in_service_ != nullptr && ShortThinkTime(in_service_) &&
        in_service_->dispatched + in_service_->sort.size() < static_cast<size_t>(kHwQueueThreshold) &&
        rq_in_driver_ < static_cast<uint32_t>(kHwQueueThreshold)) &&
      hw_tag_samples_++ >= kHwQueueSamples) {
    hw_tag_ = max_rq_in_driver_ > static_cast<uint32_t>(kHwQueueThreshold) ? 1 : 0;
    max_rq_in_driver_ = 0;
    hw_tag_samples_ = 0;
  }
  --rq_in_driver_;
  --q->dispatched;
  const bool busy = q->entity.active || in_service_ == q;
  if (q->dispatched == 0 && !busy) q->budget_timeout = now;
  SyncActive(q);
  q->last_end_request = now;
  if (in_service_ == q) {
    const uint64_t left = q->entity.budget > q->entity.service ? q->entity.budget - q->entity.service : 0;
    if (q->sort.empty() && BetterToIdle(q)) {
      if (q->dispatched == 0) ArmIdleTimer(cpu, q);
    } else if ((!q->wait_request || left >= q->entity.budget / 3) && BudgetTimedOut(q, now)) {
      Expire(cpu, q, kBudgetTimeout);
    } else if (q->sort.empty() && (q->dispatched == 0 || !BetterToIdle(q))) {
      Expire(cpu, q, kNoMoreRequests);
    }
  }
  SyncActive(q);
  cpu.Charge(fn_completed_, ac.Take());
}

sim::Task BfqSched::IdleTimerIrq(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, fn_timer_);
  co_await cpu.Sync();
  co_await lock_.Lock(cpu);
  IdleTimerFired(cpu);
  co_await cpu.Sync();
  lock_.Unlock(cpu);
  if (queued_ > 0 && q_ != nullptr) q_->RunHwQueuesAsync(cpu);
}

void BfqSched::IdleTimerFired(sim::Cpu& cpu) {
  // bfq_idle_slice_timer_body.
  Queue* q = idle_queue_;
  idle_queue_ = nullptr;
  now_ = cpu.now();
  ++stats_.idle_timer_fired;
  kernel_.Count(Counter::k_bfq_idle_timer_fired);
  cpu.Charge(fn_timer_, kernel_.costs().hrtimer_fire);
  if (q == nullptr || q != in_service_) return;
  q->wait_request = false;
  if (BudgetTimedOut(q, cpu.now())) {
    Expire(cpu, q, kBudgetTimeout);
  } else if (q->sort.empty()) {
    Expire(cpu, q, kTooIdle);
  }
}

}  // namespace blklab::model
