// engine/model/kernel.h
//
// Kernel holds what the simulated kernel shares across devices: the cost
// table, the host spec's knobs (one per kernel patch or era switch) and HZ, the interned profile names of the
// functions the block layer charges, the kblockd workqueue, and event
// counters (timestamps read, queue runs, IPIs, tag sleeps ...). It is not a
// god object: per-device state lives in RequestQueue, TagSet and drivers.
//
// Thread-safety: thread-compatible; one per simulation.
// Cost: Ktime is one Charge and one counter increment.
#ifndef BLKLAB_ENGINE_MODEL_KERNEL_H_
#define BLKLAB_ENGINE_MODEL_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"

#include "engine/host/cost_table.h"
#include "engine/host/host_spec.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/timer.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

class BlkCpuDone;

#define BLKLAB_KERNEL_COUNTERS(X) \
  X(ktime_get_ns)                 \
  X(submit_bio)                   \
  X(direct_issue)                 \
  X(queue_rq)                     \
  X(queue_rq_busy)                \
  X(run_hw_queue)                 \
  X(run_hw_queue_async)           \
  X(run_hw_queue_delayed)         \
  X(dispatch_list_insert)         \
  X(dispatch_rq_list)             \
  X(sched_dispatch_eagain)        \
  X(sw_queue_insert)              \
  X(sched_restart)                \
  X(tag_sleep)                    \
  X(tag_wakeup)                   \
  X(plug_flush)                   \
  X(plug_merge)                   \
  X(sched_merge)                  \
  X(sw_queue_merge)               \
  X(timeout_work)                 \
  X(ipi)                          \
  X(block_softirq)                \
  X(hardirq)                      \
  X(budget_failure)               \
  X(dd_bucket_insert)             \
  X(kyber_throttled)              \
  X(kyber_resize)                 \
  X(bfq_expire_too_idle)          \
  X(bfq_expire_budget_timeout)    \
  X(bfq_expire_budget_exhausted)  \
  X(bfq_expire_no_more_requests)  \
  X(bfq_expire_preempted)         \
  X(bfq_idle_timer_armed)         \
  X(bfq_idle_timer_fired)         \
  X(bfq_injected)                 \
  X(bfq_wr_raised)                \
  X(bfq_stable_merged)            \
  X(rq_timed_out)                 \
  X(scsi_eh_abort)                \
  X(scsi_eh_retry)                \
  X(requests_completed)           \
  X(bio_split)

enum class Counter : int {
#define BLKLAB_COUNTER_ENUM(name) k_##name,
  BLKLAB_KERNEL_COUNTERS(BLKLAB_COUNTER_ENUM)
#undef BLKLAB_COUNTER_ENUM
      kNumCounters
};

const char* CounterName(Counter c);

class Kernel {
 public:
  // `knobs` are the host spec's own (host::Knobs, every field read by some
  // model code; engine/topology refuses the ones no code reads), `hz` its
  // CONFIG_HZ.
  Kernel(sim::Machine& machine, const host::CostTable& costs, const host::Knobs& knobs, int hz = 1000);
  ~Kernel();
  Kernel(const Kernel&) = delete;
  Kernel& operator=(const Kernel&) = delete;

  sim::Machine& machine() { return machine_; }
  const host::CostTable& costs() const { return costs_; }
  const host::Knobs& knobs() const { return knobs_; }
  int hz() const { return hz_; }
  int64_t jiffy_ns() const { return sim::kNsPerSec / hz_; }
  // When a timer_list armed at `now` for `expires` runs: at its timer
  // wheel bucket (sim::TimerWheelExpiry) with timer_wheel_granularity, else
  // at `expires` itself.
  sim::SimTime TimerListRuns(sim::SimTime now, sim::SimTime expires) const {
    return knobs().timer_wheel_granularity ? sim::TimerWheelExpiry(now, expires, hz_) : expires;
  }
  sim::WorkQueue& kblockd() { return kblockd_; }
  // The per-CPU completion lists and BLOCK_SOFTIRQ (blk_softirq.h).
  BlkCpuDone& cpu_done() { return *cpu_done_; }

  // ktime_get_ns(): charges one timestamp read and returns the time.
  sim::SimTime Ktime(sim::Cpu& cpu) {
    cpu.Charge(fn.ktime_get_ns, costs_.ktime_get_ns);
    Count(Counter::k_ktime_get_ns);
    return cpu.now();
  }

  void Count(Counter c, uint64_t n = 1) { counters_[static_cast<int>(c)] += n; }
  // A path the model cannot follow (a driver's ->timeout it does not model,
  // an I/O error): the run ends with the first such status at the end of
  // the current slice of virtual time, instead of producing a wrong result.
  void Fail(absl::Status status) {
    if (failure_.ok()) failure_ = std::move(status);
  }
  const absl::Status& failure() const { return failure_; }
  uint64_t counter(Counter c) const { return counters_[static_cast<int>(c)]; }

  sim::SpinLockCosts lock_costs() const {
    return sim::SpinLockCosts{costs_.spin_lock_uncontended, costs_.lock_handoff_permille};
  }
  sim::FnId Intern(const std::string& name) { return machine_.functions().Intern(name); }

  // A plain read / store of a shared cacheline by `cpu`: line_read_hit when
  // the line is local, else the transfer (sim/cacheline.h).
  int64_t ReadLine(sim::Cpu& cpu, sim::CacheLine& line) {
    return line.Read(machine_, cpu.id(), costs_.line_read_hit);
  }
  int64_t WriteLine(sim::Cpu& cpu, sim::CacheLine& line) {
    return line.Write(machine_, cpu.id(), costs_.line_read_hit);
  }
  // cpupri_set(&rq->rd->cpupri, cpu, newpri), called when the highest
  // real-time priority on `cpu`'s runqueue changes: the first RT task
  // enqueued (a threaded interrupt handler woken), the last one dequeued
  // (it sleeps). The CPU's bit moves between two priority vectors of the
  // root domain that every CPU writes: each vector's count (an atomic) and
  // mask (a cpumask bit), and the CPU's slot in cpu_to_pri (16 CPUs per
  // line). Charges the five writes to `cpupri_set`; the function's own
  // instructions are a few ns and not priced apart.
  void CpupriSet(sim::Cpu& cpu);

  // A run of accesses by `cpu` priced with overlapping misses (AccessCost).
  sim::AccessCost Access(sim::Cpu& cpu) const { return sim::AccessCost(machine_, cpu.id(), costs_.line_read_hit); }

  // Profile names charged by the block layer.
  struct Fns {
    sim::FnId ktime_get_ns, submit_bio_noacct, blk_mq_submit_bio, bio_alloc_bioset,
        bio_associate_blkg, blk_cgroup_bio_start, blk_throtl_bio, blk_attempt_plug_merge,
        blk_mq_attempt_bio_merge, sbitmap_queue_get, sbitmap_queue_clear, blk_account_io_start,
        blk_account_io_done, blk_add_rq_to_plug, blk_mq_flush_plug_list, blk_mq_run_hw_queue,
        sbitmap_any_bit_set, blk_mq_dispatch_rq_list, blk_mq_end_request,
        blk_mq_complete_request, blk_mq_raise_softirq, smp_call_function_single_async,
        generic_smp_call_function_single_interrupt, blk_done_softirq, try_to_wake_up,
        percpu_ref_get, rcu_read_lock, io_schedule, raw_spin_lock, raw_spin_lock_irqsave,
        native_queued_spin_lock_slowpath, blk_mq_sched_restart, blk_mq_get_tag,
        blk_mq_insert_request, blk_mq_try_issue_directly, hrtimer_start,
        hrtimer_interrupt, irq_exit_rcu, blk_hctx_poll, blk_mq_end_request_batch, cpupri_set,
        // sbitmap_for_each_set's callbacks over ctx_map (the software queues' splice and dequeue).
        flush_busy_ctx, dispatch_rq_from_ctx,
        // Direct I/O to a regular file (job::FileDio).
        down_read, up_read, iomap_dio_rw,
        // Frames only (StackFrame): functions that are callers, charged nothing of their own.
        blk_mq_run_hw_queues, blk_mq_run_work_fn, blk_mq_sched_dispatch_requests, blk_mq_do_dispatch_sched,
        blk_mq_do_dispatch_ctx;
  } fn;

 private:
  sim::Machine& machine_;
  const host::CostTable& costs_;
  host::Knobs knobs_;
  int hz_;
  sim::WorkQueue kblockd_;
  std::unique_ptr<BlkCpuDone> cpu_done_;
  // The root domain's cpupri: the CFS (CPUPRI_NORMAL) and one real-time
  // vector, count and mask lines; cpu_to_pri, 16 CPUs per line.
  sim::CacheLine cpupri_count_line_[2];
  sim::CacheLine cpupri_mask_line_[2];
  std::vector<sim::CacheLine> cpupri_cpu_to_pri_lines_;
  uint64_t counters_[static_cast<int>(Counter::kNumCounters)] = {};
  absl::Status failure_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_KERNEL_H_
