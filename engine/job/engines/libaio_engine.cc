// fio's libaio engine (and posixaio) as the kernel sees it (docs/kernel-model.md
// §2.1): io_submit with per-iocb work (io_submit_one, aio_read, fget/fput,
// page pinning) and a plug above two iocbs; aio_complete on the completing
// CPU writes the event ring (half of libaio_event); io_getevents is always
// a syscall, sleeps in read_events until `min` events, and copies each
// event out (the other half).
#include <algorithm>
#include <memory>
#include <vector>

#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"

namespace blklab::job {
namespace {

class LibaioEngine final : public IoEngineModel {
 public:
  explicit LibaioEngine(IoContext& ctx) : ctx_(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_io_submit_ = r.Intern("__x64_sys_io_submit");
    fn_io_submit_one_ = r.Intern("io_submit_one");
    fn_pin_ = r.Intern("bio_iov_iter_get_pages");
    fn_io_getevents_ = r.Intern("__x64_sys_io_getevents");
    fn_aio_complete_ = r.Intern("aio_complete");
    fn_read_events_ = r.Intern("read_events");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    if (ctx_.page_cache != nullptr) {
      // Buffered: aio_read / aio_write run ->read_iter / ->write_iter
      // synchronously inside io_submit (no IOCB_NOWAIT), so each iocb is
      // complete when the call returns.
      sim::StackFrame frame(ctx_.cpu(), fn_io_submit_);
      ctx_.cpu().Charge(fn_io_submit_, c.syscall_entry_exit);
      for (IoU* u : batch) {
        ctx_.cpu().Charge(fn_io_submit_one_, c.libaio_submit_iocb);
        u->state = IoU::State::kInFlight;
        if (u->bio.op == model::ReqOp::kDiscard) {
          co_await u->queue->SubmitBio(ctx_.cpu(), &u->bio, nullptr);
          continue;
        }
        co_await BufferedIo(ctx_, u);
        Complete(ctx_.cpu(), u, model::BlkStatus::kOk);
      }
      const sim::SimTime now = ctx_.cpu().now();
      for (IoU* u : batch) u->issue_time = now;
      co_await ctx_.cpu().PreemptPoint();
      co_return;
    }
    co_await SubmitBatch(
        ctx_, batch, fn_io_submit_,
        [this, &c](IoU* u) {
          ctx_.cpu().Charge(fn_io_submit_one_, c.libaio_submit_iocb);
          ctx_.cpu().Charge(fn_pin_, PinCost(c, u->bio.bytes));
          ctx_.cpu().Charge(ctx_.kernel.fn.bio_alloc_bioset, c.bio_alloc_slab);
        },
        [] {});
  }

  void Complete(sim::Cpu& cpu, IoU* u, model::BlkStatus) override {
    cpu.Charge(fn_aio_complete_, ctx_.kernel.costs().libaio_event / 2);
    ctx_.Post(u);
    if (ctx_.waiting && ctx_.completed.size() < ctx_.wait_for) return;
    ctx_.WakeWaiter(cpu);
  }

  sim::Task GetEvents(uint32_t min, uint32_t max, bool in_call) override {
    const auto& c = ctx_.kernel.costs();
    sim::StackFrame frame(ctx_.cpu(), fn_io_getevents_);
    if (!in_call) ctx_.cpu().Charge(fn_io_getevents_, c.syscall_entry_exit);
    co_await ctx_.cpu().Sync();
    co_await ctx_.SleepUntilCompleted(min, /*iowait=*/false, [] {});  // read_events: not iowait
    ctx_.cpu().Charge(fn_read_events_,
                    static_cast<int64_t>(std::min<size_t>(max, ctx_.completed.size())) * (c.libaio_event / 2));
  }

 private:
  IoContext& ctx_;
  sim::FnId fn_io_submit_, fn_io_submit_one_, fn_pin_, fn_io_getevents_, fn_aio_complete_, fn_read_events_;
};

std::unique_ptr<IoEngineModel> MakeLibaioEngine(IoContext& ctx) { return std::make_unique<LibaioEngine>(ctx); }

}  // namespace

constinit const IoEngineType kLibaioIoEngineType = {.id = workload::IoEngine::kLibaio, .make = MakeLibaioEngine};
constinit const IoEngineType kPosixaioIoEngineType = {.id = workload::IoEngine::kPosixaio, .make = MakeLibaioEngine};

}  // namespace blklab::job
