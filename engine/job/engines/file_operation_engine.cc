// fio's file operation engines, falloc and ftruncate (engines/falloc.c,
// engines/ftruncate.c), as an ext4-like filesystem sees them: one syscall
// per I/O, under the inode's i_rwsem taken for writing, that changes which
// blocks of the file exist and moves no data (no bio).
//
//   falloc     fallocate(fd, mode, offset, len): a read allocates with
//              FALLOC_FL_KEEP_SIZE, a write allocates (and grows i_size past
//              the end), a trim punches a hole (PUNCH_HOLE | KEEP_SIZE),
//              dropping the range's cached pages.
//   ftruncate  ftruncate(fd, offset) per write: a shrink frees the blocks
//              past the new size and drops their cached pages; a grow only
//              moves i_size (the new tail is a hole). Reads and trims fail
//              with EINVAL in fio; CheckFtruncateTarget refuses them.
//
// The price: the syscall, fs_op_call (entry, timestamps, the journal handle),
// per run of blocks that changes state fs_alloc_extent or fs_free_extent (an
// allocation or a free in the block allocator and an extent-tree update) and
// fs_block_per_4k per block. Allocating what is allocated, punching a hole,
// or growing i_size costs only the call.
//
// Not modelled: the extent tree's depth (every run costs the same), journal
// commits, and reads of a shrunk file by other jobs (they still see the
// region fio laid out).
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"
#include "engine/util/status_macros.h"
#include "engine/workload/io_generator.h"

namespace blklab::job {
namespace {

constexpr uint64_t kBlockShift = 12;

class FileOperationEngine final : public IoEngineModel {
 public:
  explicit FileOperationEngine(IoContext& ctx) : ctx_(ctx) {
    auto& r = ctx.kernel.machine().functions();
    const bool falloc = ctx.spec.ioengine == workload::IoEngine::kFalloc;
    fn_syscall_ = r.Intern(falloc ? "__x64_sys_fallocate" : "__x64_sys_ftruncate");
    fn_fs_ = r.Intern(falloc ? "ext4_fallocate" : "ext4_setattr");
    fn_alloc_ = r.Intern("ext4_map_blocks");
    fn_free_ = r.Intern("ext4_ext_remove_space");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    for (IoU* u : batch) {
      sim::Cpu& cpu = ctx_.cpu();
      sim::StackFrame frame(cpu, fn_syscall_);
      u->issue_time = cpu.now();
      u->state = IoU::State::kInFlight;
      BLKLAB_CHECK(u->inode != nullptr);  // the topology gives these engines regular files only
      inode_ = u->inode;
      if (inode_->write_lock == nullptr) {
        inode_->write_lock = std::make_unique<sim::SpinLock>(
            ctx_.kernel.machine(), "i_rwsem (down_write)", sim::SpinLockKind::kSpinLock,
            ctx_.kernel.Intern("down_write"), ctx_.kernel.Intern("rwsem_down_write_slowpath"),
            ctx_.kernel.lock_costs());
      }
      cpu.Charge(fn_syscall_, c.syscall_entry_exit);
      co_await inode_->write_lock->Lock(cpu);
      cpu.Charge(fn_fs_, c.fs_op_call);
      const uint64_t pos = (u->bio.sector << model::kSectorShift) - inode_->base_bytes;
      if (ctx_.spec.ioengine == workload::IoEngine::kFalloc) {
        Fallocate(cpu, u->bio.op, pos, u->bio.bytes);
      } else {
        Truncate(cpu, pos);
      }
      co_await cpu.Sync();
      inode_->write_lock->Unlock(cpu);
      ctx_.Post(u);
      co_await cpu.PreemptPoint();
    }
  }

  // No bio: nothing completes from outside.
  void Complete(sim::Cpu&, IoU*, model::BlkStatus) override {}
  sim::Task GetEvents(uint32_t, uint32_t, bool) override { co_return; }

 private:
  // Turns the blocks [first, end) into holes (to_hole) or allocated
  // blocks, a 64-block word at a time; returns how many changed and in how
  // many runs (an extent allocated or freed each).
  struct Flipped {
    uint64_t blocks = 0;
    uint64_t runs = 0;
  };
  Flipped Flip(uint64_t first, uint64_t end, bool to_hole) {
    Flipped out;
    if (first >= end) return out;
    std::vector<uint64_t>& holes = inode_->holes;
    if (to_hole && holes.size() < ((end - 1) >> 6) + 1) holes.resize(((end - 1) >> 6) + 1, 0);
    end = std::min<uint64_t>(end, holes.size() * 64);  // no word: no hole to allocate
    bool prev_flipped = false;  // the block before the word's first changed
    for (uint64_t w = first >> 6; first < end && (w << 6) < end; ++w) {
      const uint64_t lo = std::max(first, w << 6) & 63;
      const uint64_t hi = std::min(end - (w << 6), uint64_t{64});
      const uint64_t mask = (hi == 64 ? ~uint64_t{0} : (uint64_t{1} << hi) - 1) & (~uint64_t{0} << lo);
      const uint64_t flips = (to_hole ? ~holes[w] : holes[w]) & mask;
      // A run starts at a changed block whose predecessor did not change.
      const uint64_t before = (flips << 1) | (prev_flipped && lo == 0 ? 1 : 0);
      out.runs += static_cast<uint64_t>(__builtin_popcountll(flips & ~before));
      out.blocks += static_cast<uint64_t>(__builtin_popcountll(flips));
      prev_flipped = hi == 64 && ((flips >> 63) & 1);
      holes[w] = to_hole ? holes[w] | flips : holes[w] & ~flips;
    }
    return out;
  }

  // Flips the blocks [first, end) that are not `to_hole` yet; charges each
  // run of them (an extent allocated or freed) and each block.
  void Change(sim::Cpu& cpu, uint64_t first, uint64_t end, bool to_hole) {
    const auto& c = ctx_.kernel.costs();
    const Flipped f = Flip(first, end, to_hole);
    cpu.Charge(to_hole ? fn_free_ : fn_alloc_,
               static_cast<int64_t>(f.runs) * (to_hole ? c.fs_free_extent : c.fs_alloc_extent) +
                   static_cast<int64_t>(f.blocks) * c.fs_block_per_4k);
  }

  // The cached pages of [pos, end) go with their blocks.
  void DropPages(sim::Cpu& cpu, uint64_t pos, uint64_t end) {
    if (inode_->mapping == nullptr || end <= pos) return;
    inode_->page_cache->TruncateRange(cpu, *inode_->mapping, pos >> model::kPageShift,
                                     (end - 1) >> model::kPageShift);
  }

  void Fallocate(sim::Cpu& cpu, model::ReqOp op, uint64_t pos, uint32_t bytes) {
    const uint64_t end = pos + bytes;
    if (op == model::ReqOp::kDiscard) {
      // PUNCH_HOLE frees the whole blocks inside the range (the partial
      // ones at its edges are zeroed in the page cache instead).
      Change(cpu, (pos + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift, end >> kBlockShift, true);
      DropPages(cpu, pos, end);
      return;
    }
    Change(cpu, pos >> kBlockShift, (end + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift, false);
    if (op == model::ReqOp::kWrite) inode_->size_bytes = std::max(inode_->size_bytes, end);  // mode 0 grows i_size
  }

  void Truncate(sim::Cpu& cpu, uint64_t size) {
    if (size < inode_->size_bytes) {
      const uint64_t old_end = inode_->size_bytes;
      Change(cpu, (size + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift,
             (old_end + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift, true);
      DropPages(cpu, size, old_end);
    } else {
      // The new tail is a hole: no block is allocated for it (no charge).
      Flip((inode_->size_bytes + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift,
           (size + (uint64_t{1} << kBlockShift) - 1) >> kBlockShift, true);
    }
    inode_->size_bytes = size;
  }

  IoContext& ctx_;
  FileInode* inode_ = nullptr;  // the file of the io_u being committed
  sim::FnId fn_syscall_, fn_fs_, fn_alloc_, fn_free_;
};

std::unique_ptr<IoEngineModel> MakeFileOperationEngine(IoContext& ctx) {
  return std::make_unique<FileOperationEngine>(ctx);
}

// Both engines work on a regular file: fallocate(2) or ftruncate(2) of a
// block device is not modelled.
absl::Status CheckFileOperationTarget(const workload::JobSpec& spec, const EngineTarget& target) {
  if (target.raw_device) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", spec.name, "': ioengine=", spec.ioengine_name, " needs a regular file (the job's target "
        "is the device ", target.disk_name, "; ", spec.ioengine_name,
        "(2) of a block device is not modelled)"));
  }
  return absl::OkStatus();
}

// ftruncate also does only writes (fio fails its reads and trims).
absl::Status CheckFtruncateTarget(const workload::JobSpec& spec, const EngineTarget& target) {
  BLKLAB_RETURN_IF_ERROR(CheckFileOperationTarget(spec, target));
  if (workload::DirectionActive(spec.rw, workload::Direction::kRead) ||
      workload::DirectionActive(spec.rw, workload::Direction::kTrim)) {
    return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': ioengine=ftruncate does only ",
                                                   "writes (fio fails its reads and trims with EINVAL); use ",
                                                   "rw=write or rw=randwrite"));
  }
  return absl::OkStatus();
}

}  // namespace

constinit const IoEngineType kFallocIoEngineType = {
    .id = workload::IoEngine::kFalloc, .make = MakeFileOperationEngine, .check_target = CheckFileOperationTarget};
constinit const IoEngineType kFtruncateIoEngineType = {
    .id = workload::IoEngine::kFtruncate, .make = MakeFileOperationEngine, .check_target = CheckFtruncateTarget};

}  // namespace blklab::job
