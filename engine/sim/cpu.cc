#include "engine/sim/cpu.h"

#include <algorithm>
#include <coroutine>
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

void Cpu::set_smt_sibling(Cpu* sibling) {
  smt_sibling_ = sibling;
  smt_busy_permille_ = machine_.costs().smt_busy_permille;
  smt_spin_permille_ = machine_.costs().smt_spin_permille;
  if (smt_busy_permille_ == 1000 && smt_spin_permille_ == 1000) smt_sibling_ = nullptr;
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
    if (PickEevdf(/*with_curr=*/true) == t) cfs_.resched = true;
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

void Cpu::Loop() {
  in_loop_ = true;
  for (;;) {
    std::coroutine_handle<> h;
    Level run_level = Level::kTask;
    const LoopStep step = PickContext(&h, &run_level);
    if (step == LoopStep::kSpin) break;
    if (step == LoopStep::kIdle) return;
    RunContext(h, run_level);
    if (!ContextReturned(run_level)) return;
  }
  // The spinning context is next and its lock not yet granted: the CPU spins.
  UpdateThreadAccount();
  UpdatePreempt();
  in_loop_ = false;
}

bool Cpu::SpinnerBlocks(Level l) {
  // The spinning context, if its level is next to run: resumed when the
  // grant landed during an interrupt, else the CPU goes on spinning.
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
}

Cpu::LoopStep Cpu::PickContext(std::coroutine_handle<>* h, Level* run_level) {
  if (hardirq_.active) {
    if (SpinnerBlocks(Level::kHardirq)) return LoopStep::kSpin;
    *run_level = Level::kHardirq;
    *h = hardirq_.resume;
  } else if (!hardirq_pending_.empty() && irq_off_depth_ == 0 && !resuming_spin_ &&
             (!spinning_ || spin_irqs_on_)) {
    // A hardirq: on a free CPU, at a Sync, or on top of an irqs-on spin.
    *h = StartHardirq();
    *run_level = Level::kHardirq;
  } else if (softirq_.active) {
    if (SpinnerBlocks(Level::kSoftirq)) return LoopStep::kSpin;
    *run_level = Level::kSoftirq;
    *h = softirq_.resume;
  } else if (!softirq_pending_.empty() && irq_off_depth_ == 0 && !resuming_spin_ &&
             (irq_exit_ || (in_ksoftirqd() && lock_depth_ == 0 && !spinning_))) {
    // Softirqs: at a hardirq's (or the previous softirq's) exit, or in
    // ksoftirqd.
    *h = StartSoftirq();
    *run_level = Level::kSoftirq;
  } else {
    irq_exit_ = false;
    if (SpinnerBlocks(Level::kTask)) return LoopStep::kSpin;
    *run_level = Level::kTask;
    level_ = Level::kTask;
    if (!ScheduleTask()) return LoopStep::kIdle;
    *h = current_thread_->resume_;
  }
  return LoopStep::kRun;
}

std::coroutine_handle<> Cpu::StartHardirq() {
  IrqWork w = hardirq_pending_.front();
  hardirq_pending_.pop_front();
  hardirq_.active = true;
  if (stacks_ != nullptr) StartIrqStack(Level::kHardirq);
  level_ = Level::kHardirq;  // the handler's first steps are charged as irq
  UpdateThreadAccount();
  hardirq_.task = w.handler->Handle(*this, w.arg);
  hardirq_.resume = hardirq_.task.handle();
  return hardirq_.resume;
}

bool Cpu::ScheduleTask() {
  // Without full pre-emption kernel code gives the CPU up only at a
  // pre-emption point (or when it sleeps).
  if (current_thread_ != nullptr && lock_depth_ == 0 && !resuming_spin_ && (Preemptible() || preempt_point_)) {
    PreemptCurrentThread();
  }
  if (current_thread_ == nullptr) {
    if (runqueue_.empty() && !PullQueuedThread()) {
      GoIdle();
      return false;
    }
    SwitchTo(PickNextThread());
  }
  return true;
}

void Cpu::PreemptCurrentThread() {
  // Wake-up pre-emption by a higher-priority (lower nice) thread, or
  // the end of the time slice with an equal one waiting.
  const bool slice_over = now_ >= slice_end_;
  bool displaced = false;
  bool keeps_place = false;
  if (eevdf_ && !current_thread_->rt()) {
    CheckPreemptEevdf(slice_over, &displaced, &keeps_place);
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

void Cpu::GoIdle() {
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
}

Thread* Cpu::PickNextThread() {
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
  return next;
}

void Cpu::SwitchTo(Thread* next) {
  NoteArrival(*next);
  next->movable_ = false;
  idle_ = false;
  ArmTick();
  current_thread_ = next;
  cfs_.resched = false;
  task_in_user_ = false;  // it resumes in __schedule
  int64_t slice = next->slice_left_ns_ > 0 ? next->slice_left_ns_ : machine_.costs().sched_slice_ns;
  next->slice_left_ns_ = 0;
  if (eevdf_ && !next->rt()) {
    // set_next_entity: RUN_TO_PARITY's protection starts.
    cfs_.exec_start = now_;
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

void Cpu::RunContext(std::coroutine_handle<> h, Level run_level) {
  idle_ = false;
  level_ = run_level;
  UpdatePreempt();
  UpdateThreadAccount();
  reason_ = SuspendReason::kNone;
  resuming_spin_ = false;
  RunChain(h);
}

bool Cpu::ContextReturned(Level run_level) {
  // The context returned control: finished or suspended.
  if (run_level == Level::kHardirq && hardirq_.task.done()) {
    hardirq_.active = false;
    hardirq_.task = Task();
    level_ = softirq_.active ? Level::kSoftirq : Level::kTask;
    irq_exit_ = true;
    return true;
  }
  if (run_level == Level::kSoftirq && softirq_.task.done()) {
    ExitSoftirq();
    return true;
  }
  if (run_level == Level::kTask && current_thread_->root_.done()) {
    current_thread_->state_ = Thread::State::kDone;
    homed_threads_ -= current_thread_->homed_;
    current_thread_->homed_ = 0;
    current_thread_ = nullptr;
    return true;
  }
  switch (reason_) {
    case SuspendReason::kYield:
      ++run_gen_;
      run_scheduled_at_ = now_;
      machine_.sim().Schedule(now_, this, kRun, run_gen_);
      in_loop_ = false;
      return false;
    case SuspendReason::kSpin:
      // An irqs-on spin takes a hardirq already pending at once.
      if (spin_irqs_on_ && !hardirq_pending_.empty()) return true;
      in_loop_ = false;
      return false;
    case SuspendReason::kSleep:
      BLKLAB_CHECK(run_level == Level::kTask);
      if (eevdf_ && !current_thread_->rt()) {
        UpdateCurr();
        SaveLag(current_thread_);
      }
      cfs_.resched = false;
      current_thread_->state_ = Thread::State::kSleeping;
      ++current_thread_->context_switches_;  // nvcsw
      current_thread_->last_ran_ = now_;
      sleeper_ = current_thread_;
      current_thread_ = nullptr;
      return true;
    case SuspendReason::kNone:
      BLKLAB_CHECK(false && "context suspended without telling its CPU why");
  }
  return true;
}

}  // namespace blklab::sim
