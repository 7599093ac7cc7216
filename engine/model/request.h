// engine/model/request.h
//
// The units of block I/O (include/linux/blk_types.h, include/linux/blk-mq.h):
//  * Bio: one I/O as the submitter built it (sector, size, op); its owner is
//    told when it ends (bio->bi_end_io).
//  * Request: what a hardware queue dispatches; preallocated per tag
//    (tags->static_rqs) and referred to by pointer, never allocated per I/O.
//    A request carries one or more merged bios.
//
// Invariants: a Request is in at most one list at a time (plug, sw queue,
//  hctx->dispatch), linked through `next`; `tag` is owned while the request
//  is allocated.
// Thread-safety: thread-compatible; part of one simulation.
#ifndef BLKLAB_ENGINE_MODEL_REQUEST_H_
#define BLKLAB_ENGINE_MODEL_REQUEST_H_

#include <cstdint>

#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/time.h"

namespace blklab::model {

enum class ReqOp : uint8_t { kRead = 0, kWrite = 1, kDiscard = 2 };

// blk_status_t, the subset the model produces.
enum class BlkStatus : uint8_t { kOk, kResource, kDevResource, kIoErr, kAgain };

inline constexpr uint32_t kNoTag = UINT32_MAX;
inline constexpr int kSectorShift = 9;

struct Bio;

// bio->bi_end_io: the submitter's completion callback. Runs in whatever
// context ends the request (task, softirq or hardirq of some CPU).
class BioOwner {
 public:
  virtual ~BioOwner() = default;
  virtual void BioEndio(sim::Cpu& cpu, Bio* bio, BlkStatus status) = 0;
};

struct Bio {
  uint64_t sector = 0;
  uint32_t bytes = 0;
  ReqOp op = ReqOp::kRead;
  bool polled = false;           // REQ_POLLED (io_uring IOPOLL)
  bool nowait = false;           // REQ_NOWAIT: fail with kAgain instead of sleeping
  // A passthrough command (REQ_OP_DRV_IN/OUT: SG_IO's SCSI command, with
  // `op` the media access it makes): no scheduler, no I/O accounting.
  bool passthrough = false;
  uint8_t ioprio_class = 0;      // IOPRIO_CLASS_*: 0 none, 1 RT, 2 BE, 3 IDLE
  uint8_t ioprio_level = 4;      // IOPRIO_PRIO_DATA (none: task_nice_ioprio, 4 at nice 0)
  uint16_t blkcg = 0;            // the submitter's blkio cgroup (0: root), bio_associate_blkg
  uint32_t ioc = 0;              // the submitting task's io_context (0: none known)
  sim::SimTime bi_issue = 0;     // blkcg_bio_issue_init stamp (BLK_CGROUP)
  sim::SimTime queued_ns = -1;   // model bookkeeping: when submit_bio took it (btt's Q)
  BioOwner* owner = nullptr;
  uint64_t cookie = 0;           // owner's reference (e.g. io_u index)
  Bio* bi_next = nullptr;        // merged bios of one request
};

class Hctx;
class Ctx;
class RequestQueue;

struct Request {
  enum class State : uint8_t { kIdle, kAllocated, kInFlight, kComplete };

  uint32_t tag = kNoTag;          // driver tag
  uint32_t internal_tag = kNoTag; // scheduler tag
  State state = State::kIdle;
  ReqOp op = ReqOp::kRead;
  bool passthrough = false;  // blk_rq_is_passthrough (from its bio)
  uint64_t sector = 0;
  uint32_t bytes = 0;
  uint32_t nr_bios = 0;
  Bio* bio = nullptr;
  Bio* biotail = nullptr;
  RequestQueue* q = nullptr;
  Hctx* mq_hctx = nullptr;
  Ctx* mq_ctx = nullptr;
  sim::SimTime start_time_ns = 0;     // blk_mq_rq_ctx_init (iostats / scheduler)
  sim::SimTime io_start_time_ns = 0;  // blk_mq_start_request
  sim::SimTime alloc_time_ns = 0;     // model bookkeeping: when it was allocated
  sim::SimTime queue_time_ns = -1;    // model bookkeeping: its first bio's submit_bio (btt's Q), -1 if none
  sim::SimTime issue_time_ns = -1;    // model bookkeeping: its last blk_mq_start_request (btt's D), -1 before
  sim::SimTime deadline = 0;          // blk_add_timer: start + rq_timeout
  sim::SimTime fifo_time = 0;         // mq-deadline: FIFO deadline
  uint64_t sched_seq = 0;             // mq-deadline: insertion order (tie break)
  int32_t budget_token = -1;          // ->get_budget's token, -1 when none is held
  int32_t elv_token = -1;             // rq->elv.priv[0]: kyber's domain token, -1 when none
  uint8_t scsi_status = 0;            // SAM status a SCSI LLD answered (0 = GOOD)
  uint8_t ioprio_class = 0;           // the bio's IOPRIO_CLASS_* (blk_mq_bio_to_request)
  uint8_t ioprio_level = 4;           // the bio's IOPRIO_PRIO_DATA
  uint16_t blkcg = 0;                 // the bio's blkio cgroup
  uint32_t ioc = 0;                   // the submitting task's io_context
  void* elv_priv = nullptr;           // rq->elv.priv[1]: bfq's queue
  bool timed_out = false;             // RQF_TIMED_OUT: handed to ->timeout, until re-armed
  uint8_t retries = 0;                // scmd->retries (SCSI error handling)
  bool eh_abort_scheduled = false;    // SCSI_EH_ABORT_SCHEDULED: aborted once already
  Request* next = nullptr;            // list link
  Request* rb_left = nullptr;         // scheduler sort tree (rb_node)
  Request* rb_right = nullptr;
  Request* rb_parent = nullptr;
  bool rb_red = false;                // the rb_node's colour
  uint64_t driver_data = 0;           // driver's per-command index
  // The cachelines of struct request that the block layer writes (state,
  // flags, queuelist, rb_node, hash, fifo_time, ref), modelled as one line:
  // written by the allocating, dispatching and completing CPUs and by the
  // scheduler's list and tree updates, read by tree descents and tag walks.
  sim::CacheLine line;
};

// Intrusive singly linked FIFO of requests.
class RequestList {
 public:
  bool empty() const { return head_ == nullptr; }
  size_t size() const { return size_; }
  Request* front() const { return head_; }
  Request* back() const { return tail_; }
  void push_back(Request* rq) {
    rq->next = nullptr;
    if (tail_ != nullptr) {
      tail_->next = rq;
    } else {
      head_ = rq;
    }
    tail_ = rq;
    ++size_;
  }
  void push_front(Request* rq) {
    rq->next = head_;
    head_ = rq;
    if (tail_ == nullptr) tail_ = rq;
    ++size_;
  }
  Request* pop_front() {
    Request* rq = head_;
    if (rq == nullptr) return nullptr;
    head_ = rq->next;
    if (head_ == nullptr) tail_ = nullptr;
    rq->next = nullptr;
    --size_;
    return rq;
  }
  // Unlinks `rq`, which must be on this list (O(its position)).
  void remove(Request* rq) {
    Request* prev = nullptr;
    Request* r = head_;
    while (r != rq) {
      prev = r;
      r = r->next;
    }
    (prev != nullptr ? prev->next : head_) = rq->next;
    if (tail_ == rq) tail_ = prev;
    rq->next = nullptr;
    --size_;
  }
  // Moves all of `other` to the end of this list.
  void splice_tail(RequestList& other) {
    if (other.empty()) return;
    if (tail_ != nullptr) {
      tail_->next = other.head_;
    } else {
      head_ = other.head_;
    }
    tail_ = other.tail_;
    size_ += other.size_;
    other.head_ = other.tail_ = nullptr;
    other.size_ = 0;
  }
  // Moves all of `other` to the front of this list.
  void splice_head(RequestList& other) {
    if (other.empty()) return;
    other.tail_->next = head_;
    if (tail_ == nullptr) tail_ = other.tail_;
    head_ = other.head_;
    size_ += other.size_;
    other.head_ = other.tail_ = nullptr;
    other.size_ = 0;
  }

 private:
  Request* head_ = nullptr;
  Request* tail_ = nullptr;
  size_t size_ = 0;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_REQUEST_H_
