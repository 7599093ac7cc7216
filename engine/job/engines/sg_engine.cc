// fio's sg engine on a SCSI disk's block device (/dev/sdX) as the kernel
// sees it: fio issues each I/O as an SG_IO ioctl (engines/sg.c
// fio_sgio_ioctl_doio: synchronous, one command at a time), and the kernel
// (drivers/scsi/scsi_ioctl.c sg_io) copies the sg_io_hdr and the CDB in,
// allocates a passthrough request (scsi_alloc_request), maps the user
// buffer (blk_rq_map_user: the pages pinned), runs it with blk_execute_rq
// -- no I/O scheduler and no I/O accounting: the request goes on
// hctx->dispatch and the hardware queue runs at once -- sleeps until it
// completes, and copies the status and sense back.
//
// The command is what sg_write_mode= says for the write direction: WRITE,
// WRITE AND VERIFY, WRITE SAME (one block sent, the range written), WRITE
// SAME with NDOB (nothing sent, zeroes written), VERIFY with BYTCHK 00 (a
// medium read), 01 (the data sent, compared) or 11 (one block sent,
// compared with each); reads are READ. The device times each as the media
// access it makes: writes as writes, VERIFY and READ as reads, of the whole
// range. The data VERIFY compares is the disk's MediumContent, checked
// when the command completes (job_thread.cc).
//
// Price: the ioctl entry (syscall_entry_exit), sg_io's own work (sg_io_cmd
// [guess]), the pages of the data sent or received pinned (page_pin_4k).
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/host/driver_type.h"
#include "engine/host/host_spec.h"
#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"
#include "engine/workload/io_generator.h"

namespace blklab::job {
namespace {

class SgEngine final : public SyncEngineBase {
 public:
  explicit SgEngine(IoContext& ctx) : SyncEngineBase(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_ioctl_ = r.Intern("__x64_sys_ioctl");
    fn_sg_io_ = r.Intern("sg_io");
    fn_map_user_ = r.Intern("blk_rq_map_user");
  }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    for (IoU* u : batch) {
      sim::Cpu& cpu = ctx_.cpu();
      sim::StackFrame frame(cpu, fn_ioctl_);
      u->issue_time = cpu.now();
      cpu.Charge(fn_ioctl_, c.syscall_entry_exit);
      cpu.Charge(fn_sg_io_, c.sg_io_cmd);
      const uint32_t sent = SgDataBytes(ctx_.spec.sg_write_mode, u->dir == stats::Dir::kWrite, u->bio.bytes);
      if (sent > 0) cpu.Charge(fn_map_user_, PinCost(c, sent));
      u->bio.op = SgMediaOp(ctx_.spec.sg_write_mode, u->dir == stats::Dir::kWrite);
      u->state = IoU::State::kInFlight;
      co_await u->queue->ExecutePassthrough(cpu, &u->bio);
      co_await cpu.Sync();
      co_await WaitCompleted(u);  // blk_execute_rq: wait_for_completion_io
      co_await ctx_.cpu().PreemptPoint();
    }
  }


 private:
  sim::FnId fn_ioctl_, fn_sg_io_, fn_map_user_;
};

}  // namespace

uint32_t SgDataBytes(workload::SgWriteMode mode, bool write, uint32_t bytes) {
  if (!write) return bytes;
  switch (mode) {
    case workload::SgWriteMode::kWriteSame:
    case workload::SgWriteMode::kVerifyBytchk11:
      return std::min<uint32_t>(bytes, 512);
    case workload::SgWriteMode::kWriteSameNdob:
    case workload::SgWriteMode::kVerifyBytchk00:
      return 0;
    default:
      return bytes;
  }
}

model::ReqOp SgMediaOp(workload::SgWriteMode mode, bool write) {
  if (!write || IsSgVerify(mode)) return model::ReqOp::kRead;
  return model::ReqOp::kWrite;
}

bool IsSgVerify(workload::SgWriteMode mode) {
  return mode == workload::SgWriteMode::kVerifyBytchk00 || mode == workload::SgWriteMode::kVerifyBytchk01 ||
         mode == workload::SgWriteMode::kVerifyBytchk11;
}

namespace {

std::unique_ptr<IoEngineModel> MakeSgEngine(IoContext& ctx) { return std::make_unique<SgEngine>(ctx); }

// fio's sg engine: SCSI commands through SG_IO on a SCSI disk's block
// device; what the model has no counterpart for is refused by name.
absl::Status CheckSgTarget(const workload::JobSpec& spec, const EngineTarget& target) {
  const std::string what = absl::StrCat("job '", spec.name, "': ioengine=sg");
  if (!target.raw_device) {
    return absl::InvalidArgumentError(absl::StrCat(what, " sends SCSI commands to a SCSI disk's block device "
                                                   "(/dev/sdX); a regular file is no SCSI target"));
  }
  const host::DeviceSpec& dev = *target.device;
  if (!host::DriverTypeOf(dev.driver).scsi()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", target.disk_name,
                                                   " is not a SCSI disk (scsi_debug or hba); SG_IO needs one"));
  }
  if (spec.sg_write_mode == workload::SgWriteMode::kWriteStream) {
    return absl::UnimplementedError(absl::StrCat(what, ": sg_write_mode=write_stream: WRITE STREAM needs the "
                                                 "device's streams, which are not modelled"));
  }
  if (spec.engine_flags.hipri) {
    return absl::UnimplementedError(absl::StrCat(what, " with hipri: polled SG_IO (SGV4_FLAG_HIPRI) is not modelled"));
  }
  if (workload::DirectionActive(spec.rw, workload::Direction::kTrim)) {
    return absl::UnimplementedError(absl::StrCat(what, " with trims: fio's UNMAP commands gathering several "
                                                 "io_us are not modelled"));
  }
  if (spec.fsync_blocks > 0 || spec.fdatasync_blocks > 0 || spec.end_fsync || spec.fsync_on_close) {
    return absl::UnimplementedError(absl::StrCat(what, " with fsync, fdatasync, end_fsync or fsync_on_close: "
                                                 "SYNCHRONIZE CACHE through SG_IO is not modelled"));
  }
  for (int d = 0; d < workload::kNumDirections; ++d) {
    const auto dir = static_cast<workload::Direction>(d);
    if (!workload::DirectionActive(spec.rw, dir)) continue;
    if (workload::MinBlockSize(spec, dir) % 512 != 0 || workload::MaxBlockSize(spec, dir) % 512 != 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": block sizes must be multiples of the disk's ",
                                                     "512-byte logical block (fio: read/write not sector aligned)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

constinit const IoEngineType kSgIoEngineType = {
    .id = workload::IoEngine::kSg, .make = MakeSgEngine, .check_target = CheckSgTarget};

}  // namespace blklab::job
