// engine/sim/cpu.h
//
// Cpu models one logical CPU executing kernel and user work in three levels,
// from highest priority: hardirq (device interrupts, IPIs, hrtimers), softirq
// (BLOCK_SOFTIRQ ...), and tasks (fio threads, kblockd workers), else idle
// (docs/kernel-model.md §1.1).
//
// Work is written as sim::Task coroutines made of steps. A step charges CPU
// time to a function name (Charge); the CPU's local clock advances by it and
// the time is accounted per function and per mode (usr/sys/irq/softirq/idle),
// which is where the profile, usr/sys and contention figures come from.
//
// Temporal decoupling: a CPU runs its current context inline, without going
// through the event queue, for as long as its local clock is earlier than
// the next pending event anywhere. Before it touches shared state (a lock, a
// shared cacheline, a bitmap, a list another CPU reads) the code awaits
// Sync(): if some other event is due first, the context is suspended and
// resumed by an event at its local time, so every access to shared state
// happens in global (time, sequence) order. Interrupts and wake-ups that
// arrive while a context runs ahead are taken at its next Sync(): pre-emption
// happens between steps, never inside one. A single-CPU run with no timers
// therefore costs no events at all per IO.
//
// Invariants:
//  * now() never decreases; busy time + idle time = now() for every CPU.
//  * At most one context per level is active; a higher level pre-empts a
//    lower one only at Sync() points.
//  * Where the running thread can lose the CPU (Preemptible): with full
//    pre-emption (MachineCosts::full_preemption) at any Sync outside
//    spinlocks; without it (PREEMPT_VOLUNTARY) kernel code only at its
//    PreemptPoints or when it sleeps, user code (its last charge was to a
//    user function) at any Sync, as an interrupt's return to user space.
//  * A SCHED_FIFO thread (Thread::set_sched_fifo: threaded interrupt
//    handlers) runs before every CFS thread: woken, it takes the CPU at the
//    running thread's next such point, has no time slice and is pre-empted
//    only by a higher real-time priority.
//  * CFS threads of equal nice share a CPU in time slices of
//    MachineCosts::sched_slice_ns (a CFS-like round robin); a lower nice
//    value pre-empts at the next such point; a woken thread that mostly sleeps
//    (ksoftirqd, fio's main and helper threads: set_wakeup_preempts) takes
//    the CPU at the running task's next PreemptPoint (end of a system call,
//    cond_resched) or sleep.
//  * With MachineCosts::eevdf (6.6+) EEVDF decides among CFS threads
//    instead: vruntime weighted by nice, lag kept across sleeps and moves,
//    eligibility against the weighted average, earliest virtual deadline
//    first; a wake-up pre-empts (at the same points) only when that pick
//    chooses the woken thread, never while the running thread is eligible
//    and inside the slice it was picked with (RUN_TO_PARITY). What is not
//    modelled: sched_fair.h.
//  * A context spinning on a lock keeps its CPU busy until the lock is
//    granted. Spinning on a spin_lock_irqsave lock, or while holding one,
//    holds back hardirqs (irqs off); spinning on a plain spin_lock leaves
//    them on: an arriving hardirq (and the softirqs pending at its exit)
//    runs on top of the spin, and a grant that lands meanwhile takes effect
//    only when the interrupt returns (the lock stays reserved, so the
//    interrupt lengthens everybody's wait, as on the real machine).
//  * Holding a plain spin_lock keeps the task from being pre-empted but not
//    from hardirqs: they are taken at the holder's next Sync.
//  * A busy CPU takes the scheduler tick (MachineCosts::tick_period_ns, on
//    jiffy boundaries; none while idle, as with NOHZ): a hardirq charged to
//    `tick_sched_timer`, at whose exit pending softirqs run.
//  * cpuidle (MachineCosts::cpuidle_states; none: the CPU polls, as with
//    idle=poll, and any wake-up runs at once): a CPU going idle enters the
//    state the menu governor selects (POLL or a hardware state), unless a
//    wake-up is already on its way (or arrives before the CPU's own clock
//    reaches the idle entry); the first wake-up (a thread, a hardirq) after
//    that runs only after the state's exit latency, counted as idle time.
//    The menu governor's selection is described in cpuidle_menu.h. POLL
//    ends at cpuidle_poll_time (the first target residency of at least
//    10 us, at most a 16th of a tick), menu counts the idle as lasting to
//    the next timer and selects again. The tick keeps firing on an idle CPU
//    when menu keeps it (POLL, or a predicted idle under a tick, then with a
//    state that pays off before the tick) and is stopped otherwise; a
//    wake-up by the tick counts as 45 ms of idle when the next timer was
//    further. Not modelled: PM QoS limits, the governor's own CPU time, the
//    reschedule IPI to a CPU in a non-polling state, an interrupt that wakes
//    no task ending POLL (poll_idle goes on until need_resched; here the
//    interrupt ends the idle period and menu selects again), and exit
//    latency as a waste of power rather than time.
// Layout: Cpu's definitions follow the kernel's files: cpu.cc the core loop,
//  the interrupt levels, schedule() and the accounting (kernel/sched/core.c);
//  sched_fair.cc CFS and EEVDF, balancing and the tick (kernel/sched/fair.c,
//  CfsRq in sched_fair.h); softirq.cc raise_softirq, the softirq level and
//  ksoftirqd (kernel/softirq.c); cpuidle.cc idle entry and exit, POLL, the
//  CPU's timers (kernel/sched/idle.c, drivers/cpuidle/cpuidle.c), with the
//  governor in cpuidle_menu.{h,cc} (MenuGovernor). Thread is in thread.h.
// Thread-safety: thread-compatible; owned by the Machine of one run.
// Cost: Charge is two array additions; Sync is one comparison when nothing
//  else is due. With cpuidle states, each HrTimer start and expiry is an
//  insertion into and a removal from its CPU's ordered timer set.
#ifndef BLKLAB_ENGINE_SIM_CPU_H_
#define BLKLAB_ENGINE_SIM_CPU_H_

#include <coroutine>
#include <cstdint>
#include <deque>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/sim/cpuidle_menu.h"
#include "engine/sim/machine.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/sched_fair.h"
#include "engine/sim/simulator.h"
#include "engine/sim/task.h"
#include "engine/sim/thread.h"
#include "engine/sim/time.h"
#include "engine/util/check.h"

namespace blklab::sim {

enum class Level : uint8_t { kTask = 0, kSoftirq = 1, kHardirq = 2 };

// Accounting modes, same order as stats::CpuMode.
enum class Mode : uint8_t { kUser = 0, kSys = 1, kIrq = 2, kSoftirq = 3, kIdle = 4 };
inline constexpr int kNumModes = 5;
static_assert(std::size(ThreadStats{}.mode_ns) == kNumModes);

class Cpu;
class Thread;

// Handler of a hardirq or softirq: Handle is started as a fresh coroutine on
// the target CPU at irq level each time the interrupt is taken.
class IrqHandler {
 public:
  virtual ~IrqHandler() = default;
  virtual Task Handle(Cpu& cpu, uint64_t arg) = 0;
};

// Why the running context returned control to its CPU.
enum class SuspendReason : uint8_t { kNone, kYield, kSpin, kSleep };

class Cpu final : public EventHandler {
 public:
  Cpu(Machine& machine, int id);
  Cpu(const Cpu&) = delete;
  Cpu& operator=(const Cpu&) = delete;

  int id() const { return id_; }
  // The SMT sibling whose execution this CPU shares (Machine sets it).
  void set_smt_sibling(Cpu* sibling);
  Machine& machine() { return machine_; }
  SimTime now() const { return now_; }
  Level level() const { return level_; }

  // Charges `ns` of CPU time at the current level to function `fn`: the
  // time the work takes on this CPU, longer when its SMT sibling is busy
  // (MachineCosts::smt_*_permille) — the sibling's state as last seen.
  void Charge(FnId fn, int64_t ns) {
    if (smt_sibling_ != nullptr && !smt_sibling_->idle_) [[unlikely]] {
      ns = ns * (smt_sibling_->spinning_ ? smt_spin_permille_ : smt_busy_permille_) / 1000;
    }
    ChargeRaw(fn, ns);
  }
  // Charges wall time that SMT sharing does not stretch (a spin).
  void ChargeRaw(FnId fn, int64_t ns) {
    if (fn >= nr_fns_) [[unlikely]] GrowAccounts(fn);
    // Task level: usr or sys by the function; irq levels: their own mode.
    // (At task level the mode also says whether the thread runs user code.)
    int mode = level_mode_;
    if (level_ == Level::kTask) {
      mode = user_flags_[fn];
      task_in_user_ = mode == static_cast<int>(Mode::kUser);
    }
    fn_ns_[static_cast<size_t>(fn) * kNumModes + mode] += ns;
    thread_ns_[mode] += ns;  // the running thread's rusage (a scratch array at irq level)
    now_ += ns;
    if (stacks_ != nullptr) [[unlikely]] stacks_->Add(stacks_->slot(StackSlot()), fn, ns);
  }

  // The stack slot of the running context (StackProfile), made on first
  // use. REQUIRES: the Machine collects stacks.
  StackProfile::Slot StackSlot();
  void EnableStacks(StackProfile* profile);

  // How far the running context may run ahead of now() before anything else
  // could happen first (the next event anywhere, the horizon, the end of its
  // time slice): a busy-wait whose condition only other contexts change can
  // be charged up to here in one step, then Sync.
  SimTime RunAheadLimit() const {
    SimTime t = machine_.sim().NextEventTime();
    if (machine_.horizon() < t) t = machine_.horizon();
    return slice_end_ < t ? slice_end_ : t;
  }

  // True when the running context may touch shared state at now() without
  // first letting other events run.
  bool CanRunInline() const {
    return now_ < machine_.sim().NextEventTime() && now_ < machine_.horizon() &&
           (lock_depth_ > 0 ? !irq_pending_
                            : !preempt_pending_ && (!Preemptible() || (!resched_pending_ && now_ < slice_end_)));
  }

  // Spinlock bookkeeping: no pre-emption of the running context while a
  // lock is held; no hardirqs while an irqs-off lock (spin_lock_irqsave) is.
  // (The lock depth feeds neither irq_pending_ nor preempt_pending_:
  // CanRunInline reads it directly. The interrupt mask feeds irq_pending_.)
  void EnterLock(bool irqs_off) {
    ++lock_depth_;
    if (irqs_off) {
      ++irq_off_depth_;
      UpdatePreempt();
    }
  }
  void ExitLock(bool irqs_off) {
    --lock_depth_;
    if (irqs_off) {
      --irq_off_depth_;
      UpdatePreempt();
    }
  }
  // preempt_disable() / preempt_enable() around a spinlock's attempt:
  // spin_lock() disables pre-emption before it tries the lock, so the Sync
  // that orders the attempt is no pre-emption point (a woken thread waits
  // for the unlock).
  void PreemptDisable() { ++lock_depth_; }
  void PreemptEnable() { --lock_depth_; }
  // True while a context of this CPU spins on a lock (the running one is
  // then an interrupt on top of it).
  bool spinning() const { return spinning_; }
  // True when hardirqs are masked at the current point (irqs-off lock held,
  // or running in a hardirq).
  bool irqs_disabled() const { return irq_off_depth_ > 0 || level_ == Level::kHardirq; }

  // Awaitable: yield to earlier events / pending interrupts if needed.
  struct SyncAwaiter {
    Cpu* cpu;
    bool await_ready() const { return cpu->CanRunInline(); }
    void await_suspend(std::coroutine_handle<> h) { cpu->Suspend(h, SuspendReason::kYield); }
    void await_resume() const {}
  };
  SyncAwaiter Sync() { return SyncAwaiter{this}; }

  // need_resched(): a runnable thread should take the CPU from the running
  // one (a higher real-time priority, a real-time thread over a CFS one, a
  // lower nice value, or a woken ksoftirqd or other mostly-sleeping thread
  // over a CFS one).
  bool need_resched() const;
  // Awaitable for the running thread at a voluntary pre-emption point (the
  // end of a system call, exit_to_user_mode; a kworker's cond_resched
  // between work items): a woken ksoftirqd (or another mostly-sleeping
  // thread) takes the CPU here; otherwise the same as Sync.
  struct PreemptPointAwaiter {
    Cpu* cpu;
    bool await_ready() const { return !cpu->ReschedAtPreemptPoint() && cpu->CanRunInline(); }
    void await_suspend(std::coroutine_handle<> h) {
      cpu->preempt_point_ = true;
      cpu->Suspend(h, SuspendReason::kYield);
    }
    void await_resume() const {}
  };
  PreemptPointAwaiter PreemptPoint() { return PreemptPointAwaiter{this}; }
  // The same at the return to user space (exit_to_user_mode) of a thread
  // that may run on other CPUs: pre-empted there it holds no kernel state,
  // so the periodic load balance may move it to another CPU while it waits
  // (as can_migrate_task moves any queued task); the caller re-reads
  // Thread::on_cpu() after it.
  struct PreemptPointMigratableAwaiter {
    Cpu* cpu;
    Thread* thread = nullptr;
    bool await_ready() const { return !cpu->ReschedAtPreemptPoint() && cpu->CanRunInline(); }
    void await_suspend(std::coroutine_handle<> h) {
      thread = cpu->current_thread_;
      thread->at_user_boundary_ = thread->cpus_allowed_.size() > 1;
      cpu->preempt_point_ = true;
      cpu->Suspend(h, SuspendReason::kYield);
    }
    void await_resume() const {
      if (thread != nullptr) thread->at_user_boundary_ = false;
    }
  };
  PreemptPointMigratableAwaiter PreemptPointMigratable() { return PreemptPointMigratableAwaiter{this}; }

  // Awaitable for the running thread: sleep until Thread::Wake.
  // REQUIRES: level() == kTask.
  struct SleepAwaiter {
    Cpu* cpu;
    bool await_ready() const { return false; }
    void await_suspend(std::coroutine_handle<> h) { cpu->Suspend(h, SuspendReason::kSleep); }
    void await_resume() const {}
  };
  SleepAwaiter Sleep() { return SleepAwaiter{this}; }
  // The same in io_schedule: the thread counts in this CPU's nr_iowait
  // until it is woken (the menu governor reads it).
  struct IoSleepAwaiter {
    Cpu* cpu;
    bool await_ready() const { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      cpu->BeginIowait();
      cpu->Suspend(h, SuspendReason::kSleep);
    }
    void await_resume() const {}
  };
  IoSleepAwaiter IoSleep() { return IoSleepAwaiter{this}; }
  // The same, at a sleep the thread may wake from on another CPU (a
  // thread's top-level wait: io_getevents, io_cqring_wait, a synchronous
  // read, a thinktime or rate sleep): the caller re-reads
  // Thread::on_cpu() after it.
  // `iowait`: the sleep is io_schedule's (or io_uring's wait with IO
  // pending).
  struct SleepMigratableAwaiter {
    Cpu* cpu;
    bool iowait;
    bool await_ready() const { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      if (iowait) cpu->BeginIowait();
      cpu->current_thread_->migrate_on_wake_ = cpu->current_thread_->cpus_allowed_.size() > 1;
      cpu->Suspend(h, SuspendReason::kSleep);
    }
    void await_resume() const {}
  };
  SleepMigratableAwaiter SleepMigratable(bool iowait = false) { return SleepMigratableAwaiter{this, iowait}; }
  // True when no thread runs or waits here and no wake-up is on its way
  // (the kernel's idle_cpu: an interrupt running on top of the idle task
  // does not make the CPU busy): a waking thread may be placed here.
  bool available_idle() const {
    return current_thread_ == nullptr && runqueue_.empty() && incoming_wakes_ == 0;
  }

  // Used by SpinLock: the running context spins, its time charged to
  // `slowpath_fn`, until ResumeAfterSpin. `irqs_on`: a plain spin_lock
  // spin, during which hardirqs are served (unless an irqs-off lock is
  // already held).
  void SuspendSpinning(std::coroutine_handle<> h, FnId slowpath_fn, bool irqs_on);
  // The lock is granted at `at`: the spinner resumes then, or when the
  // interrupt it is serving at that time returns.
  void ResumeAfterSpin(SimTime at);

  // Queues a hardirq on this CPU arriving at `at` (>= simulator now).
  void RaiseHardirq(SimTime at, IrqHandler* handler, uint64_t arg);
  // The same for a timer's interrupt scheduled well ahead of its time (the
  // scheduler tick): it waits in the simulator's bulk heap; the order of
  // events is the same either way.
  void RaiseTimerHardirq(SimTime at, IrqHandler* handler, uint64_t arg);
  // Marks a softirq pending on this CPU (raise_softirq, called from code
  // running on it). Raised in a hardirq or softirq, it runs at that
  // interrupt's exit. Raised from task context, it wakes this CPU's
  // ksoftirqd thread (returns true when that takes a wake-up, which the
  // caller prices as try_to_wake_up) and runs at the next hardirq exit on
  // this CPU or when ksoftirqd gets the CPU (a nice-0 thread: when the
  // running task sleeps or its slice ends), as in 6.x kernels.
  bool RaiseSoftirq(IrqHandler* handler, uint64_t arg);

  // The thread running at task level, or nullptr.
  Thread* current_thread() const { return current_thread_; }

  // Accounting.
  // Derived from the per-function table (not kept per charge).
  int64_t mode_ns(Mode m) const;
  int64_t busy_ns() const { return now_ - idle_ns_; }
  // Switches from one thread to another on this CPU, each priced as
  // context_switch (perf stat's context-switches; a thread that sleeps and
  // is the next to run again, across idle, does not count).
  uint64_t context_switches() const { return context_switches_; }
  // ns charged to (fn, mode); 0 if never charged.
  int64_t fn_ns(FnId fn, Mode m) const {
    const size_t slot = static_cast<size_t>(fn) * kNumModes + static_cast<int>(m);
    return slot < fn_ns_.size() ? fn_ns_[slot] : 0;
  }
  // cpuidle: how often each state (0: POLL) was entered, and the time
  // wake-ups waited for the state's exit (counted as idle time).
  uint64_t cpuidle_usage(int state) const {
    return state < static_cast<int>(cpuidle_usage_.size()) ? cpuidle_usage_[state] : 0;
  }
  int64_t cpuidle_exit_wait_ns() const { return cpuidle_exit_wait_ns_; }
  // With cpuidle states the governor needs the CPU's next timer: HrTimer
  // reports its expiries here (add, or remove the one it had).
  bool tracks_timers() const { return !cpuidle_usage_.empty(); }
  void TrackTimer(SimTime expires, uint64_t id, bool add);
  // Tasks asleep in iowait that slept on this CPU (rq->nr_iowait).
  int nr_iowait() const { return nr_iowait_; }
  // Closes the idle interval up to `t` (end of run) so that busy + idle = t.
  void AccountIdleUntil(SimTime t);

  void OnEvent(uint32_t kind, uint64_t arg) override;

 private:
  friend class Thread;
  // kWake: a wake-up (or a start); kMigrated: a thread a periodic balance
  // moved here (no ttwu, so no avg_idle sample).
  // kPollLimit: poll_idle's time limit (cpuidle).
  enum EventKind : uint32_t {
    kRun = 1,
    kHardirqArrive = 2,
    kWake = 3,
    kSpinGranted = 4,
    kMigrated = 5,
    kPollLimit = 6
  };

  struct IrqWork {
    IrqHandler* handler;
    uint64_t arg;
  };
  struct IrqContext {
    bool active = false;
    Task task;
    std::coroutine_handle<> resume;
  };

  void GrowAccounts(FnId fn);
  // Stores a hardirq arrival; the slot is the arrival event's argument.
  uint32_t HardirqArrivalSlot(IrqHandler* handler, uint64_t arg);
  // Points thread_ns_ at the running thread's counters when at task level,
  // and at irq level too when interrupts count as the interrupted task's
  // time (MachineCosts::irq_time_in_task).
  void UpdateThreadAccount() {
    level_mode_ = level_ == Level::kHardirq   ? static_cast<int>(Mode::kIrq)
                  : level_ == Level::kSoftirq ? static_cast<int>(Mode::kSoftirq)
                                              : static_cast<int>(Mode::kSys);
    thread_ns_ = current_thread_ != nullptr && (level_ == Level::kTask || irq_time_in_task_)
                     ? current_thread_->stats_->mode_ns
                     : scratch_ns_;
  }
  void Suspend(std::coroutine_handle<> h, SuspendReason reason);
  // The scheduler tick's hardirq.
  class TickHandler final : public IrqHandler {
   public:
    explicit TickHandler(Cpu* cpu) : cpu_(cpu) {}
    Task Handle(Cpu& cpu, uint64_t arg) override;

   private:
    Cpu* cpu_;
  };
  // Arms the next tick if the CPU is busy and none is armed.
  void ArmTick();
  // ksoftirqd/N: runs the pending softirqs, then sleeps.
  Task KsoftirqdBody();
  bool in_ksoftirqd() const { return current_thread_ != nullptr && current_thread_ == ksoftirqd_.get(); }
  // What a voluntary pre-emption point yields to: a woken mostly-sleeping
  // thread, a higher-priority one, or the end of the slice (need_resched,
  // which kernel code without full pre-emption honours only there).
  bool ReschedAtPreemptPoint() const {
    return wakeup_preempt_waiting() || resched_pending_ || now_ >= slice_end_;
  }
  // Whether the running task can lose the CPU anywhere outside a spinlock:
  // always with full pre-emption; otherwise only while it runs user code
  // (an interrupt's return to user space honours need_resched), kernel
  // code at its pre-emption points.
  bool Preemptible() const { return full_preemption_ || task_in_user_; }
  // A woken thread that pre-empts at the next pre-emption point (ksoftirqd,
  // fio's main and helper threads) waits for the CPU.
  bool wakeup_preempt_waiting() const {
    if (eevdf_ || (current_thread_ != nullptr && current_thread_->rt())) return false;
    for (const Thread* t : runqueue_) {
      if (t->wakeup_preempts_) return true;
    }
    return false;
  }
  // Full pre-emption (MachineCosts::full_preemption): woken `t`, a mostly
  // sleeping thread (ksoftirqd), takes the CPU at the running task's next
  // step outside spinlocks, if that task is a CFS one and not one itself.
  // REQUIRES: a current thread.
  bool PreemptsAtOnce(const Thread& t) const;
  // An interrupt runs on top of the spinning context.
  bool IrqOnTopOfSpin() const;
  // Charges the spin from spin_since_ to now_ + (t - now_) at the spinner's level.
  void ChargeSpinUntil(SimTime t);
  // True when a pending hardirq may interrupt the current context.
  bool HardirqTakeable() const {
    return !hardirq_pending_.empty() && irq_off_depth_ == 0 && !hardirq_.active &&
           !resuming_spin_ && !(spinning_ && !spin_irqs_on_);
  }
  void Kick(SimTime at);  // make sure the CPU looks at its work at `at`
  // The CPU runs its contexts, highest level first, until it idles, spins
  // or the running context yields to an event; each pass is the steps
  // below.
  void Loop();
  // What a pass of Loop found to do next.
  enum class LoopStep : uint8_t { kRun, kSpin, kIdle };
  // Chooses the context to run (*h, at *run_level): a hardirq or softirq
  // under way or pending, else the task level. kSpin: the spinning context
  // is next and its lock not yet granted; kIdle: the CPU went idle.
  LoopStep PickContext(std::coroutine_handle<>* h, Level* run_level);
  // The spinning context, if its level `l` is next to run: resumed when the
  // grant landed during an interrupt (false), else the CPU goes on spinning
  // (true).
  bool SpinnerBlocks(Level l);
  // Starts the first pending hardirq's handler; returns its coroutine.
  std::coroutine_handle<> StartHardirq();
  // Starts the first pending softirq's handler (softirq.cc).
  std::coroutine_handle<> StartSoftirq();
  // The task level: pre-emption of the running thread where it can lose
  // the CPU, then, with none running, a pull, the pick and the switch.
  // False when the CPU goes idle instead (Loop returns).
  bool ScheduleTask();
  // Whether the running thread gives the CPU up here (wake-up pre-emption,
  // the end of its slice) and where it is queued if it does.
  void PreemptCurrentThread();
  // The pre-emption decision under EEVDF for a running fair thread
  // (sched_fair.c): `displaced` (queued behind) or `keeps_place` (queued in
  // front, a real-time thread takes the CPU).
  void CheckPreemptEevdf(bool slice_over, bool* displaced, bool* keeps_place);
  // Nothing to run and nothing pulled: the switch to the idle task, and
  // the idle state (Loop returns).
  void GoIdle();
  // The next thread to run, taken off the runqueue: real-time by priority,
  // then a pre-empting one, then CFS (pick_eevdf under EEVDF).
  Thread* PickNextThread();
  // context_switch to `next`: its slice, schedstat and the switch's price.
  void SwitchTo(Thread* next);
  // Resumes `h` at `run_level`.
  void RunContext(std::coroutine_handle<> h, Level run_level);
  // The context run at `run_level` returned control, finished or
  // suspended: false when Loop returns (a yield, a spin).
  bool ContextReturned(Level run_level);
  // A finished softirq handler: back to the task level (softirq.cc).
  void ExitSoftirq();
  void ArriveHardirq(IrqWork w);
  // `woken`: by a wake-up (ttwu), which ends an idle period's avg_idle
  // sample; a balance's migration does not.
  void EnqueueRunnable(Thread* t, bool woken);
  // newidle balancing: this CPU has nothing to run; unless its idle
  // periods average under MachineCosts::sched_migration_cost_ns (rq->
  // avg_idle, sampled at each wake-up onto the idle CPU), takes a queued
  // thread that may move (Thread::movable_while_queued: woken from a
  // migratable sleep, or pre-empted at its return to user space) and waits
  // behind a running one on another CPU it may run on, if it has not run
  // for the migration cost (can_migrate_task's task_hot test), nearest
  // first (its LLC, then the machine). True if it did. Not modelled: the
  // balance's own CPU time (and so the per-domain max_newidle_lb_cost
  // test).
  bool PullQueuedThread();
  // One avg_idle sample: the idle period that began at idle_stamp_ ends at
  // `now` (ttwu_do_wakeup's update_avg).
  void SampleIdle(SimTime now);
  // Periodic load balancing, reduced to what an overloaded CPU's tick
  // starts (nohz_balancer_kick, then the idle CPU's rebalance_domains):
  // once per sched domain interval (sd->min_interval: the LLC's CPU count
  // in ms, the machine's for other LLCs) a tick that finds threads waiting
  // here balances (rq->next_balance restarts even when all are pinned); a
  // woken thread waiting here, or one pre-empted at its return to user
  // space, moves to an idle CPU it may run on, nearest first. A waiting
  // thread pre-empted inside kernel code cannot move in the model (its
  // coroutine holds the CPU) where the kernel could move it: such a tick
  // does not restart the interval, and the next one tries again. Unlike newidle
  // balancing it takes cache-hot threads: the kernel's periodic balance
  // does once it has failed cache_nice_tries times. Not modelled: the load
  // (weights, utilisation) behind the imbalance test, the balance's CPU time.
  // What one pass over the runqueue finds for the fair class's balancer
  // (real-time and single-CPU threads are never its to move).
  enum class Waiting { kPinned, kHeld, kMovable };
  Waiting BalanceableThreads() const;
  // Takes the movable queued thread at `it` off this runqueue and homes it
  // on CPU `to` (the caller queues it there).
  void TakeQueuedThread(PooledDeque<Thread*>::iterator it, int to);
  // Every change of runqueue_ goes through these two: they keep
  // Machine::queued_movable, the gate of newidle balancing, exact.
  void QueueThread(Thread* t, bool front);
  void DequeueThread(PooledDeque<Thread*>::iterator it);
  // `t`, just taken off the runqueue, is about to run: its schedstat
  // (ThreadStats::run_delay_ns, max_delay_ns, pcount).
  void NoteArrival(Thread& t);
  void PushQueuedThread(SimTime jiffy);  // jiffy: the tick's time
  void UpdatePreempt();

  // EEVDF (MachineCosts::eevdf). The entities of this CPU's cfs_rq are the
  // running thread, if a CFS one, and the queued CFS threads.
  // update_curr: the running CFS thread's vruntime advances by its time on
  // the CPU since cfs_.exec_start, weighted; a used-up slice gets a new
  // deadline (update_deadline), which ends RUN_TO_PARITY's protection.
  void UpdateCurr();
  // avg_vruntime: V, the load-weighted mean vruntime of the entities
  // (cfs_.min_vruntime when there are none); `load` gets their total weight.
  int64_t AvgVruntime(int64_t* load) const;
  // The CFS entities' sums (FairSums, sched_fair.h).
  FairSums SumFair() const;
  // entity_eligible: vruntime <= V, from the entities' sums (O(1), so a
  // pick over n entities is O(n)).
  static bool Eligible(const Thread& t, const FairSums& f);
  // pick_eevdf over the queued CFS threads and, with `with_curr`, the
  // running one: the running one while eligible and protected, else the
  // eligible entity with the earliest deadline (the running one only if
  // strictly earlier). nullptr when no CFS thread is queued and the running
  // one does not count.
  Thread* PickEevdf(bool with_curr) const;
  // A real-time (SCHED_FIFO) thread is queued: it takes the CPU from any
  // CFS thread at the next point the running one can give it up.
  bool RtRunnable() const;
  // need_resched for a running CFS thread under EEVDF: a queued real-time
  // thread, or check_preempt_wakeup_fair chose a woken one.
  bool EevdfNeedResched() const;
  // The running thread goes to sleep in iowait on this CPU.
  void BeginIowait();
  // menu_select when the CPU goes idle: the state from the typical recent
  // idle interval and the latency the CPU's iowait tasks allow.
  void EnterIdleState();
  // The selection at now_, the state entered and counted, POLL's limit
  // scheduled, the tick kept or stopped (EnterIdleState, OnPollLimit).
  void SelectAndEnterIdleState();
  // The governor's choice at now_ (0: POLL) and whether it stops the tick
  // (left as it is when it does); sets the period's bucket and next timer.
  int SelectIdleState(bool* stop_tick);
  // POLL's time limit, its event, and what happens when it is reached.
  int64_t PollLimitNs() const;
  void SchedulePollLimit();
  void OnPollLimit();
  // The first wake-up of an idle CPU at `at`: menu_reflect's interval, and
  // when the CPU runs again (after the state's exit latency).
  SimTime LeaveIdleState(SimTime at);

  // place_entity: vruntime V - lag (the lag scaled by (load + w) / load
  // when the queue is not empty), deadline one virtual slice on (half for a
  // new thread). REQUIRES: `t` is not among the entities yet.
  void PlaceEntity(Thread* t);
  // update_entity_lag, before `t` leaves the entities (sleep, migration).
  void SaveLag(Thread* t);
  // Time the running thread takes to reach its deadline.
  int64_t RemainingSliceNs(const Thread& t) const;
  int64_t VirtualNs(int64_t ns, const Thread& t) const { return ns * 1024 / t.Weight(); }
  bool fair_current() const { return current_thread_ != nullptr && !current_thread_->rt(); }

  Machine& machine_;
  int id_;
  SimTime now_ = 0;
  bool idle_ = true;
  bool in_loop_ = false;
  bool spinning_ = false;
  bool spin_irqs_on_ = false;   // the spin lets hardirqs in (plain spin_lock)
  bool spin_granted_ = false;   // granted while an interrupt ran on top of the spin
  Level spin_level_ = Level::kTask;  // level of the spinning context
  bool resuming_spin_ = false;  // a spin was granted; its context runs next
  bool irq_exit_ = false;       // a hardirq just returned: pending softirqs may run
  bool irq_pending_ = false;    // a hardirq may interrupt the running context now
  bool preempt_point_ = false;  // the running task yielded at a pre-emption point
  SuspendReason reason_ = SuspendReason::kNone;
  Level level_ = Level::kTask;
  bool preempt_pending_ = false;
  // A higher-priority thread waits (need_resched); with full pre-emption it
  // is part of preempt_pending_, without it honoured at pre-emption points.
  bool resched_pending_ = false;
  bool full_preemption_ = false;
  const bool eevdf_;
  CfsRq cfs_;  // EEVDF's per-CPU state (sched_fair.h)
  bool task_in_user_ = false;  // the running thread's last charge was user code
  uint64_t run_gen_ = 0;
  SimTime run_scheduled_at_ = kSimTimeNever;

  IrqContext hardirq_;
  IrqContext softirq_;
  PooledDeque<IrqWork> hardirq_pending_;
  PooledDeque<IrqWork> softirq_pending_;
  std::vector<IrqWork> hardirq_arrivals_;  // indexed by event arg
  std::vector<uint32_t> free_arrival_slots_;

  Thread* current_thread_ = nullptr;
  std::unique_ptr<Thread> ksoftirqd_;  // created at the first task-context raise
  PooledDeque<Thread*> runqueue_;
  int incoming_wakes_ = 0;  // kWake and kMigrated events scheduled and not yet taken

  std::vector<int64_t> fn_ns_;
  std::vector<uint8_t> user_flags_;  // per function: Mode::kUser or Mode::kSys
  friend class StackFrame;
  // Call stacks, when the Machine collects them: the slots of this CPU's
  // softirq and hardirq contexts and of its idle task (swapper).
  StackProfile* stacks_ = nullptr;
  StackProfile::Slot irq_slot_[2] = {0, 0};
  StackProfile::Slot swapper_slot_ = 0;
  // An interrupt context's stack starts on top of what it interrupted.
  void StartIrqStack(Level level);
  FnId nr_fns_ = 0;
  int level_mode_ = static_cast<int>(Mode::kSys);
  int64_t* thread_ns_ = scratch_ns_;
  int64_t scratch_ns_[kNumModes] = {};
  int64_t idle_ns_ = 0;
  uint64_t context_switches_ = 0;

  int lock_depth_ = 0;     // preempt_count: spinlocks held by the running context, plus
                           // PreemptDisable sections (SpinLock::Lock's attempt); no pre-emption while > 0
  int irq_off_depth_ = 0;  // of which irqs-off (spin_lock_irqsave) locks
  // End of the running thread's time slice while others wait to run
  // (kSimTimeNever when nobody waits).
  SimTime slice_end_ = kSimTimeNever;
  Thread* last_thread_ = nullptr;
  // The thread that just slept, until the CPU picks another or idles (then
  // its switch to the idle task is charged to it), and whether the CPU went
  // idle since last_thread_ ran (its switch back costs the idle switch).
  Thread* sleeper_ = nullptr;
  bool went_idle_ = false;
  SimTime spin_since_ = 0;
  FnId spin_fn_ = 0;
  FnId fn_schedule_;
  FnId fn_tick_;
  Cpu* smt_sibling_ = nullptr;
  int64_t smt_busy_permille_ = 1000;
  int64_t smt_spin_permille_ = 1000;
  const bool irq_time_in_task_;
  TickHandler tick_{this};
  bool tick_armed_ = false;
  uint64_t tick_gen_ = 0;       // the armed tick's; bumped when an idle CPU stops it
  bool tick_stopped_ = false;   // stopped by an idle entry, not re-armed since
  bool woken_by_tick_ = false;  // the hardirq arriving now is the tick
  int homed_threads_ = 0;         // migratable threads living here (Thread::homed_)
  SimTime next_balance_ = 0;      // periodic balance within the LLC
  SimTime idle_stamp_ = -1;       // rq->idle_stamp: start of the idle period (-1: none)
  int64_t avg_idle_ns_;           // rq->avg_idle (starts at twice the migration cost)
  SimTime next_far_balance_ = 0;  // and across LLCs
  // cpuidle (MachineCosts::cpuidle_states non-empty): the state the idle CPU
  // is in (-1: none, it runs or has been woken), since when, and when a
  // woken CPU runs again; the menu governor's state (cpuidle_menu.h).
  int cpuidle_state_ = -1;
  SimTime cpuidle_entered_at_ = 0;
  SimTime cpuidle_running_at_ = 0;
  std::vector<uint64_t> cpuidle_usage_;
  int64_t cpuidle_exit_wait_ns_ = 0;
  uint64_t cpuidle_poll_gen_ = 0;  // the pending poll limit's
  MenuGovernor menu_;
  // HrTimers armed on this CPU, by (expiry, timer id), kept only with
  // cpuidle states (tracks_timers).
  CpuTimerSet timers_;
  int nr_iowait_ = 0;
};

// Opens a frame for kernel function `fn` on the running context of `cpu`
// for the object's lifetime (a scope in a coroutine, across its
// suspensions); StackProfile records the stacks. No effect (one branch)
// unless the Machine collects stacks.
class StackFrame {
 public:
  StackFrame(Cpu& cpu, FnId fn) : profile_(cpu.stacks_) {
    if (profile_ != nullptr) [[unlikely]] {
      slot_ = cpu.StackSlot();
      StackProfile::Node& node = profile_->slot(slot_);
      saved_ = node;
      node = profile_->Enter(node, fn);
    }
  }
  ~StackFrame() {
    if (profile_ != nullptr) [[unlikely]] profile_->slot(slot_) = saved_;
  }
  StackFrame(const StackFrame&) = delete;
  StackFrame& operator=(const StackFrame&) = delete;

 private:
  StackProfile* const profile_;
  StackProfile::Slot slot_ = 0;
  StackProfile::Node saved_ = 0;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_CPU_H_
