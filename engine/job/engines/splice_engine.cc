// fio's splice engine (engines/splice.c) as the kernel sees it: a read is
// splice(2) from the file into a pipe then vmsplice(2) from the pipe to the
// buffer, a write vmsplice(2) of the buffer into the pipe then splice(2) to
// the file, each pair per pipe-full (64 KiB, the default pipe size). The
// file side goes through the page cache (filemap_splice_read,
// iter_file_splice_write): one copy per page either way, as with read and
// write, so the page cache's own costs stand (BufferedIo) and the engine
// adds the two calls and the pipe's work per chunk (splice_pipe_chunk
// [guess]) and per page (splice_pipe_page [guess]). Synchronous: one I/O
// at a time. direct=1 is refused (CheckSpliceJob; an O_DIRECT file's splice
// is a different path).
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

constexpr uint32_t kPipeBytes = 64 * 1024;

class SpliceEngine final : public SyncEngineBase {
 public:
  explicit SpliceEngine(IoContext& ctx) : SyncEngineBase(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_splice_ = r.Intern("__x64_sys_splice");
    fn_vmsplice_ = r.Intern("__x64_sys_vmsplice");
    fn_pipe_ = r.Intern("splice_to_pipe");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    for (IoU* u : batch) {
      sim::Cpu& cpu = ctx_.cpu();
      u->issue_time = cpu.now();
      u->state = IoU::State::kInFlight;
      {
        sim::StackFrame frame(cpu, fn_splice_);
        const uint32_t chunks = std::max<uint32_t>(1, (u->bio.bytes + kPipeBytes - 1) / kPipeBytes);
        const int64_t pages = (u->bio.bytes + 4095) / 4096;
        cpu.Charge(fn_splice_, chunks * c.syscall_entry_exit);
        cpu.Charge(fn_vmsplice_, chunks * c.syscall_entry_exit);
        cpu.Charge(fn_pipe_, chunks * c.splice_pipe_chunk + pages * c.splice_pipe_page);
        co_await BufferedIo(ctx_, u);
      }
      ctx_.Post(u);
      co_await ctx_.cpu().PreemptPoint();
    }
  }


 private:
  sim::FnId fn_splice_, fn_vmsplice_, fn_pipe_;
};

std::unique_ptr<IoEngineModel> MakeSpliceEngine(IoContext& ctx) { return std::make_unique<SpliceEngine>(ctx); }

// The model goes through the page cache only: an O_DIRECT file's splice,
// and fio's splice trims, are refused.
absl::Status CheckSpliceJob(const workload::JobSpec& spec) {
  if (spec.direct || workload::DirectionActive(spec.rw, workload::Direction::kTrim)) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': ioengine=splice with ", spec.direct ? "direct=1" : "trims",
        ": modelled through the page cache only (an O_DIRECT file's splice, and fio's splice trims, are not)"));
  }
  return absl::OkStatus();
}

}  // namespace

constinit const IoEngineType kSpliceIoEngineType = {
    .id = workload::IoEngine::kSplice, .make = MakeSpliceEngine, .check_job = CheckSpliceJob};

}  // namespace blklab::job
