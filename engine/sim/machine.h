// engine/sim/machine.h
//
// Machine is the simulated computer the kernel model runs on: the Simulator
// (clock and events), the logical CPUs with their topology (SMT core, LLC/CCX,
// die, socket), the registry of function names that CPU time is charged to
// (with the composite rows the reports spread as perf would: a context switch
// over __schedule and its callees, a wake-up over try_to_wake_up and its),
// and the cacheline-transfer prices that follow from the topology
// (docs/kernel-model.md §1.1, §1.3).
//
// Invariants: CPU ids are 0..num_cpus()-1; function ids are dense and
//  assigned in interning order, so they are the same on every run of the same
//  topology (the registry never iterates a hash map).
// Thread-safety: thread-compatible; owned by one simulation run.
// Cost: TransferCost is a few comparisons.
#ifndef BLKLAB_ENGINE_SIM_MACHINE_H_
#define BLKLAB_ENGINE_SIM_MACHINE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "engine/sim/simulator.h"
#include "engine/sim/stack_profile.h"
#include "engine/sim/thread_stats.h"
#include "engine/sim/time.h"

namespace blklab::sim {

class Cpu;
class SpinLock;

using FnId = uint32_t;

// Names of functions CPU time is charged to. Names starting with "fio:" (or
// any name registered with user=true) are user space; the rest are kernel.
class FunctionRegistry {
 public:
  FnId Intern(const std::string& name, bool user = false);
  const std::string& name(FnId id) const { return names_[id]; }
  bool is_user(FnId id) const { return user_[id]; }
  size_t size() const { return names_.size(); }

  // A function charged as one row whose time perf would spread over the
  // functions it calls (a context switch: __schedule, switch_mm_irqs_off,
  // __switch_to, the fair class's accounting). Charging is unchanged; the
  // reports (profile, intervals, folded stacks) split the whole's time over
  // `parts` by weight. The first part is `whole` itself and takes the
  // rounding remainder. REQUIRES: weights > 0; `whole` has no parts yet.
  struct Part {
    FnId fn;
    int64_t weight;
  };
  void SetParts(FnId whole, std::vector<Part> parts);
  // The parts of `fn`: empty when its time is reported as its own.
  const std::vector<Part>& parts(FnId fn) const {
    static const std::vector<Part> kNone;
    return fn < parts_.size() ? parts_[fn] : kNone;
  }
  // Calls emit(part_fn, part_ns) for every part of `ns` charged to `fn`
  // (once, with `fn` and `ns`, when it has none). The parts sum to `ns`.
  template <typename Emit>
  void SplitTime(FnId fn, int64_t ns, Emit&& emit) const {
    const std::vector<Part>& ps = parts(fn);
    if (ps.empty()) {
      emit(fn, ns);
      return;
    }
    const int64_t total = parts_weight_[fn];
    int64_t rest = ns;
    for (size_t i = 1; i < ps.size(); ++i) {
      const int64_t part = ns / total * ps[i].weight + ns % total * ps[i].weight / total;
      rest -= part;
      emit(ps[i].fn, part);
    }
    emit(ps[0].fn, rest);
  }

 private:
  std::vector<std::string> names_;
  std::vector<bool> user_;
  std::vector<std::vector<Part>> parts_;  // by FnId; empty: not split
  std::vector<int64_t> parts_weight_;     // by FnId: the parts' weights summed
  absl::flat_hash_map<std::string, FnId> index_;  // lookup only, never iterated
};

struct CpuPlacement {
  int core = 0;    // physical core (SMT siblings share it)
  int llc = 0;     // last-level cache group (CCX)
  int die = 0;     // die / CCD
  int socket = 0;  // package
  int node = 0;    // NUMA node
};

// One hardware idle state of a cpuidle driver (drivers/cpuidle: struct
// cpuidle_state), shallowest first; state 0, POLL, is implied.
struct CpuidleState {
  int64_t exit_latency_ns = 0;       // from the wake-up to the CPU running again
  int64_t target_residency_ns = 0;   // the shortest idle worth entering it for
};

// Prices the Machine itself applies (the rest of the cost table is applied
// by the kernel model).
struct MachineCosts {
  int64_t same_core_ns = 2;  // SMT sibling: the line is in the shared L1/L2
  int64_t llc_ns = 40;
  int64_t die_ns = 100;
  int64_t socket_ns = 180;
  int64_t context_switch_ns = 1070;  // charged to __schedule when a CPU switches threads
  // Charged to __schedule when a thread sleeps and its CPU goes idle, and
  // when it wakes on an idle CPU that ran nothing else meanwhile: the same
  // switch without the mm switch (the idle task borrows the mm) and the FPU
  // restore (the registers still hold the thread's state).
  int64_t context_switch_idle_ns = 771;
  int64_t sched_slice_ns = 3000000;  // time slice when threads share a CPU (CFS-like)
  int64_t tick_period_ns = 0;        // the scheduler tick on busy CPUs (1e9 / HZ); 0: none
  // sysctl_sched_migration_cost (kernel/sched/fair.c): a thread that ran
  // more recently than this is cache hot, and load balancing leaves it.
  int64_t sched_migration_cost_ns = 500000;
  // SMT execution sharing: work on a CPU whose sibling runs work takes
  // smt_busy_permille/1000 as long; whose sibling spins on a lock,
  // smt_spin_permille/1000. 1000: no sharing.
  int64_t smt_busy_permille = 1000;
  int64_t smt_spin_permille = 1000;
  int64_t tick_ns = 0;               // CPU time of one tick interrupt
  // CONFIG_PREEMPT (full kernel pre-emption): a woken thread that pre-empts
  // (ksoftirqd, fio's main and helper threads) takes the CPU at the running
  // task's next Sync outside spinlocks (preempt_enable, an interrupt's
  // return), not only at its voluntary pre-emption points
  // (PREEMPT_VOLUNTARY, false).
  bool full_preemption = false;
  // EEVDF (6.6+, kernel/sched/fair.c) decides among CFS threads instead of
  // the CFS-like rules: each thread has a vruntime (its CPU time weighted by
  // nice), a lag against its CPU's weighted average V, kept while it sleeps
  // or moves and applied when it is placed again (PLACE_LAG), and a virtual
  // deadline one slice ahead (half a slice for a new thread). A CPU picks
  // the eligible thread (vruntime <= V) with the earliest deadline; the
  // running thread keeps the CPU while it is eligible and its slice since it
  // was picked is not used up (RUN_TO_PARITY); a wake-up pre-empts only when
  // that pick would choose the woken thread (check_preempt_wakeup_fair), at
  // the running task's next pre-emption point as before. False: a woken
  // lower-nice thread, or a mostly-sleeping one (Thread::set_wakeup_preempts),
  // always pre-empts there, and equal ones take turns in slices (CFS before
  // 6.6, whose sleeper placement let a woken sleeper pre-empt).
  bool eevdf = false;
  // !CONFIG_IRQ_TIME_ACCOUNTING: hardirq and softirq time taken on top of a
  // task counts as that task's system time in its rusage (tick accounting
  // charges an interrupted tick to the task; sum_exec_runtime includes the
  // interrupt). The per-function profile and the CPU modes are unchanged.
  bool irq_time_in_task = false;
  // cpuidle with the menu governor: the hardware idle states (none: the CPU
  // polls when idle, as with idle=poll, and a wake-up runs at once). See
  // Cpu's header comment.
  std::vector<CpuidleState> cpuidle_states;
  // menu's performance_multiplier (until 38f83090f515, 6.13): a CPU with
  // tasks asleep in iowait takes only states whose exit latency is under
  // the predicted idle / (1 + 10 x those tasks); false: under the
  // predicted idle.
  bool menu_iowait_latency_limit = false;
};

class Machine {
 public:
  Machine(std::vector<CpuPlacement> placement, MachineCosts costs);
  ~Machine();
  Machine(const Machine&) = delete;
  Machine& operator=(const Machine&) = delete;

  Simulator& sim() { return sim_; }
  const Simulator& sim() const { return sim_; }
  FunctionRegistry& functions() { return functions_; }
  const FunctionRegistry& functions() const { return functions_; }

  int num_cpus() const { return static_cast<int>(cpus_.size()); }
  Cpu& cpu(int id) { return *cpus_[id]; }
  // A fresh id for an HrTimer on a CPU's timer list (1, 2, ...).
  uint64_t NewTimerId() { return ++timer_ids_; }
  const Cpu& cpu(int id) const { return *cpus_[id]; }
  const CpuPlacement& placement(int id) const { return placement_[id]; }
  // CPUs sharing `id`'s last-level cache (the LLC sched domain's weight).
  int llc_weight(int id) const { return llc_weight_[id]; }
  const MachineCosts& costs() const { return costs_; }

  // Call stacks (StackProfile): off unless enabled, before the run starts.
  void EnableStacks();
  StackProfile* stacks() { return stacks_.get(); }
  const StackProfile* stacks() const { return stacks_.get(); }

  // Contexts run ahead inline only up to the horizon; past it they yield so
  // the driver of the simulation regains control (cancellation, snapshots).
  void set_horizon(SimTime t) { horizon_ = t; }
  SimTime horizon() const { return horizon_; }

  // Cacheline transfers caused by each CPU's accesses (CacheLine counts them).
  void NoteTransfer(int cpu) const { ++transfers_by_cpu_[cpu]; }
  uint64_t transfers(int cpu) const { return transfers_by_cpu_[cpu]; }

  // Threads waiting in a runqueue that balancing may move
  // (Thread::movable_while_queued): newidle balancing looks only when there
  // are some. Kept by Cpu::QueueThread and Cpu::DequeueThread.
  int& queued_movable() { return queued_movable_; }

  // Every Thread gets its ThreadStats here (in creation order, so the same
  // on every run), where they outlive it.
  ThreadStats* NewThreadStats(std::string comm) {
    thread_stats_.push_back(ThreadStats{.comm = std::move(comm)});
    return &thread_stats_.back();
  }
  const std::deque<ThreadStats>& thread_stats() const { return thread_stats_; }

  // Every SpinLock of the simulation registers itself (lockstat's list).
  void RegisterLock(SpinLock* lock) { locks_.push_back(lock); }
  const std::vector<SpinLock*>& locks() const { return locks_; }

  // Whether two CPUs share a last-level cache (one CCX).
  bool SameLlc(int a, int b) const { return placement_[a].llc == placement_[b].llc; }

  // Price of moving a cacheline last written on `from` to `to`.
  int64_t TransferCost(int from, int to) const {
    if (from == to) return 0;
    const CpuPlacement& a = placement_[from];
    const CpuPlacement& b = placement_[to];
    if (a.core == b.core) return costs_.same_core_ns;
    if (a.llc == b.llc) return costs_.llc_ns;
    if (a.socket != b.socket) return costs_.socket_ns;
    return costs_.die_ns;
  }

 private:
  Simulator sim_;
  uint64_t timer_ids_ = 0;
  FunctionRegistry functions_;
  std::vector<CpuPlacement> placement_;
  std::vector<int> llc_weight_;  // by CPU, from placement_
  MachineCosts costs_;
  // Before cpus_: coroutines the CPUs own may close StackFrames when they
  // are destroyed.
  std::unique_ptr<StackProfile> stacks_;
  std::vector<std::unique_ptr<Cpu>> cpus_;
  std::vector<SpinLock*> locks_;
  std::deque<ThreadStats> thread_stats_;  // deque: stable addresses
  mutable std::vector<uint64_t> transfers_by_cpu_;
  SimTime horizon_ = kSimTimeNever;
  int queued_movable_ = 0;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_MACHINE_H_
