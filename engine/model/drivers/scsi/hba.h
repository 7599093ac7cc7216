// engine/model/drivers/scsi/hba.h
//
// Hba models a RAID/HBA "firmware" SCSI low-level driver (megaraid_sas,
// mpi3mr; KERNEL_MODEL.md §3.7 "HBA") behind the SCSI mid-layer
// (scsi_host.h), which it owns:
//
//   * ->queuecommand: the LLD's CPU cost (megasas_build_and_issue_cmd_fusion
//     or mpi3mr_qcmd), then the command goes down the device's timing
//     pipeline (media/service_stage.h): the controller's firmware stage
//     (`firmware_nsec`, at most `max_iops` per second), then RAID-0 over
//     `drives` backing drives, the stripe unit of the command's first sector
//     picking the drive (each drive a stage of `drive_latency_nsec`, at most
//     `drive_iops`);
//   * busy: with more than `fw_queue_depth` commands outstanding in the
//     firmware (megaraid_sas fw_outstanding against max_fw_cmds),
//     ->queuecommand answers SCSI_MLQUEUE_HOST_BUSY;
//   * completion: the firmware posts a reply on the reply queue whose MSI-x
//     vector is affine to the submitting CPU; one hardirq (the LLD's ISR)
//     drains every reply posted so far, charging the per-reply processing,
//     and calls scsi_done for each.
//
// Invariants: every command accepted by queuecommand completes exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (hba_queuecommand, hba_reply_per_cmd,
//  hardirq_entry_exit); one simulator event per command plus one per reply
//  interrupt.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/drivers/scsi/scsi_host.h"
#include "engine/model/kernel.h"
#include "engine/model/media/service_stage.h"

namespace blklab::model {

struct HbaConfig {
  int lld = 0;  // 0 = megaraid_sas, 1 = mpi3mr (profile names only)
  ScsiHostConfig host;
  int64_t firmware_nsec = 2000;
  int64_t max_iops = 0;
  uint32_t drives = 1;
  int64_t drive_iops = 0;
  int64_t drive_latency_nsec = 80000;
  uint64_t stripe_bytes = 64 * 1024;
  uint32_t fw_queue_depth = 0;  // 0: never busy
};

class Hba final : public ScsiLld {
 public:
  Hba(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
      const HbaConfig& config, const QueueConfig& queue);
  Hba(const Hba&) = delete;
  Hba& operator=(const Hba&) = delete;

  ScsiHost& host() { return host_; }
  int nr_luns() const { return host_.nr_luns(); }
  RequestQueue& queue(int lun) { return host_.queue(lun); }

  ScsiMlqueue QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) override;

 private:
  class FirmwareDone final : public sim::EventHandler {
   public:
    explicit FirmwareDone(Hba* h) : h_(h) {}
    void OnEvent(uint32_t kind, uint64_t arg) override;  // reply posted

   private:
    Hba* h_;
  };
  class ReplyIrq final : public sim::IrqHandler {
   public:
    explicit ReplyIrq(Hba* h) : h_(h) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // the LLD's ISR

   private:
    Hba* h_;
  };

  Kernel& kernel_;
  HbaConfig config_;
  ScsiHost host_;
  FirmwareDone fw_done_;
  ReplyIrq reply_irq_;
  ServiceStage firmware_;
  std::vector<ServiceStage> drives_;
  std::vector<RequestList> reply_queues_;  // per CPU: replies posted, not yet handled
  std::vector<bool> reply_irq_pending_;
  uint32_t fw_outstanding_ = 0;
  sim::FnId fn_queuecommand_, fn_isr_, fn_reply_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
