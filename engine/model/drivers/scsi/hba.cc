#include "engine/model/drivers/scsi/hba.h"

#include <algorithm>
#include <utility>

namespace blklab::model {

Hba::Hba(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
         const HbaConfig& config, const QueueConfig& queue)
    : kernel_(kernel),
      config_(config),
      host_(kernel, std::move(host_name), lun_names, config.host, queue, this),
      fw_done_(this),
      reply_irq_(this),
      firmware_(ServiceStageSpec{config.firmware_nsec, config.firmware_nsec, config.max_iops, 0, 0}) {
  const ServiceStageSpec drive{config.drive_latency_nsec, config.drive_latency_nsec, config.drive_iops, 0, 0};
  drives_.assign(std::max<uint32_t>(config.drives, 1), ServiceStage(drive));
  const int ncpus = kernel.machine().num_cpus();
  reply_queues_.resize(ncpus);
  reply_irq_pending_.assign(ncpus, false);
  const bool mpi3mr = config.lld == 1;
  fn_queuecommand_ = kernel.Intern(mpi3mr ? "mpi3mr_qcmd" : "megasas_build_and_issue_cmd_fusion");
  fn_isr_ = kernel.Intern(mpi3mr ? "mpi3mr_isr" : "megasas_isr_fusion");
  fn_reply_ = kernel.Intern(mpi3mr ? "mpi3mr_process_op_reply_q" : "complete_cmd_fusion");
}

ScsiMlqueue Hba::QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) {
  cpu.Charge(fn_queuecommand_, kernel_.costs().hba_queuecommand);
  // atomic_inc_return(&fw_outstanding) > max: give it back, HOST_BUSY.
  if (config_.fw_queue_depth > 0 && fw_outstanding_ >= config_.fw_queue_depth) return ScsiMlqueue::kHostBusy;
  ++fw_outstanding_;
  // Firmware, then RAID-0: the stripe unit holding the first sector picks
  // the drive.
  const sim::SimTime fw = firmware_.Admit(cpu.now(), rq->op, rq->bytes);
  const uint64_t stripe = (rq->sector << kSectorShift) / config_.stripe_bytes;
  const sim::SimTime done = drives_[stripe % drives_.size()].Admit(fw, rq->op, rq->bytes);
  kernel_.machine().sim().ScheduleBulk(done, &fw_done_, 0, reinterpret_cast<uint64_t>(rq));
  return ScsiMlqueue::kOk;
}

void Hba::FirmwareDone::OnEvent(uint32_t, uint64_t arg) {
  // The firmware posts a reply descriptor on the reply queue whose MSI-x
  // vector is affine to the submitting CPU; one interrupt drains the queue.
  Request* rq = reinterpret_cast<Request*>(arg);
  const int cpu = rq->mq_ctx->cpu();
  h_->reply_queues_[cpu].push_back(rq);
  if (h_->reply_irq_pending_[cpu]) return;
  h_->reply_irq_pending_[cpu] = true;
  sim::Machine& m = h_->kernel_.machine();
  m.cpu(cpu).RaiseHardirq(m.sim().Now(), &h_->reply_irq_, static_cast<uint64_t>(cpu));
}

sim::Task Hba::ReplyIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  sim::StackFrame frame(cpu, h_->fn_isr_);
  Kernel& k = h_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(h_->fn_isr_, k.costs().hardirq_entry_exit);
  co_await cpu.Sync();
  const int q = static_cast<int>(arg);
  h_->reply_irq_pending_[q] = false;
  RequestList done;
  done.splice_tail(h_->reply_queues_[q]);
  while (!done.empty()) {
    Request* rq = done.pop_front();
    cpu.Charge(h_->fn_reply_, k.costs().hba_reply_per_cmd);
    --h_->fw_outstanding_;
    h_->host_.Done(cpu, rq);  // scsi_done -> blk_mq_complete_request
    co_await cpu.Sync();
  }
}

}  // namespace blklab::model
