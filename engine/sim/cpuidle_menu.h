// engine/sim/cpuidle_menu.h
//
// MenuGovernor models the menu cpuidle governor of one CPU as in 6.8
// (drivers/cpuidle/governors/menu.c: menu_select, menu_update): the ring of
// the last eight idle intervals, the per-bucket correction factors that
// scale the distance to the next timer, and the bucket and next timer of
// the idle period in progress. Select is menu_select (which state, and
// whether the tick stops); Reflect is menu_update for a finished period.
// What the CPU does around it (entering and leaving a state, POLL's time
// limit, the tick) is Cpu's, in cpuidle.cc, and described in cpu.h.
//
// The selection: the typical of the last eight idle intervals, bounded,
// when over 15 us, by the CPU's next HrTimer scaled by its bucket's
// correction factor; with the tick already stopped a prediction under a
// tick gives way to the next timer; otherwise the exit latency is at most
// the prediction, divided by 1 + 10 x the CPU's iowait tasks with
// menu_iowait_latency_limit (which also splits the buckets by iowait, as
// before 6.13); a physical state rather than POLL when its latency is
// acceptable and no timer comes first.
//
// Invariants: the correction factors stay within [0, kResolution x kDecay];
//  the ring index is in [0, kIdleIntervals); next_timer_ns() and the
//  bucket are those of the last Select.
// Thread-safety: thread-compatible; part of one Cpu.
// Cost: Select is O(states + intervals), with at most kIdleIntervals / 4
//  retries of the typical-interval pass; Reflect is O(1).
#ifndef BLKLAB_ENGINE_SIM_CPUIDLE_MENU_H_
#define BLKLAB_ENGINE_SIM_CPUIDLE_MENU_H_

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/sim/machine.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/time.h"

namespace blklab::sim {

// HrTimers armed on a CPU, by (expiry, timer id).
using CpuTimerSet = PooledSet<std::pair<SimTime, uint64_t>>;

class MenuGovernor {
 public:
  // The governor's constants (menu.c).
  static constexpr int kIdleIntervals = 8;
  static constexpr int64_t kResolution = 1024;
  static constexpr int64_t kDecay = 8;
  static constexpr int64_t kMaxInterestingNs = 50 * kNsPerMs;
  static constexpr int64_t kResidencyThresholdNs = 15 * kNsPerUs;  // 6.3+: no timer lookup below it

  // What menu_select reads of its CPU.
  struct Inputs {
    int64_t tick_ns = 0;               // the tick period (1 ms without a tick)
    int nr_iowait = 0;                 // rq->nr_iowait
    bool tick_stopped = false;         // stopped by an idle entry, not re-armed since
    SimTime now = 0;                   // the later of the CPU's and the simulator's clocks
    SimTime cpu_now = 0;               // the CPU's own clock (the next timer's distance)
    const CpuTimerSet* timers = nullptr;  // the CPU's armed HrTimers
  };

  // tick_nohz_get_sleep_length: time from `now` to the earliest of
  // `timers` (kSimTimeNever: none).
  static int64_t NextTimerNs(const CpuTimerSet& timers, SimTime now);

  // menu_select over `states` (state 0, POLL, implied): the state to enter,
  // and whether the tick stops (*stop_tick is left as it is when it does).
  // Sets the period's bucket and next timer.
  int Select(const std::vector<CpuidleState>& states, bool iowait_limit, const Inputs& in, bool* stop_tick);
  // menu_update for an idle period of `measured_ns` (to the wake-up).
  void Reflect(int64_t measured_ns);
  // The next timer the last Select saw (kSimTimeNever: none or not looked
  // up).
  int64_t next_timer_ns() const { return next_timer_ns_; }

 private:
  // get_typical_interval over the last kIdleIntervals idle periods, in
  // microseconds; UINT32_MAX when they give no confident prediction.
  uint32_t TypicalIntervalUs() const;

  uint32_t intervals_us_[kIdleIntervals] = {};
  int interval_next_ = 0;
  // Correction factors per bucket (1.0 = kResolution x kDecay).
  int64_t correction_[12] = {8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192};
  int bucket_ = 0;
  int64_t next_timer_ns_ = kSimTimeNever;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_CPUIDLE_MENU_H_
