#include "engine/sim/cpu.h"

#include <algorithm>
#include <string>
#include <utility>

namespace blklab::sim {

Thread::Thread(Machine& machine, std::string name, int cpu, int nice)
    : machine_(machine), name_(std::move(name)), cpu_(cpu), prio_(kNiceZeroPrio + nice) {
  BLKLAB_CHECK(cpu >= 0 && cpu < machine.num_cpus());
  stats_ = machine.NewThreadStats(name_);
  BLKLAB_CHECK(nice >= -20 && nice <= 19);
  on_cpu_ = &machine.cpu(cpu);
}

namespace {

// sched_prio_to_weight (kernel/sched/core.c): nice -20 .. 19, each step
// about 1.25x.
constexpr int64_t kPrioToWeight[40] = {
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
    9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
    1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
    110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

}  // namespace

int64_t Thread::Weight() const {
  const int nice = prio_ - kNiceZeroPrio;
  return nice < -20 ? kPrioToWeight[0] : kPrioToWeight[nice + 20];
}

void Thread::Start(Task root, SimTime at) {
  BLKLAB_CHECK(state_ == State::kNew);
  root_ = std::move(root);
  resume_ = root_.handle();
  state_ = State::kRunnable;
  homed_ = cpus_allowed_.size() > 1 && !rt() ? 1 : 0;
  on_cpu_->homed_threads_ += homed_;
  ++on_cpu_->incoming_wakes_;
  machine_.sim().Schedule(at, on_cpu_, Cpu::kWake, reinterpret_cast<uintptr_t>(this));
}

void Thread::MoveTo(int cpu) {
  on_cpu_->homed_threads_ -= homed_;
  cpu_ = cpu;
  on_cpu_ = &machine_.cpu(cpu);
  on_cpu_->homed_threads_ += homed_;
  ++migrations_;
}

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

void Thread::Wake(SimTime at) {
  if (state_ != State::kSleeping) return;
  state_ = State::kRunnable;
  if (iowait_on_ != nullptr) {
    // ttwu: nr_iowait of the runqueue it slept on.
    --iowait_on_->nr_iowait_;
    iowait_on_ = nullptr;
  }
  if (migrate_on_wake_) {
    migrate_on_wake_ = false;
    movable_ = true;
    const int target = SelectWakeCpu();
    if (target != cpu_) MoveTo(target);
  }
  ++on_cpu_->incoming_wakes_;
  machine_.sim().Schedule(at, on_cpu_, Cpu::kWake, reinterpret_cast<uintptr_t>(this));
}

Cpu::Cpu(Machine& machine, int id)
    : machine_(machine),
      id_(id),
      eevdf_(machine.costs().eevdf),
      irq_time_in_task_(machine.costs().irq_time_in_task),
      avg_idle_ns_(2 * machine.costs().sched_migration_cost_ns) {
  full_preemption_ = machine.costs().full_preemption;
  fn_schedule_ = machine.functions().Intern("__schedule");
  fn_tick_ = machine.functions().Intern("tick_sched_timer");
  if (!machine.costs().cpuidle_states.empty()) {
    // Idle from the start, in the state an empty history selects.
    cpuidle_usage_.assign(machine.costs().cpuidle_states.size() + 1, 0);
    EnterIdleState();
  }
}

void Cpu::BeginIowait() {
  BLKLAB_CHECK(current_thread_ != nullptr && current_thread_->iowait_on_ == nullptr);
  current_thread_->iowait_on_ = this;
  ++nr_iowait_;
}

uint32_t Cpu::TypicalIdleIntervalUs() const {
  // menu's get_typical_interval: the average of the recent intervals when
  // their spread is small (stddev <= 20 us, or under a sixth of the average
  // with at least 3/4 of them kept); otherwise drop the largest and try
  // again, down to 3/4 of the samples.
  uint64_t thresh = UINT32_MAX;
  for (;;) {
    uint64_t sum = 0;
    uint64_t max = 0;
    int divisor = 0;
    for (uint32_t v : cpuidle_intervals_us_) {
      if (v > thresh) continue;
      sum += v;
      ++divisor;
      max = std::max<uint64_t>(max, v);
    }
    if (max == 0) return UINT32_MAX;
    const uint64_t avg = sum / static_cast<uint64_t>(divisor);
    unsigned __int128 variance = 0;
    for (uint32_t v : cpuidle_intervals_us_) {
      if (v > thresh) continue;
      const __int128 diff = static_cast<__int128>(v) - static_cast<__int128>(avg);
      variance += static_cast<unsigned __int128>(diff * diff);
    }
    variance /= static_cast<unsigned>(divisor);
    const bool enough = divisor * 4 >= kIdleIntervals * 3;
    if ((static_cast<unsigned __int128>(avg) * avg > variance * 36 && enough) || variance <= 400) {
      return static_cast<uint32_t>(avg);
    }
    if (divisor * 4 <= kIdleIntervals * 3) return UINT32_MAX;
    thresh = max - 1;
  }
}

namespace {
// The menu governor's constants (drivers/cpuidle/governors/menu.c).
constexpr int64_t kMenuResolution = 1024;
constexpr int64_t kMenuDecay = 8;
constexpr int64_t kMenuMaxInterestingNs = 50 * kNsPerMs;
constexpr int64_t kMenuResidencyThresholdNs = 15 * kNsPerUs;  // 6.3+: no timer lookup below it

// which_bucket: by the distance to the next timer, iowait in the upper half.
int MenuBucket(int64_t next_timer_ns, int nr_iowait) {
  int bucket = nr_iowait > 0 ? 6 : 0;
  for (int64_t bound = 10 * kNsPerUs; bound <= 100 * kNsPerMs && next_timer_ns >= bound; bound *= 10) ++bucket;
  return bucket;
}
}  // namespace

void Cpu::TrackTimer(SimTime expires, uint64_t id, bool add) {
  if (add) {
    timers_.insert({expires, id});
  } else {
    timers_.erase({expires, id});
  }
}

int64_t Cpu::NextTimerNs() const {
  // tick_nohz_get_sleep_length: the next hrtimer or timer-wheel expiry on
  // this CPU (not the tick, which an idle CPU stops).
  if (timers_.empty()) return kSimTimeNever;
  return std::max<int64_t>(timers_.begin()->first - now_, 0);
}

void Cpu::EnterIdleState() {
  // A wake-up already on its way here (a local ttwu sets need_resched):
  // do_idle does not enter a state.
  if (machine_.costs().cpuidle_states.empty() || cpuidle_state_ >= 0 || incoming_wakes_ > 0) return;
  // Whatever run was still scheduled is for work already done: the CPU
  // wakes from the state only through Kick.
  ++run_gen_;
  run_scheduled_at_ = kSimTimeNever;
  SelectAndEnterIdleState();
}

void Cpu::SelectAndEnterIdleState() {
  bool stop_tick = true;
  cpuidle_state_ = SelectIdleState(&stop_tick);
  cpuidle_entered_at_ = now_;
  ++cpuidle_usage_[cpuidle_state_];
  if (cpuidle_state_ == 0) SchedulePollLimit();
  // tick_nohz_idle_stop_tick, or the tick goes on firing while the CPU
  // idles.
  if (machine_.costs().tick_period_ns <= 0) return;
  if (!stop_tick) {
    ArmTick();
  } else {
    tick_stopped_ = true;
    if (tick_armed_) {
      tick_armed_ = false;
      ++tick_gen_;
    }
  }
}

int64_t Cpu::PollLimitNs() const {
  // cpuidle_poll_time: the first state's target residency of at least
  // CPUIDLE_POLL_MIN (10 us), at most CPUIDLE_POLL_MAX (a 16th of a tick).
  const int64_t tick_ns = machine_.costs().tick_period_ns > 0 ? machine_.costs().tick_period_ns : kNsPerMs;
  const int64_t poll_max_ns = tick_ns / 16;
  for (const CpuidleState& st : machine_.costs().cpuidle_states) {
    if (st.target_residency_ns >= 10 * kNsPerUs) return std::min(st.target_residency_ns, poll_max_ns);
  }
  return poll_max_ns;
}

void Cpu::SchedulePollLimit() {
  ++cpuidle_poll_gen_;
  machine_.sim().Schedule(std::max(now_, machine_.sim().Now()) + PollLimitNs(), this, kPollLimit, cpuidle_poll_gen_);
}

void Cpu::OnPollLimit() {
  // poll_idle gave up (the time limit): menu counts the idle as lasting to
  // the next timer it knew, and selects again (perhaps POLL again).
  BLKLAB_CHECK(cpuidle_state_ == 0);
  ReflectIdle(menu_next_timer_ns_);
  // The selection sees this moment's timers; the poll limit and the tick
  // count from it as well (both take the later of the two clocks anyway).
  const SimTime saved_now = now_;
  now_ = std::max(now_, machine_.sim().Now());
  SelectAndEnterIdleState();
  now_ = saved_now;
}

int Cpu::SelectIdleState(bool* stop_tick) {
  const std::vector<CpuidleState>& states = machine_.costs().cpuidle_states;
  const bool iowait_limit = machine_.costs().menu_iowait_latency_limit;
  const int64_t tick_ns = machine_.costs().tick_period_ns > 0 ? machine_.costs().tick_period_ns : kNsPerMs;
  // state i of the driver: 0 is POLL.
  auto residency = [&](int i) { return i == 0 ? int64_t{0} : states[static_cast<size_t>(i) - 1].target_residency_ns; };
  auto latency = [&](int i) { return i == 0 ? int64_t{0} : states[static_cast<size_t>(i) - 1].exit_latency_ns; };
  const int count = static_cast<int>(states.size()) + 1;
  // menu_select. The typical recent interval; over 15 us, bounded by the
  // next timer scaled by how early idle periods of that kind (the bucket,
  // by the timer's distance and, before 6.13, iowait) have ended.
  const int iowait_bucket = iowait_limit ? nr_iowait_ : 0;
  const uint32_t typical_us = TypicalIdleIntervalUs();
  int64_t predicted_ns = typical_us == UINT32_MAX ? kSimTimeNever : int64_t{typical_us} * kNsPerUs;
  int64_t next_timer_ns = kSimTimeNever;
  int64_t delta_tick_ns = tick_ns / 2;
  if (predicted_ns > kMenuResidencyThresholdNs) {
    next_timer_ns = NextTimerNs();
    const SimTime now = std::max(now_, machine_.sim().Now());
    delta_tick_ns = std::min(next_timer_ns, (now / tick_ns + 1) * tick_ns - now);
    menu_bucket_ = MenuBucket(next_timer_ns, iowait_bucket);
    if (next_timer_ns != kSimTimeNever) {
      const __int128 scaled = static_cast<__int128>(next_timer_ns) * menu_correction_[menu_bucket_];
      const int64_t timer_us = static_cast<int64_t>(
          (scaled + kMenuResolution * kMenuDecay * kNsPerUs / 2) / (kMenuResolution * kMenuDecay * kNsPerUs));
      predicted_ns = std::min(predicted_ns, timer_us * kNsPerUs);
    }
  } else {
    menu_bucket_ = MenuBucket(kSimTimeNever, iowait_bucket);
  }
  menu_next_timer_ns_ = next_timer_ns;
  // A timer due before the first state would pay off: POLL, tick kept.
  if (next_timer_ns < residency(1)) {
    *stop_tick = false;
    return 0;
  }
  // No PM QoS limit. With the tick already stopped (an interrupt woke the
  // CPU and nothing ran), a short prediction gives way to the next timer;
  // otherwise the exit latency is bounded by the prediction, divided by
  // 1 + 10 x nr_iowait before 6.13.
  int64_t latency_req_ns = kSimTimeNever;
  if (tick_stopped_) {
    if (predicted_ns < tick_ns) predicted_ns = next_timer_ns;
  } else if (predicted_ns != kSimTimeNever) {
    latency_req_ns = iowait_limit ? predicted_ns / (1 + 10 * int64_t{nr_iowait_}) : predicted_ns;
  }
  int idx = 0;
  for (int i = 1; i < count; ++i) {
    if (residency(i) > predicted_ns) {
      // A physical state rather than polling, unless its latency is too
      // high or a timer comes first.
      if (idx == 0 && latency(i) <= latency_req_ns && residency(i) <= next_timer_ns) {
        predicted_ns = residency(i);
        idx = i;
        break;
      }
      if (predicted_ns < tick_ns) break;
      if (!tick_stopped_) {
        // A shallow state with the tick kept: the governor chooses again
        // at the tick.
        predicted_ns = residency(idx);
        break;
      }
      if (residency(idx) < tick_ns && residency(i) <= delta_tick_ns) idx = i;
      return idx;
    }
    if (latency(i) > latency_req_ns) break;
    idx = i;
  }
  // The tick stays for POLL and for an idle predicted under a tick, and
  // then the state must pay off before the tick comes.
  if ((idx == 0 || predicted_ns < tick_ns) && !tick_stopped_) {
    *stop_tick = false;
    while (idx > 0 && residency(idx) > delta_tick_ns) --idx;
  }
  return idx;
}

void Cpu::ReflectIdle(int64_t measured_ns) {
  // menu_update: the bucket's correction factor decays toward
  // measured / next timer (never above one), and the interval joins the
  // history.
  measured_ns = std::clamp<int64_t>(measured_ns, 0, menu_next_timer_ns_);
  int64_t factor = menu_correction_[menu_bucket_];
  factor -= factor / kMenuDecay;
  if (menu_next_timer_ns_ > 0 && measured_ns < kMenuMaxInterestingNs) {
    factor += static_cast<int64_t>(static_cast<__int128>(kMenuResolution) * measured_ns / menu_next_timer_ns_);
  } else {
    factor += kMenuResolution;
  }
  menu_correction_[menu_bucket_] = factor;
  cpuidle_intervals_us_[cpuidle_interval_next_] =
      static_cast<uint32_t>(std::min<int64_t>(measured_ns / kNsPerUs, UINT32_MAX));
  cpuidle_interval_next_ = (cpuidle_interval_next_ + 1) % kIdleIntervals;
}

SimTime Cpu::LeaveIdleState(SimTime at) {
  const std::vector<CpuidleState>& states = machine_.costs().cpuidle_states;
  const int state = cpuidle_state_;
  BLKLAB_CHECK(state >= 0);
  cpuidle_state_ = -1;
  ++cpuidle_poll_gen_;  // a pending poll limit is moot
  if (at <= cpuidle_entered_at_) {
    // The wake-up came before the CPU (whose clock ran ahead) reached the
    // state: need_resched was set, do_idle entered nothing.
    --cpuidle_usage_[state];
    cpuidle_running_at_ = at;
    return at;
  }
  const int64_t exit_ns = state == 0 ? 0 : states[static_cast<size_t>(state) - 1].exit_latency_ns;
  // menu_update's measure: a wake-up by the tick when the next timer was
  // further away says the idle could have been long (9/10 of 50 ms); else
  // the residency less the exit latency, or half the residency if it was
  // under twice the exit latency.
  const int64_t period = machine_.costs().tick_period_ns;
  int64_t measured_ns = at - cpuidle_entered_at_;
  if (woken_by_tick_ && menu_next_timer_ns_ > period) {
    measured_ns = 9 * kMenuMaxInterestingNs / 10;
  } else if (measured_ns < exit_ns) {
    measured_ns = (measured_ns + exit_ns) / 2;
  }
  ReflectIdle(measured_ns);
  cpuidle_exit_wait_ns_ += exit_ns;
  cpuidle_running_at_ = at + exit_ns;
  return cpuidle_running_at_;
}

void Cpu::set_smt_sibling(Cpu* sibling) {
  smt_sibling_ = sibling;
  smt_busy_permille_ = machine_.costs().smt_busy_permille;
  smt_spin_permille_ = machine_.costs().smt_spin_permille;
  if (smt_busy_permille_ == 1000 && smt_spin_permille_ == 1000) smt_sibling_ = nullptr;
}

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

void Cpu::GrowAccounts(FnId fn) {
  const FunctionRegistry& r = machine_.functions();
  const FnId n = static_cast<FnId>(std::max<size_t>(r.size(), fn + 1));
  fn_ns_.resize(static_cast<size_t>(n) * kNumModes, 0);
  user_flags_.resize(n);
  for (FnId i = 0; i < n; ++i) {
    user_flags_[i] = static_cast<uint8_t>(i < r.size() && r.is_user(i) ? Mode::kUser : Mode::kSys);
  }
  nr_fns_ = n;
}

void Cpu::Suspend(std::coroutine_handle<> h, SuspendReason reason) {
  switch (level_) {
    case Level::kHardirq:
      hardirq_.resume = h;
      break;
    case Level::kSoftirq:
      softirq_.resume = h;
      break;
    case Level::kTask:
      BLKLAB_CHECK(current_thread_ != nullptr);
      current_thread_->resume_ = h;
      break;
  }
  reason_ = reason;
}

void Cpu::SuspendSpinning(std::coroutine_handle<> h, FnId slowpath_fn, bool irqs_on) {
  BLKLAB_CHECK(!spinning_ && "a context spins while another one on its CPU already spins");
  Suspend(h, SuspendReason::kSpin);
  spinning_ = true;
  spin_granted_ = false;
  spin_level_ = level_;
  spin_irqs_on_ = irqs_on && irq_off_depth_ == 0 && level_ != Level::kHardirq;
  spin_since_ = now_;
  spin_fn_ = slowpath_fn;
}

void Cpu::ResumeAfterSpin(SimTime at) { machine_.sim().Schedule(at, this, kSpinGranted, 0); }

bool Cpu::IrqOnTopOfSpin() const {
  return spinning_ && ((spin_level_ < Level::kHardirq && hardirq_.active) ||
                       (spin_level_ < Level::kSoftirq && softirq_.active));
}

void Cpu::ChargeSpinUntil(SimTime t) {
  // While a context spins with nothing on top of it, now_ == spin_since_.
  if (t > now_) {
    level_ = spin_level_;
    UpdateThreadAccount();
    ChargeRaw(spin_fn_, t - now_);
  }
  spin_since_ = now_;
}

uint32_t Cpu::HardirqArrivalSlot(IrqHandler* handler, uint64_t arg) {
  if (free_arrival_slots_.empty()) {
    hardirq_arrivals_.push_back(IrqWork{handler, arg});
    return static_cast<uint32_t>(hardirq_arrivals_.size() - 1);
  }
  const uint32_t slot = free_arrival_slots_.back();
  free_arrival_slots_.pop_back();
  hardirq_arrivals_[slot] = IrqWork{handler, arg};
  return slot;
}

void Cpu::RaiseHardirq(SimTime at, IrqHandler* handler, uint64_t arg) {
  machine_.sim().Schedule(at, this, kHardirqArrive, HardirqArrivalSlot(handler, arg));
}

void Cpu::RaiseTimerHardirq(SimTime at, IrqHandler* handler, uint64_t arg) {
  machine_.sim().ScheduleBulk(at, this, kHardirqArrive, HardirqArrivalSlot(handler, arg));
}

bool Cpu::RaiseSoftirq(IrqHandler* handler, uint64_t arg) {
  softirq_pending_.push_back(IrqWork{handler, arg});
  bool woke = false;
  if (level_ == Level::kTask && !in_ksoftirqd()) {
    // raise_softirq outside interrupt context: wakeup_softirqd.
    if (ksoftirqd_ == nullptr) {
      ksoftirqd_ = std::make_unique<Thread>(machine_, "ksoftirqd/" + std::to_string(id_), id_);
      ksoftirqd_->wakeup_preempts_ = true;
      ksoftirqd_->Start(KsoftirqdBody(), now_);
      woke = true;
    } else if (ksoftirqd_->sleeping()) {
      ksoftirqd_->Wake(now_);
      woke = true;
    }
  }
  UpdatePreempt();
  return woke;
}

Task Cpu::KsoftirqdBody() {
  for (;;) {
    // run_ksoftirqd: the pending softirqs run on top of this thread at its
    // Syncs (Loop starts them while ksoftirqd is current).
    while (!softirq_pending_.empty() || softirq_.active) co_await Sync();
    co_await Sleep();
  }
}

bool Cpu::PreemptsAtOnce(const Thread& t) const {
  return machine_.costs().full_preemption && t.wakeup_preempts_ && !current_thread_->rt() &&
         !current_thread_->wakeup_preempts_;
}

bool Cpu::need_resched() const {
  if (current_thread_ == nullptr) return false;
  if (eevdf_ && !current_thread_->rt()) return EevdfNeedResched();
  for (const Thread* t : runqueue_) {
    if ((t->wakeup_preempts_ && !current_thread_->rt()) || t->prio_ < current_thread_->prio_) return true;
  }
  return false;
}

bool Cpu::RtRunnable() const {
  for (const Thread* t : runqueue_) {
    if (t->rt()) return true;
  }
  return false;
}

bool Cpu::EevdfNeedResched() const { return eevdf_resched_ || RtRunnable(); }

int64_t Cpu::mode_ns(Mode m) const {
  if (m == Mode::kIdle) return idle_ns_;
  int64_t total = 0;
  for (size_t slot = static_cast<size_t>(m); slot < fn_ns_.size(); slot += kNumModes) {
    total += fn_ns_[slot];
  }
  return total;
}

void Cpu::AccountIdleUntil(SimTime t) {
  if (t > now_) {
    if (idle_) idle_ns_ += t - now_;
    now_ = t;
  }
}

void Cpu::UpdatePreempt() {
  irq_pending_ = level_ < Level::kHardirq && HardirqTakeable();
  bool p = false;
  if (level_ < Level::kHardirq && !hardirq_pending_.empty()) p = true;
  if (level_ < Level::kSoftirq && !softirq_pending_.empty() && in_ksoftirqd()) p = true;
  bool resched = false;
  if (level_ == Level::kTask && current_thread_ != nullptr) {
    // A higher priority (need_resched: CanRunInline honours it where the
    // task is pre-emptible, PreemptPoint everywhere), or (PreemptsAtOnce)
    // a wake-up pre-empting at once.
    const int prio = current_thread_->prio_;
    if (eevdf_ && !current_thread_->rt()) {
      resched = EevdfNeedResched();
    } else {
      const bool wakeups_preempt = machine_.costs().full_preemption && !current_thread_->rt() &&
                                   !current_thread_->wakeup_preempts_;
      for (const Thread* t : runqueue_) {
        resched |= t->prio_ < prio;
        p |= wakeups_preempt && t->wakeup_preempts_;
      }
    }
  }
  resched_pending_ = resched;
  preempt_pending_ = p;
}

void Cpu::Kick(SimTime at) {
  if (in_loop_) return;  // the CPU will look at its work itself
  if (spinning_) {
    // An irqs-on spin takes an arriving hardirq at once; otherwise the CPU
    // looks at its work when the lock is granted.
    if (!spin_irqs_on_ || hardirq_pending_.empty() || IrqOnTopOfSpin()) return;
  } else if (!idle_) {
    return;  // the running context sees it at its next Sync
  } else {
    // An idle CPU in a cpuidle state runs after the state's exit latency.
    at = cpuidle_state_ >= 0 ? LeaveIdleState(at) : std::max(at, cpuidle_running_at_);
  }
  if (run_scheduled_at_ <= at) return;
  ++run_gen_;
  run_scheduled_at_ = at;
  machine_.sim().Schedule(at, this, kRun, run_gen_);
}

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

void Cpu::QueueThread(Thread* t, bool front) {
  // sched_info_enqueue; a thread moved between runqueues keeps its stamp.
  if (t->stats_->queued_at < 0) t->stats_->queued_at = std::max(now_, machine_.sim().Now());
  if (front) {
    runqueue_.push_front(t);
  } else {
    runqueue_.push_back(t);
  }
  if (t->movable_while_queued()) ++machine_.queued_movable();
}

void Cpu::NoteArrival(Thread& t) {
  // sched_info_arrive: the wait since sched_info_enqueue is run_delay.
  ThreadStats& st = *t.stats_;
  const SimTime now = std::max(now_, machine_.sim().Now());
  const int64_t delay = st.queued_at < 0 ? 0 : std::max<int64_t>(now - st.queued_at, 0);
  st.queued_at = -1;
  st.run_delay_ns += delay;
  if (delay > st.max_delay_ns) {
    st.max_delay_ns = delay;
    st.max_delay_at = now;
  }
  ++st.pcount;
  st.rt = t.rt();
}

void Cpu::DequeueThread(PooledDeque<Thread*>::iterator it) {
  if ((*it)->movable_while_queued()) --machine_.queued_movable();
  runqueue_.erase(it);
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

void Cpu::ArriveHardirq(IrqWork w) {
  hardirq_pending_.push_back(w);
  UpdatePreempt();
  Kick(machine_.sim().Now());
}

void Cpu::EnqueueRunnable(Thread* t, bool woken) {
  // sched_info_enqueue at the wake-up's time, even while this CPU's clock
  // has run ahead of it.
  if (t->stats_->queued_at < 0) t->stats_->queued_at = machine_.sim().Now();
  if (woken) SampleIdle(machine_.sim().Now());  // ttwu onto an idle CPU: one avg_idle sample
  if (eevdf_ && !t->rt()) {
    UpdateCurr();
    PlaceEntity(t);
  }
  QueueThread(t, /*front=*/false);
  if (eevdf_ && fair_current() && !t->rt()) {
    // check_preempt_wakeup_fair (and a balance's check_preempt_curr):
    // pre-empt only if EEVDF would pick the woken thread now.
    if (PickEevdf(/*with_curr=*/true) == t) eevdf_resched_ = true;
  }
  if (current_thread_ != nullptr && slice_end_ == kSimTimeNever) {
    const int64_t slice = eevdf_ && fair_current() ? RemainingSliceNs(*current_thread_)
                                                    : machine_.costs().sched_slice_ns;
    slice_end_ = std::max(now_, machine_.sim().Now()) + slice;
  }
  UpdatePreempt();
  Kick(machine_.sim().Now());
}

void Cpu::OnEvent(uint32_t kind, uint64_t arg) {
  const SimTime t = machine_.sim().Now();
  switch (kind) {
    case kRun:
      if (arg != run_gen_) return;  // superseded
      run_scheduled_at_ = kSimTimeNever;
      if (spinning_ && !IrqOnTopOfSpin()) ChargeSpinUntil(t);  // the spin up to the interrupt
      break;
    case kHardirqArrive: {
      IrqWork w = hardirq_arrivals_[arg];
      free_arrival_slots_.push_back(static_cast<uint32_t>(arg));
      if (w.handler == &tick_) {
        if (w.arg != tick_gen_) return;  // stopped when the CPU went idle
        woken_by_tick_ = true;
      }
      ArriveHardirq(w);
      woken_by_tick_ = false;
      return;
    }
    case kWake:
    case kMigrated:
      --incoming_wakes_;
      EnqueueRunnable(reinterpret_cast<Thread*>(static_cast<uintptr_t>(arg)), kind == kWake);
      return;
    case kPollLimit:
      if (arg == cpuidle_poll_gen_ && cpuidle_state_ == 0) OnPollLimit();
      return;
    case kSpinGranted:
      BLKLAB_CHECK(spinning_);
      if (IrqOnTopOfSpin() || now_ > t) {
        // Granted while an interrupt runs on top of the spin: the spinner
        // notices when the interrupt returns (Loop resumes it then).
        spin_granted_ = true;
        if (in_loop_ || IrqOnTopOfSpin()) return;
        break;
      }
      ChargeSpinUntil(t);
      spinning_ = false;
      // The granted context resumes first: the lock is reserved for it, so
      // an interrupt or another thread run now could spin on it forever.
      resuming_spin_ = true;
      break;
  }
  if (idle_ && t > now_) idle_ns_ += t - now_;
  if (t > now_) now_ = t;
  Loop();
}

void Cpu::EnableStacks(StackProfile* profile) {
  stacks_ = profile;
  swapper_slot_ = profile->NewSlot(profile->ChildNamed(0, "swapper/" + std::to_string(id_)));
  irq_slot_[0] = profile->NewSlot(0);
  irq_slot_[1] = profile->NewSlot(0);
}

StackProfile::Slot Cpu::StackSlot() {
  if (level_ != Level::kTask) return irq_slot_[level_ == Level::kHardirq ? 1 : 0];
  Thread* t = current_thread_;
  if (t == nullptr) return swapper_slot_;
  if (t->stack_slot_ < 0) t->stack_slot_ = stacks_->NewSlot(stacks_->ChildNamed(0, t->name_));
  return static_cast<StackProfile::Slot>(t->stack_slot_);
}

void Cpu::StartIrqStack(Level level) {
  // Below a hardirq: the softirq it interrupted, else the task level (the
  // running thread's stack, or swapper's on an idle CPU).
  StackProfile::Node base;
  if (level == Level::kHardirq && softirq_.active) {
    base = stacks_->slot(irq_slot_[0]);
  } else {
    const Level saved = level_;
    level_ = Level::kTask;
    base = stacks_->slot(StackSlot());
    level_ = saved;
  }
  const int i = level == Level::kHardirq ? 1 : 0;
  stacks_->slot(irq_slot_[i]) = stacks_->ChildNamed(base, i == 1 ? "[hardirq]" : "[softirq]");
}

void Cpu::UpdateCurr() {
  if (!fair_current()) return;
  Thread& t = *current_thread_;
  if (now_ > exec_start_) t.vruntime_ += VirtualNs(now_ - exec_start_, t);
  exec_start_ = now_;
  if (t.vruntime_ >= t.deadline_) {
    // update_deadline: a new slice; RUN_TO_PARITY no longer holds.
    t.deadline_ = t.vruntime_ + VirtualNs(machine_.costs().sched_slice_ns, t);
    t.protect_slice_ = false;
  }
}

Cpu::FairSums Cpu::SumFair() const {
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
  if (f.load == 0) return min_vruntime_;
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
  if (load == t->Weight()) min_vruntime_ = v;  // it was the last one
}

int64_t Cpu::RemainingSliceNs(const Thread& t) const {
  const int64_t vleft = std::max<int64_t>(t.deadline_ - t.vruntime_, 0);
  return (vleft * t.Weight() + 1023) / 1024;
}

void Cpu::Loop() {
  in_loop_ = true;
  for (;;) {
    std::coroutine_handle<> h;
    Level run_level;
    // The spinning context, if its level is next to run: resumed when the
    // grant landed during an interrupt, else the CPU goes on spinning.
    auto spinner_blocks = [this](Level l) {
      if (!spinning_ || spin_level_ != l) return false;
      if (spin_granted_) {
        spinning_ = false;
        spin_granted_ = false;
        resuming_spin_ = true;
        return false;
      }
      level_ = l;
      spin_since_ = now_;
      return true;
    };
    if (hardirq_.active) {
      if (spinner_blocks(Level::kHardirq)) break;
      run_level = Level::kHardirq;
      h = hardirq_.resume;
    } else if (!hardirq_pending_.empty() && irq_off_depth_ == 0 && !resuming_spin_ &&
               (!spinning_ || spin_irqs_on_)) {
      // A hardirq: on a free CPU, at a Sync, or on top of an irqs-on spin.
      IrqWork w = hardirq_pending_.front();
      hardirq_pending_.pop_front();
      hardirq_.active = true;
      if (stacks_ != nullptr) StartIrqStack(Level::kHardirq);
      level_ = Level::kHardirq;  // the handler's first steps are charged as irq
      UpdateThreadAccount();
      hardirq_.task = w.handler->Handle(*this, w.arg);
      hardirq_.resume = hardirq_.task.handle();
      run_level = Level::kHardirq;
      h = hardirq_.resume;
    } else if (softirq_.active) {
      if (spinner_blocks(Level::kSoftirq)) break;
      run_level = Level::kSoftirq;
      h = softirq_.resume;
    } else if (!softirq_pending_.empty() && irq_off_depth_ == 0 && !resuming_spin_ &&
               (irq_exit_ || (in_ksoftirqd() && lock_depth_ == 0 && !spinning_))) {
      // Softirqs: at a hardirq's (or the previous softirq's) exit, or in
      // ksoftirqd.
      irq_exit_ = false;
      IrqWork w = softirq_pending_.front();
      softirq_pending_.pop_front();
      softirq_.active = true;
      if (stacks_ != nullptr) StartIrqStack(Level::kSoftirq);
      level_ = Level::kSoftirq;
      UpdateThreadAccount();
      softirq_.task = w.handler->Handle(*this, w.arg);
      softirq_.resume = softirq_.task.handle();
      run_level = Level::kSoftirq;
      h = softirq_.resume;
    } else {
      irq_exit_ = false;
      if (spinner_blocks(Level::kTask)) break;
      run_level = Level::kTask;
      level_ = Level::kTask;
      // Without full pre-emption kernel code gives the CPU up only at a
      // pre-emption point (or when it sleeps).
      if (current_thread_ != nullptr && lock_depth_ == 0 && !resuming_spin_ && (Preemptible() || preempt_point_)) {
        // Wake-up pre-emption by a higher-priority (lower nice) thread, or
        // the end of the time slice with an equal one waiting.
        const bool slice_over = now_ >= slice_end_;
        bool displaced = false;
        bool keeps_place = false;
        if (eevdf_ && !current_thread_->rt()) {
          // A real-time thread takes the CPU; otherwise schedule()'s pick
          // (pick_eevdf with the running thread) after a wake-up chose
          // another or the slice ran out.
          keeps_place = RtRunnable();
          if (!keeps_place && (eevdf_resched_ || slice_over)) {
            UpdateCurr();
            Thread* best = PickEevdf(/*with_curr=*/true);
            displaced = best != nullptr && best != current_thread_;
          }
          eevdf_resched_ = false;
          if (keeps_place) UpdateCurr();
        } else {
          for (Thread* t : runqueue_) {
            // SCHED_FIFO has no time slice, and a woken CFS thread never
            // pre-empts a real-time one. A thread a real-time one pre-empts
            // keeps its place: a CFS task its vruntime and deadline, a
            // SCHED_FIFO task the head of its priority's list.
            if (t->rt() && t->prio_ < current_thread_->prio_) {
              keeps_place = true;
            } else {
              displaced |= (!t->rt() && t->prio_ < current_thread_->prio_) ||
                           (slice_over && t->prio_ == current_thread_->prio_ && !current_thread_->rt());
            }
            keeps_place |= (t->wakeup_preempts_ && preempt_point_ && !current_thread_->rt()) || PreemptsAtOnce(*t);
          }
        }
        if (displaced) {
          ++current_thread_->context_switches_;  // nivcsw
          current_thread_->state_ = Thread::State::kRunnable;
          QueueThread(current_thread_, /*front=*/false);
          current_thread_ = nullptr;
        } else if (keeps_place) {
          // A real-time or short-running woken thread takes the CPU; the
          // task it pre-empted runs next with the rest of its slice (EEVDF
          // keeps its deadline), not behind the other runnable ones.
          ++current_thread_->context_switches_;  // nivcsw
          current_thread_->state_ = Thread::State::kRunnable;
          current_thread_->slice_left_ns_ = slice_end_ == kSimTimeNever ? 0 : slice_end_ - now_;
          QueueThread(current_thread_, /*front=*/true);
          current_thread_ = nullptr;
        }
        preempt_point_ = false;
        if (current_thread_ != nullptr && slice_over) {
          const int64_t slice = eevdf_ && fair_current() ? RemainingSliceNs(*current_thread_)
                                                          : machine_.costs().sched_slice_ns;
          slice_end_ = runqueue_.empty() ? kSimTimeNever : now_ + slice;
        }
      }
      if (current_thread_ == nullptr) {
        if (runqueue_.empty() && !PullQueuedThread()) {
          if (sleeper_ != nullptr) {
            // __schedule of the thread that slept switches to the idle
            // task: its own time (sys), before the CPU idles.
            current_thread_ = sleeper_;
            UpdateThreadAccount();
            Charge(fn_schedule_, machine_.costs().context_switch_idle_ns);
            current_thread_ = nullptr;
            UpdateThreadAccount();
            sleeper_ = nullptr;
            went_idle_ = true;
          }
          idle_ = true;
          in_loop_ = false;
          preempt_pending_ = false;
          EnterIdleState();
          return;
        }
        // Real-time threads by priority, then a pre-empting ksoftirqd, then
        // lowest nice; FIFO among equals. With EEVDF, after the real-time
        // ones: pick_eevdf.
        auto best = runqueue_.begin();
        for (auto it = runqueue_.begin(); it != runqueue_.end(); ++it) {
          if ((*it)->PickRank() < (*best)->PickRank()) best = it;
        }
        if (eevdf_ && !(*best)->rt()) {
          const Thread* pick = PickEevdf(/*with_curr=*/false);
          best = runqueue_.begin();
          while (*best != pick) ++best;
        }
        Thread* next = *best;
        DequeueThread(best);
        NoteArrival(*next);
        next->movable_ = false;
        idle_ = false;
        ArmTick();
        current_thread_ = next;
        eevdf_resched_ = false;
        task_in_user_ = false;  // it resumes in __schedule
        int64_t slice = next->slice_left_ns_ > 0 ? next->slice_left_ns_ : machine_.costs().sched_slice_ns;
        next->slice_left_ns_ = 0;
        if (eevdf_ && !next->rt()) {
          // set_next_entity: RUN_TO_PARITY's protection starts.
          exec_start_ = now_;
          next->protect_slice_ = true;
          slice = RemainingSliceNs(*next);
        }
        slice_end_ = runqueue_.empty() ? kSimTimeNever : now_ + slice;
        UpdateThreadAccount();
        if (next != last_thread_) {
          Charge(fn_schedule_, machine_.costs().context_switch_ns);
          ++context_switches_;
        } else if (went_idle_) {
          // Back from the idle task to the thread that ran last: no mm
          // switch, the FPU still holds its state.
          Charge(fn_schedule_, machine_.costs().context_switch_idle_ns);
        }
        sleeper_ = nullptr;
        went_idle_ = false;
        last_thread_ = next;
        next->state_ = Thread::State::kRunning;
      }
      h = current_thread_->resume_;
    }
    idle_ = false;
    level_ = run_level;
    UpdatePreempt();
    UpdateThreadAccount();
    reason_ = SuspendReason::kNone;
    resuming_spin_ = false;
    RunChain(h);

    // The context returned control: finished or suspended.
    if (run_level == Level::kHardirq && hardirq_.task.done()) {
      hardirq_.active = false;
      hardirq_.task = Task();
      level_ = softirq_.active ? Level::kSoftirq : Level::kTask;
      irq_exit_ = true;
      continue;
    }
    if (run_level == Level::kSoftirq && softirq_.task.done()) {
      softirq_.active = false;
      softirq_.task = Task();
      level_ = Level::kTask;
      irq_exit_ = true;  // __do_softirq goes on with what is pending
      continue;
    }
    if (run_level == Level::kTask && current_thread_->root_.done()) {
      current_thread_->state_ = Thread::State::kDone;
      homed_threads_ -= current_thread_->homed_;
      current_thread_->homed_ = 0;
      current_thread_ = nullptr;
      continue;
    }
    switch (reason_) {
      case SuspendReason::kYield:
        ++run_gen_;
        run_scheduled_at_ = now_;
        machine_.sim().Schedule(now_, this, kRun, run_gen_);
        in_loop_ = false;
        return;
      case SuspendReason::kSpin:
        // An irqs-on spin takes a hardirq already pending at once.
        if (spin_irqs_on_ && !hardirq_pending_.empty()) continue;
        in_loop_ = false;
        return;
      case SuspendReason::kSleep:
        BLKLAB_CHECK(run_level == Level::kTask);
        if (eevdf_ && !current_thread_->rt()) {
          UpdateCurr();
          SaveLag(current_thread_);
        }
        eevdf_resched_ = false;
        current_thread_->state_ = Thread::State::kSleeping;
        ++current_thread_->context_switches_;  // nvcsw
        current_thread_->last_ran_ = now_;
        sleeper_ = current_thread_;
        current_thread_ = nullptr;
        continue;
      case SuspendReason::kNone:
        BLKLAB_CHECK(false && "context suspended without telling its CPU why");
    }
  }
  // The spinning context is next and its lock not yet granted: the CPU spins.
  UpdateThreadAccount();
  UpdatePreempt();
  in_loop_ = false;
}

}  // namespace blklab::sim
