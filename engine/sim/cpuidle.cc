#include "engine/sim/cpu.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace blklab::sim {

void Cpu::BeginIowait() {
  BLKLAB_CHECK(current_thread_ != nullptr && current_thread_->iowait_on_ == nullptr);
  current_thread_->iowait_on_ = this;
  ++nr_iowait_;
}

void Cpu::TrackTimer(SimTime expires, uint64_t id, bool add) {
  if (add) {
    timers_.insert({expires, id});
  } else {
    timers_.erase({expires, id});
  }
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
  menu_.Reflect(menu_.next_timer_ns());
  // The selection sees this moment's timers; the poll limit and the tick
  // count from it as well (both take the later of the two clocks anyway).
  const SimTime saved_now = now_;
  now_ = std::max(now_, machine_.sim().Now());
  SelectAndEnterIdleState();
  now_ = saved_now;
}

int Cpu::SelectIdleState(bool* stop_tick) {
  MenuGovernor::Inputs in;
  in.tick_ns = machine_.costs().tick_period_ns > 0 ? machine_.costs().tick_period_ns : kNsPerMs;
  in.nr_iowait = nr_iowait_;
  in.tick_stopped = tick_stopped_;
  in.now = std::max(now_, machine_.sim().Now());
  in.cpu_now = now_;
  in.timers = &timers_;
  return menu_.Select(machine_.costs().cpuidle_states, machine_.costs().menu_iowait_latency_limit, in, stop_tick);
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
  if (woken_by_tick_ && menu_.next_timer_ns() > period) {
    measured_ns = 9 * MenuGovernor::kMaxInterestingNs / 10;
  } else if (measured_ns < exit_ns) {
    measured_ns = (measured_ns + exit_ns) / 2;
  }
  menu_.Reflect(measured_ns);
  cpuidle_exit_wait_ns_ += exit_ns;
  cpuidle_running_at_ = at + exit_ns;
  return cpuidle_running_at_;
}

}  // namespace blklab::sim
