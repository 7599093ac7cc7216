// engine/model/sbitmap.h
//
// SbitmapQueue models lib/sbitmap.c's sbitmap_queue, the tag allocator of
// blk-mq (docs/kernel-model.md §3.3): `depth` bits split into words of
// 2^shift bits (64, lowered until there are at least 4 words), each word and
// its `cleared` mask on their own cachelines; a per-CPU allocation hint;
// deferred clear (a freed bit goes to `cleared` and is folded back into the
// word only when an allocation finds the word full; knob
// sbitmap_deferred_clear, 4.20+; without it a free clears the bit in the
// word, on the allocators' line); and 8 wait queues with
// batched wake-ups (`wake_batch` = clamp(depth/8, 1, 8)) for sleeping threads
// and for entries with their own wake function (SbqWaiter). Resize changes
// the depth in place (kyber's domain tokens).
//
// Invariants: a bit is allocated at most once; busy() = set bits not yet
//  cleared; every sleeper on a wait queue is woken by some later Clear as
//  long as frees continue (batches of wake_batch per queue).
// Thread-safety: thread-compatible; callers Sync() before Get/Clear because
//  the words are shared state.
// Cost: O(words scanned) per Get, O(1) per Clear plus wake-ups.
#ifndef BLKLAB_ENGINE_MODEL_SBITMAP_H_
#define BLKLAB_ENGINE_MODEL_SBITMAP_H_

#include <cstdint>
#include <deque>
#include <vector>

#include "engine/model/kernel.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/waitqueue.h"

namespace blklab::model {

inline constexpr int kSbqWaitQueues = 8;
inline constexpr int kSbqWakeBatch = 8;

// A wait-queue entry with its own wake function (struct sbq_wait queued with
// sbitmap_add_wait_queue, e.g. kyber's domain_wait): a wake-up takes it off
// the queue and calls SbqWake instead of waking a thread. Such entries are
// non-exclusive: one batch wake-up runs all of them on that queue.
class SbqWaiter {
 public:
  virtual ~SbqWaiter() = default;
  // Runs on the CPU that freed the bit. The entry is already off the queue.
  virtual void SbqWake(sim::Cpu& cpu) = 0;
  bool queued() const { return ws_ >= 0; }

 private:
  friend class SbitmapQueue;
  int ws_ = -1;  // the wait queue it is on, or -1
};

class SbitmapQueue {
 public:
  SbitmapQueue(Kernel& kernel, uint32_t depth);
  SbitmapQueue(const SbitmapQueue&) = delete;
  SbitmapQueue& operator=(const SbitmapQueue&) = delete;

  // __sbitmap_queue_get: a free bit, or -1 when none. Charges the CPU.
  // With `shallow_depth` > 0 (__sbitmap_queue_get_shallow, v6.6 semantics)
  // only the first shallow_depth bits of each word may be taken.
  int Get(sim::Cpu& cpu, uint32_t shallow_depth = 0);
  // __sbitmap_queue_get_batch: up to `nr` contiguous free bits of one word
  // with one atomic; returns how many were taken (into out[0..]).
  uint32_t GetBatch(sim::Cpu& cpu, uint32_t nr, uint32_t* out);
  // sbitmap_queue_clear: frees `bit` (deferred) and runs wake-up accounting.
  // `bulk`: part of a batched put (blk_mq_put_tags), priced per tag.
  void Clear(sim::Cpu& cpu, uint32_t bit, bool bulk = false);
  // sbitmap_any_bit_set: scans words until one has a bit set that is not
  // cleared; charges per word.
  bool AnyBitSet(sim::Cpu& cpu);
  // What reading word `w`'s line costs `cpu` (sbitmap_for_each_set).
  int64_t ReadWordCost(sim::Cpu& cpu, int w, int64_t hit_ns) {
    return words_[w].word_line.Read(kernel_.machine(), cpu.id(), hit_ns);
  }
  // Bits per word (the last word may use fewer).
  uint32_t bits_per_word() const { return 1u << shift_; }
  int shift() const { return shift_; }

  // Wait-queue side (bt_wait_ptr / sbitmap_prepare_to_wait / finish_wait).
  sim::WaitQueue& NextWaitQueue(uint32_t& wait_index);
  void PrepareToWait() { ++ws_active_; }
  void FinishWait() { --ws_active_; }
  // sbitmap_add_wait_queue on the queue sbq_wait_ptr picks (`wait_index`
  // rotates) / sbitmap_del_wait_queue. REQUIRES: Synced.
  void AddWaitQueue(sim::Cpu& cpu, SbqWaiter* w, uint32_t& wait_index);
  void DelWaitQueue(sim::Cpu& cpu, SbqWaiter* w);

  // sbitmap_queue_resize: `depth` bits from now on (words keep their width;
  // the cleared masks are folded first; bits in use beyond the new depth
  // stay in use until freed); the wake batch follows the depth.
  void Resize(sim::Cpu& cpu, uint32_t depth);

  // sbitmap_queue_min_shallow_depth: the smallest shallow depth any
  // allocation will ask for; the wake batch is computed over the bits such
  // allocations can reach (sbq_calc_wake_batch), so that a sleeper is woken
  // before all of them are freed.
  void SetMinShallowDepth(uint32_t min_shallow_depth);

  uint32_t depth() const { return depth_; }
  uint32_t capacity() const { return capacity_; }  // the depth it was built with
  uint32_t busy() const { return busy_; }
  uint32_t wake_batch() const { return wake_batch_; }
  int words() const { return static_cast<int>(words_.size()); }
  uint64_t wakeups() const { return wakeups_; }

 private:
  struct Word {
    uint64_t word = 0;
    uint64_t cleared = 0;
    uint32_t depth = 0;  // bits used in this word
    sim::CacheLine word_line;
    sim::CacheLine cleared_line;
  };
  struct WaitState {
    int wait_cnt = 0;
    sim::WaitQueue wait;
    sim::PooledDeque<SbqWaiter*> entries;  // non-exclusive entries with a wake function
    sim::CacheLine line;
  };
  int FindInWord(Word& w, uint32_t hint, uint32_t shallow_depth = 0) const;
  uint32_t CalcWakeBatch(uint32_t depth) const;
  void UpdateWakeBatch();
  void WakeUp(sim::Cpu& cpu);

  Kernel& kernel_;
  uint32_t depth_;
  uint32_t capacity_;
  uint32_t map_nr_;  // words in use (sb->map_nr)
  int shift_;
  uint32_t busy_ = 0;
  uint32_t wake_batch_;
  uint32_t min_shallow_depth_ = UINT32_MAX;
  uint32_t wake_index_ = 0;
  int ws_active_ = 0;
  uint64_t wakeups_ = 0;
  std::vector<Word> words_;
  std::vector<uint32_t> alloc_hint_;  // per CPU
  WaitState ws_[kSbqWaitQueues];
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SBITMAP_H_
