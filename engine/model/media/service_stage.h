// engine/model/media/service_stage.h
//
// ServiceStage is one stage of a device's timing pipeline (docs/kernel-model.md
// §3.7: "device model = latency distribution + IOPS ceiling per drive +
// internal parallelism"): an HBA's firmware, one of its backing drives, an
// NVMe controller's media. A command admitted at time t
//
//   1. waits for the stage's IOPS ceiling: commands leave the gate at least
//      1 s / max_iops apart, in admission order (a token per command);
//   2. waits for the bandwidth ceiling: the stage moves at most
//      max_bytes_per_sec, in admission order;
//   3. waits for one of `parallelism` internal units to be free (0: as many
//      as there are commands), taking the one that frees first; the unit is
//      busy for the command's service time;
//   4. takes its service time: latency_ns[direction].
//
// Admit returns when the command leaves the stage; stages chain by
// admitting the result into the next one. Nothing here is random: a
// latency distribution with spread (seeded) is a later addition.
//
// Invariants: times returned are >= the admission time; each gate's "next
//  free" time never moves backwards.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: O(parallelism) per command (a scan of the units' free times).
#ifndef BLKLAB_ENGINE_MODEL_MEDIA_SERVICE_STAGE_H_
#define BLKLAB_ENGINE_MODEL_MEDIA_SERVICE_STAGE_H_

#include <cstdint>
#include <vector>

#include "engine/model/request.h"
#include "engine/sim/time.h"

namespace blklab::model {

struct ServiceStageSpec {
  int64_t read_latency_ns = 0;
  int64_t write_latency_ns = 0;   // writes and discards
  int64_t max_iops = 0;           // 0: no ceiling
  int64_t max_bytes_per_sec = 0;  // 0: no ceiling
  uint32_t parallelism = 0;       // 0: unlimited
};

class ServiceStage {
 public:
  explicit ServiceStage(const ServiceStageSpec& spec = {});

  // When a command of `bytes` in direction `op` admitted at `now` leaves
  // the stage.
  sim::SimTime Admit(sim::SimTime now, ReqOp op, uint32_t bytes);

  const ServiceStageSpec& spec() const { return spec_; }

 private:
  ServiceStageSpec spec_;
  sim::SimTime iops_next_free_ = 0;
  sim::SimTime bw_next_free_ = 0;
  std::vector<sim::SimTime> unit_free_;  // per internal unit
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_MEDIA_SERVICE_STAGE_H_
