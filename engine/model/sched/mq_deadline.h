// engine/model/sched/mq_deadline.h
//
// DeadlineSched models block/mq-deadline.c (docs/kernel-model.md §2.4, §3.5) behind
// the Elevator interface (elevator.h; every operation ignores the hctx): one
// `struct deadline_data` per request queue, whatever the number of hardware
// queues, with ONE dd->lock, a plain spin_lock (hardirqs stay on).
// Under dd->lock: the bio merge probe (dd_bio_merge: last_merge, hash back
// merge, sort-tree front merge), the insert (dd_insert_request: sort tree by
// sector, hash, FIFO tail with deadline now + fifo_expire[dir]) and the
// dispatch (dd_dispatch_request: dd_queued per priority, the current batch in
// sector order while batching < fifo_batch, else choose a direction — reads
// unless writes were starved writes_starved times — and take the FIFO head if
// it expired, else the next in sort order). Three priority levels (struct
// dd_per_prio: RT, BE, IDLE from the request's I/O priority class, none =
// BE), each with its own sort trees, FIFOs, latest_pos and stats; the batch
// state (last_dir, batching, starved) is shared. Dispatch first serves a
// lower level's request that waited longer than prio_aging_expire
// (dd_dispatch_prio_aged_requests, when two levels have requests queued or
// in flight), then the levels in order, stopping at the first that gave a
// request or still has requests queued or in flight (dd_queued = inserted -
// completed): a lower level waits while a higher one has any.
//
// The working set of each section is modelled line by line, because under
// contention its cost is the lines the previous holder wrote (v6.8 x86-64
// layout of struct deadline_data, 512-byte aligned):
//   L0 RT lists and stats, L3 IDLE lists and stats  (read by dd_has_work and
//      dd_queued; written only when that level is used)
//   L1 BE dispatch list + sort_list roots (+ RT stats)
//   L2 BE fifo_list heads, latest_pos, stats (inserted, dispatched, and the
//      atomic `completed` bumped by every completion, lock-free)
//   L4 last_dir, batching, starved, tunables (+ IDLE stats)
//   L5 the lock word (SpinLock's own line)
// plus q->last_merge (a request_queue line), the elevator hash (64 buckets,
// 8 lines) and each request's line (request.h): a descent of the sort tree
// (sort_tree.h) reads the line of every node it visits, list and tree updates
// write the lines of the nodes whose links change.
//
// RC4 switches (docs/reference-cases.md RC4), each independent:
//   serialize_dispatch     DD_DISPATCHING: a dispatcher that finds the bit set
//                          returns NULL without touching dd->lock.
//   insert_side_lists      inserts take only dd->insert_lock (on the lock
//                          word's line, as in the patch's aligned struct) and
//                          splice onto a side list (its heads on run_state's
//                          line); every dispatch that wins the bit takes
//                          insert_lock under dd->lock and drains it
//                          (dd_do_insert, even when it is empty).
//   skip_merge_if_contended dd_bio_merge uses spin_trylock; busy -> no merge.
//   insert_buckets         Jens's v3 3/4 (not merged): dd_insert_requests
//                          tries dd->lock; if it is busy while another CPU
//                          is inserting (DD_INSERTING), the list goes onto
//                          bucket_lists[cpu & 31] under that bucket's lock
//                          (lock and list head share one aligned line) and
//                          DD_BUCKETS is set; the inserter holding dd->lock
//                          drains every non-empty bucket (a list_empty_careful
//                          load of each of the 32 lines) before it clears
//                          DD_INSERTING, and again while DD_BUCKETS is set.
//                          A bucket inserter that finds DD_INSERTING cleared
//                          after its splice takes dd->lock and inserts itself.
//                          dd_has_work does not look at the buckets.
//
// Invariants: every inserted request is in exactly one of the side list, a
//  bucket or (sort_ and fifo_ of its direction) until dispatched; queued()
//  counts them; a bucket is non-empty only while DD_INSERTING or DD_BUCKETS
//  is set or a bucket inserter is about to take dd->lock;
//  dispatched requests never come back (requeue is not modelled).
// Thread-safety: thread-compatible; part of one simulation. Shared state is
//  touched only after cpu.Sync().
// Cost: flat bodies from the cost table (dd_bio_merge, dd_insert_request,
//  dd_dispatch_request, dd_has_work, dd_rb_node per tree node visited) plus
//  the line accesses above, priced by sim::AccessCost: descents are chains
//  of dependent loads, list-head checks independent loads, link updates
//  stores whose misses overlap until the unlock.
//  Model bookkeeping: O(log n) per operation.
#ifndef BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_
#define BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/model/elevator.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/sched/sort_tree.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/pool_allocator.h"
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
  bool insert_buckets = false;           // per-CPU insertion buckets
  int64_t prio_aging_expire_ns = 10 * sim::kNsPerSec;  // 0: no aging
  uint32_t async_depth = 0;  // sysfs async_depth; 0: the kernel's default
  bool async_depth_scaled = true;  // knobs.dd_async_depth_scaled
  bool async_depth_old_nr_requests = true;  // knobs.dd_async_depth_old_nr_requests
  // queue/nomerges=1 (QUEUE_FLAG_NOXMERGES): elv_merge tries only the
  // one-hit cache, q->last_merge, then gives up.
  bool noxmerges = false;
  uint32_t max_request_bytes = kMaxMergeBytes;  // the queue's max_sectors

  // From the host spec's iosched block (ms tunables) and knobs.
  static DeadlineConfig From(const host::IoschedTunables& iosched, const host::Knobs& knobs);
};

struct DeadlineStats {
  uint64_t inserted = 0;
  uint64_t merged = 0;
  uint64_t dispatched = 0;
  uint64_t completed = 0;
  uint64_t merge_skipped = 0;     // trylock failed
  uint64_t dispatch_skipped = 0;  // DD_DISPATCHING was set
  uint64_t bucket_inserts = 0;    // lists put on a bucket (dd->lock busy)
};

class DeadlineSched final : public Elevator {
 public:
  DeadlineSched(Kernel& kernel, const std::string& qname, const DeadlineConfig& config);
  DeadlineSched(const DeadlineSched&) = delete;
  DeadlineSched& operator=(const DeadlineSched&) = delete;

  // dd_bio_merge: back merge on the end-sector hash, front merge on the sort
  // tree.
  // dd_init_hctx / dd_depth_updated: the per-word depth writes may use
  // (knobs.dd_async_depth_scaled) and the sched tags' min_shallow_depth.
  void InitHctx(Hctx* hctx) override;
  // dd_limit_depth: writes (and discards) get async_depth; reads everything.
  uint32_t LimitDepth(const Bio& bio) override { return bio.op == ReqOp::kRead ? 0 : async_depth_; }
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

  size_t queued() const override { return queued_ + side_list_.size() + in_buckets_; }
  sim::SpinLock& lock() { return lock_; }
  sim::SpinLock& insert_lock() { return insert_lock_; }
  const DeadlineStats& stats() const { return stats_; }

 private:
  using SortKey = std::pair<uint64_t, uint64_t>;  // (sector, seq)
  using FifoKey = std::pair<int64_t, uint64_t>;   // (deadline, seq)
  static constexpr int kRtPrio = 0, kBePrio = 1, kIdlePrio = 2, kPrios = 3;  // enum dd_prio

  // struct dd_per_prio, and the lines its heads and stats live on.
  struct PerPrio {
    SortTree sort[2];
    sim::PooledMap<FifoKey, Request*> fifo[2];
    uint64_t latest_pos[2] = {0, 0};  // next expected sector per direction
    uint64_t inserted = 0;
    uint64_t completed = 0;
    sim::CacheLine* sort_line = nullptr;  // sort_list roots (and dispatch list)
    sim::CacheLine* fifo_line = nullptr;  // fifo_list heads, latest_pos, stats
    bool empty() const { return sort[0].empty() && sort[1].empty(); }
    uint64_t queued() const { return inserted > completed ? inserted - completed : 0; }  // dd_queued
  };
  // ioprio_class_to_prio: none and BE -> BE, RT -> RT, IDLE -> IDLE.
  static int PrioOf(uint8_t ioprio_class) {
    return ioprio_class == 1 ? kRtPrio : ioprio_class == 3 ? kIdlePrio : kBePrio;
  }
  static constexpr int kHashBuckets = 64;  // ELV_HASH_BITS = 6
  static constexpr int kHashBucketsPerLine = 8;
  static constexpr int kCpuBuckets = 32;  // DD_CPU_BUCKETS

  // struct dd_bucket_list: the list head on the lock's line.
  struct InsertBucket {
    InsertBucket(Kernel& kernel, const std::string& name);
    sim::SpinLock lock;
    RequestList list;
  };

  // The elevator hash bucket of an end sector (hash_64, ELV_HASH_BITS).
  static int HashBucket(uint64_t end_sector);
  // elv_rqhash_find's bucket walk for a back merge at `sector`.
  void ProbeHash(sim::AccessCost& ac, uint64_t sector);
  // elv_rqhash_add / elv_rqhash_del: the bucket line and the chain neighbour.
  void HashAdd(sim::AccessCost& ac, Request* rq);
  void HashDel(sim::AccessCost& ac, Request* rq);
  // The last_merge one-hit cache check (elv_merge, elv_attempt_insert_merge).
  void ProbeLastMerge(sim::AccessCost& ac);

  void DoInsert(sim::Cpu& cpu, Request* rq);   // REQUIRES: dd->lock held
  // dd_insert_to_bucket: true when the list went onto a bucket; false with
  // dd->lock held.
  sim::Task InsertToBucket(sim::Cpu& cpu, RequestList& list, bool* bucketed);
  // __dd_insert_requests under dd->lock: inserts `list`, then whatever
  // dd_dispatch_from_buckets collects, until both are empty.
  sim::Task InsertDrainingBuckets(sim::Cpu& cpu, RequestList& list);  // REQUIRES: dd->lock held
  // dd_dispatch_from_buckets: splices every non-empty bucket onto `list`.
  sim::Task CollectBuckets(sim::Cpu& cpu, RequestList& list);  // REQUIRES: dd->lock held
  Request* Choose(sim::Cpu& cpu);              // REQUIRES: dd->lock held
  // __dd_dispatch_request for one level: null when it has nothing, or when
  // its candidate was inserted after `latest_start`.
  Request* ChooseFrom(sim::Cpu& cpu, sim::AccessCost& ac, PerPrio& p, sim::SimTime latest_start);
  void Remove(sim::AccessCost& ac, Request* rq);  // REQUIRES: dd->lock held
  // Pricing of sort-tree node visits (dd_rb_node + a dependent load) and
  // link writes (a store to the node's line, or to the root in L1 for null).
  auto NodeReader(sim::AccessCost& ac) {
    return [this, &ac](Request* n, SortTree::Visit visit) {
      if (visit == SortTree::Visit::kColour) {
        ac.LoadIndependent(n->line);
        return;
      }
      ac.Work(kernel_.costs().dd_rb_node);
      ac.Load(n->line);
    };
  }
  auto NodeWriter(sim::AccessCost& ac, const PerPrio& p) {
    return [&ac, &p](Request* n) { ac.Store(n != nullptr ? n->line : *p.sort_line); };
  }
  // op_is_write: writes and discards are the write direction.
  static int Dir(const Request* rq) { return rq->op == ReqOp::kRead ? 0 : 1; }
  static uint64_t EndSector(const Request* rq) { return rq->sector + (rq->bytes >> kSectorShift); }

  Kernel& kernel_;
  DeadlineConfig config_;
  sim::SpinLock lock_;         // dd->lock
  sim::SpinLock insert_lock_;  // dd->insert_lock (side lists)
  sim::CacheLine rt_line_;        // L0
  sim::CacheLine be_sort_line_;   // L1
  sim::CacheLine be_fifo_line_;   // L2 (stats.completed too)
  sim::CacheLine idle_line_;      // L3
  sim::CacheLine state_line_;     // L4
  sim::CacheLine last_merge_line_;  // q->last_merge
  std::array<sim::CacheLine, kHashBuckets / kHashBucketsPerLine> hash_lines_;
  // dd->run_state (DD_DISPATCHING) and, right after it in the side-list
  // patch's layout, the at_head and at_tail list heads: one line that every
  // inserter's splice writes and every queue run's dispatch bit test reads.
  sim::CacheLine run_state_line_;
  std::array<PerPrio, kPrios> prio_;
  sim::PooledMap<SortKey, Request*> hash_;  // (end sector, seq): back-merge lookup
  std::array<std::vector<Request*>, kHashBuckets> buckets_;  // chain order: back = first
  Request* last_merge_ = nullptr;
  RequestList side_list_;
  std::vector<std::unique_ptr<InsertBucket>> cpu_buckets_;  // insert_buckets only
  size_t in_buckets_ = 0;
  bool inserting_ = false;  // DD_INSERTING
  bool buckets_set_ = false;  // DD_BUCKETS
  size_t queued_ = 0;
  uint32_t async_depth_ = 0;  // dd->async_depth (0 until InitHctx)
  uint64_t next_seq_ = 1;
  int last_dir_ = 0;
  int batching_ = 0;
  int starved_ = 0;
  bool dispatching_ = false;
  DeadlineStats stats_;
  sim::FnId fn_bio_merge_, fn_insert_, fn_dispatch_, fn_has_work_, fn_finish_;
};

// The registry entry (elevator.cc).
extern const ElevatorType kMqDeadlineElevator;

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SCHED_MQ_DEADLINE_H_
