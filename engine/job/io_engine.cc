#include "engine/job/io_engine.h"

namespace blklab::job {

using workload::IoEngine;

void IoContext::WakeWaiter(sim::Cpu& on) {
  if (!waiting || !thread.sleeping()) return;
  waiting = false;
  on.Charge(kernel.fn.try_to_wake_up, kernel.costs().try_to_wake_up);
  thread.Wake(on.now());
}

int64_t PinCost(const host::CostTable& costs, uint32_t bytes) {
  return static_cast<int64_t>((bytes + 4095) / 4096) * costs.page_pin_4k;
}

sim::Task FileDio(IoContext& ctx) {
  if (ctx.inode == nullptr) co_return;
  const host::CostTable& c = ctx.kernel.costs();
  const sim::Machine& m = ctx.kernel.machine();
  const auto& fn = ctx.kernel.fn;
  sim::Cpu& cpu = ctx.cpu();  // no migratable sleep below
  co_await cpu.Sync();
  cpu.Charge(fn.down_read, ctx.inode->i_rwsem.Write(m, cpu.id(), c.atomic_local));
  cpu.Charge(fn.iomap_dio_rw, c.fs_dio_iomap);
  co_await cpu.Sync();
  cpu.Charge(fn.up_read, ctx.inode->i_rwsem.Write(m, cpu.id(), c.atomic_local));
}

sim::Task BufferedIo(IoContext& ctx, IoU* u) {
  const uint64_t pos = (u->bio.sector << model::kSectorShift) - ctx.mapping->base_bytes;
  if (u->bio.op == model::ReqOp::kRead) {
    co_await ctx.page_cache->Read(ctx.cpu(), ctx.ra, *ctx.mapping, pos, u->bio.bytes);
  } else {
    co_await ctx.page_cache->Write(ctx.cpu(), *ctx.mapping, pos, u->bio.bytes);
  }
}

std::unique_ptr<IoEngineModel> MakeIoEngine(IoContext& ctx) {
  switch (ctx.spec.ioengine) {
    case IoEngine::kIoUring:
    case IoEngine::kIoUringCmd:
      return MakeIoUringEngine(ctx);
    case IoEngine::kLibaio:
    case IoEngine::kPosixaio:
      return MakeLibaioEngine(ctx);
    case IoEngine::kNull:
      return MakeNullEngine(ctx);
    case IoEngine::kFalloc:
    case IoEngine::kFtruncate:
      return MakeFileOperationEngine(ctx);
    default:
      BLKLAB_CHECK(workload::IsSynchronous(ctx.spec.ioengine));
      return MakeSyncEngine(ctx);
  }
}

}  // namespace blklab::job
