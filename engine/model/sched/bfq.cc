#include "engine/model/sched/bfq.h"

#include <algorithm>
#include <limits>

#include "absl/strings/str_cat.h"
#include "engine/model/blk_mq.h"
#include "engine/model/hctx.h"

namespace blklab::model {

BfqConfig BfqConfig::From(const host::IoschedTunables& t) {
  BfqConfig c;
  c.slice_idle_ns = t.slice_idle_us >= 0 ? t.slice_idle_us * 1000 : int64_t{t.slice_idle} * sim::kNsPerMs;
  c.low_latency = t.low_latency;
  c.timeout_ns = int64_t{t.timeout_sync} * sim::kNsPerMs;
  c.user_max_budget = static_cast<uint64_t>(t.max_budget);
  c.strict_guarantees = t.strict_guarantees;
  // Writing strict_guarantees=1 raises slice_idle to at least 8 ms.
  if (c.strict_guarantees) c.slice_idle_ns = std::max<int64_t>(c.slice_idle_ns, 8 * sim::kNsPerMs);
  c.back_seek_max_sectors = static_cast<uint64_t>(t.back_seek_max) * 2;
  c.back_seek_penalty = static_cast<uint32_t>(t.back_seek_penalty);
  c.fifo_expire_sync_ns = int64_t{t.fifo_expire_sync} * sim::kNsPerMs;
  return c;
}

// elevator_type bfq: init_sched (bfq_init_queue).
const ElevatorType kBfqElevator = {
    host::Scheduler::kBfq,
    [](const ElevatorInit& init) -> std::unique_ptr<Elevator> {
      BfqConfig c = BfqConfig::From(init.sysfs->iosched);
      if (init.cgroup_bfq_weights != nullptr) c.cgroup_weights = *init.cgroup_bfq_weights;
      c.rotational = init.rotational;
      c.noxmerges = init.sysfs->nomerges == 1;
      c.max_request_bytes = init.max_request_bytes;
      c.stable_merge = init.kernel->knobs().bfq_stable_merge;
      return std::make_unique<BfqSched>(*init.kernel, init.qname, c);
    },
};

BfqSched::BfqSched(Kernel& kernel, const std::string& qname, const BfqConfig& config)
    : kernel_(kernel),
      qname_(qname),
      config_(config),
      lock_(kernel.machine(), qname + ":bfqd->lock", sim::SpinLockKind::kSpinLockIrqsave, kernel.fn.raw_spin_lock,
            kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  lock_.set_explicit_working_set();
  idle_timer_.Init(&kernel.machine(), 0, &idle_irq_, 0);
  deferred_done_.resize(static_cast<size_t>(kernel.machine().num_cpus()));
  peak_rate_ = kRefRate[config_.rotational ? 0 : 1] * 2 / 3;
  fn_bio_merge_ = kernel.Intern("bfq_bio_merge");
  fn_insert_ = kernel.Intern("bfq_insert_requests");
  fn_dispatch_ = kernel.Intern("bfq_dispatch_request");
  fn_has_work_ = kernel.Intern("bfq_has_work");
  fn_completed_ = kernel.Intern("bfq_finish_requeue_request");
  fn_timer_ = kernel.Intern("bfq_idle_slice_timer");
}

void BfqSched::InitHctx(Hctx* hctx) {
  q_ = hctx->queue();
  word_bits_ = hctx->sched_tags()->bitmap_tags().bits_per_word();
  nr_requests_ = hctx->sched_tags()->nr_tags();
  // bfq_depth_updated: an allocation over its queue's limit may be held to
  // one bit a word, so the wake batch counts one bit a word.
  hctx->sched_tags()->bitmap_tags().SetMinShallowDepth(1);
}

// --- requests within a queue ------------------------------------------------

Request* BfqSched::NextRequest(Queue* q) {
  if (q->sort.empty()) return nullptr;
  // bfq_check_fifo, once per budget: the FIFO head if its deadline passed.
  if (!q->fifo_checked && !q->fifo.empty() && q->fifo.begin()->first <= now_) {
    return q->rqs[q->fifo.begin()->second];
  }
  // bfq_choose_req against bfqd->last_position: forward distance, a short
  // backward seek at back_seek_penalty, else the wrap to the lowest sector.
  const uint64_t last = last_position_;
  auto fwd = q->sort.lower_bound({last, 0});
  uint64_t d_fwd = std::numeric_limits<uint64_t>::max(), d_back = d_fwd;
  if (fwd != q->sort.end()) d_fwd = fwd->first - last;
  auto back = fwd;
  if (back != q->sort.begin()) {
    --back;
    if (last - back->first <= config_.back_seek_max_sectors) d_back = (last - back->first) * config_.back_seek_penalty;
  }
  if (d_fwd == std::numeric_limits<uint64_t>::max() && d_back == d_fwd) return q->rqs[q->sort.begin()->second];
  return q->rqs[(d_back < d_fwd ? back : fwd)->second];
}

void BfqSched::RemoveRequest(Queue* q, Request* rq) {
  q->sort.erase({rq->sector, rq->sched_seq});
  q->fifo.erase({rq->fifo_time, rq->sched_seq});
  q->rqs.erase(rq->sched_seq);
  hash_.erase({EndSector(rq), rq->sched_seq});
  if (last_merge_ == rq) last_merge_ = nullptr;
  --queued_;
  if (q->sort.empty() && in_service_ != q && q->entity.active) {
    // bfq_del_bfqq_busy: an empty queue not in service leaves the tree.
    DeactivateEntity(&q->entity, false);
    q->entity.budget = 0;
    --busy_queues_;
    if (q->wr_coeff > 1) --wr_busy_queues_;
    SyncActive(q);
  }
}

bool BfqSched::Seeky(const Queue* q) const { return __builtin_popcount(q->seek_history) > 19; }

bool BfqSched::ShortThinkTime(const Queue* q) const {
  // bfq_update_has_short_ttime: long once past 3 samples with a mean above
  // half the idle slice.
  if (config_.slice_idle_ns == 0) return true;
  return !(q->ttime_samples > 80 && q->ttime_mean > static_cast<uint64_t>(config_.slice_idle_ns / 2));
}

void BfqSched::UpdateWr(sim::SimTime now, Queue* q) {
  // bfq_update_wr_data at dispatch: raising ends in a large burst, after its
  // duration or after 120000 sectors.
  if (q->wr_coeff == 1) return;
  if (q->in_large_burst || now > q->wr_start + q->wr_cur_max_time || q->service_from_wr > kMaxServiceFromWr) {
    q->wr_coeff = 1;
    q->wr_cur_max_time = 0;
    --wr_busy_queues_;
    Entity& e = q->entity;
    ServiceTree& st = e.parent->st[e.cls];
    st.wsum -= static_cast<uint64_t>(e.weight - q->orig_weight);
    e.weight = q->orig_weight;
    SyncActive(q);
  }
}

void BfqSched::AddBusy(sim::Cpu& cpu, Queue* q) {
  // bfq_bfqq_handle_idle_busy_switch.
  const sim::SimTime now = cpu.now();
  const bool idle_long = q->dispatched == 0 && now > q->budget_timeout + kWrMinIdleNs;
  const bool interactive = !q->in_large_burst && idle_long && q->orig_weight == IoprioToWeight(4);
  // bfq_bfqq_update_budg_for_activation: a queue that expired waiting for
  // its in-flight requests and gets a new one in time resumes the rest of
  // its budget and wants to preempt.
  Entity& e = q->entity;
  const uint64_t left = e.budget > e.service ? e.budget - e.service : 0;
  const bool in_time = now <= q->last_end_request + 3 * config_.slice_idle_ns;
  bool wants_preempt = false;
  if (q->non_blocking_wait_rq && in_time && left > 0) {
    e.budget = std::min(left, q->max_budget);
    e.service = 0;
    wants_preempt = true;
  } else {
    e.service = 0;
    Request* next = NextRequest(q);
    e.budget = std::max<uint64_t>(q->max_budget, next != nullptr ? Sectors(next) : 0);
    q->non_blocking_wait_rq = false;
  }
  if (config_.low_latency && interactive) {
    q->wr_coeff = kWrCoeff;
    q->wr_start = now;
    q->wr_cur_max_time = WrDuration();
    q->service_from_wr = 0;
    const uint64_t min_budget = MaxBudget() / 32;
    q->entity.budget = std::min(q->entity.budget, 2 * min_budget);
    ++stats_.wr_raised;
    kernel_.Count(Counter::k_bfq_wr_raised);
  }
  ++busy_queues_;
  if (q->wr_coeff > 1) ++wr_busy_queues_;
  ActivateEntity(&q->entity, false);
  q->non_blocking_wait_rq = false;
  // Preemption of the in-service queue by a higher class or weight, or when
  // the in-service queue is not worth idling for; only if the scheduler's
  // next choice at the root is not the in-service entity itself
  // (next_queue_may_preempt: a group in service with other active children
  // stays next).
  if (in_service_ != nullptr && in_service_ != q) {
    Queue* s = in_service_;
    bool higher = q->entity.cls < s->entity.cls;
    if (!higher) {
      // bfq_bfqq_higher_class_or_weight: the queues' weights under one
      // parent, else their parent groups' (a root queue's own).
      auto level_weight = [this](const Queue* x) {
        return x->entity.parent == &root_ ? x->entity.weight : x->entity.parent->entity.weight;
      };
      higher = q->entity.parent == s->entity.parent ? q->entity.weight > s->entity.weight
                                                    : level_weight(q) > level_weight(s);
    }
    bool may_preempt = s->entity.parent == &root_;
    if (!may_preempt) {
      may_preempt = true;
      for (const ServiceTree& st : s->entity.parent->st) may_preempt = may_preempt && st.active.empty();
    }
    if (((wants_preempt && q->wr_coeff >= s->wr_coeff) || higher || !BetterToIdle(s)) && may_preempt) {
      Expire(cpu, s, kPreempted);
    }
  }
}

void BfqSched::AddRequest(sim::Cpu& cpu, Queue* q, Request* rq) {
  const sim::SimTime now = cpu.now();
  // bfq_update_io_thinktime: only for a queue with nothing in flight and not busy.
  if (q->dispatched == 0 && !q->entity.active && in_service_ != q) {
    const uint64_t elapsed = static_cast<uint64_t>(
        std::min<int64_t>(std::max<int64_t>(now - q->last_end_request, 0), 2 * config_.slice_idle_ns));
    q->ttime_samples = (7 * q->ttime_samples + 256) / 8;
    q->ttime_total = (7 * q->ttime_total + 256 * elapsed) / 8;
    q->ttime_mean = (q->ttime_total + 128) / std::max<uint64_t>(q->ttime_samples, 1);
  }
  // bfq_update_io_seektime.
  const uint64_t dist = q->last_position == 0 ? 0
                        : rq->sector > q->last_position ? rq->sector - q->last_position
                                                         : q->last_position - rq->sector;
  const bool seeky = dist > kSeekThrSectors && (config_.rotational || Sectors(rq) < kSectThrNonrot);
  q->seek_history = (q->seek_history << 1) | (seeky ? 1u : 0u);
  q->last_position = EndSector(rq);
  // Injection sampling while the process has only this request.
  if (bic_requests_[BicKey(rq->ioc, rq->blkcg)] <= 1) {
    if (now >= q->decrease_time + sim::kNsPerSec) {
      // bfq_reset_inject_limit.
      q->last_serv_time_ns = 0;
      waited_rq_ = nullptr;
      q->inject_limit = ShortThinkTime(q) ? 0 : 1;
      q->decrease_time = now;
    }
    if (q == in_service_ && (rq_in_driver_ == 0 || (q->last_serv_time_ns > 0 && rqs_injected_)) &&
        now >= q->decrease_time + 10 * sim::kNsPerMs) {
      last_empty_occupied_ns_ = now;
      wait_dispatch_ = true;
      if (rq_in_driver_ == 0) rqs_injected_ = false;
    }
  }
  rq->sched_seq = next_seq_++;
  rq->fifo_time = now + config_.fifo_expire_sync_ns;
  rq->elv_priv = q;
  q->sort.insert({rq->sector, rq->sched_seq});
  q->fifo.insert({rq->fifo_time, rq->sched_seq});
  q->rqs[rq->sched_seq] = rq;
  hash_[{EndSector(rq), rq->sched_seq}] = rq;
  ++queued_;
  const bool busy = q->entity.active || in_service_ == q;
  if (!busy) {
    AddBusy(cpu, q);
  } else if (in_service_ != q) {
    // bfq_updated_next_req: the budget covers the new next request.
    Request* next = NextRequest(q);
    const uint64_t b = std::max({q->max_budget, next != nullptr ? Sectors(next) : 0, q->entity.service});
    if (b != q->entity.budget) {
      q->entity.budget = b;
      ActivateEntity(&q->entity, false);
    }
  }
  // bfq_rq_enqueued: a request of the in-service queue ends the idling.
  if (in_service_ == q && q->wait_request) {
    q->wait_request = false;
    idle_timer_.Cancel();
    ++stats_.idle_cancelled;
    if (BudgetTimedOut(q, now)) Expire(cpu, q, kBudgetTimeout);
  }
}

// --- the in-service queue ---------------------------------------------------

bool BfqSched::BudgetTimedOut(const Queue* q, sim::SimTime now) const { return now >= q->budget_timeout; }

bool BfqSched::AsymmetricScenario(const Queue* q) const {
  // bfq_asymmetric_scenario: varied weights among active non-raised queues
  // (unless q has the smallest), busy queues in several classes, or more
  // than one group with pending requests.
  bool varied = busy_weights_.size() > 1;
  if (varied && q->wr_coeff == 1 && busy_weights_.begin()->first == q->orig_weight) varied = false;
  int classes = 0;
  for (int c = 0; c < kNumClasses; ++c) classes += class_busy_[c] > 0 ? 1 : 0;
  return varied || classes > 1 || groups_with_pending_ > 1;
}

bool BfqSched::IdlingBoostsThr(const Queue* q) const {
  // idling_boosts_thr_without_issues (IO_bound taken as true: fio's jobs do
  // not pause for long).
  const bool rot_without_queueing = config_.rotational && hw_tag_ == 0;
  const bool seq_io_bound = !Seeky(q) && ShortThinkTime(q);
  const bool boosts = rot_without_queueing || ((config_.rotational || hw_tag_ == 0) && seq_io_bound);
  return boosts && wr_busy_queues_ == 0;
}

BfqSched::Queue* BfqSched::ChooseForInjection(Queue* in_serv) {
  // bfq_choose_bfqq_for_injection. (Its one-request bump after a long plug
  // adds slice_idle's nanoseconds to jiffies and so never fires.)
  const bool always_inject = in_serv->wr_coeff == 1 || !ShortThinkTime(in_serv);
  if (rq_in_driver_ >= in_serv->inject_limit) return nullptr;
  for (Queue* c : active_list_) {
    if (c->sort.empty() || !(always_inject || c->wr_coeff > 1)) continue;
    Request* next = NextRequest(c);
    const uint64_t left = c->entity.budget > c->entity.service ? c->entity.budget - c->entity.service : 0;
    if (Sectors(next) > left) continue;
    if (!config_.rotational && Sectors(next) >= kSectThrNonrot && rq_in_driver_ >= 1) continue;
    rqs_injected_ = true;
    ++stats_.injected;
    kernel_.Count(Counter::k_bfq_injected);
    return c;
  }
  return nullptr;
}

void BfqSched::UpdateInjectLimit(Queue* q, sim::SimTime now) {
  // bfq_update_inject_limit, at the completion of the sampled request
  // (before rq_in_driver drops).
  const int64_t tot = now - last_empty_occupied_ns_;
  const uint32_t old_limit = q->inject_limit;
  if (q->last_serv_time_ns > 0 && rqs_injected_) {
    const int64_t threshold = q->last_serv_time_ns * 3 / 2;
    if (tot >= threshold && old_limit > 0) {
      --q->inject_limit;
      q->decrease_time = now;
    } else if (tot < threshold && old_limit <= max_rq_in_driver_) {
      ++q->inject_limit;
    }
  }
  if ((q->last_serv_time_ns == 0 && rq_in_driver_ == 1) || tot < q->last_serv_time_ns) {
    if (q->last_serv_time_ns == 0) q->inject_limit = std::max<uint32_t>(1, old_limit);
    q->last_serv_time_ns = tot;
  } else if (!rqs_injected_ && rq_in_driver_ == 1) {
    q->last_serv_time_ns = tot;
  }
  waited_rq_ = nullptr;
  rqs_injected_ = false;
}

bool BfqSched::BetterToIdle(const Queue* q) const {
  if (config_.strict_guarantees) return true;
  if (config_.slice_idle_ns == 0 || q->entity.cls == 2) return false;
  const bool boosts = IdlingBoostsThr(q);
  // idling_needed_for_service_guarantees
  const bool needed = (q->wr_coeff > 1 && (wr_busy_queues_ < busy_queues_ || rq_in_driver_ >= q->dispatched + 4)) ||
                      AsymmetricScenario(q) || busy_queues_ == 1;
  return boosts || needed;
}

void BfqSched::SetInService(sim::Cpu& cpu, Queue* q) {
  in_service_ = q;
  budgets_assigned_ = (7 * budgets_assigned_ + 256) / 8;
  q->fifo_checked = false;
  q->service_from = cpu.now();
  const int coeff = q->wr_coeff > 1 ? q->wr_coeff : 1;
  q->budget_timeout = cpu.now() + config_.timeout_ns * coeff;
}

void BfqSched::RecalcBudget(Queue* q, Reason reason) {
  // __bfq_bfqq_recalc_budget (sync queues).
  const uint64_t min_budget = MaxBudget() / 32;
  const uint64_t cap = MaxBudget();
  uint64_t budget = q->wr_coeff == 1 ? q->max_budget : 2 * min_budget;
  if (q->wr_coeff == 1) {
    switch (reason) {
      case kTooIdle:
        budget = q->dispatched > 0 ? std::min(2 * budget, cap) : budget > 5 * min_budget ? budget - 4 * min_budget : min_budget;
        break;
      case kBudgetTimeout:
        budget = std::min(2 * budget, cap);
        break;
      case kBudgetExhausted:
        budget = std::min(4 * budget, cap);
        break;
      case kNoMoreRequests:
        budget = std::max(q->entity.service, min_budget);
        break;
      case kPreempted:
        return;
    }
  }
  q->max_budget = budget;
  if (budgets_assigned_ >= kStatsMinBudgets && config_.user_max_budget == 0) q->max_budget = std::min(budget, cap);
  Request* next = NextRequest(q);
  if (next != nullptr) q->entity.budget = std::max(q->max_budget, Sectors(next));
}

void BfqSched::Expire(sim::Cpu& cpu, Queue* q, Reason reason) {
  // bfq_bfqq_expire.
  const sim::SimTime now = cpu.now();
  ++stats_.expired[reason];
  static constexpr Counter kExpireCounters[] = {Counter::k_bfq_expire_too_idle, Counter::k_bfq_expire_budget_timeout,
                                                Counter::k_bfq_expire_budget_exhausted,
                                                Counter::k_bfq_expire_no_more_requests, Counter::k_bfq_expire_preempted};
  kernel_.Count(kExpireCounters[reason]);
  Entity& e = q->entity;
  const int64_t used_ns = now - q->service_from;
  bool slow;
  if (used_ns < sim::kNsPerMs) {
    slow = Seeky(q);
  } else if (used_ns > 20 * sim::kNsPerMs) {
    slow = e.service < MaxBudget() / 2;
  } else {
    slow = Seeky(q);
  }
  const uint64_t left = e.budget > e.service ? e.budget - e.service : 0;
  if (q->wr_coeff == 1 && (slow || (reason == kBudgetTimeout && left >= e.budget / 3))) {
    // bfq_bfqq_charge_time: charged as if served at the peak rate.
    const int64_t delta_ms = used_ns < sim::kNsPerMs ? (config_.rotational ? 8 : 2) : used_ns / sim::kNsPerMs;
    const int64_t timeout_ms = std::max<int64_t>(config_.timeout_ns / sim::kNsPerMs, 1);
    const uint64_t bounded = static_cast<uint64_t>(std::min(delta_ms, timeout_ms));
    const uint64_t tot = std::max(MaxBudget() * bounded / static_cast<uint64_t>(timeout_ms), e.service);
    if (tot > e.budget) e.budget = tot;
    if (tot > e.service) Served(q, tot - e.service);
  }
  RecalcBudget(q, reason);
  // __bfq_bfqq_expire.
  if (q->wait_request) idle_timer_.Cancel();
  q->wait_request = false;
  in_service_ = nullptr;
  if (q->sort.empty()) {
    if (q->dispatched == 0) q->budget_timeout = now;  // "idle since"
    // Emptied for a reason other than its budget: it keeps its service
    // (non_blocking_wait_rq) to resume the same budget if its next request
    // comes in time.
    const bool keep = reason != kBudgetTimeout && reason != kBudgetExhausted;
    DeactivateEntity(&e, keep);
    q->non_blocking_wait_rq = keep;
    --busy_queues_;
    if (q->wr_coeff > 1) --wr_busy_queues_;
  } else {
    e.parent->in_service = &e;
    ActivateEntity(&e, true);
    e.service = 0;
  }
  // The ancestors: requeued while they have active children, else idle.
  for (Group* g = e.parent; g != &root_; g = g->entity.parent) {
    Entity& ge = g->entity;
    bool any = false;
    uint64_t budget = 0;
    for (int c = 0; c < kNumClasses && !any; ++c) {
      if (!g->st[c].active.empty()) {
        any = true;
        budget = g->st[c].by_id[g->st[c].active.begin()->second]->budget;
      }
    }
    if (any) {
      ge.budget = budget;
      ge.parent->in_service = &ge;
      ActivateEntity(&ge, true);
    } else {
      DeactivateEntity(&ge, false);
    }
    ge.service = 0;
  }
  root_.in_service = nullptr;
  SyncActive(q);
}

void BfqSched::ArmIdleTimer(sim::Cpu& cpu, Queue* q) {
  // bfq_arm_slice_timer.
  q->wait_request = true;
  int64_t sl = config_.slice_idle_ns;
  if (Seeky(q) && q->wr_coeff == 1 && !AsymmetricScenario(q)) {
    sl = std::min(sl, kMinTtNs);
  } else if (q->wr_coeff > 1) {
    sl = std::max(sl, 20 * sim::kNsPerMs);
  }
  idle_queue_ = q;
  idle_timer_.set_cpu(cpu.id());
  idle_timer_.Start(cpu.now() + sl);
  ++stats_.idle_timer_armed;
  kernel_.Count(Counter::k_bfq_idle_timer_armed);
}

BfqSched::Queue* BfqSched::SelectQueue(sim::Cpu& cpu) {
  const sim::SimTime now = cpu.now();
  Queue* q = in_service_;
  if (q != nullptr) {
    const uint64_t left = q->entity.budget > q->entity.service ? q->entity.budget - q->entity.service : 0;
    const bool must_idle = q->sort.empty() && BetterToIdle(q);
    if ((!q->wait_request || left >= q->entity.budget / 3) && BudgetTimedOut(q, now) && !must_idle) {
      Expire(cpu, q, kBudgetTimeout);
      q = nullptr;
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    if (q != nullptr) {
      Request* next = NextRequest(q);
      if (next != nullptr) {
        const uint64_t left = q->entity.budget > q->entity.service ? q->entity.budget - q->entity.service : 0;
        if (Sectors(next) > left) {
          Expire(cpu, q, kBudgetExhausted);
        } else {
          if (q->wait_request) {
            q->wait_request = false;
            idle_timer_.Cancel();
          }
          return q;
        }
      } else if (q->wait_request || (q->dispatched != 0 && BetterToIdle(q))) {
        // Keep the device for it; maybe inject another queue's request.
        if (!IdlingBoostsThr(q) && (q->wr_coeff == 1 || wr_busy_queues_ > 1 || !ShortThinkTime(q))) {
          return ChooseForInjection(q);
        }
        return nullptr;
      } else {
        Expire(cpu, q, kNoMoreRequests);
      }
    }
    q = SelectNextQueue(now);
    if (q == nullptr) return nullptr;
    SetInService(cpu, q);
  }
  return nullptr;
}

// --- elevator operations ----------------------------------------------------

sim::Task BfqSched::BioMerge(sim::Cpu& cpu, Hctx*, Bio* bio, Request** merged_into) {
  sim::StackFrame frame(cpu, fn_bio_merge_);
  *merged_into = nullptr;
  co_await lock_.Lock(cpu);
  now_ = cpu.now();
  // bfq_bic_lookup + blk_mq_sched_try_merge: last_merge, the hash (back
  // merge), then a front merge in the bio's own queue.
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().bfq_bio_merge);
  ac.Load(bfqd_line_);
  auto back_ok = [this, bio](const Request* rq) {
    return EndSector(rq) == bio->sector && rq->op == bio->op && rq->ioc == bio->ioc && rq->blkcg == bio->blkcg &&
           rq->bytes + bio->bytes <= config_.max_request_bytes;
  };
  Request* rq = nullptr;
  if (last_merge_ != nullptr && back_ok(last_merge_)) {
    rq = last_merge_;
  } else if (!config_.noxmerges) {
    auto h = hash_.lower_bound({bio->sector, 0});
    if (h != hash_.end() && h->first.first == bio->sector && back_ok(h->second)) rq = h->second;
  }
  if (rq != nullptr) {
    ac.Store(rq->line);
    hash_.erase({EndSector(rq), rq->sched_seq});
    rq->biotail->bi_next = bio;
    rq->biotail = bio;
    bio->bi_next = nullptr;
    rq->bytes += bio->bytes;
    ++rq->nr_bios;
    hash_[{EndSector(rq), rq->sched_seq}] = rq;
    last_merge_ = rq;
    *merged_into = rq;
    ++stats_.merged;
  } else if (!config_.noxmerges) {
    if (Queue* q = FindQueue(BicKey(bio->ioc, bio->blkcg)); q != nullptr) {
      const uint64_t end = bio->sector + (bio->bytes >> kSectorShift);
      auto f = q->sort.lower_bound({end, 0});
      if (f != q->sort.end() && f->first == end) {
        Request* r = q->rqs[f->second];
        if (r->op == bio->op && r->bytes + bio->bytes <= config_.max_request_bytes) {
          ac.Load(q->line);
          ac.Store(r->line);
          q->sort.erase(*f);
          bio->bi_next = r->bio;
          r->bio = bio;
          r->sector = bio->sector;
          r->bytes += bio->bytes;
          ++r->nr_bios;
          q->sort.insert({r->sector, r->sched_seq});
          last_merge_ = r;
          *merged_into = r;
          ++stats_.merged;
        }
      }
    }
  }
  cpu.Charge(fn_bio_merge_, ac.Take());
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

sim::Task BfqSched::InsertRequests(sim::Cpu& cpu, Hctx*, RequestList& list) {
  sim::StackFrame frame(cpu, fn_insert_);
  // bfq_insert_requests: bfq_insert_request per request, each under the lock.
  while (!list.empty()) {
    Request* rq = list.pop_front();
    co_await lock_.Lock(cpu);
    now_ = cpu.now();
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Work(kernel_.costs().bfq_insert_request);
    ac.Store(bfqd_line_);
    ac.Store(st_line_);
    ac.Store(rq->line);
    Queue* q = GetQueue(cpu, rq->ioc, rq->blkcg, rq->ioprio_class, rq->ioprio_level);
    ++bic_requests_[BicKey(rq->ioc, rq->blkcg)];  // bfq_init_rq: bic->requests
    // bfqq_request_allocated: the queue and the groups above it.
    ++q->entity.allocated;
    if (q->entity.parent != &root_) ++q->entity.parent->entity.allocated;
    ac.Store(q->line);
    AddRequest(cpu, q, rq);
    SyncActive(q);
    ++stats_.inserted;
    cpu.Charge(fn_insert_, ac.Take());
    co_await cpu.Sync();
    lock_.Unlock(cpu);
  }
}

void BfqSched::SyncActive(Queue* q) {
  // queue_weights_tree (non-raised queues, by weight) and
  // num_groups_with_pending_reqs: a queue counts while it is busy or has
  // requests in flight; a weight change (raising starts or ends) moves it
  // in the weights tree.
  const bool want = q->entity.active || in_service_ == q || q->dispatched > 0;
  const int weight = want && q->wr_coeff == 1 ? q->orig_weight : 0;
  if (weight != q->counted_weight) {
    if (q->counted_weight != 0) {
      auto it = busy_weights_.find(q->counted_weight);
      if (--it->second == 0) busy_weights_.erase(it);
    }
    if (weight != 0) ++busy_weights_[weight];
    q->counted_weight = weight;
  }
  if (want == q->counted_active) return;
  q->counted_active = want;
  Group* g = q->entity.parent;
  if (want) {
    ++class_busy_[q->entity.cls];
    if (g->pending_queues++ == 0) ++groups_with_pending_;
  } else {
    --class_busy_[q->entity.cls];
    if (--g->pending_queues == 0) --groups_with_pending_;
  }
}

sim::Task BfqSched::DispatchRequest(sim::Cpu& cpu, Hctx*, Request** out) {
  sim::StackFrame frame(cpu, fn_dispatch_);
  *out = nullptr;
  co_await lock_.Lock(cpu);
  const sim::SimTime now = cpu.now();
  now_ = now;
  sim::AccessCost ac = kernel_.Access(cpu);
  ac.Work(kernel_.costs().bfq_dispatch_request);
  ac.Load(bfqd_line_);
  Request* rq = nullptr;
  if (busy_queues_ > 0 && !(config_.strict_guarantees && rq_in_driver_ > 0)) {
    Queue* q = SelectQueue(cpu);
    if (q != nullptr) {
      // bfq_dispatch_rq_from_bfqq.
      rq = NextRequest(q);
      q->fifo_checked = true;
      ac.Store(st_line_);
      ac.Store(q->line);
      ac.Store(rq->line);
      if (q == in_service_ && wait_dispatch_) {
        wait_dispatch_ = false;
        waited_rq_ = rq;
      }
      Served(q, Sectors(rq));
      if (q->wr_coeff > 1) q->service_from_wr += Sectors(rq);
      ++q->dispatched;
      UpdatePeakRate(now, rq);
      last_position_ = EndSector(rq);
      RemoveRequest(q, rq);
      UpdateWr(now, q);
      if (busy_queues_ > 1 && q->entity.cls == 2 && in_service_ == q) Expire(cpu, q, kBudgetExhausted);
      ++rq_in_driver_;
      ++stats_.dispatched;
    }
  }
  ac.Store(bfqd_line_);
  cpu.Charge(fn_dispatch_, ac.Take());
  *out = rq;
  co_await cpu.Sync();
  lock_.Unlock(cpu);
}

bool BfqSched::HasWork(sim::Cpu& cpu, Hctx*) {
  // bfq_has_work: lockless READ_ONCE(bfqd->queued); true even while bfq
  // idles (its dispatch then returns nothing).
  cpu.Charge(fn_has_work_, bfqd_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
  return queued_ > 0;
}

void BfqSched::UpdatePeakRate(sim::SimTime now, Request* rq) {
  // bfq_update_peak_rate, per dispatch: sectors over intervals of at least
  // a second with 32 samples; mostly-random intervals only raise the rate.
  if (rate_window_start_ < 0 || (rq_in_driver_ == 0 && now - last_dispatch_ > 100 * sim::kNsPerMs)) {
    rate_window_start_ = now;
    rate_window_sectors_ = 0;
    rate_samples_ = 0;
    rate_seq_samples_ = 0;
  }
  ++rate_samples_;
  const uint64_t dist = rq->sector > last_position_ ? rq->sector - last_position_ : last_position_ - rq->sector;
  if (rq_in_driver_ > 0 && !(dist > kSeekThrSectors && (config_.rotational || Sectors(rq) < kSectThrNonrot))) {
    ++rate_seq_samples_;
  }
  rate_window_sectors_ += Sectors(rq);
  last_dispatch_ = now;
  const int64_t interval = now - rate_window_start_;
  if (interval >= kRateRefIntervalNs) {
    if (rate_samples_ >= kRateMinSamples && interval >= kRateMinIntervalNs) {
      const double rate = static_cast<double>(rate_window_sectors_) * 1e9 / static_cast<double>(interval);
      const bool mostly_seq = rate_seq_samples_ * 4 >= rate_samples_ * 3;
      if (mostly_seq || rate > peak_rate_) {
        const int weight = std::min<int>(8, static_cast<int>(9 * rate_seq_samples_ / rate_samples_));
        const int divisor = 10 - weight;
        peak_rate_ = peak_rate_ * (divisor - 1) / divisor + rate / divisor;
      }
    }
    rate_window_start_ = now;
    rate_window_sectors_ = 0;
    rate_samples_ = 0;
    rate_seq_samples_ = 0;
  }
}

}  // namespace blklab::model
