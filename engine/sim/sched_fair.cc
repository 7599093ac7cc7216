#include "engine/sim/cpu.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace blklab::sim {

// select_task_rq_fair at a wake-up from SleepMigratable.
int Thread::SelectWakeCpu() const {
  // select_idle_sibling, reduced: the previous CPU if idle, else the first
  // idle allowed CPU of its LLC after it (select_idle_cpu's scan from the
  // target), else the previous CPU. Not modelled: wake_affine's pull
  // towards the waker, idle-core preference, SIS_UTIL's scan limit.
  if (on_cpu_->available_idle()) return cpu_;
  const int llc = machine_.placement(cpu_).llc;
  int best = -1;
  int best_distance = 0;
  const int n = machine_.num_cpus();
  for (int c : cpus_allowed_) {
    if (c == cpu_ || machine_.placement(c).llc != llc || !machine_.cpu(c).available_idle()) continue;
    const int distance = (c - cpu_ + n) % n;
    if (best < 0 || distance < best_distance) {
      best = c;
      best_distance = distance;
    }
  }
  return best < 0 ? cpu_ : best;
}

// The scheduler tick (scheduler_tick, with the fair class's balance kick).
void Cpu::ArmTick() {
  const int64_t period = machine_.costs().tick_period_ns;
  if (period <= 0 || tick_armed_) return;
  tick_armed_ = true;
  tick_stopped_ = false;
  const SimTime base = std::max(now_, machine_.sim().Now());
  RaiseTimerHardirq((base / period + 1) * period, &tick_, tick_gen_);
}

Task Cpu::TickHandler::Handle(Cpu& cpu, uint64_t) {
  cpu.Charge(cpu.fn_tick_, cpu.machine_.costs().tick_ns);
  cpu.tick_armed_ = false;
  // nohz_balancer_kick: a CPU with threads waiting balances once per
  // interval, counted in jiffies from the tick's own time. The interval
  // restarts when the balance runs: when a thread may move, and when every
  // waiting thread is pinned (the kernel's balance runs and finds all
  // pinned). A waiting thread the kernel could move but the model holds
  // (pre-empted inside kernel code, its coroutine on this CPU) leaves the
  // interval open: the next tick tries again.
  const int64_t period = cpu.machine_.costs().tick_period_ns;
  const SimTime jiffy = cpu.now_ - cpu.now_ % period;
  if (jiffy >= cpu.next_balance_ && !cpu.runqueue_.empty()) {
    const SimTime next = jiffy + int64_t{cpu.machine_.llc_weight(cpu.id_)} * kNsPerMs;
    const Waiting waiting = cpu.BalanceableThreads();
    if (waiting != Waiting::kHeld) cpu.next_balance_ = next;
    if (waiting == Waiting::kMovable) {
      co_await cpu.Sync();  // reads other CPUs' idle state
      cpu.PushQueuedThread(jiffy);
    }
  }
  // NOHZ: a CPU with nothing to run stops ticking until it is busy again.
  if (cpu.current_thread_ != nullptr || !cpu.runqueue_.empty() || cpu.spinning_ || cpu.softirq_.active) {
    cpu.ArmTick();
  }
  co_return;
}

// The fair class beside real-time threads, and EEVDF's need_resched.
bool Cpu::RtRunnable() const {
  for (const Thread* t : runqueue_) {
    if (t->rt()) return true;
  }
  return false;
}

bool Cpu::EevdfNeedResched() const { return cfs_.resched || RtRunnable(); }

// Newidle and periodic load balancing.
void Cpu::SampleIdle(SimTime now) {
  if (idle_stamp_ < 0) return;
  // update_avg: an eighth of the way to the sample, capped at twice the
  // migration cost (max_idle_balance_cost's starting value).
  avg_idle_ns_ += (now - idle_stamp_ - avg_idle_ns_) / 8;
  avg_idle_ns_ = std::min(avg_idle_ns_, 2 * machine_.costs().sched_migration_cost_ns);
  idle_stamp_ = -1;
}

bool Cpu::PullQueuedThread() {
  // newidle_balance: the idle period starts before the balance; a CPU
  // whose idle periods average under the migration cost does not look.
  idle_stamp_ = now_;
  if (machine_.queued_movable() == 0 || avg_idle_ns_ < machine_.costs().sched_migration_cost_ns) return false;
  const int n = machine_.num_cpus();
  const int llc = machine_.placement(id_).llc;
  // Two passes: this CPU's LLC, then the rest (the sched domains upwards).
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = 1; i < n; ++i) {
      Cpu& victim = machine_.cpu((id_ + i) % n);
      if ((machine_.placement(victim.id_).llc == llc) != (pass == 0)) continue;
      // Only from behind a running thread: a queued thread on a CPU with
      // none running is about to run there.
      if (victim.current_thread_ == nullptr) continue;
      for (auto it = victim.runqueue_.begin(); it != victim.runqueue_.end(); ++it) {
        Thread* t = *it;
        if (!t->movable_while_queued() || now_ - t->last_ran_ < machine_.costs().sched_migration_cost_ns ||
            std::find(t->cpus_allowed_.begin(), t->cpus_allowed_.end(), id_) == t->cpus_allowed_.end()) {
          continue;
        }
        victim.TakeQueuedThread(it, id_);
        if (eevdf_ && !t->rt()) PlaceEntity(t);
        QueueThread(t, /*front=*/false);
        idle_stamp_ = -1;  // pulled a task: not idle after all
        return true;
      }
    }
  }
  return false;
}

void Cpu::TakeQueuedThread(PooledDeque<Thread*>::iterator it, int to) {
  Thread* t = *it;
  if (eevdf_ && !t->rt()) {
    UpdateCurr();
    SaveLag(t);
  }
  DequeueThread(it);
  if (runqueue_.empty()) slice_end_ = kSimTimeNever;
  UpdatePreempt();
  t->movable_ = false;
  t->MoveTo(to);
}

Cpu::Waiting Cpu::BalanceableThreads() const {
  Waiting w = Waiting::kPinned;
  for (const Thread* t : runqueue_) {
    if (t->rt() || t->cpus_allowed_.size() <= 1) continue;
    if (t->movable_while_queued()) return Waiting::kMovable;
    w = Waiting::kHeld;
  }
  return w;
}

void Cpu::PushQueuedThread(SimTime jiffy) {
  const int n = machine_.num_cpus();
  const int llc = machine_.placement(id_).llc;
  // sd->min_interval: the domain's weight in milliseconds (LLC, then the
  // machine); the tick restarted the LLC's interval.
  const bool far = jiffy >= next_far_balance_;
  if (far) next_far_balance_ = jiffy + int64_t{n} * kNsPerMs;
  for (int pass = 0; pass < (far ? 2 : 1); ++pass) {
    for (int i = 1; i < n; ++i) {
      const int c = (id_ + i) % n;
      if ((machine_.placement(c).llc == llc) != (pass == 0)) continue;
      Cpu& idle = machine_.cpu(c);
      // The imbalance test, by the threads that live on each CPU (their
      // load stays with the CPU through short sleeps): moving one must
      // leave this CPU no lighter than the other.
      if (!idle.available_idle() || homed_threads_ < idle.homed_threads_ + 2) continue;
      for (auto it = runqueue_.begin(); it != runqueue_.end(); ++it) {
        Thread* t = *it;
        if (!t->movable_while_queued() ||
            std::find(t->cpus_allowed_.begin(), t->cpus_allowed_.end(), c) == t->cpus_allowed_.end()) {
          continue;
        }
        TakeQueuedThread(it, c);
        ++idle.incoming_wakes_;
        machine_.sim().Schedule(std::max(now_, machine_.sim().Now()), &idle, kMigrated, reinterpret_cast<uintptr_t>(t));
        return;
      }
    }
  }
}

// EEVDF (MachineCosts::eevdf).
void Cpu::UpdateCurr() {
  if (!fair_current()) return;
  Thread& t = *current_thread_;
  if (now_ > cfs_.exec_start) t.vruntime_ += VirtualNs(now_ - cfs_.exec_start, t);
  cfs_.exec_start = now_;
  if (t.vruntime_ >= t.deadline_) {
    // update_deadline: a new slice; RUN_TO_PARITY no longer holds.
    t.deadline_ = t.vruntime_ + VirtualNs(machine_.costs().sched_slice_ns, t);
    t.protect_slice_ = false;
  }
}

FairSums Cpu::SumFair() const {
  // Sums relative to a base, in 128 bits (weights up to 88761).
  FairSums f;
  const Thread* base = fair_current() ? current_thread_ : nullptr;
  for (auto it = runqueue_.begin(); base == nullptr && it != runqueue_.end(); ++it) {
    if (!(*it)->rt()) base = *it;
  }
  if (base == nullptr) return f;
  f.base = base->vruntime_;
  auto add = [&](const Thread* t) {
    f.sum += static_cast<__int128>(t->vruntime_ - f.base) * t->Weight();
    f.load += t->Weight();
  };
  if (fair_current()) add(current_thread_);
  for (const Thread* t : runqueue_) {
    if (!t->rt()) add(t);
  }
  return f;
}

int64_t Cpu::AvgVruntime(int64_t* load) const {
  const FairSums f = SumFair();
  *load = f.load;
  if (f.load == 0) return cfs_.min_vruntime;
  // Rounded towards minus infinity, as avg_vruntime does.
  __int128 sum = f.sum;
  if (sum < 0) sum -= f.load - 1;
  return f.base + static_cast<int64_t>(sum / f.load);
}

bool Cpu::Eligible(const Thread& t, const FairSums& f) {
  // vruntime_eligible: sum((v_i - v) * w_i) >= 0, without the division;
  // sum((v_i - base) * w_i) - (v - base) * sum(w_i), the same integer.
  return f.sum - static_cast<__int128>(t.vruntime_ - f.base) * f.load >= 0;
}

Thread* Cpu::PickEevdf(bool with_curr) const {
  Thread* curr = with_curr && fair_current() ? current_thread_ : nullptr;
  int entities = curr != nullptr ? 1 : 0;
  Thread* only = curr;
  for (Thread* t : runqueue_) {
    if (t->rt()) continue;
    ++entities;
    only = t;
  }
  if (entities <= 1) return only;
  const FairSums f = SumFair();
  if (curr != nullptr && !Eligible(*curr, f)) curr = nullptr;
  if (curr != nullptr && curr->protect_slice_) return curr;  // RUN_TO_PARITY
  Thread* best = nullptr;
  Thread* lowest = nullptr;  // no one eligible (rounding): the smallest vruntime
  for (Thread* t : runqueue_) {
    if (t->rt()) continue;
    if (lowest == nullptr || t->vruntime_ < lowest->vruntime_) lowest = t;
    if (best != nullptr && t->deadline_ >= best->deadline_) continue;
    if (Eligible(*t, f)) best = t;
  }
  if (best == nullptr || (curr != nullptr && curr->deadline_ < best->deadline_)) best = curr;
  return best != nullptr ? best : lowest;
}

void Cpu::PlaceEntity(Thread* t) {
  int64_t load = 0;
  const int64_t v = AvgVruntime(&load);
  __int128 lag = t->vlag_;
  if (load > 0) lag = lag * (load + t->Weight()) / load;
  t->vruntime_ = v - static_cast<int64_t>(lag);
  int64_t vslice = VirtualNs(machine_.costs().sched_slice_ns, *t);
  if (!t->placed_) vslice /= 2;  // PLACE_DEADLINE_INITIAL
  t->placed_ = true;
  t->deadline_ = t->vruntime_ + vslice;
  t->protect_slice_ = false;
}

void Cpu::SaveLag(Thread* t) {
  int64_t load = 0;
  const int64_t v = AvgVruntime(&load);
  const int64_t limit = VirtualNs(std::max(2 * machine_.costs().sched_slice_ns, machine_.costs().tick_period_ns), *t);
  t->vlag_ = std::clamp(v - t->vruntime_, -limit, limit);
  if (load == t->Weight()) cfs_.min_vruntime = v;  // it was the last one
}

int64_t Cpu::RemainingSliceNs(const Thread& t) const {
  const int64_t vleft = std::max<int64_t>(t.deadline_ - t.vruntime_, 0);
  return (vleft * t.Weight() + 1023) / 1024;
}

void Cpu::CheckPreemptEevdf(bool slice_over, bool* displaced, bool* keeps_place) {
  // A real-time thread takes the CPU; otherwise schedule()'s pick
  // (pick_eevdf with the running thread) after a wake-up chose
  // another or the slice ran out.
  *keeps_place = RtRunnable();
  if (!*keeps_place && (cfs_.resched || slice_over)) {
    UpdateCurr();
    Thread* best = PickEevdf(/*with_curr=*/true);
    *displaced = best != nullptr && best != current_thread_;
  }
  cfs_.resched = false;
  if (*keeps_place) UpdateCurr();
}

}  // namespace blklab::sim
