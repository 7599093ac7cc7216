#include "engine/job/io_engine.h"

#include "engine/job/io_engine_type.h"

namespace blklab::job {

void IoContext::WakeWaiter(sim::Cpu& on) {
  if (!waiting || !thread.sleeping()) return;
  waiting = false;
  on.Charge(kernel.fn.try_to_wake_up, kernel.costs().try_to_wake_up);
  thread.Wake(on.now());
}

SyncEngineBase::SyncEngineBase(IoContext& ctx)
    : ctx_(ctx), fn_io_schedule_(ctx.kernel.machine().functions().Intern("io_schedule")) {}

void SyncEngineBase::Complete(sim::Cpu& cpu, IoU* u, model::BlkStatus) {
  ctx_.Post(u);
  ctx_.WakeWaiter(cpu);
}

sim::Task SyncEngineBase::GetEvents(uint32_t, uint32_t, bool) { co_return; }

sim::Task SyncEngineBase::WaitCompleted(IoU* u) {
  while (u->state != IoU::State::kCompleted) {
    ctx_.waiting = true;
    ctx_.cpu().Charge(fn_io_schedule_, ctx_.kernel.costs().line_read_hit);
    co_await ctx_.cpu().SleepMigratable(/*iowait=*/true);  // io_schedule
    co_await ctx_.cpu().Sync();
    ctx_.waiting = false;
  }
}

model::Fadvise FadviseOf(const workload::JobSpec& spec) {
  switch (spec.fadvise_hint) {
    case workload::FadviseHint::kNone:
      return model::Fadvise::kNormal;
    case workload::FadviseHint::kType:  // td_random(td)
      return workload::IsRandom(spec.rw) ? model::Fadvise::kRandom : model::Fadvise::kSequential;
    case workload::FadviseHint::kRandom:
      return model::Fadvise::kRandom;
    case workload::FadviseHint::kSequential:
      return model::Fadvise::kSequential;
  }
  return model::Fadvise::kNormal;
}

int64_t PinCost(const host::CostTable& costs, uint32_t bytes) {
  return static_cast<int64_t>((bytes + 4095) / 4096) * costs.page_pin_4k;
}

sim::Task FileDio(IoContext& ctx, const IoU* u) {
  FileInode* inode = u->inode;
  if (inode == nullptr) co_return;
  const host::CostTable& c = ctx.kernel.costs();
  const sim::Machine& m = ctx.kernel.machine();
  const auto& fn = ctx.kernel.fn;
  sim::Cpu& cpu = ctx.cpu();  // no migratable sleep below
  co_await cpu.Sync();
  cpu.Charge(fn.down_read, inode->i_rwsem.Write(m, cpu.id(), c.atomic_local));
  cpu.Charge(fn.iomap_dio_rw, c.fs_dio_iomap);
  co_await cpu.Sync();
  cpu.Charge(fn.up_read, inode->i_rwsem.Write(m, cpu.id(), c.atomic_local));
}

sim::Task WriteSync(IoContext& ctx, sim::Cpu& cpu, IoU* u) {
  // generic_write_sync: with O_SYNC / O_DSYNC a buffered write returns once
  // its pages are written back (vfs_fsync_range; the model syncs the file's
  // dirty pages, which with every write synced are this write's).
  if (ctx.spec.sync_io == workload::SyncIo::kNone || u->mapping == nullptr) co_return;
  co_await ctx.page_cache->Fsync(cpu, *u->mapping);
}

sim::Task BufferedIo(IoContext& ctx, IoU* u) {
  const uint64_t pos = (u->bio.sector << model::kSectorShift) - u->mapping->base_bytes;
  if (u->bio.op == model::ReqOp::kRead) {
    co_await ctx.page_cache->Read(ctx.cpu(), *u->ra, *u->mapping, pos, u->bio.bytes);
  } else {
    co_await ctx.page_cache->Write(ctx.cpu(), *u->mapping, pos, u->bio.bytes);
    co_await WriteSync(ctx, ctx.cpu(), u);
  }
}

std::unique_ptr<IoEngineModel> MakeIoEngine(IoContext& ctx) {
  const IoEngineType* type = FindIoEngineType(ctx.spec.ioengine);
  BLKLAB_CHECK(type != nullptr);
  return type->make(ctx);
}

}  // namespace blklab::job
