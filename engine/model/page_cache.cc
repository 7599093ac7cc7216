#include "engine/model/page_cache.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/model/page_cache_internal.h"
#include "engine/util/check.h"

namespace blklab::model {
namespace {

using page_cache_internal::kMaxBioPages;
using page_cache_internal::kNoMark;

// fault_around_bytes (64 KiB) in pages.
constexpr uint64_t kFaultAroundPages = 16;
// MMAP_LOTSAMISS: past this many misses a fault reads its page alone.
constexpr uint32_t kMmapLotsamiss = 100;

uint64_t RoundUpPow2(uint64_t v) {
  uint64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// get_init_ra_size: the first window of a sequential stream.
uint64_t InitRaSize(uint64_t size, uint64_t max) {
  uint64_t n = RoundUpPow2(size);
  if (n <= max / 32) return n * 4;
  if (n <= max / 4) return n * 2;
  return max;
}

// get_next_ra_size: the window after `cur`.
uint64_t NextRaSize(uint64_t cur, uint64_t max) {
  if (cur < max / 16) return 4 * cur;
  if (cur <= max / 2) return 2 * cur;
  return max;
}

}  // namespace

FileRaState OpenRaState(const AddressSpace& m, Fadvise advice) {
  FileRaState ra;
  ra.ra_pages = m.ra_pages;
  if (advice == Fadvise::kSequential) ra.ra_pages = m.ra_pages * 2;
  ra.random = advice == Fadvise::kRandom;
  return ra;
}

namespace {
uint32_t RaPages(const FileRaState& ra, const AddressSpace& m) {
  return ra.ra_pages == FileRaState::kMappingRaPages ? m.ra_pages : ra.ra_pages;
}
}  // namespace

PageCache::PageCache(Kernel& kernel, const host::VmSpec& vm) : kernel_(kernel), vm_(vm) {
  capacity_ = uint64_t(vm.memory_mib) << (20 - kPageShift);
  dirty_thresh_ = std::max<uint64_t>(1, capacity_ * static_cast<uint64_t>(vm.dirty_ratio) / 100);
  bg_thresh_ = capacity_ * static_cast<uint64_t>(vm.dirty_background_ratio) / 100;
  // domain_dirty_limits: a background limit at or above the limit is halved.
  if (bg_thresh_ >= dirty_thresh_) bg_thresh_ = dirty_thresh_ / 2;
  fn_filemap_read_ = kernel.Intern("filemap_read");
  fn_sync_ra_ = kernel.Intern("page_cache_sync_ra");
  fn_async_ra_ = kernel.Intern("page_cache_async_ra");
  fn_read_pages_ = kernel.Intern("read_pages");
  fn_copy_to_ = kernel.Intern("copy_page_to_iter");
  fn_copy_from_ = kernel.Intern("copy_page_from_iter_atomic");
  fn_write_ = kernel.Intern("generic_perform_write");
  fn_write_begin_ = kernel.Intern("ext4_da_write_begin");
  fn_mark_dirty_ = kernel.Intern("__folio_mark_dirty");
  fn_balance_ = kernel.Intern("balance_dirty_pages");
  fn_writepages_ = kernel.Intern("write_cache_pages");
  fn_end_read_ = kernel.Intern("mpage_end_io");
  fn_end_wb_ = kernel.Intern("folio_end_writeback");
  fn_reclaim_ = kernel.Intern("shrink_folio_list");
  fn_invalidate_ = kernel.Intern("invalidate_mapping_pages");
  fn_fsync_ = kernel.Intern("file_write_and_wait_range");
  fn_wb_workfn_ = kernel.Intern("wb_workfn");
  fn_add_folio_ = kernel.Intern("filemap_add_folio");
  fn_fault_ = kernel.Intern("asm_exc_page_fault");
  fn_filemap_fault_ = kernel.Intern("filemap_fault");
  fn_map_pages_ = kernel.Intern("filemap_map_pages");
  fn_mkwrite_ = kernel.Intern("ext4_page_mkwrite");
  fn_unmap_ = kernel.Intern("try_to_unmap");
  fn_mkclean_ = kernel.Intern("folio_mkclean");
  fn_zap_ = kernel.Intern("zap_pte_range");
  periodic_.Init(&kernel.machine(), 0, &flush_timer_, 0);
}

PageCache::~PageCache() = default;

AddressSpace* PageCache::AddMapping(std::string name, RequestQueue* queue, uint64_t base_bytes, uint64_t size_bytes,
                                    uint32_t read_ahead_kb) {
  auto m = std::make_unique<AddressSpace>();
  m->id = static_cast<uint32_t>(mappings_.size());
  m->name = std::move(name);
  m->queue = queue;
  m->base_bytes = base_bytes;
  m->size_bytes = size_bytes;
  m->ra_pages = read_ahead_kb / 4;
  mappings_.push_back(std::move(m));
  return mappings_.back().get();
}

void PageCache::Start(int cpu) {
  sim::Machine& machine = kernel_.machine();
  flusher_ = std::make_unique<sim::Thread>(machine, "kworker/u:flush", cpu);
  std::vector<int> all(static_cast<size_t>(machine.num_cpus()));
  for (int i = 0; i < machine.num_cpus(); ++i) all[static_cast<size_t>(i)] = i;
  flusher_->set_cpus_allowed(std::move(all));  // an unbound workqueue's worker
  flusher_->Start(FlusherBody(), 0);
}

uint32_t PageCache::Find(const AddressSpace& m, uint64_t index) const {
  auto it = index_.find(Key(m.id, index));
  return it == index_.end() ? kNone : it->second;
}

void PageCache::LruRemove(uint32_t p) {
  Page& pg = pages_[p];
  if (pg.lru_prev != kNone) pages_[pg.lru_prev].lru_next = pg.lru_next;
  else lru_head_ = pg.lru_next;
  if (pg.lru_next != kNone) pages_[pg.lru_next].lru_prev = pg.lru_prev;
  else lru_tail_ = pg.lru_prev;
  pg.lru_prev = pg.lru_next = kNone;
}

void PageCache::LruPushFront(uint32_t p) {
  Page& pg = pages_[p];
  pg.lru_prev = kNone;
  pg.lru_next = lru_head_;
  if (lru_head_ != kNone) pages_[lru_head_].lru_prev = p;
  lru_head_ = p;
  if (lru_tail_ == kNone) lru_tail_ = p;
}

void PageCache::FreePage(uint32_t p) {
  BLKLAB_DCHECK(pages_[p].mapcount == 0);
  index_.erase(Key(pages_[p].mapping, pages_[p].index));
  LruRemove(p);
  pages_[p].flags = 0;
  free_pages_.push_back(p);
}

uint32_t PageCache::AllocPage(sim::Cpu& cpu, AddressSpace& m, uint64_t index) {
  const host::CostTable& c = kernel_.costs();
  uint32_t p = kNone;
  if (index_.size() >= capacity_) {
    // Direct reclaim: the oldest clean, idle page; busy ones rotate to the
    // front (each at most once per scan).
    const size_t limit = index_.size();
    uint32_t q = lru_tail_;
    for (size_t scanned = 0; q != kNone && scanned < limit; ++scanned) {
      const uint32_t prev = pages_[q].lru_prev;
      if ((pages_[q].flags & (kDirty | kWriteback | kLocked)) == 0) {
        if (pages_[q].mapcount == 0) {
          p = q;
          break;
        }
        // folio_referenced: a mapped page used since the last look is
        // kept (activated); otherwise its entries go first.
        if ((pages_[q].flags & kReferenced) == 0) {
          UnmapPage(cpu, q);
          p = q;
          break;
        }
        pages_[q].flags &= static_cast<uint8_t>(~kReferenced);
      }
      LruRemove(q);
      LruPushFront(q);
      q = prev;
    }
    if (p == kNone) return kNone;
    cpu.Charge(fn_reclaim_, c.page_reclaim);
    ++stats_.pages_reclaimed;
    FreePage(p);
  }
  if (!free_pages_.empty()) {
    p = free_pages_.back();
    free_pages_.pop_back();
  } else {
    p = static_cast<uint32_t>(pages_.size());
    pages_.emplace_back();
  }
  Page& pg = pages_[p];
  pg = Page{};
  pg.index = index;
  pg.mapping = m.id;
  index_.emplace(Key(m.id, index), p);
  LruPushFront(p);
  cpu.Charge(fn_add_folio_, c.page_cache_add + kernel_.WriteLine(cpu, m.i_pages));
  stats_.peak_pages = std::max<uint64_t>(stats_.peak_pages, index_.size());
  return p;
}

uint32_t PageCache::GetSlot() {
  uint32_t s;
  if (!free_slots_.empty()) {
    s = free_slots_.back();
    free_slots_.pop_back();
  } else {
    s = static_cast<uint32_t>(slots_.size());
    slots_.push_back(std::make_unique<IoSlot>());
  }
  IoSlot& slot = *slots_[s];
  slot.bio = Bio{};
  slot.bio.owner = this;
  slot.bio.cookie = s;
  slot.npages = 0;
  return s;
}

sim::Task PageCache::WaitForMemory(sim::Cpu& cpu) {
  WakeFlusher(&cpu);
  co_await memory_waiters_.IoWait(cpu);
  co_await cpu.Sync();
}

sim::Task PageCache::ReadPages(sim::Cpu& cpu, AddressSpace& m, uint64_t start, uint64_t n, uint64_t mark) {
  const host::CostTable& c = kernel_.costs();
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t end = std::min(start + n, eof);
  if (start >= end) co_return;
  sim::StackFrame frame(cpu, fn_read_pages_);
  cpu.Charge(fn_read_pages_, c.readahead_submit);
  Plug plug;
  uint32_t cur = kNone;
  for (uint64_t i = start; i < end;) {
    if (Find(m, i) != kNone) {  // already cached: the batch so far goes
      if (cur != kNone) {
        co_await SubmitSlot(cpu, cur, &plug);
        cur = kNone;
      }
      ++i;
      continue;
    }
    const uint32_t p = AllocPage(cpu, m, i);
    if (p == kNone) {
      if (cur != kNone) {
        co_await SubmitSlot(cpu, cur, &plug);
        cur = kNone;
      }
      co_await RequestQueue::FlushPlug(cpu, &plug, false);
      co_await WaitForMemory(cpu);
      continue;
    }
    if (cur == kNone || slots_[cur]->npages == kMaxBioPages) {
      if (cur != kNone) co_await SubmitSlot(cpu, cur, &plug);
      cur = GetSlot();
      IoSlot& s = *slots_[cur];
      s.m = &m;
      s.first = i;
      s.write = false;
    }
    pages_[p].flags = static_cast<uint8_t>(kLocked | (i == mark ? kReadahead : 0));
    pages_[p].io = cur;
    ++slots_[cur]->npages;
    ++stats_.read_misses;
    ++i;
  }
  if (cur != kNone) co_await SubmitSlot(cpu, cur, &plug);
  co_await RequestQueue::FlushPlug(cpu, &plug, false);
}

sim::Task PageCache::SubmitSlot(sim::Cpu& cpu, uint32_t s, Plug* plug) {
  IoSlot& slot = *slots_[s];
  slot.bio.sector = (slot.m->base_bytes + (slot.first << kPageShift)) >> kSectorShift;
  slot.bio.bytes = slot.npages << kPageShift;
  slot.bio.op = slot.write ? ReqOp::kWrite : ReqOp::kRead;
  if (slot.write) {
    ++stats_.writeback_bios;
  } else {
    ++stats_.read_bios;
  }
  co_await slot.m->queue->SubmitBio(cpu, &slot.bio, plug);
}

sim::Task PageCache::SyncReadahead(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t index, uint64_t req) {
  sim::StackFrame frame(cpu, fn_sync_ra_);
  ++stats_.readahead_sync;
  const uint32_t ra_pages = RaPages(ra, m);
  if (ra_pages == 0) {
    // Readahead off: the missing page alone, forced (req_count = 1); the
    // reader comes back for the next one.
    co_await ReadPages(cpu, m, index, 1, kNoMark);
    co_return;
  }
  // bdi->io_pages lets one request's own pages go in one window.
  const uint64_t max = std::max<uint64_t>(ra_pages, std::min<uint64_t>(req, kMaxBioPages));
  if (ra.random) {
    // FMODE_RANDOM: force_page_cache_ra of what the read asks for.
    co_await ReadPages(cpu, m, index, std::min(req, max), kNoMark);
    co_return;
  }
  // The window after the last one (a sequential miss), or a new stream.
  const bool next_window = ra.size > 0 && index == ra.start + ra.size;
  const bool sequential = next_window || (index == 0 && ra.prev_index == ~uint64_t{0}) ||
                          index == ra.prev_index + 1 || index == ra.prev_index;
  if (sequential) {
    ra.size = next_window ? NextRaSize(ra.size, max) : InitRaSize(req, max);
    ra.start = index;
    ra.size = std::max(ra.size, std::min(req, max));
    ra.async_size = ra.size > req ? ra.size - req : ra.size;
  } else {
    // A standalone random read: its own pages only.
    ra.start = index;
    ra.size = req;
    ra.async_size = 0;
  }
  const uint64_t mark = ra.async_size > 0 ? ra.start + ra.size - ra.async_size : kNoMark;
  co_await ReadPages(cpu, m, ra.start, ra.size, mark);
}

sim::Task PageCache::AsyncReadahead(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t index, uint64_t req) {
  sim::StackFrame frame(cpu, fn_async_ra_);
  ++stats_.readahead_async;
  const uint64_t max = std::max<uint64_t>(RaPages(ra, m), std::min<uint64_t>(req, kMaxBioPages));
  if (ra.size > 0 && index == ra.start + ra.size - ra.async_size) {
    ra.start += ra.size;
    ra.size = NextRaSize(ra.size, max);
  } else {
    // Another reader's marker, or state lost: start after the cached run.
    uint64_t next = index + 1;
    while (next < index + max && Find(m, next) != kNone) ++next;
    if (next >= index + max) co_return;
    ra.start = next;
    ra.size = NextRaSize(std::max<uint64_t>(next - index + req, 1), max);
  }
  ra.async_size = ra.size;
  co_await ReadPages(cpu, m, ra.start, ra.size, ra.start);
}

sim::Task PageCache::Read(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t pos, uint32_t bytes) {
  const host::CostTable& c = kernel_.costs();
  BLKLAB_DCHECK(bytes > 0 && pos + bytes <= m.size_bytes);
  sim::StackFrame frame(cpu, fn_filemap_read_);
  cpu.Charge(fn_filemap_read_, c.filemap_read_call);
  const uint64_t first = pos >> kPageShift;
  // Nothing is read past i_size (a short read).
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t last = std::min((pos + bytes - 1) >> kPageShift, eof == 0 ? 0 : eof - 1);
  for (uint64_t idx = first; idx <= last && idx < eof;) {
    cpu.Charge(fn_filemap_read_, c.page_cache_lookup);
    const uint32_t p = Find(m, idx);
    if (p == kNone) {
      co_await SyncReadahead(cpu, ra, m, idx, last - idx + 1);
      co_await cpu.Sync();
      continue;
    }
    if (pages_[p].flags & kReadahead) {
      pages_[p].flags &= static_cast<uint8_t>(~kReadahead);
      co_await AsyncReadahead(cpu, ra, m, idx, last - idx + 1);
      co_await cpu.Sync();
      continue;
    }
    if ((pages_[p].flags & kUptodate) == 0) {
      // folio_wait_locked: the page's read is in flight.
      co_await slots_[pages_[p].io]->waiters.IoWait(cpu);
      co_await cpu.Sync();
      continue;
    }
    CopyPage(cpu, p, idx, pos, bytes);
    ++idx;
  }
  ra.prev_index = last;
}

void PageCache::CopyPage(sim::Cpu& cpu, uint32_t p, uint64_t idx, uint64_t pos, uint32_t bytes) {
  ++stats_.read_accesses;
  LruRemove(p);  // folio_mark_accessed
  LruPushFront(p);
  const uint64_t lo = std::max(pos, idx << kPageShift);
  const uint64_t hi = std::min(pos + bytes, (idx + 1) << kPageShift);
  cpu.Charge(fn_copy_to_, kernel_.costs().copy_user_per_kib * static_cast<int64_t>(hi - lo) / 1024);
}

void PageCache::CopyOut(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes) {
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t last = (pos + bytes - 1) >> kPageShift;
  for (uint64_t idx = pos >> kPageShift; idx <= last && idx < eof; ++idx) {
    if (const uint32_t p = Find(m, idx); p != kNone) CopyPage(cpu, p, idx, pos, bytes);
  }
}

NowaitRead PageCache::CheckRead(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes, PageWaiter* waiter) {
  const host::CostTable& c = kernel_.costs();
  sim::StackFrame frame(cpu, fn_filemap_read_);
  cpu.Charge(fn_filemap_read_, c.filemap_read_call);
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t last = (pos + bytes - 1) >> kPageShift;
  for (uint64_t idx = pos >> kPageShift; idx <= last && idx < eof; ++idx) {
    cpu.Charge(fn_filemap_read_, c.page_cache_lookup);
    if (const NowaitRead r = NowaitPage(Find(m, idx), waiter); r != NowaitRead::kDone) return r;
  }
  CopyOut(cpu, m, pos, bytes);
  return NowaitRead::kDone;
}

NowaitRead PageCache::NowaitPage(uint32_t p, PageWaiter* waiter) {
  if (p == kNone) return NowaitRead::kAgain;
  if ((pages_[p].flags & kUptodate) == 0) {
    slots_[pages_[p].io]->async_waiters.push_back(waiter);
    return NowaitRead::kQueued;
  }
  return NowaitRead::kDone;
}

sim::Task PageCache::ReadNowait(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t pos, uint32_t bytes,
                                PageWaiter* waiter, NowaitRead* result) {
  const host::CostTable& c = kernel_.costs();
  sim::StackFrame frame(cpu, fn_filemap_read_);
  cpu.Charge(fn_filemap_read_, c.filemap_read_call);
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t first = pos >> kPageShift;
  const uint64_t last = std::min((pos + bytes - 1) >> kPageShift, eof == 0 ? 0 : eof - 1);
  *result = NowaitRead::kDone;
  for (uint64_t idx = first; idx <= last && idx < eof; ++idx) {
    cpu.Charge(fn_filemap_read_, c.page_cache_lookup);
    if (Find(m, idx) == kNone) {
      co_await SyncReadahead(cpu, ra, m, idx, last - idx + 1);
      co_await cpu.Sync();
    }
    uint32_t p = Find(m, idx);
    if (p != kNone && (pages_[p].flags & kReadahead)) {
      pages_[p].flags &= static_cast<uint8_t>(~kReadahead);
      co_await AsyncReadahead(cpu, ra, m, idx, last - idx + 1);
      co_await cpu.Sync();
      p = Find(m, idx);
    }
    *result = NowaitPage(p, waiter);
    if (*result != NowaitRead::kDone) break;
  }
  ra.prev_index = last;
  if (*result == NowaitRead::kDone) CopyOut(cpu, m, pos, bytes);
}

void PageCache::Invalidate(sim::Cpu& cpu, AddressSpace& m) {
  const int64_t per_page = kernel_.costs().invalidate_per_page;
  uint32_t q = lru_head_;
  while (q != kNone) {
    const uint32_t next = pages_[q].lru_next;
    // mapping_evict_folio keeps a mapped page.
    if (pages_[q].mapping == m.id && (pages_[q].flags & (kDirty | kWriteback | kLocked)) == 0 &&
        pages_[q].mapcount == 0) {
      FreePage(q);
      ++stats_.pages_invalidated;
      cpu.Charge(fn_invalidate_, per_page);
    }
    q = next;
  }
}

void PageCache::TruncateRange(sim::Cpu& cpu, AddressSpace& m, uint64_t first, uint64_t last) {
  const int64_t per_page = kernel_.costs().invalidate_per_page;
  auto drop = [&](uint32_t p) {
    Page& pg = pages_[p];
    if (pg.flags & (kWriteback | kLocked)) return;
    if (pg.mapcount > 0) UnmapPage(cpu, p);  // unmap_mapping_range
    if (pg.flags & kDirty) {
      m.dirty.erase(pg.index);
      --nr_dirty_;
    }
    FreePage(p);
    ++stats_.pages_invalidated;
    cpu.Charge(fn_invalidate_, per_page);
  };
  if (last < first) return;
  if (last - first < index_.size()) {
    for (uint64_t i = first; i <= last; ++i) {
      if (const uint32_t p = Find(m, i); p != kNone) drop(p);
    }
    return;
  }
  for (uint32_t q = lru_head_; q != kNone;) {
    const uint32_t next = pages_[q].lru_next;
    if (pages_[q].mapping == m.id && pages_[q].index >= first && pages_[q].index <= last) drop(q);
    q = next;
  }
}

void PageCache::Mmap(VmArea& vma, AddressSpace& m, Fadvise advice) {
  BLKLAB_DCHECK(vma.m == nullptr);
  vma.m = &m;
  vma.rand_read = advice == Fadvise::kRandom;
  vma.seq_read = advice == Fadvise::kSequential;
  m.vmas.push_back(&vma);
}

void PageCache::Munmap(sim::Cpu& cpu, VmArea& vma) {
  BLKLAB_DCHECK(vma.m != nullptr);
  for (const auto& [idx, pte] : vma.ptes) --pages_[pte.page].mapcount;
  cpu.Charge(fn_zap_, kernel_.costs().pte_zap * static_cast<int64_t>(vma.ptes.size()));
  stats_.pages_unmapped += vma.ptes.size();
  vma.ptes.clear();
  std::erase(vma.m->vmas, &vma);
  vma.m = nullptr;
}

void PageCache::MapPage(sim::Cpu& cpu, VmArea& vma, uint32_t p, bool writable) {
  auto [it, added] = vma.ptes.try_emplace(pages_[p].index, Pte{p, writable});
  BLKLAB_DCHECK(added);
  ++pages_[p].mapcount;
  pages_[p].flags |= kReferenced;
  ++stats_.read_accesses;  // a page the cache served to a fault
  cpu.Charge(fn_map_pages_, kernel_.costs().fault_map_page);
}

void PageCache::UnmapPage(sim::Cpu& cpu, uint32_t p) {
  const uint64_t idx = pages_[p].index;
  for (VmArea* vma : mappings_[pages_[p].mapping]->vmas) {
    if (vma->ptes.erase(idx) == 0) continue;
    --pages_[p].mapcount;
    ++stats_.pages_unmapped;
    cpu.Charge(fn_unmap_, kernel_.costs().pte_unmap_rmap);
  }
  BLKLAB_DCHECK(pages_[p].mapcount == 0);
}

void PageCache::MkcleanPage(sim::Cpu& cpu, uint32_t p) {
  const uint64_t idx = pages_[p].index;
  for (VmArea* vma : mappings_[pages_[p].mapping]->vmas) {
    auto it = vma->ptes.find(idx);
    if (it == vma->ptes.end() || !it->second.writable) continue;
    it->second.writable = false;
    cpu.Charge(fn_mkclean_, kernel_.costs().pte_unmap_rmap);
  }
}

void PageCache::PageMkwrite(sim::Cpu& cpu, AddressSpace& m, uint32_t p) {
  cpu.Charge(fn_mkwrite_, kernel_.costs().page_mkwrite);
  MarkDirty(cpu, m, p);
}

void PageCache::FaultAround(sim::Cpu& cpu, VmArea& vma, uint64_t idx) {
  AddressSpace& m = *vma.m;
  const uint64_t eof = (m.size_bytes + kPageBytes - 1) >> kPageShift;
  const uint64_t start = idx & ~(kFaultAroundPages - 1);
  const uint64_t end = std::min(start + kFaultAroundPages, eof);
  sim::StackFrame frame(cpu, fn_map_pages_);
  cpu.Charge(fn_map_pages_, kernel_.costs().page_cache_lookup);
  for (uint64_t i = start; i < end; ++i) {
    if (vma.ptes.contains(i)) continue;
    const uint32_t p = Find(m, i);
    // next_uptodate_folio: skips a page being read, one not up to date, and
    // the readahead marker (its fault starts the next window).
    if (p == kNone || (pages_[p].flags & (kLocked | kReadahead)) != 0 || (pages_[p].flags & kUptodate) == 0) continue;
    MapPage(cpu, vma, p, /*writable=*/false);
  }
}

sim::Task PageCache::SyncMmapReadahead(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t idx) {
  AddressSpace& m = *vma.m;
  const uint32_t ra_pages = RaPages(ra, m);
  if (vma.rand_read || ra_pages == 0) {
    // No readahead: filemap_fault reads the page alone.
    co_await ReadPages(cpu, m, idx, 1, kNoMark);
    co_return;
  }
  if (vma.seq_read) {
    co_await SyncReadahead(cpu, ra, m, idx, ra_pages);
    co_return;
  }
  if (ra.mmap_miss < kMmapLotsamiss * 10) ++ra.mmap_miss;
  if (ra.mmap_miss > kMmapLotsamiss) {
    co_await ReadPages(cpu, m, idx, 1, kNoMark);
    co_return;
  }
  // mmap read-around: ra_pages centred on the fault, the last quarter
  // asynchronous.
  sim::StackFrame frame(cpu, fn_sync_ra_);
  ++stats_.readahead_sync;
  ra.start = idx > ra_pages / 2 ? idx - ra_pages / 2 : 0;
  ra.size = ra_pages;
  ra.async_size = ra_pages / 4;
  const uint64_t mark = ra.async_size > 0 ? ra.start + ra.size - ra.async_size : kNoMark;
  co_await ReadPages(cpu, m, ra.start, ra.size, mark);
}

sim::Task PageCache::Fault(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t idx, bool write) {
  const host::CostTable& c = kernel_.costs();
  AddressSpace& m = *vma.m;
  sim::StackFrame frame(cpu, fn_fault_);
  cpu.Charge(fn_fault_, c.page_fault_entry);
  ++vma.faults;
  ++stats_.mmap_faults;
  if (auto it = vma.ptes.find(idx); it != vma.ptes.end()) {
    // A store to a read-only entry: do_wp_page -> wp_page_shared.
    PageMkwrite(cpu, m, it->second.page);
    it->second.writable = true;
    pages_[it->second.page].flags |= kReferenced;
    co_await BalanceDirtyPages(cpu);  // fault_dirty_shared_page
    co_return;
  }
  if (!write) {
    // do_read_fault: fault-around first; the fault is done if it mapped
    // the page.
    FaultAround(cpu, vma, idx);
    if (vma.ptes.contains(idx)) {
      if (!vma.rand_read && ra.mmap_miss > 0) --ra.mmap_miss;
      co_return;
    }
  }
  // filemap_fault.
  bool major = false;
  uint32_t p = kNone;
  for (;;) {
    sim::StackFrame ff(cpu, fn_filemap_fault_);
    cpu.Charge(fn_filemap_fault_, c.page_cache_lookup);
    p = Find(m, idx);
    if (p == kNone) {
      major = true;
      co_await SyncMmapReadahead(cpu, vma, ra, idx);
      co_await cpu.Sync();
      continue;
    }
    if (pages_[p].flags & kReadahead) {
      // do_async_mmap_readahead.
      pages_[p].flags &= static_cast<uint8_t>(~kReadahead);
      if (!vma.rand_read && RaPages(ra, m) > 0) {
        co_await AsyncReadahead(cpu, ra, m, idx, RaPages(ra, m));
        co_await cpu.Sync();
        continue;
      }
    }
    if ((pages_[p].flags & kUptodate) == 0) {
      // lock_folio_maybe_drop_mmap: the page's read is in flight.
      major = true;
      co_await slots_[pages_[p].io]->waiters.IoWait(cpu);
      co_await cpu.Sync();
      continue;
    }
    break;
  }
  if (major) {
    ++vma.major_faults;
    ++stats_.mmap_major_faults;
  } else if (!vma.rand_read && ra.mmap_miss > 0) {
    --ra.mmap_miss;
  }
  if (write) PageMkwrite(cpu, m, p);  // do_shared_fault: ->page_mkwrite before the entry is set
  MapPage(cpu, vma, p, write);
  if (write) co_await BalanceDirtyPages(cpu);
}

sim::Task PageCache::MmapAccess(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t pos, uint32_t bytes,
                                bool write) {
  BLKLAB_DCHECK(vma.m != nullptr && bytes > 0 && pos + bytes <= vma.m->size_bytes);
  const uint64_t last = (pos + bytes - 1) >> kPageShift;
  for (uint64_t idx = pos >> kPageShift; idx <= last;) {
    auto it = vma.ptes.find(idx);
    if (it != vma.ptes.end() && (!write || it->second.writable)) {
      pages_[it->second.page].flags |= kReferenced;  // the entry's accessed bit
      ++idx;
      continue;
    }
    co_await Fault(cpu, vma, ra, idx, write);
    co_await cpu.Sync();
  }
}

void PageCache::BioEndio(sim::Cpu& cpu, Bio* bio, BlkStatus status) {
  const host::CostTable& c = kernel_.costs();
  const uint32_t s = static_cast<uint32_t>(bio->cookie);
  IoSlot& slot = *slots_[s];
  AddressSpace& m = *slot.m;
  if (status != BlkStatus::kOk) {
    kernel_.Fail(absl::InternalError(absl::StrCat("page cache: a ", slot.write ? "writeback" : "read", " of ", m.name,
                                                  " failed; I/O errors of buffered I/O are not modelled")));
  }
  int woken = 0;
  if (!slot.write) {
    for (uint64_t i = slot.first; i < slot.first + slot.npages; ++i) {
      const uint32_t p = Find(m, i);
      if (p == kNone) continue;
      pages_[p].flags = static_cast<uint8_t>((pages_[p].flags & ~kLocked) | kUptodate);
      pages_[p].io = kNone;
    }
    cpu.Charge(fn_end_read_, c.read_end_per_page * slot.npages);
    woken += slot.waiters.WakeAll(cpu.now());
    // io_async_buf_func: each non-blocking reader's retry is queued.
    for (PageWaiter* w : slot.async_waiters) w->PageUnlocked(cpu);
    slot.async_waiters.clear();
  } else {
    for (uint64_t i = slot.first; i < slot.first + slot.npages; ++i) {
      const uint32_t p = Find(m, i);
      if (p != kNone) pages_[p].flags &= static_cast<uint8_t>(~kWriteback);
    }
    m.nr_writeback -= slot.npages;
    nr_writeback_ -= slot.npages;
    stats_.pages_written_back += slot.npages;
    cpu.Charge(fn_end_wb_, c.writeback_end_per_page * slot.npages);
    if (m.nr_writeback == 0) woken += m.writeback_waiters.WakeAll(cpu.now());
    if (nr_dirty_ + nr_writeback_ <= dirty_thresh_) woken += dirty_waiters_.WakeAll(cpu.now());
    if (nr_dirty_ > bg_thresh_) WakeFlusher(&cpu);
  }
  woken += memory_waiters_.WakeAll(cpu.now());
  cpu.Charge(kernel_.fn.try_to_wake_up, c.try_to_wake_up * woken);
  free_slots_.push_back(s);
}

}  // namespace blklab::model
