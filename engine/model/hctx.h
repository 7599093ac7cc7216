// engine/model/hctx.h
//
// The per-CPU software queue (Ctx = struct blk_mq_ctx) and the hardware
// context (Hctx = struct blk_mq_hw_ctx) with the paths that run on one
// hardware context (block/blk-mq.c, blk-mq-sched.c, blk-mq-tag.c;
// docs/kernel-model.md §2.3–§2.6, §3.2, §3.4):
//
//   Run / RunAsync / DelayRun  blk_mq_run_hw_queue(hctx, async), the delayed
//                              variant, and blk_mq_run_work_fn on kblockd
//   HasPending                 blk_mq_hctx_has_pending (dispatch list, ctx_map,
//                              the elevator's has_work)
//   DispatchRequests           blk_mq_sched_dispatch_requests (run again once
//                              on -EAGAIN): hctx->dispatch
//                              leftovers, then the elevator
//                              (blk_mq_do_dispatch_sched) or the software
//                              queues (blk_mq_flush_busy_ctxs /
//                              blk_mq_do_dispatch_ctx)
//   DispatchRqList             blk_mq_dispatch_rq_list: budget, driver tag,
//                              ->queue_rq, leftovers and the re-run rules
//   BypassInsert               blk_mq_request_bypass_insert (hctx->dispatch)
//   TagBusy / MayQueue /       shared tag sets: blk_mq_tag_busy, hctx_may_queue,
//   Inc/DecActive              the active-request counters
//   GetDriverTag               blk_mq_get_driver_tag (scheduler queues)
//
// Invariants: a request parked on `dispatch` has SCHED_RESTART set, a run
//  queued, or the hctx waiting on its tags (dispatch_wait); a ctx bit in
//  ctx_map is set exactly while that ctx's list may hold requests of this
//  hctx.
// Thread-safety: thread-compatible; part of one simulation. Shared state
//  (locks, lists, map words, state bits) is touched only after cpu.Sync().
// Cost: prices from the cost table; no allocation per I/O.
#ifndef BLKLAB_ENGINE_MODEL_HCTX_H_
#define BLKLAB_ENGINE_MODEL_HCTX_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/task.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

class Hctx;
class RequestQueue;

// blk_mq_ctx: one per CPU per queue.
class Ctx {
 public:
  Ctx(Kernel& kernel, const std::string& qname, int cpu);
  int cpu() const { return cpu_; }
  Hctx* hctx(bool polled = false) const { return hctx_[polled ? 1 : 0]; }
  // ctx->index_hw[type]: this ctx's bit in that hctx's ctx_map (and its
  // index among the hctx's ctxs).
  uint32_t index_hw(bool polled = false) const { return index_hw_[polled ? 1 : 0]; }
  // ctx->rq_lists[HCTX_TYPE_DEFAULT] and ctx->lock.
  RequestList& rq_list() { return rq_list_; }
  sim::SpinLock& lock() { return lock_; }
  sim::CacheLine& list_line() { return list_line_; }

 private:
  friend class RequestQueue;  // wires the maps at queue creation
  friend class Hctx;
  int cpu_;
  Hctx* hctx_[2] = {nullptr, nullptr};  // ctx->hctxs[HCTX_TYPE_DEFAULT / _POLL]
  uint32_t index_hw_[2] = {0, 0};       // bit in that hctx's ctx_map
  sim::SpinLock lock_;        // ctx->lock
  RequestList rq_list_;       // ctx->rq_lists[HCTX_TYPE_DEFAULT]
  sim::CacheLine list_line_;
};

// blk_mq_hw_ctx.
class Hctx {
 public:
  Hctx(Kernel& kernel, RequestQueue* q, uint32_t queue_num, Tags* tags, bool is_poll);
  Hctx(const Hctx&) = delete;
  Hctx& operator=(const Hctx&) = delete;

  uint32_t queue_num() const { return queue_num_; }
  bool is_poll() const { return is_poll_; }
  RequestQueue* queue() const { return q_; }
  Tags& tags() { return *tags_; }
  Tags* sched_tags() { return sched_tags_; }
  bool stopped() const { return stopped_; }
  bool sched_restart() const { return sched_restart_; }
  size_t dispatch_len() const { return dispatch_.size(); }
  // Whether `rq` is parked on hctx->dispatch (the stall report).
  bool DispatchHolds(const Request* rq) const {
    for (const Request* r = dispatch_.front(); r != nullptr; r = r->next) {
      if (r == rq) return true;
    }
    return false;
  }
  uint32_t dispatch_busy() const { return dispatch_busy_; }
  size_t nr_ctx() const { return ctxs_.size(); }
  const std::vector<int>& cpumask() const { return cpumask_; }
  uint32_t wait_index = 0;  // bt_wait_ptr rotation

  // Wiring at queue creation.
  void AddCtx(Ctx* ctx, int type);
  void set_sched_tags(Tags* t) { sched_tags_ = t; }
  void set_stopped(bool stopped) { stopped_ = stopped; }
  void FinishSetup();  // sizes ctx_map once every ctx is added

  // blk_mq_run_hw_queue(hctx, false): dispatch inline if this CPU may,
  // else kick kblockd.
  sim::Task Run(sim::Cpu& cpu);
  // blk_mq_run_hw_queue(hctx, true). REQUIRES: the caller has Synced.
  void RunAsync(sim::Cpu& cpu);
  // blk_mq_delay_run_hw_queue; `cpu` null from event context.
  void DelayRun(sim::Cpu* cpu, int64_t delay_ns);
  // Queues the run work on `cpu_id` now (blk_mq_start_stopped_hw_queue).
  void QueueRunWork(sim::Cpu* cpu, int cpu_id);
  bool run_work_pending() const { return run_work_.pending(); }
  // blk_mq_hctx_next_cpu: where the run work goes.
  int NextCpu(sim::Cpu& cpu);

  // blk_mq_sched_dispatch_requests.
  sim::Task DispatchRequests(sim::Cpu& cpu);
  // blk_mq_dispatch_rq_list: dispatches `list`; what the driver did not
  // take is parked on hctx->dispatch. *dispatched: its return value (the
  // whole list went; 4.14: anything went, knob
  // dispatch_loop_checks_dispatch_list).
  sim::Task DispatchRqList(sim::Cpu& cpu, RequestList& list, bool* dispatched);
  // blk_mq_hctx_has_pending. REQUIRES: Synced.
  bool HasPending(sim::Cpu& cpu);
  // blk_mq_request_bypass_insert: onto hctx->dispatch under hctx->lock.
  sim::Task BypassInsert(sim::Cpu& cpu, Request* rq, bool at_head);
  // blk_mq_hctx_mark_pending: sets `ctx`'s bit in ctx_map.
  void MarkCtxPending(sim::Cpu& cpu, Ctx* ctx);
  // blk_mq_update_dispatch_busy: EWMA with weight 8, factor 4 (before 5.14
  // only without a scheduler: knobs.dispatch_busy_with_scheduler).
  void UpdateDispatchBusy(bool busy);

  // Shared tag sets (blk-mq-tag.c, blk-mq.h). REQUIRES: Synced.
  void TagBusy(sim::Cpu& cpu);    // blk_mq_tag_busy
  bool MayQueue(sim::Cpu& cpu);   // hctx_may_queue
  void IncActive(sim::Cpu& cpu);  // __blk_mq_inc_active_requests
  void DecActive(sim::Cpu& cpu);  // __blk_mq_dec_active_requests
  // blk_mq_get_driver_tag for `rq` (of this hctx). REQUIRES: Synced.
  bool GetDriverTag(sim::Cpu& cpu, Request* rq);
  // BLK_MQ_S_TAG_ACTIVE of this hctx, or of its queue with host-wide tags.
  bool& tag_active();
  // blk_mq_dispatch_wake: the tag space freed a tag this hctx waited for.
  void DispatchWake(sim::Cpu& cpu);
  // blk_mq_sched_restart: clears SCHED_RESTART and runs the hctx if it was set.
  void SchedRestart(sim::Cpu& cpu);

 private:
  class RunWork final : public sim::WorkItem {
   public:
    explicit RunWork(Hctx* hctx) : hctx_(hctx) {}
    sim::Task Run(sim::Cpu& cpu) override;  // blk_mq_run_work_fn

   private:
    Hctx* hctx_;
  };

  sim::Task FlushBusyCtxs(sim::Cpu& cpu, RequestList& out);
  // sbitmap_any_bit_set(&hctx->ctx_map), priced per word read.
  bool CtxMapAnyBitSet(sim::Cpu& cpu);
  // The 5.8+ poll of hctx->dispatch in the dispatch loops (false when the
  // knob is off).
  bool DispatchListBusy(sim::Cpu& cpu);
  // blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY) after a dispatch
  // that got nothing (5.8+).
  void BudgetDelayRun(sim::Cpu& cpu);
  // This hctx's index of `ctx` (ctx->index_hw[type]).
  uint32_t CtxIndex(const Ctx* ctx) const;
  // blk_mq_do_dispatch_ctx (sets *again on -EAGAIN, 5.8+) and
  // blk_mq_dequeue_from_ctx (ctx_map bits from index `start`, wrapping).
  sim::Task DoDispatchCtx(sim::Cpu& cpu, bool* again);
  sim::Task DequeueFromCtx(sim::Cpu& cpu, uint32_t start, Request** out);
  // __blk_mq_sched_dispatch_requests; *again: it returned -EAGAIN.
  sim::Task SchedDispatchOnce(sim::Cpu& cpu, bool* again);
  // blk_mq_do_dispatch_sched / __blk_mq_do_dispatch_sched; *busy: the round
  // stopped because hctx->dispatch held requests.
  sim::Task DoDispatchSched(sim::Cpu& cpu, bool* again);
  sim::Task DoDispatchSchedOnce(sim::Cpu& cpu, bool* dispatched, bool* busy);
  // The requests' budgets go back (blk_mq_release_budgets).
  void ReleaseBudgets(sim::Cpu& cpu, RequestList& list);

  Kernel& kernel_;
  RequestQueue* q_;
  uint32_t queue_num_;
  bool is_poll_;
  // blk_mq_sched_mark_restart_hctx: SCHED_RESTART, counted per queue while
  // the 4.14 restart walk is on and the tags are shared.
  void MarkSchedRestart(sim::Cpu& cpu);
  // blk_mq_sched_restart_hctx: clear SCHED_RESTART if set and run the hctx
  // if it has work; true when it ran.
  bool RestartHctx(sim::Cpu& cpu);
  // 4.14 blk_mq_sched_restart with TAG_SHARED: round robin over the set's
  // other queues, then this queue's hctxs after this one, up to the first
  // hctx it runs.
  void RestartWalk(sim::Cpu& cpu);

  Tags* tags_;
  bool stopped_ = false;        // BLK_MQ_S_STOPPED
  bool sched_restart_ = false;  // BLK_MQ_S_SCHED_RESTART
  uint32_t dispatch_busy_ = 0;  // EWMA (blk_mq_update_dispatch_busy)
  sim::SpinLock lock_;          // hctx->lock
  RequestList dispatch_;        // hctx->dispatch
  sim::CacheLine state_line_;   // hctx->state
  sim::CacheLine dispatch_line_;
  std::vector<Ctx*> ctxs_;
  std::vector<uint64_t> ctx_map_;           // pending ctx bits, 8 per word
  std::vector<sim::CacheLine> ctx_map_lines_;
  std::vector<int> cpumask_;
  uint32_t dispatch_from_ = 0;  // hctx->dispatch_from (its ctx index)
  int next_cpu_index_ = 0;
  int next_cpu_batch_ = 0;
  Tags* sched_tags_ = nullptr;  // hctx->sched_tags (with an elevator)
  bool tag_active_ = false;     // BLK_MQ_S_TAG_ACTIVE (per-hctx tags, shared set)
  uint32_t nr_active_ = 0;      // hctx->nr_active
  sim::CacheLine nr_active_line_;
  bool on_dispatch_wait_ = false;  // hctx->dispatch_wait queued on the tags
  RunWork run_work_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_HCTX_H_
