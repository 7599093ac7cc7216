// The write side of the page cache (kernel: mm/page-writeback.c and the
// write half of mm/filemap.c): buffered writes dirtying pages, dirty
// throttling (balance_dirty_pages), writeback of a mapping's dirty pages,
// fsync and the flusher thread. The read side, readahead and mmap are in
// page_cache.cc.
#include "engine/model/page_cache.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "engine/model/page_cache_internal.h"
#include "engine/util/check.h"

namespace blklab::model {
namespace {

using page_cache_internal::kMaxBioPages;
using page_cache_internal::kNoMark;

// MAX_WRITEBACK_PAGES: one writeback chunk of a mapping.
constexpr uint64_t kWritebackChunkPages = 1024;

}  // namespace

void PageCache::MarkDirty(sim::Cpu& cpu, AddressSpace& m, uint32_t p) {
  Page& pg = pages_[p];
  if (pg.flags & kDirty) return;
  pg.flags |= kDirty;
  if (m.dirty.empty()) m.dirtied_when = cpu.now();
  m.dirty.insert(pg.index);
  ++nr_dirty_;
  ++stats_.pages_dirtied;
  cpu.Charge(fn_mark_dirty_, kernel_.costs().folio_mark_dirty + kernel_.WriteLine(cpu, m.i_pages));
}

sim::Task PageCache::Write(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes) {
  const host::CostTable& c = kernel_.costs();
  BLKLAB_DCHECK(bytes > 0 && pos + bytes <= m.size_bytes);
  sim::StackFrame frame(cpu, fn_write_);
  cpu.Charge(fn_write_, c.buffered_write_call);
  const uint64_t first = pos >> kPageShift;
  const uint64_t last = (pos + bytes - 1) >> kPageShift;
  for (uint64_t idx = first; idx <= last;) {
    cpu.Charge(fn_write_begin_, c.page_cache_lookup);
    const uint64_t lo = std::max(pos, idx << kPageShift);
    const uint64_t hi = std::min(pos + bytes, (idx + 1) << kPageShift);
    uint32_t p = Find(m, idx);
    if (p == kNone) {
      if (hi - lo < kPageBytes && (idx << kPageShift) < m.size_bytes) {
        // A partial write of a page not in the cache reads it first (a
        // page past i_size has nothing to read).
        co_await ReadPages(cpu, m, idx, 1, kNoMark);
        co_await cpu.Sync();
        continue;
      }
      p = AllocPage(cpu, m, idx);
      if (p == kNone) {
        co_await WaitForMemory(cpu);
        continue;
      }
      pages_[p].flags = kUptodate;
    }
    if ((pages_[p].flags & kUptodate) == 0) {
      co_await slots_[pages_[p].io]->waiters.IoWait(cpu);
      co_await cpu.Sync();
      continue;
    }
    cpu.Charge(fn_write_begin_, c.write_begin_end);
    cpu.Charge(fn_copy_from_, c.copy_user_per_kib * static_cast<int64_t>(hi - lo) / 1024);
    MarkDirty(cpu, m, p);
    LruRemove(p);
    LruPushFront(p);
    ++idx;
  }
  co_await BalanceDirtyPages(cpu);
}

sim::Task PageCache::BalanceDirtyPages(sim::Cpu& cpu) {
  if (nr_dirty_ > bg_thresh_) WakeFlusher(&cpu);
  if (nr_dirty_ + nr_writeback_ <= dirty_thresh_) co_return;
  sim::StackFrame frame(cpu, fn_balance_);
  const sim::SimTime start = cpu.now();
  ++stats_.dirty_throttle_waits;
  while (nr_dirty_ + nr_writeback_ > dirty_thresh_) {
    WakeFlusher(&cpu);
    co_await dirty_waiters_.IoWait(cpu);
    co_await cpu.Sync();
  }
  stats_.dirty_throttle_ns += cpu.now() - start;
}

sim::Task PageCache::WritePages(sim::Cpu& cpu, AddressSpace& m, uint64_t max_pages, bool all, uint64_t* written) {
  const host::CostTable& c = kernel_.costs();
  sim::StackFrame frame(cpu, fn_writepages_);
  // The dirty pages to write, from the writeback index on, wrapping.
  std::vector<uint64_t> todo;
  const uint64_t from = all ? 0 : m.writeback_index;
  for (auto it = m.dirty.lower_bound(from); it != m.dirty.end() && todo.size() < max_pages; ++it) todo.push_back(*it);
  for (auto it = m.dirty.begin(); it != m.dirty.end() && *it < from && todo.size() < max_pages; ++it) {
    todo.push_back(*it);
  }
  Plug plug;
  uint32_t cur = kNone;
  uint64_t n = 0;
  for (uint64_t idx : todo) {
    const uint32_t p = Find(m, idx);
    if (p == kNone || (pages_[p].flags & kDirty) == 0 || (pages_[p].flags & kWriteback) != 0) continue;
    pages_[p].flags = static_cast<uint8_t>((pages_[p].flags & ~kDirty) | kWriteback);
    if (pages_[p].mapcount > 0) MkcleanPage(cpu, p);  // folio_clear_dirty_for_io
    m.dirty.erase(idx);
    --nr_dirty_;
    ++m.nr_writeback;
    ++nr_writeback_;
    ++n;
    cpu.Charge(fn_writepages_, c.writeback_per_page);
    m.writeback_index = idx + 1;
    IoSlot* s = cur == kNone ? nullptr : slots_[cur].get();
    if (s == nullptr || s->npages == kMaxBioPages || s->first + s->npages != idx) {
      if (cur != kNone) co_await SubmitSlot(cpu, cur, &plug);
      cur = GetSlot();
      IoSlot& slot = *slots_[cur];
      slot.m = &m;
      slot.first = idx;
      slot.write = true;
    }
    ++slots_[cur]->npages;
  }
  if (cur != kNone) co_await SubmitSlot(cpu, cur, &plug);
  co_await RequestQueue::FlushPlug(cpu, &plug, false);
  if (written != nullptr) *written = n;
}

sim::Task PageCache::Fsync(sim::Cpu& cpu, AddressSpace& m) {
  sim::StackFrame frame(cpu, fn_fsync_);
  cpu.Charge(fn_fsync_, kernel_.costs().fsync_call);
  for (;;) {
    if (!m.dirty.empty()) co_await WritePages(cpu, m, ~uint64_t{0}, true, nullptr);
    co_await cpu.Sync();
    if (m.nr_writeback == 0 && m.dirty.empty()) break;
    if (m.nr_writeback > 0) {
      co_await m.writeback_waiters.IoWait(cpu);  // filemap_fdatawait
      co_await cpu.Sync();
    }
  }
}

void PageCache::Quiesce() {
  quiesced_ = true;
  periodic_.Cancel();
}

void PageCache::WakeFlusher(sim::Cpu* caller) {
  if (quiesced_) return;
  flusher_kicked_ = true;
  if (flusher_ == nullptr || !flusher_->sleeping()) return;
  if (caller != nullptr) caller->Charge(kernel_.fn.try_to_wake_up, kernel_.costs().try_to_wake_up);
  flusher_->Wake(caller != nullptr ? caller->now() : kernel_.machine().sim().Now());
}

sim::Task PageCache::FlushTimer::Handle(sim::Cpu& cpu, uint64_t) {
  cpu.Charge(pc_->kernel_.fn.hrtimer_interrupt, pc_->kernel_.costs().hrtimer_fire);
  pc_->WakeFlusher(&cpu);
  co_return;
}

AddressSpace* PageCache::NextWritebackMapping(bool expired_only, sim::SimTime now) {
  const int64_t expire_ns = int64_t{vm_.dirty_expire_centisecs} * 10 * sim::kNsPerMs;
  for (size_t k = 0; k < mappings_.size(); ++k) {
    AddressSpace& m = *mappings_[(next_mapping_ + k) % mappings_.size()];
    if (m.dirty.empty()) continue;
    if (expired_only && m.dirtied_when + expire_ns > now) continue;
    next_mapping_ = (next_mapping_ + k + 1) % mappings_.size();
    return &m;
  }
  return nullptr;
}

sim::Task PageCache::FlusherBody() {
  const int64_t period_ns = int64_t{vm_.dirty_writeback_centisecs} * 10 * sim::kNsPerMs;
  for (;;) {
    sim::Cpu& cpu = flusher_->on_cpu();
    co_await cpu.Sync();
    if (quiesced_) {
      co_await cpu.SleepMigratable();
      continue;
    }
    flusher_kicked_ = false;
    // wb_workfn: background writeback above the background limit, else the
    // periodic (kupdate) writeback of expired inodes.
    AddressSpace* m = NextWritebackMapping(/*expired_only=*/nr_dirty_ <= bg_thresh_, cpu.now());
    if (m != nullptr) {
      sim::StackFrame frame(cpu, fn_wb_workfn_);
      uint64_t written = 0;
      co_await WritePages(cpu, *m, kWritebackChunkPages, false, &written);
      co_await cpu.PreemptPoint();  // cond_resched between chunks
      if (written > 0) continue;
    }
    if (nr_dirty_ > 0 && period_ns > 0 && !periodic_.pending()) {
      periodic_.set_cpu(cpu.id());
      periodic_.Start(cpu.now() + period_ns);
    }
    if (flusher_kicked_ && m == nullptr) continue;
    co_await cpu.SleepMigratable();
  }
}

}  // namespace blklab::model
