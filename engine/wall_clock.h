// engine/wall_clock.h
//
// WallClockNow: the wall-clock fields of fio's report header (timestamp,
// timestamp_ms, the ctime-style date) for the edges that print reports, the
// CLI and blklabd. SOURCE_DATE_EPOCH (the reproducible-builds convention),
// when set in the process's environment, pins them, so whole outputs compare
// byte for byte.
//
// The simulation never reads a clock: this is a separate target
// (blklab::wall_clock) that no engine library links.
// Thread-safety: thread-safe (localtime_r). Cost: one clock read.
#ifndef BLKLAB_ENGINE_WALL_CLOCK_H_
#define BLKLAB_ENGINE_WALL_CLOCK_H_

#include "engine/engine.h"

namespace blklab {

WallClock WallClockNow();
// The same fields for `unix_ms` milliseconds since the epoch (local time
// zone), e.g. a time a client asked the report to carry.
WallClock WallClockAt(int64_t unix_ms);

}  // namespace blklab

#endif  // BLKLAB_ENGINE_WALL_CLOCK_H_
