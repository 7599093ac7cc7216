// engine/model/page_cache.h
//
// PageCache models the Linux page cache as buffered I/O (fio's direct=0)
// meets it: one AddressSpace (struct address_space) per regular file or
// block device read or written through the cache, pages of 4 KiB on one
// LRU bounded by the host's vm.memory_mib, readahead, dirty pages written
// back by a flusher thread, fsync.
//
//   Read    filemap_read: per page a lookup; a missing page starts
//           page_cache_sync_ra (ondemand readahead: a sequential stream gets
//           a window that grows x4 / x2 up to read_ahead_kb, a random read
//           only its own pages); a page carrying PG_readahead starts the next
//           window asynchronously; the reader sleeps (folio_wait_locked) on a
//           page whose read is in flight; then copy_page_to_iter.
//   Write   generic_perform_write: per page write_begin (a new page; a
//           partial write of a page not in the cache reads it first),
//           copy_page_from_iter, write_end marks it dirty; then
//           balance_dirty_pages: above dirty_background_ratio the flusher is
//           woken, above dirty_ratio the writer sleeps until writeback brings
//           the dirty and writeback pages back under the limit.
//   Fsync   file_write_and_wait_range: the caller writes back the mapping's
//           dirty pages (WB_SYNC_ALL) and waits for all its writeback.
//   Mmap    a shared file mapping (VmArea) as fio's mmap engine uses it: a
//           load or store reaches a page without the kernel while the
//           process's page-table entry for it is present (writable, for a
//           store); otherwise it faults. A read fault first maps the up-to-
//           date pages already cached in its 64 KiB (fault-around,
//           filemap_map_pages); a page not cached is read by the fault's
//           read-around (ra_pages centred on it, up to MMAP_LOTSAMISS
//           misses), or in full windows under MADV_SEQUENTIAL, or alone
//           under MADV_RANDOM; a store's first fault on a clean page calls
//           ->page_mkwrite, which dirties it. Writeback write-protects the
//           entries of the pages it cleans (page_mkclean), so the next store
//           faults again; reclaim gives a mapped page whose entry was used
//           since the last scan a second pass, else unmaps it first.
//   flusher one unbound kworker (wb_workfn): background writeback above
//           dirty_background_ratio, and every dirty_writeback_centisecs the
//           mappings dirty for longer than dirty_expire_centisecs; each pass
//           writes up to 1,024 pages (MAX_WRITEBACK_PAGES) of one mapping
//           from its cyclic writeback index, in bios of contiguous pages.
//
// Reads and writebacks go down the block layer as bios (RequestQueue::
// SubmitBio, under a plug); their completions (in softirq or hardirq
// context) end the pages and wake the waiters. Reclaim is direct and
// simple: a new page past the limit takes the oldest clean, unlocked page
// of the LRU (one list: no active/inactive split, no kswapd).
//
// Not modelled (said where it matters): balance_dirty_pages' proportional
// pauses between the freerun ceiling and the limit (writers run free up to
// dirty_ratio, then wait), wbt's throttling of background writeback, the
// journal (fsync writes data pages only; the devices have no volatile cache
// to flush), memory pressure from anything but the page cache.
//
// Statistics follow cachestat: a read's page accesses, the pages reads added
// to the cache (misses); hits are accesses minus misses.
//
// Sources: page_cache.cc (pages and LRU, reads and readahead, mmap, bio
// completion); page_cache_writeback.cc (writes, dirty throttling,
// writeback, fsync, the flusher).
//
// Invariants: a page is on the LRU and in the index exactly while it is
//  cached; a dirty page is in its mapping's dirty set; a locked page (read in
//  flight) or a page under writeback is never reclaimed; a page is mapped
//  (mapcount > 0) exactly while VmAreas hold that many entries for it, and a
//  mapped page is unmapped before it is freed; pages <= capacity_pages.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: O(1) per page touched (hash index, intrusive LRU), O(log n) per
//  dirty page (the per-mapping ordered dirty set) and per mapped page touched
//  (the VmArea's ordered entries); unmapping a page visits every VmArea of
//  its mapping; no allocation per I/O once the page and bio pools have
//  grown, but for the entry maps' nodes as faults add entries.
#ifndef BLKLAB_ENGINE_MODEL_PAGE_CACHE_H_
#define BLKLAB_ENGINE_MODEL_PAGE_CACHE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/btree_map.h"
#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "engine/host/host_spec.h"
#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/task.h"
#include "engine/sim/timer.h"
#include "engine/sim/waitqueue.h"

namespace blklab::model {

inline constexpr uint32_t kPageShift = 12;
inline constexpr uint64_t kPageBytes = uint64_t{1} << kPageShift;

// struct address_space of one file or block device.
struct VmArea;

struct AddressSpace {
  uint32_t id = 0;
  std::string name;               // the file's path or /dev/NAME
  RequestQueue* queue = nullptr;  // the device the pages live on
  uint64_t base_bytes = 0;        // byte offset of the file's extent on the device
  uint64_t size_bytes = 0;        // i_size
  uint32_t ra_pages = 32;         // bdi->ra_pages (read_ahead_kb / 4)
  absl::btree_set<uint64_t> dirty;  // indices of dirty pages
  uint64_t nr_writeback = 0;        // pages under writeback
  uint64_t writeback_index = 0;     // mapping->writeback_index (cyclic writeback)
  sim::SimTime dirtied_when = 0;    // inode->dirtied_when: first page dirtied since clean
  sim::WaitQueue writeback_waiters;  // fsync's filemap_fdatawait
  sim::CacheLine i_pages;            // the xarray's lock and root
  std::vector<VmArea*> vmas;         // i_mmap: the shared mappings of it
};

// struct file_ra_state: one open file's readahead (each fio clone opens
// its own), with the file's FMODE_RANDOM.
struct FileRaState {
  static constexpr uint32_t kMappingRaPages = ~uint32_t{0};
  uint64_t start = 0;
  uint64_t size = 0;
  uint64_t async_size = 0;
  uint64_t prev_index = ~uint64_t{0};  // the last page read (prev_pos)
  // ra->ra_pages: the mapping's (file_ra_state_init) unless fadvise set it.
  uint32_t ra_pages = kMappingRaPages;
  uint32_t mmap_miss = 0;  // faults that found their page missing, less those that found it
  bool random = false;     // FMODE_RANDOM (POSIX_FADV_RANDOM): a read asks for its own pages only
};

// posix_fadvise's access-pattern advice (and posix_madvise's, for a
// mapping).
enum class Fadvise : uint8_t { kNormal, kRandom, kSequential };

// An open file's readahead state after `advice` (generic_fadvise):
// SEQUENTIAL doubles the window, RANDOM sets FMODE_RANDOM.
FileRaState OpenRaState(const AddressSpace& m, Fadvise advice);

// One page-table entry of a VmArea.
struct Pte {
  uint32_t page = 0;  // the page cache's page
  bool writable = false;
};

// A process's shared mapping of a whole file (a MAP_SHARED
// vm_area_struct) with its page-table entries. fio's mmap engine maps each
// file it opens once, whole.
struct VmArea {
  AddressSpace* m = nullptr;
  bool rand_read = false;  // VM_RAND_READ (MADV_RANDOM): a fault reads its page alone
  bool seq_read = false;   // VM_SEQ_READ (MADV_SEQUENTIAL): a fault reads full windows
  absl::btree_map<uint64_t, Pte> ptes;  // mapped page index -> entry
  uint64_t faults = 0;        // page faults taken (minor and major)
  uint64_t major_faults = 0;  // ... of which waited for a read
};

// A request waiting for a locked page without sleeping (io_uring's
// IOCB_WAITQ: __folio_lock_async's wait entry). PageUnlocked runs in the
// context that ended the page's read; the waiter then retries (in its own
// task, through task_work) with CheckRead.
class PageWaiter {
 public:
  virtual ~PageWaiter() = default;
  virtual void PageUnlocked(sim::Cpu& cpu) = 0;
};

// What a non-blocking buffered read found.
enum class NowaitRead : uint8_t {
  kDone,    // every page was up to date: the data is copied
  kQueued,  // a page's read is in flight: the waiter is called when it ends
  kAgain,   // a page is not cached (evicted meanwhile): -EAGAIN, the caller punts to a worker
};

struct PageCacheStats {
  uint64_t read_accesses = 0;    // pages read through the cache
  uint64_t read_misses = 0;      // pages reads added (readahead and read-before-write)
  uint64_t readahead_sync = 0;   // page_cache_sync_ra windows
  uint64_t readahead_async = 0;  // page_cache_async_ra windows
  uint64_t read_bios = 0;
  uint64_t pages_dirtied = 0;
  uint64_t pages_written_back = 0;
  uint64_t writeback_bios = 0;
  uint64_t pages_reclaimed = 0;
  uint64_t pages_invalidated = 0;
  uint64_t dirty_throttle_waits = 0;  // balance_dirty_pages sleeps
  int64_t dirty_throttle_ns = 0;      // time writers spent in them
  uint64_t peak_pages = 0;
  uint64_t mmap_faults = 0;        // faults on shared file mappings
  uint64_t mmap_major_faults = 0;  // ... that waited for a read
  uint64_t pages_unmapped = 0;     // entries zapped by reclaim, truncation or munmap
  uint64_t hits() const { return read_accesses > read_misses ? read_accesses - read_misses : 0; }
};

class PageCache final : public BioOwner {
 public:
  PageCache(Kernel& kernel, const host::VmSpec& vm);
  ~PageCache() override;
  PageCache(const PageCache&) = delete;
  PageCache& operator=(const PageCache&) = delete;

  // A mapping for a file's extent (or a whole device: base 0, its size).
  AddressSpace* AddMapping(std::string name, RequestQueue* queue, uint64_t base_bytes, uint64_t size_bytes,
                           uint32_t read_ahead_kb);

  // Starts the flusher thread (on `cpu` first; it may run on any CPU).
  void Start(int cpu);
  // The run has ended: the flusher finishes the chunk it is writing and
  // starts no other, and the periodic writeback timer stops, so that the
  // writeback already in flight can drain (the kernel's carries on after
  // fio exits; the run's figures were taken at its end).
  void Quiesce();

  // The page-cache part of a buffered pread / pwrite of [pos, pos + bytes)
  // on `cpu`'s running thread (task level); returns when the data is
  // copied. REQUIRES: the range lies within the mapping.
  sim::Task Read(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t pos, uint32_t bytes);
  // io_uring's non-blocking read (IOCB_NOWAIT | IOCB_WAITQ): readahead as
  // Read starts it, then, where Read would sleep on a locked page, `waiter`
  // is queued on it and *result is kQueued. CheckRead is the retry: no I/O,
  // no sleep.
  sim::Task ReadNowait(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t pos, uint32_t bytes,
                       PageWaiter* waiter, NowaitRead* result);
  NowaitRead CheckRead(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes, PageWaiter* waiter);
  sim::Task Write(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes);
  // fsync / fdatasync's data part: write back every dirty page of `m` and
  // wait until none is under writeback.
  sim::Task Fsync(sim::Cpu& cpu, AddressSpace& m);
  // invalidate_mapping_pages (fadvise DONTNEED): drops the clean, idle
  // pages of `m`.
  void Invalidate(sim::Cpu& cpu, AddressSpace& m);
  // truncate_inode_pages_range for pages [first, last] of `m` (a punched
  // hole, a truncated tail): drops the cached pages, dirty ones too (their
  // blocks are gone); a page under I/O stays (the kernel would wait for
  // it). invalidate_per_page per dropped page.
  void TruncateRange(sim::Cpu& cpu, AddressSpace& m, uint64_t first, uint64_t last);

  // mmap(MAP_SHARED) of the whole of `m` by a process, then posix_madvise
  // `advice` (the calls' own costs are the caller's).
  void Mmap(VmArea& vma, AddressSpace& m, Fadvise advice);
  // munmap: every entry of `vma` zapped. REQUIRES: Mmap'ed.
  void Munmap(sim::Cpu& cpu, VmArea& vma);
  // A user-space load (or store: `write`) of [pos, pos + bytes) of the
  // mapping on `cpu`'s running thread: a fault at each page whose entry is
  // missing (or read-only, for a store); returns when every page is
  // mapped. The copy itself (memcpy in user space) is the caller's.
  // REQUIRES: the range lies within the file.
  sim::Task MmapAccess(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t pos, uint32_t bytes, bool write);

  const PageCacheStats& stats() const { return stats_; }
  uint64_t capacity_pages() const { return capacity_; }
  uint64_t cached_pages() const { return index_.size(); }
  uint64_t nr_dirty() const { return nr_dirty_; }
  uint64_t nr_writeback() const { return nr_writeback_; }
  uint64_t dirty_thresh_pages() const { return dirty_thresh_; }
  uint64_t background_thresh_pages() const { return bg_thresh_; }

  void BioEndio(sim::Cpu& cpu, Bio* bio, BlkStatus status) override;

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  // kReferenced: an entry mapping the page was used since reclaim last
  // looked (the PTE's accessed bit).
  enum PageFlag : uint8_t {
    kUptodate = 1,
    kDirty = 2,
    kWriteback = 4,
    kLocked = 8,
    kReadahead = 16,
    kReferenced = 32
  };
  struct Page {
    uint64_t index = 0;
    uint32_t mapping = 0;
    uint32_t mapcount = 0;  // page-table entries mapping it
    uint32_t lru_prev = kNone, lru_next = kNone;
    uint32_t io = kNone;  // the read bio slot while kLocked
    uint8_t flags = 0;
  };
  // A bio of contiguous pages of one mapping.
  struct IoSlot {
    Bio bio;
    AddressSpace* m = nullptr;
    uint64_t first = 0;
    uint32_t npages = 0;
    bool write = false;
    sim::WaitQueue waiters;  // readers of its pages
    std::vector<PageWaiter*> async_waiters;  // non-blocking readers of its pages
  };
  class FlushTimer final : public sim::IrqHandler {
   public:
    explicit FlushTimer(PageCache* pc) : pc_(pc) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;

   private:
    PageCache* pc_;
  };

  static uint64_t Key(uint32_t mapping, uint64_t index) { return (uint64_t{mapping} << 44) | index; }
  uint32_t Find(const AddressSpace& m, uint64_t index) const;
  void LruRemove(uint32_t p);
  void LruPushFront(uint32_t p);
  // A page for (m, index), reclaiming the LRU's oldest clean page past the
  // limit; kNone when every page is busy (dirty, locked or under writeback).
  uint32_t AllocPage(sim::Cpu& cpu, AddressSpace& m, uint64_t index);
  void FreePage(uint32_t p);
  uint32_t GetSlot();
  // Reads the missing pages of [start, start + n) (clipped to the file) in
  // bios under a plug; marks page `mark` PG_readahead. Waits only for a page
  // it could not allocate.
  sim::Task ReadPages(sim::Cpu& cpu, AddressSpace& m, uint64_t start, uint64_t n, uint64_t mark);
  sim::Task SubmitSlot(sim::Cpu& cpu, uint32_t s, Plug* plug);
  // ondemand_readahead at a missing page (sync) or at a PG_readahead page
  // (async); `req`: the pages the read still wants.
  sim::Task SyncReadahead(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t index, uint64_t req);
  sim::Task AsyncReadahead(sim::Cpu& cpu, FileRaState& ra, AddressSpace& m, uint64_t index, uint64_t req);
  // Writes back up to `max_pages` dirty pages of `m` from its writeback
  // index on (all of them, from 0, with `all`); `written` (if set) gets the
  // count.
  sim::Task WritePages(sim::Cpu& cpu, AddressSpace& m, uint64_t max_pages, bool all, uint64_t* written);
  sim::Task WaitForMemory(sim::Cpu& cpu);
  void MarkDirty(sim::Cpu& cpu, AddressSpace& m, uint32_t p);
  // The copy of [pos, pos + bytes) out of up-to-date pages: accesses, the
  // LRU, copy_page_to_iter.
  void CopyOut(sim::Cpu& cpu, AddressSpace& m, uint64_t pos, uint32_t bytes);
  // One page of a non-blocking read: absent (kAgain), under I/O (`waiter`
  // queued on it, kQueued: __folio_lock_async) or up to date (kDone).
  NowaitRead NowaitPage(uint32_t p, PageWaiter* waiter);
  // One cached page `p` (index `idx`) of a read of [pos, pos + bytes):
  // marked accessed, its part copied to the user.
  void CopyPage(sim::Cpu& cpu, uint32_t p, uint64_t idx, uint64_t pos, uint32_t bytes);
  sim::Task BalanceDirtyPages(sim::Cpu& cpu);
  // One page fault of `vma` at page `idx` (a store's, with `write`).
  sim::Task Fault(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t idx, bool write);
  // do_fault_around: maps the cached, up-to-date, idle pages of the 64 KiB
  // around `idx` that `vma` has no entry for (read-only).
  void FaultAround(sim::Cpu& cpu, VmArea& vma, uint64_t idx);
  // do_sync_mmap_readahead at a missing page.
  sim::Task SyncMmapReadahead(sim::Cpu& cpu, VmArea& vma, FileRaState& ra, uint64_t idx);
  void MapPage(sim::Cpu& cpu, VmArea& vma, uint32_t p, bool writable);
  // ->page_mkwrite and the page dirtied (the entry's write bit is the
  // caller's).
  void PageMkwrite(sim::Cpu& cpu, AddressSpace& m, uint32_t p);
  // try_to_unmap / unmap_mapping_range of page `p`: its entries in every
  // VmArea of its mapping zapped.
  void UnmapPage(sim::Cpu& cpu, uint32_t p);
  // page_mkclean: the writable entries of `p` write-protected.
  void MkcleanPage(sim::Cpu& cpu, uint32_t p);
  void WakeFlusher(sim::Cpu* caller);
  sim::Task FlusherBody();
  AddressSpace* NextWritebackMapping(bool expired_only, sim::SimTime now);

  Kernel& kernel_;
  host::VmSpec vm_;
  uint64_t capacity_ = 0;
  uint64_t dirty_thresh_ = 0;
  uint64_t bg_thresh_ = 0;
  std::vector<std::unique_ptr<AddressSpace>> mappings_;
  std::vector<Page> pages_;
  std::vector<uint32_t> free_pages_;
  absl::flat_hash_map<uint64_t, uint32_t> index_;  // Key -> page (looked up, never iterated)
  uint32_t lru_head_ = kNone, lru_tail_ = kNone;   // head: most recently used
  std::vector<std::unique_ptr<IoSlot>> slots_;
  std::vector<uint32_t> free_slots_;
  uint64_t nr_dirty_ = 0;
  uint64_t nr_writeback_ = 0;
  sim::WaitQueue dirty_waiters_;   // balance_dirty_pages
  sim::WaitQueue memory_waiters_;  // an allocation found every page busy
  std::unique_ptr<sim::Thread> flusher_;
  FlushTimer flush_timer_{this};
  sim::HrTimer periodic_;
  bool flusher_kicked_ = false;
  bool quiesced_ = false;
  size_t next_mapping_ = 0;  // round robin of background writeback
  PageCacheStats stats_;
  sim::FnId fn_filemap_read_, fn_sync_ra_, fn_async_ra_, fn_read_pages_, fn_copy_to_, fn_copy_from_,
      fn_write_, fn_write_begin_, fn_mark_dirty_, fn_balance_, fn_writepages_, fn_end_read_, fn_end_wb_,
      fn_reclaim_, fn_invalidate_, fn_fsync_, fn_wb_workfn_, fn_add_folio_, fn_fault_, fn_filemap_fault_,
      fn_map_pages_, fn_mkwrite_, fn_unmap_, fn_mkclean_, fn_zap_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_PAGE_CACHE_H_
