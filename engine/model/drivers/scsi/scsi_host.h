// engine/model/drivers/scsi/scsi_host.h
//
// The SCSI mid-layer (drivers/scsi/scsi_lib.c, hosts.c; KERNEL_MODEL.md §2.6
// SCSI, §2.7 steps 3 and 6, §3.6), apart from any low-level driver:
//
//   * ScsiHost (struct Scsi_Host): one blk-mq tag set of `can_queue` tags
//     shared by all its LUNs (TAG_QUEUE_SHARED when there are several) and,
//     with host_tagset, by all `nr_hw_queues` hardware queues
//     (BLK_MQ_F_TAG_HCTX_SHARED: one Tags object for the host);
//   * ScsiDevice (struct scsi_device), the BlkMqDriver of one LUN's request
//     queue: scsi_mq_get_budget takes a bit of the LUN's budget_map
//     (queue_depth = cmd_per_lun); a failure counts sdev->restarts and, with
//     nothing of the LUN in flight, re-runs the queue after SCSI_QUEUE_DELAY
//     (3 ms) unless scsi_budget_idle_delay_run is off (RC5 patch 1);
//     scsi_queue_rq: host/target readiness (no host-level limit beyond the
//     tags: the starved list stays empty), blk_mq_start_request, the LLD's
//     ->queuecommand; ->complete (scsi_complete -> scsi_device_unbusy ->
//     scsi_end_request -> blk_mq_end_request) and the re-run rule: with
//     run_all_hw_queues_on_completion (<= 5.8) every hctx of the queue is
//     run, otherwise only when atomic_cmpxchg(&sdev->restarts, old, 0)
//     finds a recorded budget failure;
//   * ScsiLld (struct scsi_host_template): what a low-level driver gives
//     the mid-layer. It calls ScsiHost::Done (scsi_done) from its completion
//     context; the mid-layer then runs blk_mq_complete_request.
//
// Invariants: device_busy counts budgets held and never exceeds
//  queue_depth; every command the LLD accepts is done exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (scsi_queue_rq, scsi_complete); the
//  LLD charges its own.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"

namespace blklab::model {

class ScsiDevice;

// What a low-level driver gives the mid-layer.
class ScsiLld {
 public:
  virtual ~ScsiLld() = default;
  // ->queuecommand for `rq` of `sdev`, after blk_mq_start_request. The LLD
  // accepts it and later calls ScsiHost::Done.
  virtual void QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) = 0;
};

struct ScsiHostConfig {
  uint32_t can_queue = 4096;
  uint32_t nr_hw_queues = 1;
  bool host_tagset = true;
  uint32_t cmd_per_lun = 256;
};

class ScsiHost {
 public:
  // One LUN (request queue) per entry of `lun_names`; `host_name` names the
  // tag set (its lock is "<host_name>:tags->lock").
  ScsiHost(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
           const ScsiHostConfig& config, const QueueConfig& queue, ScsiLld* lld);
  ~ScsiHost();
  ScsiHost(const ScsiHost&) = delete;
  ScsiHost& operator=(const ScsiHost&) = delete;

  int nr_luns() const { return static_cast<int>(luns_.size()); }
  RequestQueue& queue(int lun);
  TagSet& tag_set() { return *set_; }
  Kernel& kernel() { return kernel_; }
  // sdev->restarts increments so far (budget failures), summed over LUNs.
  uint64_t budget_failures() const { return budget_failures_; }

  // scsi_done: the LLD finished `rq`; blk_mq_complete_request places the
  // completion (->complete = scsi_complete).
  void Done(sim::Cpu& cpu, Request* rq) { rq->q->CompleteRequest(cpu, rq); }

 private:
  friend class ScsiDevice;
  Kernel& kernel_;
  ScsiHostConfig config_;
  ScsiLld* lld_;
  std::unique_ptr<TagSet> set_;
  std::vector<std::unique_ptr<ScsiDevice>> luns_;
  uint64_t budget_failures_ = 0;
  sim::FnId fn_get_budget_, fn_put_budget_, fn_queue_rq_, fn_complete_, fn_end_request_;
};

// struct scsi_device: one LUN, its request queue and its budget.
class ScsiDevice final : public BlkMqDriver {
 public:
  ScsiDevice(ScsiHost* host, uint32_t queue_depth) : host_(host), queue_depth_(queue_depth) {}
  sim::Task QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last,
                    BlkStatus* status) override;                                     // scsi_queue_rq
  void Complete(sim::Cpu& cpu, Request* rq) override;                               // scsi_complete
  bool has_budget() const override { return true; }
  bool GetBudget(sim::Cpu& cpu, RequestQueue* q) override;  // scsi_mq_get_budget
  void PutBudget(sim::Cpu& cpu, RequestQueue* q) override;  // scsi_mq_put_budget

  RequestQueue& queue() { return *q_; }
  uint32_t device_busy() const { return device_busy_; }

 private:
  friend class ScsiHost;
  ScsiHost* host_;
  std::unique_ptr<RequestQueue> q_;
  uint32_t queue_depth_;
  uint32_t device_busy_ = 0;  // bits taken from budget_map
  uint32_t restarts_ = 0;     // sdev->restarts
  sim::CacheLine budget_line_;
  sim::CacheLine restarts_line_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_
