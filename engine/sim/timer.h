// engine/sim/timer.h
//
// HrTimer models an hrtimer: armed for an absolute expiry, it raises a
// hardirq on its CPU when it fires, where `handler` runs (hrtimer callbacks
// run in hardirq context). Jiffies timers are HrTimers whose expiry the
// caller rounds to a jiffy (RoundUpToJiffy). Cancel and re-arm are lazy: a
// generation number makes stale expiry events harmless.
//
// Invariants: at most one pending expiry is live at a time.
// Thread-safety: thread-compatible.
// Cost: Start is one insertion into the simulator's bulk heap (timers are
//  armed long before they fire, or re-armed before they do: they would
//  deepen the heap the CPUs' own events sift through).
#ifndef BLKLAB_ENGINE_SIM_TIMER_H_
#define BLKLAB_ENGINE_SIM_TIMER_H_

#include <cstdint>

#include "engine/sim/cpu.h"
#include "engine/sim/simulator.h"

namespace blklab::sim {

class HrTimer final : public EventHandler {
 public:
  HrTimer() = default;
  void Init(Machine* machine, int cpu, IrqHandler* handler, uint64_t arg) {
    Untrack();
    machine_ = machine;
    cpu_ = cpu;
    handler_ = handler;
    arg_ = arg;
  }

  void Start(SimTime expires) {
    Untrack();
    ++gen_;
    pending_ = true;
    expires_ = expires;
    machine_->sim().ScheduleBulk(expires, this, 0, gen_);
    Track();
  }
  void Cancel() {
    Untrack();
    ++gen_;
    pending_ = false;
  }
  bool pending() const { return pending_; }
  SimTime expires() const { return expires_; }
  uint64_t arg() const { return arg_; }
  void set_cpu(int cpu) {
    Untrack();
    cpu_ = cpu;
    if (pending_) Track();
  }

  void OnEvent(uint32_t, uint64_t gen) override {
    if (gen != gen_ || !pending_) return;
    Untrack();
    pending_ = false;
    machine_->cpu(cpu_).RaiseHardirq(machine_->sim().Now(), handler_, arg_);
  }

 private:
  // The pending expiry joins or leaves its CPU's timer list (the cpuidle
  // governor's next timer), kept only when the CPU asks for it.
  void Track() {
    Cpu& cpu = machine_->cpu(cpu_);
    if (!cpu.tracks_timers()) return;
    if (id_ == 0) id_ = machine_->NewTimerId();
    tracked_ = true;
    cpu.TrackTimer(expires_, id_, true);
  }
  void Untrack() {
    if (!tracked_) return;
    tracked_ = false;
    machine_->cpu(cpu_).TrackTimer(expires_, id_, false);
  }

  Machine* machine_ = nullptr;
  int cpu_ = 0;
  uint64_t id_ = 0;       // unique per machine once tracked (0: never)
  bool tracked_ = false;  // the pending expiry is in cpu_'s timer list
  IrqHandler* handler_ = nullptr;
  uint64_t arg_ = 0;
  uint64_t gen_ = 0;
  bool pending_ = false;
  SimTime expires_ = 0;
};

// Rounds `t` up to the next jiffy boundary for a kernel with `hz` ticks/s.
inline SimTime RoundUpToJiffy(SimTime t, int hz) {
  const int64_t jiffy = 1000000000LL / hz;
  return (t + jiffy - 1) / jiffy * jiffy;
}

// When the timer wheel (kernel/time/timer.c, the non-cascading wheel of
// 4.8+) runs a timer_list timer armed at `now` for `expires`: the wheel
// level is chosen by the distance in jiffies from its clock (level n holds
// distances below 63 << 3n, with 8^n jiffies per bucket), and the bucket
// expires at the next multiple of its granularity strictly after `expires`
// (calc_index rounds up, so a timer never fires early): +1 jiffy under 63
// jiffies, then the next multiple of 8, 64, 512 (4.03 to 32 s ahead at
// HZ=1000), ... jiffies. Timers armed for nearby expiries far ahead
// therefore fire together.
inline SimTime TimerWheelExpiry(SimTime now, SimTime expires, int hz) {
  const int64_t jiffy = 1000000000LL / hz;
  const int64_t clk = now / jiffy;
  const int64_t exp = (expires + jiffy - 1) / jiffy;
  constexpr int kLvlClkShift = 3, kLvlSize = 64, kLvlDepth = 9;
  int lvl = 0;
  // LVL_START(lvl + 1) = (LVL_SIZE - 1) << (lvl * LVL_CLK_SHIFT).
  while (lvl + 1 < kLvlDepth && exp - clk >= (int64_t{kLvlSize - 1} << (lvl * kLvlClkShift))) ++lvl;
  const int shift = lvl * kLvlClkShift;
  return (((exp >> shift) + 1) << shift) * jiffy;
}

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_TIMER_H_
