// engine/sim/thread_stats.h
//
// ThreadStats is one simulated thread's accounting: the CPU time it used by
// mode (its rusage) and the scheduler statistics of schedstat
// (/proc/<pid>/schedstat: time spent runnable in a runqueue before it ran,
// the number of times it was picked) with the longest such wait, which is
// what `perf sched latency` reports per task. The Machine owns them, so the
// figures outlive the Thread that wrote them.
//
// Invariants: run_delay_ns >= max_delay_ns >= 0; pcount counts the times the
//  thread was picked to run after waiting in a runqueue (its first run, each
//  wake-up, each return after a pre-emption).
// Thread-safety: plain values, written by the thread's CPU in one simulation.
// Cost: none beyond their fields.
#ifndef BLKLAB_ENGINE_SIM_THREAD_STATS_H_
#define BLKLAB_ENGINE_SIM_THREAD_STATS_H_

#include <cstdint>
#include <string>

#include "engine/sim/time.h"

namespace blklab::sim {

struct ThreadStats {
  std::string comm;             // the thread's name ("fio/job", "ksoftirqd/3", ...)
  bool rt = false;              // SCHED_FIFO when it last ran
  int64_t mode_ns[5] = {};      // CPU time by sim::Mode (user, sys, irq, softirq; idle unused)
  int64_t run_delay_ns = 0;     // schedstat's run_delay: runnable, waiting for its CPU
  int64_t max_delay_ns = 0;     // the longest single wait
  SimTime max_delay_at = 0;     // when that wait ended (it was picked)
  uint64_t pcount = 0;          // schedstat's pcount: times it was picked after a wait
  SimTime queued_at = -1;       // when it last entered a runqueue, -1 while not queued
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_THREAD_STATS_H_
