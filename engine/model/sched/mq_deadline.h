// engine/model/sched/mq_deadline.h
//
// DeadlineSched models block/mq-deadline.c (KERNEL_MODEL.md §2.4, §3.5) behind
// the Elevator interface (elevator.h; every operation ignores the hctx): one
// `struct deadline_data` per request queue, whatever the number of hardware
// queues, with ONE dd->lock (its own cacheline; the lock's data line stands
// for the dd struct, rb nodes and FIFO heads, which move with the lock).
// Under dd->lock: the bio merge probe (dd_bio_merge: hash back merge, sort
// front merge), the insert (dd_insert_request: sort by sector, FIFO tail with
// deadline now + fifo_expire[dir]) and the dispatch (dd_dispatch_request:
// current batch in sector order while batching < fifo_batch, else choose a
// direction — reads unless writes were starved writes_starved times — and
// take the FIFO head if it expired, else the next in sort order).
// One priority level (the model submits everything as BE).
//
// RC4 switches (REFERENCE_CASES.md RC4), each independent:
//   serialize_dispatch     DD_DISPATCHING: a dispatcher that finds the bit set
//                          returns NULL without touching dd->lock.
//   insert_side_lists      inserts take only dd->insert_lock and splice onto
//                          a side list; the dispatcher drains it under dd->lock.
//   skip_merge_if_contended dd_bio_merge uses spin_trylock; busy -> no merge.
// Jens's insert buckets are not modelled (the engine refuses that knob).
//
// Invariants: every inserted request is in exactly one of the side list or
//  (sort_ and fifo_ of its direction) until dispatched; queued() counts them;
//  dispatched requests never come back (requeue is not modelled).
// Thread-safety: thread-compatible; part of one simulation. Shared state is
//  touched only after cpu.Sync().
// Cost: prices from the cost table (dd_bio_merge, dd_insert_request +
//  dd_insert_per_log2 * log2(queued), dd_dispatch_request, dd_has_work);
//  std::map nodes are the model's bookkeeping (one allocation per insert).
#ifndef BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_
#define BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "engine/host/host_spec.h"
#include "engine/model/elevator.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/task.h"

namespace blklab::model {

// mq-deadline's settings: /sys/block/X/queue/iosched tunables plus the RC4
// switches (host knobs).
struct DeadlineConfig {
  int64_t read_expire_ns = 500 * sim::kNsPerMs;
  int64_t write_expire_ns = 5000 * sim::kNsPerMs;
  int writes_starved = 2;
  int fifo_batch = 16;
  bool front_merges = true;
  bool serialize_dispatch = false;       // DD_DISPATCHING
  bool insert_side_lists = false;        // insert_lock + side list
  bool skip_merge_if_contended = false;  // spin_trylock in dd_bio_merge

  // From the host spec's iosched block (ms tunables) and knobs.
  static DeadlineConfig From(const host::DeadlineTunables& iosched, const host::Knobs& knobs);
};

struct DeadlineStats {
  uint64_t inserted = 0;
  uint64_t merged = 0;
  uint64_t dispatched = 0;
  uint64_t completed = 0;
  uint64_t merge_skipped = 0;     // trylock failed
  uint64_t dispatch_skipped = 0;  // DD_DISPATCHING was set
};

class DeadlineSched final : public Elevator {
 public:
  DeadlineSched(Kernel& kernel, const std::string& qname, const DeadlineConfig& config);
  DeadlineSched(const DeadlineSched&) = delete;
  DeadlineSched& operator=(const DeadlineSched&) = delete;

  // dd_bio_merge: back merge on the end-sector hash, front merge on the sort
  // tree.
  sim::Task BioMerge(sim::Cpu& cpu, Hctx* hctx, Bio* bio, Request** merged_into) override;
  // dd_insert_requests: inserts the whole list (emptied).
  sim::Task InsertRequests(sim::Cpu& cpu, Hctx* hctx, RequestList& list) override;
  // dd_has_work: lock-free checks of the list heads.
  bool HasWork(sim::Cpu& cpu, Hctx* hctx) override;
  // dd_dispatch_request: the next request, or null (nothing queued, or
  // another dispatcher holds DD_DISPATCHING).
  sim::Task DispatchRequest(sim::Cpu& cpu, Hctx* hctx, Request** out) override;
  // dd_finish_request: per-prio completed counter (an atomic on a shared line).
  void FinishRequest(sim::Cpu& cpu, Request* rq) override;

  size_t queued() const override { return queued_ + side_list_.size(); }
  sim::SpinLock& lock() { return lock_; }
  const DeadlineStats& stats() const { return stats_; }

 private:
  using SortKey = std::pair<uint64_t, uint64_t>;  // (sector, seq)
  using FifoKey = std::pair<int64_t, uint64_t>;   // (deadline, seq)

  void DoInsert(sim::Cpu& cpu, Request* rq);   // REQUIRES: dd->lock held
  Request* Choose(sim::Cpu& cpu);              // REQUIRES: dd->lock held
  void Remove(Request* rq);                    // REQUIRES: dd->lock held
  // op_is_write: writes and discards are the write direction.
  static int Dir(const Request* rq) { return rq->op == ReqOp::kRead ? 0 : 1; }
  static uint64_t EndSector(const Request* rq) { return rq->sector + (rq->bytes >> kSectorShift); }

  Kernel& kernel_;
  DeadlineConfig config_;
  sim::SpinLock lock_;         // dd->lock
  sim::SpinLock insert_lock_;  // dd->insert_lock (side lists)
  sim::CacheLine run_state_line_;  // dd->run_state (DD_DISPATCHING)
  sim::CacheLine side_list_line_;  // at_tail list head
  sim::CacheLine stats_line_;      // completed counter
  std::map<SortKey, Request*> sort_[2];
  std::map<FifoKey, Request*> fifo_[2];
  std::map<SortKey, Request*> hash_;  // (end sector, seq): back-merge hash
  RequestList side_list_;
  size_t queued_ = 0;
  uint64_t next_seq_ = 1;
  int last_dir_ = 0;
  int batching_ = 0;
  int starved_ = 0;
  uint64_t latest_pos_[2] = {0, 0};  // next expected sector per direction
  bool dispatching_ = false;
  DeadlineStats stats_;
  sim::FnId fn_bio_merge_, fn_insert_, fn_dispatch_, fn_has_work_, fn_finish_;
};

// The registry entry (elevator.cc).
extern const ElevatorType kMqDeadlineElevator;

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_
