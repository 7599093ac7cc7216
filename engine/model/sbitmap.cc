#include "engine/model/sbitmap.h"

#include <algorithm>

namespace blklab::model {

SbitmapQueue::SbitmapQueue(Kernel& kernel, uint32_t depth) : kernel_(kernel), depth_(depth), capacity_(depth) {
  BLKLAB_CHECK(depth > 0);
  // sbitmap_calculate_shift: 64 bits per word, fewer until >= 4 words.
  shift_ = 6;
  if (depth >= 4) {
    while ((4u << shift_) > depth) --shift_;
  }
  const uint32_t bits_per_word = 1u << shift_;
  const uint32_t nr_words = (depth + bits_per_word - 1) / bits_per_word;
  words_ = std::vector<Word>(nr_words);
  map_nr_ = nr_words;
  for (uint32_t i = 0; i < nr_words; ++i) {
    words_[i].depth = std::min(bits_per_word, depth - i * bits_per_word);
  }
  alloc_hint_.assign(kernel.machine().num_cpus(), 0);
  // Spread the initial hints like sbitmap_init_node's random hint, but
  // deterministically: CPU c starts at c * depth / ncpus.
  for (size_t c = 0; c < alloc_hint_.size(); ++c) {
    alloc_hint_[c] = static_cast<uint32_t>(c * depth / alloc_hint_.size());
  }
  wake_batch_ = CalcWakeBatch(depth);
  for (WaitState& ws : ws_) ws.wait_cnt = static_cast<int>(wake_batch_);
}

uint32_t SbitmapQueue::CalcWakeBatch(uint32_t depth) const {
  // sbq_calc_wake_batch: the bits an allocation limited to
  // min_shallow_depth per word can use, over the wait queues.
  const uint32_t word = 1u << shift_;
  const uint32_t shallow = std::min(word, min_shallow_depth_);
  const uint32_t usable = (depth >> shift_) * shallow + std::min(depth & (word - 1), shallow);
  return std::clamp<uint32_t>(usable / kSbqWaitQueues, 1, kSbqWakeBatch);
}

void SbitmapQueue::SetMinShallowDepth(uint32_t min_shallow_depth) {
  min_shallow_depth_ = min_shallow_depth;
  UpdateWakeBatch();
}

void SbitmapQueue::UpdateWakeBatch() {
  // sbitmap_queue_update_wake_batch: a new batch size restarts every wait
  // queue's count at 1, so that the next free wakes a sleeper (a count left
  // at a larger old batch would wait for frees that shallow allocations can
  // never make).
  const uint32_t batch = CalcWakeBatch(depth_);
  if (batch == wake_batch_) return;
  wake_batch_ = batch;
  for (WaitState& ws : ws_) ws.wait_cnt = 1;
}

int SbitmapQueue::FindInWord(Word& w, uint32_t hint, uint32_t shallow_depth) const {
  const uint32_t depth = shallow_depth > 0 ? std::min(w.depth, shallow_depth) : w.depth;
  const uint64_t mask = depth == 64 ? ~uint64_t{0} : ((uint64_t{1} << depth) - 1);
  uint64_t free_bits = ~w.word & mask;
  if (free_bits == 0) return -1;
  const uint64_t from_hint = hint < 64 ? free_bits & (~uint64_t{0} << hint) : 0;
  if (from_hint != 0) return __builtin_ctzll(from_hint);
  return __builtin_ctzll(free_bits);
}

int SbitmapQueue::Get(sim::Cpu& cpu, uint32_t shallow_depth) {
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  uint32_t hint = alloc_hint_[cpu.id()];
  if (hint >= depth_) hint = 0;
  const uint32_t nr_words = map_nr_;
  uint32_t index = hint >> shift_;
  uint32_t bit_hint = hint & ((1u << shift_) - 1);
  int64_t cost = 0;
  int result = -1;
  for (uint32_t i = 0; i < nr_words; ++i) {
    Word& w = words_[index];
    int bit = FindInWord(w, bit_hint, shallow_depth);
    if (bit < 0 && w.cleared != 0) {
      // sbitmap_deferred_clear: fold the cleared mask back into the word.
      cost += w.cleared_line.Write(m, cpu.id(), c.atomic_local);
      cost += w.word_line.Write(m, cpu.id(), c.atomic_local);
      busy_ -= __builtin_popcountll(w.cleared);
      w.word &= ~w.cleared;
      w.cleared = 0;
      bit = FindInWord(w, bit_hint, shallow_depth);
    }
    if (bit >= 0) {
      cost += w.word_line.Write(m, cpu.id(), c.sbitmap_get);
      w.word |= uint64_t{1} << bit;
      ++busy_;
      result = static_cast<int>((index << shift_) + bit);
      break;
    }
    cost += w.word_line.Read(m, cpu.id(), c.line_read_hit);
    bit_hint = 0;
    index = index + 1 == nr_words ? 0 : index + 1;
  }
  if (result >= 0 && static_cast<uint32_t>(result) == hint) {
    alloc_hint_[cpu.id()] = static_cast<uint32_t>(result) + 1 >= depth_ ? 0 : result + 1;
  }
  cpu.Charge(kernel_.fn.sbitmap_queue_get, cost);
  return result;
}

uint32_t SbitmapQueue::GetBatch(sim::Cpu& cpu, uint32_t nr, uint32_t* out) {
  const sim::Machine& m = kernel_.machine();
  const auto& c = kernel_.costs();
  uint32_t hint = alloc_hint_[cpu.id()];
  if (hint >= depth_) hint = 0;
  const uint32_t nr_words = map_nr_;
  uint32_t index = hint >> shift_;
  int64_t cost = 0;
  uint32_t got = 0;
  for (uint32_t i = 0; i < nr_words && got == 0; ++i) {
    Word& w = words_[index];
    if (w.cleared != 0) {
      cost += w.cleared_line.Write(m, cpu.id(), c.atomic_local);
      busy_ -= __builtin_popcountll(w.cleared);
      w.word &= ~w.cleared;
      w.cleared = 0;
    }
    const uint64_t mask = w.depth == 64 ? ~uint64_t{0} : ((uint64_t{1} << w.depth) - 1);
    const uint64_t free_bits = ~w.word & mask;
    if (free_bits != 0) {
      const uint32_t first = static_cast<uint32_t>(__builtin_ctzll(free_bits));
      const uint32_t take = std::min(nr, w.depth - first);
      cost += w.word_line.Write(m, cpu.id(), c.sbitmap_get);
      for (uint32_t b = first; b < first + take; ++b) {
        if (w.word & (uint64_t{1} << b)) continue;  // fetch_or: bits already set are not ours
        w.word |= uint64_t{1} << b;
        ++busy_;
        out[got++] = (index << shift_) + b;
        cost += c.sbitmap_get_batch_per_tag;
      }
    } else {
      cost += w.word_line.Read(m, cpu.id(), c.line_read_hit);
    }
    index = index + 1 == nr_words ? 0 : index + 1;
  }
  if (got > 0) alloc_hint_[cpu.id()] = out[got - 1] + 1 >= depth_ ? 0 : out[got - 1] + 1;
  cpu.Charge(kernel_.fn.sbitmap_queue_get, cost);
  return got;
}

void SbitmapQueue::Clear(sim::Cpu& cpu, uint32_t bit, bool bulk) {
  const sim::Machine& m = kernel_.machine();
  Word& w = words_[bit >> shift_];
  const uint64_t b = uint64_t{1} << (bit & ((1u << shift_) - 1));
  BLKLAB_CHECK((w.word & b) && !(w.cleared & b));
  const int64_t op_ns = bulk ? kernel_.costs().sbitmap_clear_bulk_per_tag : kernel_.costs().sbitmap_clear;
  int64_t cost;
  if (kernel_.knobs().sbitmap_deferred_clear) {
    // 4.20+: the bit goes to the word's `cleared` mask (its own line).
    w.cleared |= b;
    cost = w.cleared_line.Write(m, cpu.id(), op_ns);
  } else {
    // Before: clear_bit on the allocation word itself, the line every
    // allocator of that word writes.
    w.word &= ~b;
    --busy_;
    cost = w.word_line.Write(m, cpu.id(), op_ns);
  }
  alloc_hint_[cpu.id()] = bit;
  cpu.Charge(kernel_.fn.sbitmap_queue_clear, cost);
  if (ws_active_ > 0) WakeUp(cpu);
}

void SbitmapQueue::WakeUp(sim::Cpu& cpu) {
  const sim::Machine& m = kernel_.machine();
  // sbq_wake_ptr: the first wait queue with sleepers from wake_index.
  for (int i = 0; i < kSbqWaitQueues; ++i) {
    WaitState& ws = ws_[(wake_index_ + i) % kSbqWaitQueues];
    if (ws.wait.empty() && ws.entries.empty()) continue;
    cpu.Charge(kernel_.fn.sbitmap_queue_clear, ws.line.Write(m, cpu.id(), kernel_.costs().atomic_local));
    if (--ws.wait_cnt > 0) return;
    ws.wait_cnt = static_cast<int>(wake_batch_);
    wake_index_ = (wake_index_ + i + 1) % kSbqWaitQueues;
    // wake_up_nr: every non-exclusive entry, then up to wake_batch sleepers.
    while (!ws.entries.empty()) {
      SbqWaiter* w = ws.entries.front();
      ws.entries.pop_front();
      w->ws_ = -1;
      --ws_active_;
      ++wakeups_;
      w->SbqWake(cpu);
    }
    for (uint32_t n = 0; n < wake_batch_; ++n) {
      cpu.Charge(kernel_.fn.try_to_wake_up, kernel_.costs().try_to_wake_up);
      if (!ws.wait.WakeOne(cpu.now())) break;
      ++wakeups_;
      kernel_.Count(Counter::k_tag_wakeup);
    }
    return;
  }
}

bool SbitmapQueue::AnyBitSet(sim::Cpu& cpu) {
  const sim::Machine& m = kernel_.machine();
  int64_t cost = 0;
  bool any = false;
  for (uint32_t i = 0; i < map_nr_; ++i) {
    Word& w = words_[i];
    cost += std::max<int64_t>(w.word_line.Read(m, cpu.id(), kernel_.costs().sbitmap_any_bit_set_per_word),
                              kernel_.costs().sbitmap_any_bit_set_per_word);
    if ((w.word & ~w.cleared) != 0) {
      any = true;
      break;
    }
  }
  cpu.Charge(kernel_.fn.sbitmap_any_bit_set, cost);
  return any;
}

void SbitmapQueue::AddWaitQueue(sim::Cpu& cpu, SbqWaiter* w, uint32_t& wait_index) {
  BLKLAB_CHECK(!w->queued());
  const int q = static_cast<int>(wait_index % kSbqWaitQueues);
  wait_index = (wait_index + 1) % kSbqWaitQueues;
  WaitState& ws = ws_[q];
  // atomic_inc(&sbq->ws_active) and add_wait_queue under ws->wait.lock.
  cpu.Charge(kernel_.fn.sbitmap_queue_get, ws.line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  ws.entries.push_back(w);
  w->ws_ = q;
  ++ws_active_;
}

void SbitmapQueue::DelWaitQueue(sim::Cpu& cpu, SbqWaiter* w) {
  if (!w->queued()) return;
  WaitState& ws = ws_[w->ws_];
  cpu.Charge(kernel_.fn.sbitmap_queue_get, ws.line.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  for (auto it = ws.entries.begin(); it != ws.entries.end(); ++it) {
    if (*it == w) {
      ws.entries.erase(it);
      break;
    }
  }
  w->ws_ = -1;
  --ws_active_;
}

void SbitmapQueue::Resize(sim::Cpu& cpu, uint32_t depth) {
  BLKLAB_CHECK(depth > 0 && depth <= capacity_);
  const sim::Machine& m = kernel_.machine();
  int64_t cost = 0;
  // sbitmap_resize: sbitmap_deferred_clear on every word, then the depth.
  for (uint32_t i = 0; i < map_nr_; ++i) {
    Word& w = words_[i];
    if (w.cleared == 0) continue;
    cost += w.cleared_line.Write(m, cpu.id(), kernel_.costs().atomic_local);
    cost += w.word_line.Write(m, cpu.id(), kernel_.costs().atomic_local);
    busy_ -= __builtin_popcountll(w.cleared);
    w.word &= ~w.cleared;
    w.cleared = 0;
  }
  const uint32_t bits_per_word = 1u << shift_;
  depth_ = depth;
  map_nr_ = (depth + bits_per_word - 1) / bits_per_word;
  for (uint32_t i = 0; i < words_.size(); ++i) {
    words_[i].depth = i < map_nr_ ? std::min(bits_per_word, depth - i * bits_per_word) : 0;
  }
  UpdateWakeBatch();
  cpu.Charge(kernel_.fn.sbitmap_queue_clear, cost);
}

sim::WaitQueue& SbitmapQueue::NextWaitQueue(uint32_t& wait_index) {
  sim::WaitQueue& wq = ws_[wait_index % kSbqWaitQueues].wait;
  wait_index = (wait_index + 1) % kSbqWaitQueues;
  return wq;
}

}  // namespace blklab::model
