// engine/model/tag_set.h
//
// Tags and TagSet model block/blk-mq-tag.c (docs/kernel-model.md §3.1, §3.3):
// a Tags object is one tag space (an SbitmapQueue over `nr_tags` bits, the
// tag -> request map `rqs[]`, the preallocated requests `static_rqs`, and
// `tags->lock`). A TagSet is what a driver registers (blk_mq_tag_set): the
// number of hardware queues, their depth, flags, the CPU -> hardware queue
// map, and one Tags per hardware queue (or one shared Tags for the whole set
// with BLK_MQ_F_TAG_HCTX_SHARED).
//
// Invariants: rqs[tag] is set exactly while the tag is allocated;
//  static_rqs are never reallocated (requests are referred to by pointer);
//  the line of rqs[] holding a slot was last written by the CPU that last
//  set that slot or a neighbour (eight pointers to a 64-byte line).
// Thread-safety: thread-compatible.
// Cost: construction allocates `nr_tags` requests once; per I/O, SetRq's
//  line store.
#ifndef BLKLAB_ENGINE_MODEL_TAG_SET_H_
#define BLKLAB_ENGINE_MODEL_TAG_SET_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/sbitmap.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/spinlock.h"

namespace blklab::model {

class RequestQueue;

class Hctx;

class Tags {
 public:
  Tags(Kernel& kernel, std::string name, uint32_t nr_tags);

  SbitmapQueue& bitmap_tags() { return bitmap_tags_; }
  uint32_t nr_tags() const { return nr_tags_; }
  Request* static_rq(uint32_t tag) { return &static_rqs_[tag]; }
  Request* rq(uint32_t tag) const { return rqs_[tag]; }
  // tags->rqs[tag] = rq by `cpu`: a store, so the line moves to `cpu`
  // without stalling it (the next reader elsewhere pays the transfer).
  void SetRq(sim::Cpu& cpu, uint32_t tag, Request* rq);
  // The slot is dropped when the tag is freed. The kernel leaves the stale
  // pointer (blk_mq_find_and_get_req checks rq->tag and the reference):
  // no store, so the line stays where it is.
  void ClearRq(uint32_t tag) { rqs_[tag] = nullptr; }
  // The cache line of rqs[] that holds `tag`'s slot.
  sim::CacheLine& rqs_line(uint32_t tag) { return rqs_lines_[tag / kRqsPerLine]; }
  sim::SpinLock& lock() { return lock_; }
  // Scheduler tags: static requests carry internal_tag = index, tag = none.
  void InitAsSchedTags();

  // Fair sharing (TAG_QUEUE_SHARED): users marked active (tags->active_queues).
  int active_queues = 0;
  sim::CacheLine active_queues_line;
  // blk_mq_dispatch_wake: hctxs waiting on this tag space for a driver tag.
  sim::PooledDeque<Hctx*> dispatch_waiters;

 private:
  uint32_t nr_tags_;
  SbitmapQueue bitmap_tags_;
  std::vector<Request> static_rqs_;

  static constexpr uint32_t kRqsPerLine = 8;

  Kernel& kernel_;
  std::vector<Request*> rqs_;
  std::vector<sim::CacheLine> rqs_lines_;
  sim::SpinLock lock_;
};

struct TagSetConfig {
  uint32_t nr_hw_queues = 1;    // default-map queues
  uint32_t nr_poll_queues = 0;  // HCTX_TYPE_POLL queues, after the default ones
  uint32_t queue_depth = 64;
  bool blocking = false;        // BLK_MQ_F_BLOCKING
  bool hctx_shared = false;     // BLK_MQ_F_TAG_HCTX_SHARED (one Tags for all hctx)
  // Per CPU: its default-map queue and its poll-map queue (0-based within
  // the poll queues), as the driver's map_queues sets them (NVMe: the
  // managed-IRQ spread, GroupCpusEvenly). Empty: blk_mq_map_queues'
  // contiguous split.
  std::vector<uint32_t> mq_map;
  std::vector<uint32_t> poll_map;
};

// group_cpus_evenly (lib/group_cpus.c, the managed-IRQ spread): CPU ->
// group for `nr_groups` groups. Groups are apportioned to NUMA nodes by CPU
// count (at least one each; whole nodes round robin when there are fewer
// groups than nodes); inside a node each group takes an equal share of CPUs
// in ascending id order, the first groups one more, and a CPU's SMT
// siblings join its group.
std::vector<uint32_t> GroupCpusEvenly(const sim::Machine& machine, uint32_t nr_groups);

class TagSet {
 public:
  TagSet(Kernel& kernel, std::string name, const TagSetConfig& config);

  const TagSetConfig& config() const { return config_; }
  // All hardware queues, default and poll (q->nr_hw_queues).
  uint32_t nr_hw_queues() const { return config_.nr_hw_queues + config_.nr_poll_queues; }
  // blk_mq_map_queues: the hardware queue that CPU `cpu` submits to, in the
  // default map or (polled I/O) the poll map.
  uint32_t MapQueue(int cpu, bool polled = false) const {
    return polled && config_.nr_poll_queues > 0 ? poll_map_[cpu] : mq_map_[cpu];
  }
  Tags& tags(uint32_t hctx) { return *tags_[config_.hctx_shared ? 0 : hctx]; }
  const Tags& tags(uint32_t hctx) const { return *tags_[config_.hctx_shared ? 0 : hctx]; }
  // Number of request queues using this set (> 1 means TAG_QUEUE_SHARED).
  int nr_queues() const { return static_cast<int>(queues_.size()); }
  // set->tag_list, in the order the queues joined.
  const std::vector<RequestQueue*>& queues() const { return queues_; }
  void AddQueue(RequestQueue* q) { queues_.push_back(q); }

 private:
  TagSetConfig config_;
  std::vector<uint32_t> mq_map_;
  std::vector<uint32_t> poll_map_;
  std::vector<std::unique_ptr<Tags>> tags_;
  std::vector<RequestQueue*> queues_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_TAG_SET_H_
