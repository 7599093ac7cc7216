// fio's null engine: no kernel at all. Commit "completes" everything queued
// at once; completions are reaped in user space.
#include <memory>
#include <vector>

#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"

namespace blklab::job {
namespace {

class NullEngine final : public IoEngineModel {
 public:
  explicit NullEngine(IoContext& ctx) : ctx_(ctx) {}

  bool reaps_in_user_space() const override { return true; }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    for (IoU* u : batch) {
      u->issue_time = ctx_.cpu().now();
      ctx_.Post(u);
    }
    co_return;
  }

  void Complete(sim::Cpu&, IoU*, model::BlkStatus) override {}  // no bios

  sim::Task GetEvents(uint32_t, uint32_t, bool) override { co_return; }

 private:
  IoContext& ctx_;
};

std::unique_ptr<IoEngineModel> MakeNullEngine(IoContext& ctx) { return std::make_unique<NullEngine>(ctx); }

}  // namespace

constinit const IoEngineType kNullIoEngineType = {.id = workload::IoEngine::kNull, .make = MakeNullEngine};

}  // namespace blklab::job
