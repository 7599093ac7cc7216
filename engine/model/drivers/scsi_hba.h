// engine/model/drivers/scsi_hba.h
//
// ScsiHba models a RAID/HBA "firmware" SCSI host (megaraid_sas, mpi3mr) with
// the SCSI mid-layer in front of it (drivers/scsi/scsi_lib.c; KERNEL_MODEL.md
// §2.6 SCSI, §2.7 steps 3 and 6, §3.6, §3.7 "HBA"):
//
//   * one Scsi_Host whose blk-mq tag set of `can_queue` tags is shared by all
//     its LUNs (TAG_QUEUE_SHARED when there are several) and, with
//     host_tagset, by all `nr_hw_queues` hardware queues
//     (BLK_MQ_F_TAG_HCTX_SHARED: one Tags object for the host);
//   * one ScsiDevice (sdev) per LUN with its own request queue and budget:
//     scsi_mq_get_budget takes a bit of the LUN's budget_map (queue_depth =
//     cmd_per_lun); a failure counts sdev->restarts and, with nothing of the
//     LUN in flight, re-runs the queue after SCSI_QUEUE_DELAY (3 ms);
//   * scsi_queue_rq: host/target readiness (no host-level limit beyond the
//     tags: the starved list stays empty), blk_mq_start_request, the LLD's
//     queuecommand;
//   * the firmware: `firmware_nsec` per command at most `max_iops` per
//     second, then RAID-0 over `drives` backing drives (stripe by sector,
//     each drive a `drive_latency_nsec` pipeline of at most `drive_iops`);
//   * completion: the reply queue of the submitting CPU raises a hardirq
//     that drains every reply posted so far (one interrupt per batch),
//     scsi_done -> blk_mq_complete_request -> scsi_complete ->
//     scsi_device_unbusy -> scsi_end_request -> blk_mq_end_request, then the
//     queue re-run rule: with run_all_hw_queues_on_completion (<= 5.8) every
//     hctx of the queue is run (blk_mq_run_hw_queues, each checking
//     blk_mq_hctx_has_pending); otherwise only when
//     atomic_cmpxchg(&sdev->restarts, old, 0) finds a recorded budget failure.
//
// Invariants: every command accepted by queue_rq completes exactly once;
//  device_busy counts budgets held and never exceeds queue_depth.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (scsi_queue_rq, hba_queuecommand,
//  hba_reply_per_cmd, scsi_complete, hardirq_entry_exit); one simulator
//  event per command plus one per reply interrupt.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"

namespace blklab::model {

struct ScsiHbaConfig {
  int lld = 0;  // 0 = megaraid_sas, 1 = mpi3mr (profile names only)
  uint32_t can_queue = 4096;
  uint32_t nr_hw_queues = 1;
  bool host_tagset = true;
  uint32_t cmd_per_lun = 256;
  int64_t firmware_nsec = 2000;
  int64_t max_iops = 0;
  uint32_t drives = 1;
  int64_t drive_iops = 0;
  int64_t drive_latency_nsec = 80000;
  uint64_t stripe_bytes = 64 * 1024;
};

class ScsiHba {
 public:
  // One LUN (request queue) per entry of `lun_names`; `host_name` names the
  // tag set (its lock is "<host_name>:tags->lock").
  ScsiHba(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
          const ScsiHbaConfig& config, const QueueConfig& queue);
  ScsiHba(const ScsiHba&) = delete;
  ScsiHba& operator=(const ScsiHba&) = delete;

  int nr_luns() const { return static_cast<int>(luns_.size()); }
  RequestQueue& queue(int lun) { return *luns_[lun]->q; }
  TagSet& tag_set() { return *set_; }
  // sdev->restarts increments so far (budget failures), summed over LUNs.
  uint64_t budget_failures() const { return budget_failures_; }

 private:
  // struct scsi_device: the LUN, its queue and its budget.
  class ScsiDevice final : public BlkMqDriver {
   public:
    ScsiDevice(ScsiHba* host, uint32_t queue_depth) : host_(host), queue_depth_(queue_depth) {}
    BlkStatus QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last) override;
    void Complete(sim::Cpu& cpu, Request* rq) override;
    bool has_budget() const override { return true; }
    bool GetBudget(sim::Cpu& cpu, RequestQueue* q) override;
    void PutBudget(sim::Cpu& cpu, RequestQueue* q) override;

    std::unique_ptr<RequestQueue> q;

   private:
    ScsiHba* host_;
    uint32_t queue_depth_;
    uint32_t device_busy_ = 0;  // bits taken from budget_map
    uint32_t restarts_ = 0;     // sdev->restarts
    sim::CacheLine budget_line_;
    sim::CacheLine restarts_line_;
  };
  class FirmwareDone final : public sim::EventHandler {
   public:
    explicit FirmwareDone(ScsiHba* h) : h_(h) {}
    void OnEvent(uint32_t kind, uint64_t arg) override;  // reply posted

   private:
    ScsiHba* h_;
  };
  class ReplyIrq final : public sim::IrqHandler {
   public:
    explicit ReplyIrq(ScsiHba* h) : h_(h) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // the LLD's ISR

   private:
    ScsiHba* h_;
  };
  // Firmware + drives: when a command issued now completes.
  sim::SimTime FirmwareCompletion(sim::SimTime now, const Request* rq);

  Kernel& kernel_;
  ScsiHbaConfig config_;
  std::unique_ptr<TagSet> set_;
  std::vector<std::unique_ptr<ScsiDevice>> luns_;
  FirmwareDone fw_done_;
  ReplyIrq reply_irq_;
  std::vector<RequestList> reply_queues_;  // per CPU: replies posted, not yet handled
  std::vector<bool> reply_irq_pending_;
  sim::SimTime ctrl_next_free_ = 0;
  std::vector<sim::SimTime> drive_next_free_;
  uint64_t budget_failures_ = 0;
  sim::FnId fn_get_budget_, fn_put_budget_, fn_queue_rq_, fn_queuecommand_, fn_isr_,
      fn_reply_, fn_complete_, fn_end_request_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
