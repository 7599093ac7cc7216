// engine/job/io_engine.h
//
// IoEngineModel is the model of one fio I/O engine (fio's `struct ioengine_ops`:
// ->queue, ->commit, ->getevents, ->event), as the kernel sees it
// (docs/kernel-model.md §2.1, §3.8). A JobThread (job_thread.h) runs fio's main
// loop and asks its engine to:
//
//   Commit     submit a batch of prepared io_us: the submitting syscall(s),
//              each IO's path into the block layer (SubmitBio), the plug;
//              sets each io_u's issue time (the end of the submitting call)
//   Complete   bio->bi_end_io for one io_u, in whatever context ended it
//              (task, softirq or hardirq of any CPU): post it where the
//              thread reaps, wake the thread if it waits
//   GetEvents  wait until at least `min` completions can be reaped (the
//              reaping syscall, polling, or sleeping)
//
// Engines: io_uring (and io_uring_cmd), libaio (and posixaio), the
// synchronous ones (psync, sync, pvsync, pvsync2, vsync), fio's null engine,
// the file operation engines (falloc, ftruncate), sg, splice and mmap, each
// family in its own file (engines/*_engine.cc) with its registry entries
// (IoEngineType, io_engine_type.h). MakeIoEngine makes the model the job's
// engine registered; code asks an engine's flags (workload/io_engine_info.h),
// never a list of engine names.
//
// IoContext is what an engine sees of its fio thread: the CPU and thread it
// runs on, its request queue, the ring completions are posted to, and the
// "waiting for completions" state a completion may wake.
//
// Invariants: an io_u is posted to `completed` exactly once per issue.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: each engine charges its own cost-table entries; no allocation per I/O.
#ifndef BLKLAB_ENGINE_JOB_IO_ENGINE_H_
#define BLKLAB_ENGINE_JOB_IO_ENGINE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/page_cache.h"
#include "engine/model/request.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/spinlock.h"
#include "engine/stats/job_stats.h"
#include "engine/util/check.h"
#include "engine/workload/io_engine_info.h"
#include "engine/workload/job_spec.h"

namespace blklab::job {

// Fixed-capacity FIFO of pointers (the CQ ring / aio ring / done list): an
// io_u is in it at most once, so capacity = iodepth suffices.
template <typename T>
class PtrRing {
 public:
  void Reset(size_t capacity) {
    slots_.assign(capacity == 0 ? 1 : capacity, nullptr);
    head_ = size_ = 0;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  void push_back(T* p) {
    BLKLAB_DCHECK(size_ < slots_.size());
    size_t i = head_ + size_;
    if (i >= slots_.size()) i -= slots_.size();
    slots_[i] = p;
    ++size_;
  }
  T* front() const { return slots_[head_]; }
  void pop_front() {
    if (++head_ == slots_.size()) head_ = 0;
    --size_;
  }

 private:
  std::vector<T*> slots_;
  size_t head_ = 0;
  size_t size_ = 0;
};

// fio's struct io_u: one I/O unit and its bio.
struct FileInode;

struct IoU {
  enum class State : uint8_t { kFree, kQueued, kInFlight, kCompleted };
  model::Bio bio;
  model::RequestQueue* queue = nullptr;  // the disk it goes to
  uint32_t file = 0;                     // the thread's file index
  // The open file it goes to: its inode (null: a block device) and, for
  // buffered I/O, its page-cache mapping and the open file's readahead
  // state (null: direct I/O).
  FileInode* inode = nullptr;
  model::AddressSpace* mapping = nullptr;
  model::FileRaState* ra = nullptr;
  model::VmArea* vma = nullptr;          // ioengine=mmap: the file's shared mapping
  uint32_t tag = 0;                      // t/io_uring's clock-batch index
  State state = State::kFree;
  stats::Dir dir = stats::Dir::kRead;
  sim::SimTime start_time = 0;   // prepared (fio's io_u->start_time)
  sim::SimTime issue_time = 0;   // the submitting syscall returned
  bool error = false;
  // fio's verify: the read is checked at completion (verify_io_u); it comes
  // from the written-block log (IO_U_F_VER_LIST); the write's or expected
  // numberio; the log entry of a write (-1: none).
  bool verify = false;
  bool ver_list = false;
  uint16_t numberio = 0;
  int32_t piece = -1;
};

// What an engine sees of its fio thread.
// A regular file's inode as direct I/O touches it (ext4_dio_read_iter /
// xfs_file_dio_read and their write twins on allocated blocks): i_rwsem
// taken shared around iomap_dio_rw by every submitter, two atomics on one
// line that bounces between the CPUs of the jobs sharing the file.
//
// The file operation engines (falloc, ftruncate) also need the inode as a
// whole: its extent on the device, i_size, which 4 KiB blocks are holes,
// i_rwsem taken for writing (an optimistically spinning rwsem writer,
// modelled as a spin lock: the sections are microseconds and never sleep),
// and the file's page-cache mapping when a buffered job has one (a punched
// or truncated range drops its pages). Holes start empty: fio lays a file out
// in full before the jobs start.
struct FileInode {
  sim::CacheLine i_rwsem;
  uint64_t base_bytes = 0;  // the file's extent on its device
  uint64_t size_bytes = 0;  // i_size
  std::unique_ptr<sim::SpinLock> write_lock;  // i_rwsem for writing (made by the first user)
  std::vector<uint64_t> holes;                // bit per 4 KiB block; empty: none yet
  model::PageCache* page_cache = nullptr;
  model::AddressSpace* mapping = nullptr;
};

struct IoContext {
  model::Kernel& kernel;
  sim::Thread& thread;             // the fio thread
  model::RequestQueue* queue;      // its disk (null for fio's null engine)
  const workload::JobSpec& spec;
  // Every disk the thread's I/O goes to (IOPOLL polls each); empty: queue.
  std::vector<model::RequestQueue*> queues;
  PtrRing<IoU> completed;          // completions ready to reap, in order
  uint32_t in_flight = 0;          // fio's cur_depth: prepared and not reaped
  bool waiting = false;            // sleeping for completions
  uint32_t wait_for = 0;           // ... until `completed` holds this many
  // Buffered I/O (direct=0): the page cache (each io_u names its file's
  // mapping in it); null: direct I/O.
  model::PageCache* page_cache = nullptr;

  // The CPU the fio thread runs on (it may change at SleepUntilCompleted).
  sim::Cpu& cpu() const { return thread.on_cpu(); }

  // Posts `u` as completed (ready to reap).
  void Post(IoU* u) {
    u->state = IoU::State::kCompleted;
    completed.push_back(u);
  }
  // Wakes the fio thread if it sleeps waiting for completions (the caller
  // runs on `on`, which pays try_to_wake_up).
  void WakeWaiter(sim::Cpu& on);
  // Sleeps the fio thread until `completed` holds `min` entries; `on_wake`
  // runs after each wake-up (io_uring's task_work); `iowait`: the sleep
  // counts as iowait. REQUIRES: task level on `cpu`, Synced.
  template <typename F>
  sim::Task SleepUntilCompleted(uint32_t min, bool iowait, F on_wake);
};

class IoEngineModel {
 public:
  virtual ~IoEngineModel() = default;
  // Submits `batch` (every io_u prepared, none submitted); sets each issue
  // time. The batch may complete (in part) before this returns.
  virtual sim::Task Commit(std::vector<IoU*>& batch) = 0;
  // bio->bi_end_io for `u` on `cpu`, with the bio's status.
  virtual void Complete(sim::Cpu& cpu, IoU* u, model::BlkStatus status) = 0;
  // Returns once at least `min` completions are in ctx.completed (or no
  // more can come); charges the reaping call for up to `max` events, unless
  // `in_call`: already inside the submitting syscall (io_uring_enter with
  // to_submit and GETEVENTS at once, as t/io_uring calls it).
  virtual sim::Task GetEvents(uint32_t min, uint32_t max, bool in_call = false) = 0;
  // Completions are read in user space (the CQ ring, fio's null engine):
  // reaping needs no kernel entry when enough are there.
  virtual bool reaps_in_user_space() const { return false; }
  // Bios of this engine are polled (io_uring IOPOLL: REQ_POLLED, and
  // REQ_NOWAIT as bio_set_polled sets it for async kiocbs).
  virtual bool polled() const { return false; }
};

// The engine of `ctx.spec.ioengine`, made by its registered IoEngineType
// (io_engine_type.h). REQUIRES: a modelled engine.
std::unique_ptr<IoEngineModel> MakeIoEngine(IoContext& ctx);

// The engines whose every I/O completes inside its own call (psync and its
// kin, sg, splice, mmap): a completion posts the io_u and wakes the caller
// sleeping in WaitCompleted; reaping needs no call.
class SyncEngineBase : public IoEngineModel {
 public:
  explicit SyncEngineBase(IoContext& ctx);
  void Complete(sim::Cpu& cpu, IoU* u, model::BlkStatus status) override;
  sim::Task GetEvents(uint32_t min, uint32_t max, bool in_call) override;

 protected:
  // The calling task sleeps in io_schedule until `u` completes (its bio's
  // end wakes it). REQUIRES: task level on ctx_.cpu(), Synced.
  sim::Task WaitCompleted(IoU* u);

  IoContext& ctx_;
  sim::FnId fn_io_schedule_;
};

// fio's sg engine (engines/sg_engine.cc): the bytes a command sends or
// receives, the media access the device makes for it, and whether it is a
// VERIFY (BYTCHK 00/01/11) rather than a write. `write`: the I/O is in
// the write direction (sg_write_mode applies).
uint32_t SgDataBytes(workload::SgWriteMode mode, bool write, uint32_t bytes);
model::ReqOp SgMediaOp(workload::SgWriteMode mode, bool write);
bool IsSgVerify(workload::SgWriteMode mode);

// The access-pattern advice fio gives a file at open (td_io_open_file's
// posix_fadvise, fadvise_hint=; the mmap engine's posix_madvise).
model::Fadvise FadviseOf(const workload::JobSpec& spec);

// Page pinning of a non-fixed buffer of `bytes` (bio_iov_iter_get_pages).
int64_t PinCost(const host::CostTable& costs, uint32_t bytes);

// The filesystem's part of one direct I/O to a regular file, before its bio
// is submitted: i_rwsem down_read, the iomap mapping (fs_dio_iomap),
// up_read. No effect for a device. REQUIRES: task level on ctx.cpu().
sim::Task FileDio(IoContext& ctx, const IoU* u);

// A buffered read or write (u->mapping set): the page cache's part of
// pread / pwrite (filemap_read, generic_perform_write), which returns once
// the data is copied; the io_u is then complete. A trim goes to the device
// as with direct I/O. REQUIRES: task level on ctx.cpu().
sim::Task BufferedIo(IoContext& ctx, IoU* u);
// sync= (O_SYNC / O_DSYNC): a buffered write's pages written back before
// the write returns; nothing otherwise. REQUIRES: task level on `cpu`, the
// CPU of the task that writes (the fio thread, or io_uring's io-wq worker).
sim::Task WriteSync(IoContext& ctx, sim::Cpu& cpu, IoU* u);

// The submitting call of the asynchronous engines: `syscall_fn` charged
// once, a plug around batches of more than two (plug->nr_ios = batch), each
// io_u's per-IO work (`per_io`, before submit_bio) and SubmitBio, the plug's
// flush, then `after` (still inside the call), every issue time set to
// the end of the call, and the return to user space (a pre-emption point).
template <typename PerIo, typename After>
sim::Task SubmitBatch(IoContext& ctx, std::vector<IoU*>& batch, sim::FnId syscall_fn, PerIo per_io,
                      After after);

template <typename F>
sim::Task IoContext::SleepUntilCompleted(uint32_t min, bool iowait, F on_wake) {
  while (completed.size() < min) {
    waiting = true;
    wait_for = min;
    co_await cpu().SleepMigratable(iowait);
    co_await cpu().Sync();
    waiting = false;
    on_wake();
  }
}

template <typename PerIo, typename After>
sim::Task SubmitBatch(IoContext& ctx, std::vector<IoU*>& batch, sim::FnId syscall_fn, PerIo per_io,
                      After after) {
  sim::StackFrame frame(ctx.cpu(), syscall_fn);
  ctx.cpu().Charge(syscall_fn, ctx.kernel.costs().syscall_entry_exit);
  model::Plug plug;
  model::Plug* p = nullptr;
  if (batch.size() > 2) {
    plug.nr_ios = static_cast<uint32_t>(batch.size());
    p = &plug;
  }
  const bool passthrough = workload::IoEngineHas(ctx.spec.ioengine, workload::IoEngineFlag::kNvmePassthrough);
  for (IoU* u : batch) {
    per_io(u);
    u->state = IoU::State::kInFlight;
    if (u->inode != nullptr) co_await FileDio(ctx, u);
    if (passthrough) {
      // nvme_uring_cmd_io: a passthrough request (blk_execute_rq_nowait).
      co_await u->queue->ExecutePassthrough(ctx.cpu(), &u->bio);
    } else {
      co_await u->queue->SubmitBio(ctx.cpu(), &u->bio, p);
    }
  }
  if (p != nullptr) co_await model::RequestQueue::FlushPlug(ctx.cpu(), p, false);
  after();
  const sim::SimTime now = ctx.cpu().now();
  for (IoU* u : batch) u->issue_time = now;
  // exit_to_user_mode: need_resched honoured; pre-empted here, the thread
  // may be balanced to another CPU (nothing below uses the old one).
  co_await ctx.cpu().PreemptPointMigratable();
}

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_IO_ENGINE_H_
