// engine/model/drivers/scsi/hba.h
//
// Hba models a RAID/HBA "firmware" SCSI low-level driver (megaraid_sas,
// mpi3mr; docs/kernel-model.md §3.7 "HBA") behind the SCSI mid-layer
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
//   * completion: the firmware posts a reply on a reply queue with its own
//     MSI-x vector: megaraid_sas picks it by the submitting CPU
//     (reply_map), mpi3mr by the request's hardware queue (one operational
//     reply queue per hctx, its vector on the hctx's first CPU). One
//     hardirq (the LLD's ISR) drains every reply posted so far, charging
//     the per-reply processing, and calls scsi_done for each;
//   * mpi3mr's threaded ISR (5.14+, "mpi3mr: add support of threaded isr"):
//     the reply queue counts its pending commands (pend_ios, +1 at
//     mpi3mr_op_request_post, -1 per reply processed); a post that finds
//     more than MPI3MR_IRQ_POLL_TRIGGER_IOCOUNT (8) pending sets
//     enable_irq_poll. An ISR that ends with enable_irq_poll set and commands
//     still pending disables its vector (disable_irq_nosync) and wakes the
//     vector's irq thread (SCHED_FIFO 50, on the vector's CPU), which polls
//     the reply queue, sleeping usleep_range(2, 20) us between polls (5.14+;
//     20-21 us in 2024's fix after the 6.3 slack change, later reverted), until
//     nothing is pending or it has handled can_queue (max_host_ios)
//     replies; then it clears enable_irq_poll and re-enables the vector.
//     Each wake-up and each sleep of the thread moves its CPU between the
//     root domain's cpupri vectors (Kernel::CpupriSet, lines every CPU
//     writes). The sleep: usleep_range(min, max) (`irq_poll_sleep_*`), whose
//     hrtimer fires at min when the kernel gives a real-time sleeper no
//     slack (knob hrtimer_rt_no_slack, 6.3+; stable 5.10/5.15/6.1 in 2024),
//     else at its hard expiry, max (5.16 as released); no other hrtimer is assumed to expire
//     inside the window (the 1 ms tick does ~2 % of the time with 2-20 us;
//     not modelled). While the
//     vector is disabled the first reply still interrupts (lazy disable:
//     handle_edge_irq masks the vector and marks it pending), and
//     enable_irq resends that interrupt.
//
// Invariants: every command accepted by queuecommand completes exactly once;
//  pend_ios counts the commands of a reply queue not yet processed; a
//  disabled vector is re-enabled only by its irq thread.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (hba_queuecommand, hba_reply_per_cmd,
//  hardirq_entry_exit; for the irq thread hrtimer_arm, hrtimer_fire,
//  try_to_wake_up, the context switches and cpupri's line transfers); one
//  simulator event per command plus one per reply interrupt, and at least
//  three per poll (the sleep timer, its interrupt, the thread's wake-up).
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/drivers/scsi/scsi_host.h"
#include "engine/model/kernel.h"
#include "engine/model/media/service_stage.h"
#include "engine/sim/timer.h"

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
  // mpi3mr's usleep_range between polls of the irq thread.
  int64_t irq_poll_sleep_min_ns = 2000;
  int64_t irq_poll_sleep_max_ns = 20000;
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
  // The hrtimer of the irq thread's usleep_range: hrtimer_wakeup.
  class PollTimerIrq final : public sim::IrqHandler {
   public:
    explicit PollTimerIrq(Hba* h) : h_(h) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;

   private:
    Hba* h_;
  };
  // An operational reply queue and its MSI-x vector.
  struct ReplyQueue {
    RequestList posted;        // replies posted, not yet processed
    int cpu = -1;              // the vector's CPU (-1: the submitter's)
    bool irq_pending = false;  // an interrupt raised, not yet taken
    // mpi3mr's threaded ISR.
    uint32_t pend_ios = 0;
    bool enable_irq_poll = false;
    bool irq_disabled = false;  // disable_irq_nosync .. enable_irq
    bool irq_replay = false;    // interrupted while disabled (IRQS_PENDING)
    std::unique_ptr<sim::Thread> thread;
    sim::HrTimer sleep_timer;
  };

  bool threaded_isr() const { return config_.lld == 1; }
  // The reply queue of `rq` (and the CPU of its vector, set on first use).
  int ReplyQueueOf(const Request* rq);
  // Raises the vector's interrupt unless one is on its way.
  void RaiseReplyIrq(int q);
  // mpi3mr_process_op_reply_q: every reply posted so far; adds the count
  // to *handled.
  sim::Task ProcessReplyQueue(sim::Cpu& cpu, int q, uint32_t* handled);
  // IRQ_WAKE_THREAD from the ISR on the vector's CPU.
  void WakeIrqThread(sim::Cpu& cpu, int q);
  // The irq thread: irq_thread_fn -> mpi3mr_isr_poll, then sleep.
  sim::Task IrqThreadBody(int q);

  Kernel& kernel_;
  HbaConfig config_;
  ScsiHost host_;
  FirmwareDone fw_done_;
  ReplyIrq reply_irq_;
  PollTimerIrq poll_timer_irq_;
  ServiceStage firmware_;
  std::vector<ServiceStage> drives_;
  std::vector<ReplyQueue> reply_;  // megaraid_sas: per CPU; mpi3mr: per hctx
  uint32_t fw_outstanding_ = 0;
  sim::FnId fn_queuecommand_, fn_isr_, fn_reply_, fn_isr_poll_, fn_usleep_, fn_edge_irq_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_HBA_H_
