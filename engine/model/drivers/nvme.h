// engine/model/drivers/nvme.h
//
// Nvme models the NVMe PCI driver (drivers/nvme/host/pci.c; docs/kernel-model.md
// §2.6, §3.7) and the controller's media:
//
//   * I/O queues: `default_queues` interrupt-driven ones (CPUs mapped by the
//     managed-IRQ spread, GroupCpusEvenly), then `poll_queues` IOPOLL ones;
//     each hctx has its own tags (depth = io_queue_depth - 1, so the SQ can
//     never overflow) and an SQ guarded by nvmeq->sq_lock (plain spin_lock);
//   * ->queue_rq (nvme_queue_rq): nvme_prep_rq (nvme_setup_cmd, a
//     single-segment DMA map) and blk_mq_start_request, then under sq_lock
//     the 64-byte SQE copy and, when `last`, the SQ doorbell (one posted MMIO
//     write); ->commit_rqs rings a doorbell left unrung;
//   * ->queue_rqs (nvme_queue_rqs, 5.17+, knob queue_rqs): a plug's
//     requests prepared outside the lock, then per run of one hctx one
//     sq_lock, every SQE copied, one doorbell;
//   * the controller fetches what the doorbell published; each command goes
//     through the media stage (service time by direction, IOPS and bandwidth
//     ceilings, parallelism) and its CQE is posted on its queue's CQ;
//   * interrupt queues: the CQ's vector fires on one CPU of the queue's CPU
//     group (the last, as the x86 managed-vector matrix picks on a tie);
//     nvme_irq reaps every pending CQE (nvme_handle_cqe), rings the CQ
//     doorbell once, and completes the local ones in one io_comp_batch
//     (nvme_pci_complete_batch -> blk_mq_end_request_batch); a completion
//     whose submitter is in another LLC group goes there by IPI
//     (blk_mq_complete_request_remote) and ends through ->complete;
//     optional interrupt coalescing (threshold / aggregation time);
//   * poll queues: ->poll (nvme_poll) checks the CQ and, if a CQE is
//     pending, reaps everything under cq_poll_lock into one batch.
//
// Invariants: every command accepted by queue_rq(s) is completed exactly
//  once; SQEs are visible to the controller only after a doorbell; at most
//  depth - 1 commands per queue are outstanding.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (nvme_prep_rq, nvme_sq_copy,
//  nvme_doorbell, nvme_cqe, nvme_complete_batch_rq, nvme_complete_rq,
//  hardirq_entry_exit); one simulator event per command plus one per
//  interrupt.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_NVME_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_NVME_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/media/service_stage.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"

namespace blklab::model {

struct NvmeConfig {
  uint32_t default_queues = 1;  // interrupt-driven I/O queues
  uint32_t poll_queues = 0;     // IOPOLL queues
  uint32_t queue_depth = 1023;  // tags per queue (io_queue_depth - 1)
  ServiceStageSpec media;
  uint32_t irq_coalesce_threshold = 0;  // 0: off
  int64_t irq_coalesce_time_ns = 0;     // 0: off
};

class Nvme final : public BlkMqDriver {
 public:
  Nvme(Kernel& kernel, std::string name, const NvmeConfig& config, const QueueConfig& queue);
  Nvme(const Nvme&) = delete;
  Nvme& operator=(const Nvme&) = delete;

  RequestQueue& queue() { return *q_; }
  TagSet& tag_set() { return *set_; }

  sim::Task QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) override;
  bool has_queue_rqs() const override { return true; }
  sim::Task QueueRqs(sim::Cpu& cpu, RequestList& list) override;
  sim::Task CommitRqs(sim::Cpu& cpu, Hctx* hctx) override;
  void Complete(sim::Cpu& cpu, Request* rq) override;
  const char* timeout_handler() const override { return "nvme_timeout (abort, controller reset)"; }
  sim::Task Poll(sim::Cpu& cpu, Hctx* hctx, int* completed) override;

 private:
  // struct nvme_queue.
  struct NvmeQueue {
    NvmeQueue(Kernel& kernel, const std::string& name);
    sim::SpinLock sq_lock;
    sim::SpinLock cq_poll_lock;
    RequestList unfetched;  // SQEs copied, doorbell not rung
    RequestList cq;         // CQEs posted, not reaped
    uint32_t posted_since_irq = 0;
    bool irq_pending = false;
    bool coalesce_timer_armed = false;
    int irq_cpu = 0;
    bool polled = false;
    sim::CacheLine cq_line;  // the CQ entries the controller writes
  };
  class MediaDone final : public sim::EventHandler {
   public:
    explicit MediaDone(Nvme* n) : n_(n) {}
    void OnEvent(uint32_t kind, uint64_t arg) override;  // a CQE is posted

   private:
    Nvme* n_;
  };
  class QueueIrq final : public sim::IrqHandler {
   public:
    explicit QueueIrq(Nvme* n) : n_(n) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // nvme_irq

   private:
    Nvme* n_;
  };
  class CoalesceTimer final : public sim::EventHandler {
   public:
    explicit CoalesceTimer(Nvme* n) : n_(n) {}
    void OnEvent(uint32_t kind, uint64_t arg) override;  // aggregation time expired

   private:
    Nvme* n_;
  };

  // nvme_submit_cmds: one sq_lock, every SQE of `run`, one doorbell.
  sim::Task SubmitCmds(sim::Cpu& cpu, NvmeQueue& nq, RequestList& run);
  // Copies `rq`'s SQE (sq_lock held). REQUIRES: synced, lock held.
  void CopySqe(sim::Cpu& cpu, NvmeQueue& nq, Request* rq);
  // nvme_write_sq_db: the controller sees every copied SQE. Lock held.
  void RingSqDoorbell(sim::Cpu& cpu, NvmeQueue& nq);
  // A CQE for `rq` is on its queue's CQ now: interrupt or wait for a poll.
  void PostCqe(Request* rq);
  void RaiseIrq(uint32_t qid);
  // nvme_poll_cq for queue `qid` on `cpu`: reaps the CQ; the local
  // completions end in one batch. Returns how many CQEs were reaped.
  int ReapCq(sim::Cpu& cpu, uint32_t qid, sim::FnId fn);

  Kernel& kernel_;
  std::string name_;
  NvmeConfig config_;
  std::unique_ptr<TagSet> set_;
  std::unique_ptr<RequestQueue> q_;
  std::vector<std::unique_ptr<NvmeQueue>> queues_;  // per hctx
  ServiceStage media_;
  MediaDone media_done_;
  QueueIrq irq_;
  CoalesceTimer coalesce_timer_;
  RequestList batch_;  // io_comp_batch of the reap in progress
  sim::FnId fn_queue_rq_, fn_queue_rqs_, fn_submit_cmds_, fn_irq_, fn_poll_, fn_complete_batch_,
      fn_complete_rq_, fn_commit_rqs_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_NVME_H_
