// engine/sim/thread.h
//
// Thread models a simulated kernel or user thread (the kernel's
// task_struct, include/linux/sched.h): a root sim::Task coroutine that runs
// on one Cpu at a time, with its scheduling class (SCHED_FIFO or fair, nice),
// its affinity, its EEVDF sched_entity (vruntime, deadline, lag) and its
// rusage and schedstat figures (ThreadStats, owned by the Machine). The
// scheduling itself (pick, pre-emption, balancing) is Cpu's: see cpu.h and
// sched_fair.cc.
//
// Invariants: in at most one Cpu's runqueue, or running on it, at a time;
//  state() moves kNew -> kRunnable <-> kRunning <-> kSleeping, and to kDone
//  when its root task ends; homed_ is 1 only while started, not done, fair
//  and allowed several CPUs.
// Thread-safety: thread-compatible; owned by the code that made it, run by
//  the Cpus of one Machine.
// Cost: Start and Wake schedule one event; the accessors are O(1).
#ifndef BLKLAB_ENGINE_SIM_THREAD_H_
#define BLKLAB_ENGINE_SIM_THREAD_H_

#include <coroutine>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/sim/task.h"
#include "engine/sim/thread_stats.h"
#include "engine/sim/time.h"
#include "engine/util/check.h"

namespace blklab::sim {

class Cpu;
class Machine;

// A simulated thread (task_struct): a root coroutine on one CPU at a time.
// A thread allowed more than one CPU (set_cpus_allowed) may move when it
// wakes from Cpu::SleepMigratable (select_task_rq_fair's wake-up path:
// its previous CPU if idle, else an idle CPU of that CPU's LLC, else it
// stays); the code it runs re-reads on_cpu() after such a sleep. Sleeps
// inside kernel paths (Cpu::Sleep) wake on the same CPU. A CPU about to go
// idle, unless its idle periods are short (rq->avg_idle), pulls such a
// woken thread that waits on a busy CPU before it has run there, or one
// pre-empted at its return to user space (Cpu::PreemptPointMigratable),
// once it is cache cold (newidle balancing, Cpu::PullQueuedThread); an
// overloaded CPU's tick pushes either kind to an idle CPU, hot or not, once
// per balance interval (periodic balancing, Cpu::PushQueuedThread). A
// thread pre-empted inside the kernel never moves (its code holds its CPU).
class Thread {
 public:
  enum class State : uint8_t { kNew, kRunnable, kRunning, kSleeping, kDone };

  // nice: -20 (kblockd WQ_HIGHPRI workers) .. 19. Lower nice pre-empts higher
  // nice at the next Sync of the running task.
  Thread(Machine& machine, std::string name, int cpu, int nice = 0);
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;

  // Makes the thread runnable at `at` with `root` as its body.
  void Start(Task root, SimTime at);

  // Wakes a sleeping thread: it becomes runnable on its CPU at `at`
  // (the caller has charged try_to_wake_up). No effect unless sleeping.
  void Wake(SimTime at);

  // The CPUs the thread may run on (sched_setaffinity); empty or one CPU:
  // pinned to the CPU it was made on.
  void set_cpus_allowed(std::vector<int> cpus) { cpus_allowed_ = std::move(cpus); }
  const std::vector<int>& cpus_allowed() const { return cpus_allowed_; }

  const std::string& name() const { return name_; }
  int cpu() const { return cpu_; }
  // The CPU the thread is on (or last ran on, while it sleeps).
  Cpu& on_cpu() const { return *on_cpu_; }
  // Wake-ups that moved it to another CPU (perf's cpu-migrations).
  uint64_t migrations() const { return migrations_; }
  int nice() const { return prio_ - kNiceZeroPrio; }
  // SCHED_FIFO at `rt_priority` (1..99; a threaded interrupt handler runs
  // at 50): it takes the CPU from any CFS thread at that thread's next
  // Sync (a CONFIG_PREEMPT kernel pre-empts at interrupt exit), has no
  // time slice, and is never displaced by a woken CFS thread.
  void set_sched_fifo(int rt_priority) {
    BLKLAB_CHECK(rt_priority >= 1 && rt_priority < kMaxRtPrio);
    prio_ = kMaxRtPrio - 1 - rt_priority;
  }
  // A real-time thread (the kernel's rt_prio(p->prio)).
  bool rt() const { return prio_ < kMaxRtPrio; }
  State state() const { return state_; }
  bool sleeping() const { return state_ == State::kSleeping; }
  // A thread that mostly sleeps (ksoftirqd, fio's main and helper threads):
  // its wake-up sets need_resched on the running task (EEVDF places it with
  // positive lag), honoured at that task's next pre-emption point.
  void set_wakeup_preempts(bool on) { wakeup_preempts_ = on; }
  // Times it left a CPU: to sleep (nvcsw) or pre-empted (nivcsw), as
  // getrusage counts them (fio's ctx).
  uint64_t context_switches() const { return context_switches_; }
  // CPU time this thread used in user and kernel mode (its rusage; kernel
  // mode includes the interrupts that ran on top of it when the CPU counts
  // them so, MachineCosts::irq_time_in_task).
  int64_t user_ns() const { return stats_->mode_ns[0]; }
  int64_t sys_ns() const { return stats_->mode_ns[1] + stats_->mode_ns[2] + stats_->mode_ns[3]; }
  // Its CPU time and schedstat figures (owned by the Machine).
  const ThreadStats& stats() const { return *stats_; }

 private:
  friend class Cpu;
  ThreadStats* stats_;  // mode_ns is its rusage; run_delay etc. its schedstat
  // select_task_rq at a wake-up from SleepMigratable.
  int SelectWakeCpu() const;
  // Moves the thread's home to `cpu` (a migration).
  void MoveTo(int cpu);

  Machine& machine_;
  std::string name_;
  int cpu_;
  Cpu* on_cpu_;
  // The kernel's p->prio: 0..99 real-time (lower first), 100..139 CFS
  // (120 + nice).
  static constexpr int kMaxRtPrio = 100;
  static constexpr int kNiceZeroPrio = 120;
  int prio_;
  // Order of choice when the CPU picks its next thread: real-time by
  // priority, then a woken thread that pre-empts (ksoftirqd), then CFS by
  // nice.
  int PickRank() const { return rt() ? prio_ : wakeup_preempts_ ? kMaxRtPrio : prio_ + 1; }
  std::vector<int> cpus_allowed_;
  bool migrate_on_wake_ = false;  // asleep in SleepMigratable
  Cpu* iowait_on_ = nullptr;      // asleep in iowait, counted in that CPU's nr_iowait
  // Woken from SleepMigratable and waiting in a runqueue, not yet run.
  bool movable_ = false;
  // Suspended at the return to user space (Cpu::PreemptPointMigratable)
  // and waiting there, pre-empted.
  bool at_user_boundary_ = false;
  // Either, for a fair-class thread (the fair balancers never move a
  // real-time one): while queued it is counted in Machine::queued_movable,
  // and balancing (newidle or periodic) may move it.
  bool movable_while_queued() const { return !rt() && (movable_ || at_user_boundary_); }
  SimTime last_ran_ = 0;  // when it last left a CPU (task_hot's exec_start)
  uint64_t migrations_ = 0;
  // 1 while started, not done, fair-class and allowed several CPUs: it
  // counts in its CPU's homed_threads_ (the load balancer's weight).
  int homed_ = 0;
  State state_ = State::kNew;
  Task root_;
  std::coroutine_handle<> resume_;
  uint64_t context_switches_ = 0;
  int64_t stack_slot_ = -1;  // StackProfile slot, made on first use
  // Woken, it takes the CPU at the running task's next pre-emption point
  // (Cpu::PreemptPoint, or when it sleeps): ksoftirqd, whose wake-up sets
  // need_resched on the task that raised the softirq (EEVDF favours a
  // thread that mostly sleeps); honoured at voluntary pre-emption points.
  bool wakeup_preempts_ = false;
  // What was left of its time slice when a woken thread pre-empted it.
  int64_t slice_left_ns_ = 0;
  // EEVDF's sched_entity (MachineCosts::eevdf), in virtual ns (CPU time x
  // 1024 / weight) on its CPU's scale: vruntime, virtual deadline, and the
  // lag (V - vruntime, clamped) it had when it last left a runqueue.
  int64_t vruntime_ = 0;
  int64_t deadline_ = 0;
  int64_t vlag_ = 0;
  bool protect_slice_ = false;  // RUN_TO_PARITY: picked, slice not yet renewed
  bool placed_ = false;         // placed once (the first gets half a slice)
  // sched_prio_to_weight[nice + 20] (1024 at nice 0).
  int64_t Weight() const;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_THREAD_H_
