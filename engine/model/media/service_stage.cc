#include "engine/model/media/service_stage.h"

#include <algorithm>

namespace blklab::model {

ServiceStage::ServiceStage(const ServiceStageSpec& spec) : spec_(spec), unit_free_(spec.parallelism, 0) {}

sim::SimTime ServiceStage::Admit(sim::SimTime now, ReqOp op, uint32_t bytes) {
  sim::SimTime t = now;
  if (spec_.max_iops > 0) {
    t = std::max(t, iops_next_free_);
    iops_next_free_ = t + sim::kNsPerSec / spec_.max_iops;
  }
  if (spec_.max_bytes_per_sec > 0) {
    t = std::max(t, bw_next_free_);
    bw_next_free_ = t + static_cast<int64_t>(static_cast<__int128>(bytes) * sim::kNsPerSec /
                                             spec_.max_bytes_per_sec);
  }
  const int64_t service = op == ReqOp::kRead ? spec_.read_latency_ns : spec_.write_latency_ns;
  if (!unit_free_.empty()) {
    auto unit = std::min_element(unit_free_.begin(), unit_free_.end());
    t = std::max(t, *unit);
    *unit = t + service;
  }
  return t + service;
}

}  // namespace blklab::model
