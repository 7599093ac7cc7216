#include "engine/model/blk_timeout.h"

#include <algorithm>

#include "engine/model/blk_mq.h"

namespace blklab::model {

namespace {
constexpr int64_t kBlkMaxTimeoutNs = 5 * sim::kNsPerSec;  // BLK_MAX_TIMEOUT
}  // namespace

QueueTimeout::QueueTimeout(RequestQueue* q)
    : q_(q),
      kernel_(q->kernel()),
      irq_(this),
      work_(this),
      rounding_slack_ns_(RoundingSlack(kernel_)),
      rq_timeout_ns_(int64_t{q->config().sysfs.io_timeout} * sim::kNsPerMs) {
  timer_.Init(&kernel_.machine(), 0, &irq_, 0);
  fn_timeout_timer_ = kernel_.Intern("blk_rq_timed_out_timer");
  fn_timeout_work_ = kernel_.Intern("blk_mq_timeout_work");
  fn_busy_iter_ = kernel_.Intern("bt_iter");
  fn_find_and_get_req_ = kernel_.Intern("blk_mq_find_and_get_req");
  fn_for_each_set_ = kernel_.Intern("blk_mq_queue_tag_busy_iter");
  fn_check_expired_ = kernel_.Intern("blk_mq_check_expired");
}

void QueueTimeout::Add(sim::Cpu& cpu, Request* rq, bool arm) {
  // blk_add_timer: RQF_TIMED_OUT cleared, deadline = now + q->rq_timeout.
  rq->timed_out = false;
  rq->deadline = cpu.now() + rq_timeout_ns_;
  if (!arm) return;
  // The arming is priced inside blk_mq_start_request's share of the path.
  // The expiry is never before min(deadline, now + BLK_MAX_TIMEOUT) plus
  // the rounding's fixed slack, so a timer due before that plus HZ/2 cannot
  // move: skip the rounding (the common case, once per IO).
  if (timer_.pending() && timer_expires_ < std::min(rq->deadline, cpu.now() + kBlkMaxTimeoutNs) +
                                               rounding_slack_ns_ + sim::kNsPerSec / 2) {
    return;
  }
  const sim::SimTime expiry = Expiry(cpu.id(), rq->deadline, cpu.now());
  if (!timer_.pending() || expiry + sim::kNsPerSec / 2 <= timer_expires_) ModTimer(cpu, expiry);
}

void QueueTimeout::ModTimer(sim::Cpu& cpu, sim::SimTime expires) {
  // mod_timer from this CPU: the timer moves to its base, and the wheel
  // runs it at the bucket its distance falls in.
  timer_expires_ = expires;
  timer_.set_cpu(cpu.id());
  timer_.Start(kernel_.TimerListRuns(cpu.now(), expires));
}

int64_t QueueTimeout::RoundingSlack(const Kernel& kernel) {
  if (!kernel.knobs().blk_timeout_relaxed_rounding) return 0;
  // blk_round_jiffies: j + roundup_pow_of_two(HZ) (blk_timeout_mask + 1).
  int64_t hz_pow2 = 1;
  while (hz_pow2 < kernel.hz()) hz_pow2 <<= 1;
  return hz_pow2 * kernel.jiffy_ns();
}

sim::SimTime QueueTimeout::Expiry(int cpu, sim::SimTime deadline, sim::SimTime now) const {
  const int64_t jiffy = kernel_.jiffy_ns();
  if (kernel_.knobs().blk_timeout_relaxed_rounding) {
    // 5.9+: blk_rq_timeout(blk_round_jiffies(deadline)), the cap being
    // blk_round_jiffies(now + BLK_MAX_TIMEOUT): about now + 6.024 s at
    // HZ=1000, with no alignment between queues or CPUs.
    return std::max(now + jiffy, std::min(deadline, now + kBlkMaxTimeoutNs) + rounding_slack_ns_);
  }
  // Before 5.9: blk_rq_timeout + round_jiffies_up: a whole second, skewed
  // by 3 jiffies per CPU (added before rounding, taken off after).
  // A request past its deadline (the model does not time requests out)
  // re-arms for the next jiffy, never in the past.
  const sim::SimTime t = std::max(now + jiffy, std::min(deadline, now + kBlkMaxTimeoutNs));
  const int64_t skew = int64_t{3} * cpu * jiffy;
  sim::SimTime r = (t + skew + sim::kNsPerSec - 1) / sim::kNsPerSec * sim::kNsPerSec - skew;
  if (r < t) r += sim::kNsPerSec;
  return r;
}

sim::Task QueueTimeout::TimerIrq::Handle(sim::Cpu& cpu, uint64_t) {
  // blk_rq_timed_out_timer -> kblockd_schedule_work(&q->timeout_work) on
  // the CPU the timer fired on.
  Kernel& k = t_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(t_->fn_timeout_timer_, k.costs().timeout_timer_fire);
  co_await cpu.Sync();
  k.kblockd().Queue(&cpu, &t_->work_, cpu.id(), 0);
}

sim::Task QueueTimeout::Work::Run(sim::Cpu& cpu) {
  sim::StackFrame frame(cpu, t_->fn_timeout_work_);
  // blk_mq_timeout_work: walk the busy tags for an expired request
  // (blk_mq_check_expired stops at the first); if one is found, walk again
  // handing every expired one to blk_mq_rq_timed_out (blk_mq_handle_expired);
  // then re-arm the timer for the earliest deadline, or mark the queue idle
  // on its tag set.
  QueueTimeout* t = t_;
  RequestQueue* q = t->q_;
  Kernel& k = t->kernel_;
  k.Count(Counter::k_timeout_work);
  cpu.Charge(t->fn_timeout_work_, k.costs().percpu_ref);
  t->walk_start_ = cpu.now();
  sim::SimTime next = 0;
  bool expired = false;
  co_await t->WalkAll(cpu, &next, &expired, /*handle=*/false);
  if (expired) {
    next = 0;
    co_await t->WalkAll(cpu, &next, &expired, /*handle=*/true);
  }
  co_await cpu.Sync();
  if (next != 0) {
    // mod_timer(&q->timeout, next): the earliest deadline itself (5.0+),
    // about rq_timeout away; the next blk_add_timer pulls it back to its
    // own, nearer expiry, so under steady I/O the walks recur every
    // BLK_MAX_TIMEOUT plus the rounding.
    cpu.Charge(k.fn.hrtimer_start, k.costs().hrtimer_arm);
    t->ModTimer(cpu, std::max(next, cpu.now() + k.jiffy_ns()));
    co_return;
  }
  // blk_mq_tag_idle for every hctx: leave the set's active users.
  for (int i = 0; i < q->nr_hw_queues(); ++i) {
    Hctx* h = q->hctx(i);
    bool& active = h->tag_active();
    if (!active) continue;
    active = false;
    Tags& tags = h->tags();
    --tags.active_queues;
    cpu.Charge(t->fn_timeout_work_, tags.active_queues_line.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  }
}

sim::Task QueueTimeout::WalkAll(sim::Cpu& cpu, sim::SimTime* next, bool* expired, bool handle) {
  RequestQueue* q = q_;
  if (q->tag_set().config().hctx_shared && kernel_.knobs().tag_busy_iter_shared_once) {
    // 5.16: with host-shared tags the bitmap is walked once for the queue.
    co_await BusyIter(cpu, q->hctx(0)->tags(), nullptr, next, expired, handle);
  } else {
    // Every hctx walks its tags, which with host-shared tags is the whole
    // shared bitmap each time (RC1's "before").
    for (int i = 0; i < q->nr_hw_queues() && (handle || !*expired); ++i) {
      co_await BusyIter(cpu, q->hctx(i)->tags(), q->hctx(i), next, expired, handle);
    }
  }
}

sim::Task QueueTimeout::BusyIter(sim::Cpu& cpu, Tags& tags, Hctx* hctx, sim::SimTime* next, bool* expired,
                                 bool handle) {
  sim::StackFrame frame(cpu, fn_for_each_set_);
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
    for (uint32_t i = first; i < last; ++i) busy += tags.rq(i) != nullptr ? 1 : 0;
    if (busy == 0) continue;
    if (!take_lock) cpu.Charge(fn_busy_iter_, int64_t{busy} * c.busy_iter_per_bit);
    uint32_t matched = 0;
    for (uint32_t i = first; i < last; ++i) {
      if (tags.rq(i) == nullptr) continue;
      if (take_lock) {
        co_await tags.lock().Lock(cpu);
        cpu.Charge(fn_find_and_get_req_, c.busy_iter_per_bit);
      }
      // Under the lock (5.14+): read tags->rqs[bit], whose line the CPU
      // that took the tag wrote, then req_ref_inc_not_zero on the request,
      // whose line the IO path keeps writing: both usually come from
      // another CPU, and with the lock they lengthen the hold that the
      // other walkers spin behind. Before 5.14 the same lines are read
      // without the lock and without a reference.
      Request* rq = tags.rq(i);
      int64_t lines_ns = kernel_.ReadLine(cpu, tags.rqs_line(i));
      if (rq != nullptr) {
        lines_ns += take_lock ? rq->line.Write(kernel_.machine(), cpu.id(), c.atomic_local)
                              : kernel_.ReadLine(cpu, rq->line);
      }
      cpu.Charge(fn_find_and_get_req_, lines_ns);
      // Read under the lock: the slot may have been freed meanwhile.
      // blk_mq_req_expired: in flight, not already timed out, and past its
      // deadline at the walk's start; else its deadline bounds `next`.
      bool timed_out_now = false;
      if (rq != nullptr && rq->q == q_ && (hctx == nullptr || rq->mq_hctx == hctx) &&
          rq->state == Request::State::kInFlight && !rq->timed_out) {
        ++matched;
        if (walk_start_ >= rq->deadline) {
          *expired = true;
          timed_out_now = handle;
        } else if (*next == 0 || rq->deadline < *next) {
          *next = rq->deadline;
        }
      }
      if (take_lock) {
        co_await cpu.Sync();
        tags.lock().Unlock(cpu);
        // blk_mq_put_rq_ref, after the callback: the line is still here
        // unless the IO path took it back meanwhile.
        if (rq != nullptr) {
          cpu.Charge(fn_check_expired_, rq->line.Write(kernel_.machine(), cpu.id(), c.atomic_local));
        }
      }
      if (timed_out_now) {
        co_await cpu.Sync();
        q_->RqTimedOut(cpu, rq);
      }
      // blk_mq_check_expired returns false at the first expired request.
      if (*expired && !handle) break;
    }
    if (*expired && !handle) break;
    cpu.Charge(fn_check_expired_, int64_t{matched} * c.line_read_hit);
  }
}

}  // namespace blklab::model
