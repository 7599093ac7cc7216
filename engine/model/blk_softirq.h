// engine/model/blk_softirq.h
//
// BlkCpuDone models blk-mq's remote completion plumbing (block/blk-mq.c,
// docs/kernel-model.md §3.6): one list of completed requests per CPU
// (`blk_cpu_done`), BLOCK_SOFTIRQ's handler `blk_done_softirq`, which takes
// the whole list and calls ->complete for each request, and the completion
// IPI. The list batches both paths the way the kernel does:
//   * blk_mq_raise_softirq adds the request to this CPU's list and raises
//     BLOCK_SOFTIRQ only when the list was empty;
//   * blk_mq_complete_send_ipi adds it to the submitter's list and sends an
//     IPI (smp_call_function_single_async on the per-CPU csd, 6.5+) only
//     when that list was empty; the IPI raises BLOCK_SOFTIRQ on its target,
//     which runs at the IPI's irq exit.
// So a burst of completions for one CPU costs one IPI and one softirq run;
// each request pays the llist_add, an atomic on the list head's line, which
// comes over from the CPU that last added to or emptied that list.
//
// A CPU runs ahead of the others between its Sync points, so a request can
// reach a list at a virtual time after the target's softirq ran: that
// softirq leaves it there, since in virtual time its llist_add came after
// the llist_del_all and found the list empty, and the IPI that add would
// have sent is raised for the earliest such request (a completion is never
// handled before it was made).
//
// Invariants: a request is on at most one list; a list is non-empty only
//  while a BLOCK_SOFTIRQ run (or the IPI that raises it) is pending on its
//  CPU; a softirq run takes only requests added at or before its time.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: O(1) per request; the prices are the cost table's atomic_local (and
//  the line's transfer) per request, raise_softirq, ipi_send,
//  ipi_delivery_latency, ipi_receive and softirq_entry_exit per batch.
#ifndef BLKLAB_ENGINE_MODEL_BLK_SOFTIRQ_H_
#define BLKLAB_ENGINE_MODEL_BLK_SOFTIRQ_H_

#include <cstdint>
#include <vector>

#include "engine/model/request.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/task.h"

namespace blklab::model {

class Kernel;

class BlkCpuDone {
 public:
  explicit BlkCpuDone(Kernel& kernel);
  BlkCpuDone(const BlkCpuDone&) = delete;
  BlkCpuDone& operator=(const BlkCpuDone&) = delete;

  // blk_mq_raise_softirq: complete `rq` in BLOCK_SOFTIRQ on `cpu`.
  void RaiseSoftirq(sim::Cpu& cpu, Request* rq);
  // blk_mq_complete_send_ipi: complete `rq` in BLOCK_SOFTIRQ on `target`.
  void SendIpi(sim::Cpu& cpu, Request* rq, int target);

 private:
  class DoneSoftirq final : public sim::IrqHandler {
   public:
    explicit DoneSoftirq(BlkCpuDone* d) : d_(d) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // blk_done_softirq

   private:
    BlkCpuDone* d_;
  };
  class CompletionIpi final : public sim::IrqHandler {
   public:
    explicit CompletionIpi(BlkCpuDone* d) : d_(d) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // __blk_mq_complete_request_remote

   private:
    BlkCpuDone* d_;
  };

  // The completion IPI to `target`, sent at `sent_at`: counted, delivered
  // after the cost table's latency.
  void DeliverIpi(int target, sim::SimTime sent_at);

  // A request on a list and the virtual time its llist_add ran.
  struct Done {
    Request* rq;
    sim::SimTime at;
  };

  Kernel& kernel_;
  std::vector<std::vector<Done>> done_;  // per CPU, in the order added
  // Per CPU, the buffer a BLOCK_SOFTIRQ run took last, empty: the next run
  // swaps it in, so neither list allocates in steady state.
  std::vector<std::vector<Done>> spare_;
  // Per CPU, the line of its blk_cpu_done head: llist_add by whoever
  // completes to it, llist_del_all by its softirq.
  std::vector<sim::CacheLine> lines_;
  DoneSoftirq softirq_;
  CompletionIpi ipi_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_SOFTIRQ_H_
