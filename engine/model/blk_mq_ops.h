// engine/model/blk_mq_ops.h
//
// BlkMqDriver is the model's `struct blk_mq_ops` (include/linux/blk-mq.h):
// what a block driver gives blk-mq. The paths of blk_mq.h and hctx.h call
// it: ->queue_rq for each dispatched request, ->commit_rqs to ring a
// deferred doorbell, ->complete where blk_mq_complete_request placed the
// completion, ->poll for polled queues, and the SCSI budget pair.
//
// Invariants: QueueRq either accepts the request (and calls
//  RequestQueue::StartRequest) or answers busy without keeping it; every
//  accepted request is completed exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: each driver charges its own cost-table entries.
#ifndef BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_
#define BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_

#include "engine/model/request.h"
#include "engine/sim/cpu.h"

namespace blklab::model {

class Hctx;
class RequestQueue;

class BlkMqDriver {
 public:
  virtual ~BlkMqDriver() = default;
  // ->queue_rq. The driver calls q->StartRequest(rq) when it accepts it.
  virtual BlkStatus QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last) = 0;
  // ->commit_rqs: ring a deferred doorbell.
  virtual void CommitRqs(sim::Cpu& cpu, Hctx* hctx) {}
  // ->complete: runs where blk_mq_complete_request placed the completion.
  virtual void Complete(sim::Cpu& cpu, Request* rq) = 0;
  // ->poll: completes what a poll queue has finished; returns the count.
  virtual int Poll(sim::Cpu& cpu, Hctx* hctx) { return 0; }
  // ->get_budget / ->put_budget (SCSI only): has_budget() says whether the
  // driver has them at all.
  virtual bool has_budget() const { return false; }
  virtual bool GetBudget(sim::Cpu& cpu, RequestQueue* q) { return true; }
  virtual void PutBudget(sim::Cpu& cpu, RequestQueue* q) {}
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_
