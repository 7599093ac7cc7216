// engine/sim/time.h
//
// Virtual time. SimTime is an absolute point in integer nanoseconds since the
// start of a simulation; durations are int64_t nanoseconds and carry `_ns` in
// their names. Integer time gives a total, platform-independent event order.
#ifndef BLKLAB_ENGINE_SIM_TIME_H_
#define BLKLAB_ENGINE_SIM_TIME_H_

#include <cstdint>
#include <limits>

namespace blklab::sim {

using SimTime = int64_t;  // ns since the simulation started

inline constexpr SimTime kSimTimeNever = std::numeric_limits<int64_t>::max();
inline constexpr int64_t kNsPerUs = 1000;
inline constexpr int64_t kNsPerMs = 1000 * 1000;
inline constexpr int64_t kNsPerSec = 1000 * 1000 * 1000;

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_TIME_H_
