// fio's synchronous engines (psync, sync, pvsync, pvsync2, vsync) as the
// kernel sees them (docs/kernel-model.md §2.1): one syscall per I/O
// (pread64 -> blkdev_read_iter -> __blkdev_direct_IO_simple -> submit_bio)
// that sleeps in io_schedule until the bio ends, unless it ended inline.
// fio reports no slat for them.
#include <memory>
#include <vector>

#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"

namespace blklab::job {
namespace {

class SyncEngine final : public SyncEngineBase {
 public:
  explicit SyncEngine(IoContext& ctx) : SyncEngineBase(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_pread_ = r.Intern("__x64_sys_pread64");
    fn_blkdev_read_iter_ = r.Intern("blkdev_read_iter");
    fn_pin_ = r.Intern("bio_iov_iter_get_pages");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    for (IoU* u : batch) {
      sim::Cpu& cpu = ctx_.cpu();
      sim::StackFrame frame(cpu, fn_pread_);
      u->issue_time = cpu.now();
      cpu.Charge(fn_pread_, c.syscall_entry_exit);
      cpu.Charge(fn_blkdev_read_iter_, c.psync_per_io);
      if (u->mapping != nullptr && u->bio.op != model::ReqOp::kDiscard) {
        // Buffered: the page cache copies the data; no bio of its own.
        u->state = IoU::State::kInFlight;
        co_await BufferedIo(ctx_, u);
        ctx_.Post(u);
        co_await ctx_.cpu().PreemptPoint();
        continue;
      }
      cpu.Charge(fn_pin_, PinCost(c, u->bio.bytes));
      // __blkdev_direct_IO_simple uses an on-stack bio up to
      // DIO_INLINE_BIO_VECS (4) pages; larger IOs allocate one.
      if (u->bio.bytes > 4 * 4096) cpu.Charge(ctx_.kernel.fn.bio_alloc_bioset, c.bio_alloc_slab);
      u->state = IoU::State::kInFlight;
      if (u->inode != nullptr) co_await FileDio(ctx_, u);
      co_await u->queue->SubmitBio(cpu, &u->bio, nullptr);
      co_await cpu.Sync();
      co_await WaitCompleted(u);
      co_await ctx_.cpu().PreemptPoint();
    }
  }


 private:
  sim::FnId fn_pread_, fn_blkdev_read_iter_, fn_pin_;
};

std::unique_ptr<IoEngineModel> MakeSyncEngine(IoContext& ctx) { return std::make_unique<SyncEngine>(ctx); }

}  // namespace

// fio's sync.c engines.
constinit const IoEngineType kPsyncIoEngineType = {.id = workload::IoEngine::kPsync, .make = MakeSyncEngine};
constinit const IoEngineType kSyncIoEngineType = {.id = workload::IoEngine::kSync, .make = MakeSyncEngine};
constinit const IoEngineType kVsyncIoEngineType = {.id = workload::IoEngine::kVsync, .make = MakeSyncEngine};
constinit const IoEngineType kPvsyncIoEngineType = {.id = workload::IoEngine::kPvsync, .make = MakeSyncEngine};
constinit const IoEngineType kPvsync2IoEngineType = {.id = workload::IoEngine::kPvsync2, .make = MakeSyncEngine};

}  // namespace blklab::job
