#include "engine/sim/cpuidle_menu.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace blklab::sim {

namespace {

// which_bucket: by the distance to the next timer, iowait in the upper half.
int MenuBucket(int64_t next_timer_ns, int nr_iowait) {
  int bucket = nr_iowait > 0 ? 6 : 0;
  for (int64_t bound = 10 * kNsPerUs; bound <= 100 * kNsPerMs && next_timer_ns >= bound; bound *= 10) ++bucket;
  return bucket;
}

}  // namespace

int64_t MenuGovernor::NextTimerNs(const CpuTimerSet& timers, SimTime now) {
  // tick_nohz_get_sleep_length: the next hrtimer or timer-wheel expiry on
  // this CPU (not the tick, which an idle CPU stops).
  if (timers.empty()) return kSimTimeNever;
  return std::max<int64_t>(timers.begin()->first - now, 0);
}

uint32_t MenuGovernor::TypicalIntervalUs() const {
  // menu's get_typical_interval: the average of the recent intervals when
  // their spread is small (stddev <= 20 us, or under a sixth of the average
  // with at least 3/4 of them kept); otherwise drop the largest and try
  // again, down to 3/4 of the samples.
  uint64_t thresh = UINT32_MAX;
  for (;;) {
    uint64_t sum = 0;
    uint64_t max = 0;
    int divisor = 0;
    for (uint32_t v : intervals_us_) {
      if (v > thresh) continue;
      sum += v;
      ++divisor;
      max = std::max<uint64_t>(max, v);
    }
    if (max == 0) return UINT32_MAX;
    const uint64_t avg = sum / static_cast<uint64_t>(divisor);
    unsigned __int128 variance = 0;
    for (uint32_t v : intervals_us_) {
      if (v > thresh) continue;
      const __int128 diff = static_cast<__int128>(v) - static_cast<__int128>(avg);
      variance += static_cast<unsigned __int128>(diff * diff);
    }
    variance /= static_cast<unsigned>(divisor);
    const bool enough = divisor * 4 >= kIdleIntervals * 3;
    if ((static_cast<unsigned __int128>(avg) * avg > variance * 36 && enough) || variance <= 400) {
      return static_cast<uint32_t>(avg);
    }
    if (divisor * 4 <= kIdleIntervals * 3) return UINT32_MAX;
    thresh = max - 1;
  }
}

int MenuGovernor::Select(const std::vector<CpuidleState>& states, bool iowait_limit, const Inputs& in,
                         bool* stop_tick) {
  const int64_t tick_ns = in.tick_ns;
  // state i of the driver: 0 is POLL.
  auto residency = [&](int i) { return i == 0 ? int64_t{0} : states[static_cast<size_t>(i) - 1].target_residency_ns; };
  auto latency = [&](int i) { return i == 0 ? int64_t{0} : states[static_cast<size_t>(i) - 1].exit_latency_ns; };
  const int count = static_cast<int>(states.size()) + 1;
  // menu_select. The typical recent interval; over 15 us, bounded by the
  // next timer scaled by how early idle periods of that kind (the bucket,
  // by the timer's distance and, before 6.13, iowait) have ended.
  const int iowait_bucket = iowait_limit ? in.nr_iowait : 0;
  const uint32_t typical_us = TypicalIntervalUs();
  int64_t predicted_ns = typical_us == UINT32_MAX ? kSimTimeNever : int64_t{typical_us} * kNsPerUs;
  int64_t next_timer_ns = kSimTimeNever;
  int64_t delta_tick_ns = tick_ns / 2;
  if (predicted_ns > kResidencyThresholdNs) {
    next_timer_ns = NextTimerNs(*in.timers, in.cpu_now);
    const SimTime now = in.now;
    delta_tick_ns = std::min(next_timer_ns, (now / tick_ns + 1) * tick_ns - now);
    bucket_ = MenuBucket(next_timer_ns, iowait_bucket);
    if (next_timer_ns != kSimTimeNever) {
      const __int128 scaled = static_cast<__int128>(next_timer_ns) * correction_[bucket_];
      const int64_t timer_us = static_cast<int64_t>(
          (scaled + kResolution * kDecay * kNsPerUs / 2) / (kResolution * kDecay * kNsPerUs));
      predicted_ns = std::min(predicted_ns, timer_us * kNsPerUs);
    }
  } else {
    bucket_ = MenuBucket(kSimTimeNever, iowait_bucket);
  }
  next_timer_ns_ = next_timer_ns;
  // A timer due before the first state would pay off: POLL, tick kept.
  if (next_timer_ns < residency(1)) {
    *stop_tick = false;
    return 0;
  }
  // No PM QoS limit. With the tick already stopped (an interrupt woke the
  // CPU and nothing ran), a short prediction gives way to the next timer;
  // otherwise the exit latency is bounded by the prediction, divided by
  // 1 + 10 x nr_iowait before 6.13.
  int64_t latency_req_ns = kSimTimeNever;
  if (in.tick_stopped) {
    if (predicted_ns < tick_ns) predicted_ns = next_timer_ns;
  } else if (predicted_ns != kSimTimeNever) {
    latency_req_ns = iowait_limit ? predicted_ns / (1 + 10 * int64_t{in.nr_iowait}) : predicted_ns;
  }
  int idx = 0;
  for (int i = 1; i < count; ++i) {
    if (residency(i) > predicted_ns) {
      // A physical state rather than polling, unless its latency is too
      // high or a timer comes first.
      if (idx == 0 && latency(i) <= latency_req_ns && residency(i) <= next_timer_ns) {
        predicted_ns = residency(i);
        idx = i;
        break;
      }
      if (predicted_ns < tick_ns) break;
      if (!in.tick_stopped) {
        // A shallow state with the tick kept: the governor chooses again
        // at the tick.
        predicted_ns = residency(idx);
        break;
      }
      if (residency(idx) < tick_ns && residency(i) <= delta_tick_ns) idx = i;
      return idx;
    }
    if (latency(i) > latency_req_ns) break;
    idx = i;
  }
  // The tick stays for POLL and for an idle predicted under a tick, and
  // then the state must pay off before the tick comes.
  if ((idx == 0 || predicted_ns < tick_ns) && !in.tick_stopped) {
    *stop_tick = false;
    while (idx > 0 && residency(idx) > delta_tick_ns) --idx;
  }
  return idx;
}

void MenuGovernor::Reflect(int64_t measured_ns) {
  // menu_update: the bucket's correction factor decays toward
  // measured / next timer (never above one), and the interval joins the
  // history.
  measured_ns = std::clamp<int64_t>(measured_ns, 0, next_timer_ns_);
  int64_t factor = correction_[bucket_];
  factor -= factor / kDecay;
  if (next_timer_ns_ > 0 && measured_ns < kMaxInterestingNs) {
    factor += static_cast<int64_t>(static_cast<__int128>(kResolution) * measured_ns / next_timer_ns_);
  } else {
    factor += kResolution;
  }
  correction_[bucket_] = factor;
  intervals_us_[interval_next_] = static_cast<uint32_t>(std::min<int64_t>(measured_ns / kNsPerUs, UINT32_MAX));
  interval_next_ = (interval_next_ + 1) % kIdleIntervals;
}

}  // namespace blklab::sim
