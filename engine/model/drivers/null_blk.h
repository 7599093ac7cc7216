// engine/model/drivers/null_blk.h
//
// NullBlk models drivers/block/null_blk (Documentation/block/null_blk.rst)
// in queue_mode=2 (blk-mq): a device that does no I/O and completes each
// command according to `irqmode` (docs/kernel-model.md §3.7):
//   0 (none):    the request ends inline in ->queue_rq, in the submitter's
//                context;
//   1 (softirq): ->queue_rq calls blk_mq_complete_request, which places the
//                completion by rq_affinity (local, BLOCK_SOFTIRQ, or an IPI
//                to the submitting CPU);
//   2 (timer):   an hrtimer fires `completion_nsec` later on the CPU that
//                queued the command and ends it in hardirq context.
// `mbps` caps bandwidth the way null_blk does: a budget of mbps MiB/50 per
// 20 ms tick; when a request drives it negative the hardware queues are
// stopped and ->queue_rq returns BLK_STS_DEV_RESOURCE; the tick timer refills
// the budget and restarts them.
//
// Invariants: every accepted command completes exactly once.
// Thread-safety: thread-compatible.
// Cost: one HrTimer per tag (preallocated); irqmode 2 costs one event per I/O.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_NULL_BLK_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_NULL_BLK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/tag_set.h"
#include "engine/sim/timer.h"

namespace blklab::model {

struct NullBlkConfig {
  uint32_t submit_queues = 1;
  uint32_t hw_queue_depth = 64;
  int irqmode = 1;
  int64_t completion_nsec = 10000;
  int home_node = -1;
  bool blocking = false;
  uint64_t size_bytes = 250ULL << 30;  // gb=250
  uint32_t block_size = 512;            // bs
  uint64_t mbps = 0;                    // 0: no cap
  uint32_t poll_queues = 0;             // HCTX_TYPE_POLL queues
  // shared_tag_bitmap: one tag space for all hw queues (BLK_MQ_F_TAG_HCTX_SHARED).
  bool shared_tag_bitmap = false;
};

// The blk_mq_tag_set null_init_tag_set fills for `config` (the module's
// global set under shared_tags, sized by the same parameters).
TagSetConfig NullBlkTagSetConfig(const NullBlkConfig& config);

class NullBlk final : public BlkMqDriver {
 public:
  // `shared_set`: the module's tag set shared by every device (shared_tags,
  // TAG_QUEUE_SHARED once a second queue joins); null: the device's own.
  NullBlk(Kernel& kernel, std::string name, const NullBlkConfig& config, const QueueConfig& queue,
          TagSet* shared_set = nullptr);
  NullBlk(const NullBlk&) = delete;
  NullBlk& operator=(const NullBlk&) = delete;

  RequestQueue& queue() { return *q_; }
  TagSet& tag_set() { return *set_; }
  const std::string& name() const { return name_; }
  const NullBlkConfig& config() const { return config_; }

  sim::Task QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) override;
  void Complete(sim::Cpu& cpu, Request* rq) override;
  const char* timeout_handler() const override {
    return "null_timeout_rq (it ends the request with BLK_STS_TIMEOUT, an I/O error)";
  }
  sim::Task Poll(sim::Cpu& cpu, Hctx* hctx, int* completed) override;

 private:
  class TimerIrq final : public sim::IrqHandler {
   public:
    explicit TimerIrq(NullBlk* nb) : nb_(nb) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // null_cmd_timer_expired

   private:
    NullBlk* nb_;
  };
  class BwTimer final : public sim::EventHandler {
   public:
    explicit BwTimer(NullBlk* nb) : nb_(nb) {}
    void OnEvent(uint32_t kind, uint64_t arg) override;  // nullb_bwtimer_fn

   private:
    NullBlk* nb_;
  };

  BlkStatus NullQueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq);  // null_queue_rq

  Kernel& kernel_;
  std::string name_;
  NullBlkConfig config_;
  std::unique_ptr<TagSet> own_set_;
  TagSet* set_ = nullptr;
  std::unique_ptr<RequestQueue> q_;
  TimerIrq timer_irq_;
  std::vector<sim::HrTimer> cmd_timers_;  // per (hctx tags, tag)
  std::vector<RequestList> poll_lists_;    // per hctx: polled commands done, not yet reaped
  BwTimer bw_timer_;
  int64_t bw_budget_bytes_ = 0;
  bool bw_timer_armed_ = false;
  int64_t bw_window_ = -1;
  sim::FnId fn_queue_rq_;
  sim::FnId fn_complete_rq_;
  sim::FnId fn_timer_expired_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_NULL_BLK_H_
