// engine/model/blk_mq_ops.h
//
// BlkMqDriver is the model's `struct blk_mq_ops` (include/linux/blk-mq.h):
// what a block driver gives blk-mq. The paths of blk_mq.h and hctx.h call
// it: ->queue_rq for each dispatched request, ->queue_rqs for a plug's
// requests at once, ->commit_rqs to ring a deferred doorbell, ->complete
// where blk_mq_complete_request placed the completion, ->poll for polled
// queues, and the SCSI budget pair. The submission-side operations are
// coroutines: a driver may wait for its own locks (nvmeq->sq_lock).
//
// Invariants: QueueRq either accepts the request (and calls
//  RequestQueue::StartRequest) or answers busy without keeping it; every
//  accepted request is completed exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: each driver charges its own cost-table entries.
#ifndef BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_
#define BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "engine/model/request.h"
#include "engine/sim/cpu.h"
#include "engine/sim/task.h"

namespace blklab::model {

class Hctx;
class RequestQueue;

// enum blk_eh_timer_return: what ->timeout did with a request.
enum class BlkEhTimerReturn : uint8_t {
  kDone,        // BLK_EH_DONE: the driver owns it (it will end or requeue it)
  kResetTimer,  // BLK_EH_RESET_TIMER: give it another rq_timeout
};

class BlkMqDriver {
 public:
  virtual ~BlkMqDriver() = default;
  // ->queue_rq: *status is the answer (kOk: accepted; the driver called
  // q->StartRequest(rq)). REQUIRES: the caller has Synced.
  virtual sim::Task QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) = 0;
  // ->queue_rqs: takes what it can of `list` (a plug's requests, one
  // queue, no scheduler); what is left is issued one by one.
  virtual bool has_queue_rqs() const { return false; }
  virtual sim::Task QueueRqs(sim::Cpu& cpu, RequestList& list) { co_return; }
  // ->commit_rqs: ring a deferred doorbell.
  virtual sim::Task CommitRqs(sim::Cpu& cpu, Hctx* hctx) { co_return; }
  // ->complete: runs where blk_mq_complete_request placed the completion.
  virtual void Complete(sim::Cpu& cpu, Request* rq) = 0;
  // ->poll: completes what a poll queue has finished; *completed is the count.
  virtual sim::Task Poll(sim::Cpu& cpu, Hctx* hctx, int* completed) {
    *completed = 0;
    co_return;
  }
  // ->get_budget / ->put_budget (SCSI only): has_budget() says whether the
  // driver has them at all. GetBudget returns the budget token (>= 0) or -1;
  // PutBudget takes the token back.
  virtual bool has_budget() const { return false; }
  virtual int GetBudget(sim::Cpu& cpu, RequestQueue* q) { return 0; }
  virtual void PutBudget(sim::Cpu& cpu, RequestQueue* q, int token) {}
  // ->timeout: `rq` outlived rq_timeout (blk_mq_rq_timed_out). A driver
  // whose handler the model does not follow answers Unimplemented, naming
  // it; the run then ends with that error.
  virtual absl::StatusOr<BlkEhTimerReturn> Timeout(sim::Cpu& cpu, Request* rq) {
    return absl::UnimplementedError(absl::StrCat(timeout_handler(), " is not modelled"));
  }
  // The kernel function ->timeout points at (for messages).
  virtual const char* timeout_handler() const { return "the driver's ->timeout"; }
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_MQ_OPS_H_
