// engine/model/blk_timeout.h
//
// QueueTimeout models a request queue's timeout machinery (block/blk-timeout.c
// and blk_mq_timeout_work in block/blk-mq.c; docs/kernel-model.md §2.9):
//
//   Add           blk_add_timer, from blk_mq_start_request: the request's
//                 deadline (start + rq_timeout), and q->timeout armed for
//                 min(deadline, now + BLK_MAX_TIMEOUT), rounded: 5.9+ adds
//                 roundup_pow_of_two(HZ) jiffies (blk_round_jiffies, knob
//                 blk_timeout_relaxed_rounding), earlier kernels round up to
//                 a whole second (round_jiffies_up with its per-CPU skew,
//                 which lines different queues' timers up). A pending timer
//                 moves only for an expiry at least HZ/2 earlier, so under
//                 steady I/O it fires about every 6.024 s (5.9+, HZ=1000)
//                 or 5-6 s; the timer wheel then runs it at the next
//                 512-jiffy boundary (knob timer_wheel_granularity), so
//                 queues whose timers were armed within the same 512 ms
//                 walk together.
//   TimerIrq      blk_rq_timed_out_timer: queues the timeout work on kblockd
//                 of the CPU the timer fired on.
//   Work          blk_mq_timeout_work: walks the busy tags
//                 (blk_mq_queue_tag_busy_iter -> bt_iter ->
//                 blk_mq_find_and_get_req under tags->lock per busy bit,
//                 5.14+) until it finds a request in flight past its
//                 deadline (rq_timeout = the queue's io_timeout after
//                 blk_mq_start_request); if it did, it walks again handing
//                 every such request, once, to blk_mq_rq_timed_out (the
//                 driver's ->timeout: done, or the timer reset). Then it
//                 re-arms for the earliest deadline (which the next Add
//                 pulls back), or marks every hctx idle on its tag set. With
//                 host-wide shared tags the walk covers the whole shared
//                 bitmap once per hctx, or once per queue with
//                 tag_busy_iter_shared_once (RC1).
//
// Invariants: at most one expiry of q->timeout is pending; the timer is
//  re-armed never in the past.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: Add is two comparisons in the steady state; a walk costs one
//  tags->lock acquisition per busy bit, and inside it the rqs[] slot's line
//  and the request's line (usually from other CPUs).
#ifndef BLKLAB_ENGINE_MODEL_BLK_TIMEOUT_H_
#define BLKLAB_ENGINE_MODEL_BLK_TIMEOUT_H_

#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/tag_set.h"
#include "engine/sim/task.h"
#include "engine/sim/timer.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

class Hctx;
class RequestQueue;

class QueueTimeout {
 public:
  explicit QueueTimeout(RequestQueue* q);
  QueueTimeout(const QueueTimeout&) = delete;
  QueueTimeout& operator=(const QueueTimeout&) = delete;

  // blk_add_timer for `rq`, started now on `cpu`. With `arm` false only the
  // deadline is set (rigs without the timer).
  void Add(sim::Cpu& cpu, Request* rq, bool arm);

 private:
  class TimerIrq final : public sim::IrqHandler {
   public:
    explicit TimerIrq(QueueTimeout* t) : t_(t) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // blk_rq_timed_out_timer

   private:
    QueueTimeout* t_;
  };
  class Work final : public sim::WorkItem {
   public:
    explicit Work(QueueTimeout* t) : t_(t) {}
    sim::Task Run(sim::Cpu& cpu) override;  // blk_mq_timeout_work

   private:
    QueueTimeout* t_;
  };
  // blk_mq_queue_tag_busy_iter over `tags` for blk_mq_check_expired; only
  // requests of this queue (and of `hctx` unless null) count. *next becomes
  // the earliest deadline seen (0: none).
  // With `handle`, every expired request goes to RequestQueue::RqTimedOut;
  // without, the walk stops at the first (*expired set either way).
  sim::Task BusyIter(sim::Cpu& cpu, Tags& tags, Hctx* hctx, sim::SimTime* next, bool* expired, bool handle);
  // blk_mq_queue_tag_busy_iter over the queue (per hctx, or once with
  // tag_busy_iter_shared_once and host-wide tags).
  sim::Task WalkAll(sim::Cpu& cpu, sim::SimTime* next, bool* expired, bool handle);
  // blk_rq_timeout of the rounded deadline (either rounding).
  sim::SimTime Expiry(int cpu, sim::SimTime deadline, sim::SimTime now) const;
  // What 5.9+'s rounding adds to every expiry (0 before 5.9), from the
  // knob and HZ; fixed for the run.
  static int64_t RoundingSlack(const Kernel& kernel);
  // mod_timer(&q->timeout, expires) on `cpu`: the timer's expires field is
  // `expires`; it fires at its timer-wheel bucket (sim::TimerWheelExpiry,
  // knob timer_wheel_granularity) on `cpu`.
  void ModTimer(sim::Cpu& cpu, sim::SimTime expires);

  RequestQueue* q_;
  Kernel& kernel_;
  TimerIrq irq_;
  Work work_;
  sim::HrTimer timer_;  // q->timeout, firing at its wheel bucket
  sim::SimTime timer_expires_ = 0;  // q->timeout.expires, what mod_timer asked for
  sim::FnId fn_timeout_timer_, fn_timeout_work_, fn_busy_iter_, fn_find_and_get_req_,
      fn_for_each_set_, fn_check_expired_;
  const int64_t rounding_slack_ns_;
  const int64_t rq_timeout_ns_;  // q->rq_timeout (queue io_timeout)
  sim::SimTime walk_start_ = 0;  // expired.timeout_start (jiffies at the work's start)
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_TIMEOUT_H_
