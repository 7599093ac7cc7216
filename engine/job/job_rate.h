// engine/job/job_rate.h
//
// JobRateState is what paces one JobThread besides its queue depth (fio's
// io_u.c rate_ddir / usec_sleep, flow.c, backend.c handle_thinktime): the
// rate= / rate_iops= slots per direction and their random stream
// (rate_process=poisson), the count towards the next thinktime, the job's
// count in its flow, and the generation of its timed wake-ups. It is plain
// data: the logic is JobThread's (job_rate.cc).
//
// Invariants: next[d] is 0 until direction d first issues under a rate,
//  then the earliest time its next I/O may issue; only the timed wake-up of
//  generation wake_gen wakes the thread.
// Thread-safety: thread-compatible; part of one JobThread.
// Cost: a few words; nothing allocated.
#ifndef BLKLAB_ENGINE_JOB_JOB_RATE_H_
#define BLKLAB_ENGINE_JOB_JOB_RATE_H_

#include <cstdint>

#include "engine/sim/rng.h"
#include "engine/sim/time.h"

namespace blklab::job {

struct JobRateState {
  bool has_rate = false;              // some direction has rate= or rate_iops=
  sim::SimTime next[3] = {0, 0, 0};  // earliest issue time per direction
  sim::RngStream rng;                 // rate_process=poisson's gaps
  uint64_t think_count = 0;           // IOs since the last think time
  uint64_t wake_gen = 0;              // the pending timed wake-up's generation
  uint64_t flow_count = 0;            // td->flow_counter: this job's I/Os let through its flow
  bool flow_held = false;             // flow_threshold_exceeded holds the job back
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_JOB_RATE_H_
