// fio's mmap engine (engines/mmap.c) as the kernel sees it. Each file is
// mapped whole (MAP_SHARED) at its first I/O, then advised with the job's
// pattern (fadvise_hint: posix_madvise RANDOM or SEQUENTIAL; the DONTNEED
// fio adds is a no-op in glibc's posix_madvise). An I/O is a memcpy to or
// from the mapping in user space: no system call, only the page faults of
// the pages the process has no entry for (PageCache::MmapAccess: fault-
// around, read-around, ->page_mkwrite; a store to a page not cached reads it
// first). The copy is user time (copy_user_per_kib). With direct=1 fio
// msyncs each I/O's range (MS_SYNC: vfs_fsync_range, the model writes back
// the mapping's dirty pages and waits). Synchronous: fio's queue returns
// FIO_Q_COMPLETED. Trims are refused (CheckMmapJob, run by the plan).
#include <algorithm>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"
#include "engine/workload/io_generator.h"

namespace blklab::job {
namespace {

class MmapEngine final : public SyncEngineBase {
 public:
  explicit MmapEngine(IoContext& ctx) : SyncEngineBase(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_memcpy_ = r.Intern("fio:memcpy", /*user=*/true);
    fn_mmap_ = r.Intern("__x64_sys_mmap");
    fn_madvise_ = r.Intern("__x64_sys_madvise");
    fn_msync_ = r.Intern("__x64_sys_msync");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    for (IoU* u : batch) {
      BLKLAB_CHECK(u->vma != nullptr && u->mapping != nullptr);
      sim::Cpu& cpu = ctx_.cpu();
      u->issue_time = cpu.now();
      u->state = IoU::State::kInFlight;
      if (u->vma->m == nullptr) Map(cpu, *u);
      const uint64_t pos = (u->bio.sector << model::kSectorShift) - u->mapping->base_bytes;
      const bool write = u->bio.op == model::ReqOp::kWrite;
      co_await ctx_.page_cache->MmapAccess(cpu, *u->vma, *u->ra, pos, u->bio.bytes, write);
      sim::Cpu& on = ctx_.cpu();
      on.Charge(fn_memcpy_, c.copy_user_per_kib * static_cast<int64_t>(u->bio.bytes) / 1024);
      if (ctx_.spec.direct) {
        // "not really direct, but should drop the pages from the cache":
        // msync(MS_SYNC) of the I/O's range.
        sim::StackFrame frame(on, fn_msync_);
        on.Charge(fn_msync_, c.syscall_entry_exit);
        co_await ctx_.page_cache->Fsync(on, *u->mapping);
      }
      ctx_.Post(u);
      co_await ctx_.cpu().PreemptPoint();
    }
  }

 private:
  // fio_mmapio_prep_full: mmap of the whole file, then the job's advice.
  void Map(sim::Cpu& cpu, const IoU& u) {
    const auto& c = ctx_.kernel.costs();
    const model::Fadvise advice = FadviseOf(ctx_.spec);
    cpu.Charge(fn_mmap_, c.syscall_entry_exit);
    if (ctx_.spec.fadvise_hint != workload::FadviseHint::kNone) cpu.Charge(fn_madvise_, c.syscall_entry_exit);
    ctx_.page_cache->Mmap(*u.vma, *u.mapping, advice);
  }

  sim::FnId fn_memcpy_, fn_mmap_, fn_madvise_, fn_msync_;
};

std::unique_ptr<IoEngineModel> MakeMmapEngine(IoContext& ctx) { return std::make_unique<MmapEngine>(ctx); }

// What fio's mmap engine init refuses, and what the model does not have
// (trims through a mapping).
absl::Status CheckMmapJob(const workload::JobSpec& spec) {
  // fio_mmapio_init: msync and madvise work on whole pages.
  const uint64_t min_bs = std::min({workload::MinBlockSize(spec, workload::Direction::kRead),
                                     workload::MinBlockSize(spec, workload::Direction::kWrite),
                                     workload::MinBlockSize(spec, workload::Direction::kTrim)});
  if ((min_bs & (model::kPageBytes - 1)) != 0 && (spec.direct || spec.fsync_blocks > 0 || spec.fdatasync_blocks > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", spec.name, "': fio: mmap options dictate a minimum block size of 4096 bytes (the smallest block, ",
        min_bs, " bytes, with ", spec.direct ? "direct=1" : (spec.fsync_blocks > 0 ? "fsync=" : "fdatasync="), ")"));
  }
  if (workload::DirectionActive(spec.rw, workload::Direction::kTrim)) {
    return absl::UnimplementedError(absl::StrCat("job '", spec.name, "': ioengine=mmap with trims: fio's ",
                                                 "do_io_u_trim beside a mapping is not modelled"));
  }
  return absl::OkStatus();
}

}  // namespace

constinit const IoEngineType kMmapIoEngineType = {
    .id = workload::IoEngine::kMmap, .make = MakeMmapEngine, .check_job = CheckMmapJob};

}  // namespace blklab::job
