// engine/sim/sched_fair.h
//
// The fair class's per-CPU state under EEVDF (MachineCosts::eevdf; the
// kernel's struct cfs_rq, kernel/sched/fair.c, one flat cfs_rq per CPU):
// when the running thread's vruntime was last advanced (exec_start),
// V when the queue is empty (min_vruntime), and whether a wake-up's
// check_preempt_wakeup_fair chose the woken thread (need_resched). The
// entities themselves are the Cpu's running thread, if fair, and its queued
// fair threads; the pick, vruntime and lag, the wake-up CPU selection, the
// newidle and periodic balancing and the tick are Cpu members defined in
// sched_fair.cc. FairSums is the entities' weighted vruntime sums that
// avg_vruntime and entity_eligible read. EEVDF as modelled is described in
// cpu.h. Not modelled: cgroup hierarchies (one flat cfs_rq per CPU), custom
// slices (PREEMPT_SHORT, 6.12), delayed dequeue (6.12), and irq time is not
// taken out of the running thread's vruntime.
//
// Invariants: exec_start never exceeds its Cpu's clock; resched is cleared
//  whenever the Cpu picks a thread or its running thread sleeps or is
//  reconsidered at a pre-emption point.
// Thread-safety: thread-compatible; part of one Cpu.
// Cost: plain fields.
#ifndef BLKLAB_ENGINE_SIM_SCHED_FAIR_H_
#define BLKLAB_ENGINE_SIM_SCHED_FAIR_H_

#include <cstdint>

#include "engine/sim/time.h"

namespace blklab::sim {

struct CfsRq {
  SimTime exec_start = 0;    // when the running thread's vruntime was last advanced
  int64_t min_vruntime = 0;  // V when the queue is empty
  // check_preempt_wakeup_fair chose a woken thread over the running one
  // (EEVDF): need_resched until the running thread gives the CPU up.
  bool resched = false;
};

// The CFS entities (the running one if fair, the queued fair ones):
// sum((v_i - base) * w_i) and sum(w_i), base a member's vruntime; load 0
// when there are none.
struct FairSums {
  int64_t base = 0;
  __int128 sum = 0;
  int64_t load = 0;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_SCHED_FAIR_H_
