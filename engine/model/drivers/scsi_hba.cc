#include "engine/model/drivers/scsi_hba.h"

#include <algorithm>
#include <utility>

namespace blklab::model {

namespace {
constexpr int64_t kScsiQueueDelayNs = 3 * sim::kNsPerMs;  // SCSI_QUEUE_DELAY
}  // namespace

ScsiHba::ScsiHba(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
                 const ScsiHbaConfig& config, const QueueConfig& queue)
    : kernel_(kernel), config_(config), fw_done_(this), reply_irq_(this) {
  TagSetConfig ts;
  ts.nr_hw_queues = config.nr_hw_queues;
  ts.queue_depth = config.can_queue;
  ts.hctx_shared = config.host_tagset;
  set_ = std::make_unique<TagSet>(kernel, host_name, ts);
  for (const std::string& name : lun_names) {
    auto dev = std::make_unique<ScsiDevice>(this, config.cmd_per_lun);
    dev->q = std::make_unique<RequestQueue>(kernel, name, *set_, dev.get(), queue);
    luns_.push_back(std::move(dev));
  }
  const int ncpus = kernel.machine().num_cpus();
  reply_queues_.resize(ncpus);
  reply_irq_pending_.assign(ncpus, false);
  drive_next_free_.assign(std::max<uint32_t>(config.drives, 1), 0);
  const bool mpi3mr = config.lld == 1;
  fn_get_budget_ = kernel.Intern("scsi_mq_get_budget");
  fn_put_budget_ = kernel.Intern("scsi_mq_put_budget");
  fn_queue_rq_ = kernel.Intern("scsi_queue_rq");
  fn_queuecommand_ = kernel.Intern(mpi3mr ? "mpi3mr_qcmd" : "megasas_build_and_issue_cmd_fusion");
  fn_isr_ = kernel.Intern(mpi3mr ? "mpi3mr_isr" : "megasas_isr_fusion");
  fn_reply_ = kernel.Intern(mpi3mr ? "mpi3mr_process_op_reply_q" : "complete_cmd_fusion");
  fn_complete_ = kernel.Intern("scsi_complete");
  fn_end_request_ = kernel.Intern("scsi_end_request");
}

// --- budget (scsi_mq_get_budget / scsi_mq_put_budget) ----------------------

bool ScsiHba::ScsiDevice::GetBudget(sim::Cpu& cpu, RequestQueue* rq_q) {
  // scsi_dev_queue_ready: one bit of sdev->budget_map (an atomic on the
  // LUN's budget word).
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_get_budget_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  if (device_busy_ < queue_depth_) {
    ++device_busy_;
    return true;
  }
  // Budget failure: record it for the completion side's re-run rule.
  ++restarts_;
  ++host_->budget_failures_;
  cpu.Charge(host_->fn_get_budget_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  if (device_busy_ == 0 && k.knobs().scsi_budget_idle_delay_run) {
    rq_q->DelayRunHwQueues(&cpu, kScsiQueueDelayNs);
  }
  return false;
}

void ScsiHba::ScsiDevice::PutBudget(sim::Cpu& cpu, RequestQueue* rq_q) {
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_put_budget_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  --device_busy_;
}

// --- submission ---------------------------------------------------------------

BlkStatus ScsiHba::ScsiDevice::QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last) {
  // scsi_queue_rq: device/target/host ready checks, scsi_prepare_cmd,
  // blk_mq_start_request, scsi_dispatch_cmd -> LLD queuecommand.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_queue_rq_, k.costs().scsi_queue_rq);
  q->StartRequest(cpu, rq);
  cpu.Charge(host_->fn_queuecommand_, k.costs().hba_queuecommand);
  const sim::SimTime done = host_->FirmwareCompletion(cpu.now(), rq);
  k.machine().sim().Schedule(done, &host_->fw_done_, 0, reinterpret_cast<uint64_t>(rq));
  return BlkStatus::kOk;
}

sim::SimTime ScsiHba::FirmwareCompletion(sim::SimTime now, const Request* rq) {
  sim::SimTime t = now;
  if (config_.max_iops > 0) {
    t = std::max(t, ctrl_next_free_);
    ctrl_next_free_ = t + sim::kNsPerSec / config_.max_iops;
  }
  t += config_.firmware_nsec;
  // RAID-0: the stripe unit holding the first sector picks the drive.
  const uint64_t stripe = (rq->sector << kSectorShift) / config_.stripe_bytes;
  sim::SimTime& free = drive_next_free_[stripe % drive_next_free_.size()];
  if (config_.drive_iops > 0) {
    t = std::max(t, free);
    free = t + sim::kNsPerSec / config_.drive_iops;
  }
  return t + config_.drive_latency_nsec;
}

// --- completion ---------------------------------------------------------------

void ScsiHba::FirmwareDone::OnEvent(uint32_t, uint64_t arg) {
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

sim::Task ScsiHba::ReplyIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
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
    // scsi_done -> blk_mq_complete_request
    rq->q->CompleteRequest(cpu, rq);
    co_await cpu.Sync();
  }
}

void ScsiHba::ScsiDevice::Complete(sim::Cpu& cpu, Request* rq) {
  // scsi_complete -> scsi_finish_command -> scsi_device_unbusy ->
  // scsi_io_completion -> scsi_end_request.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_complete_, k.costs().scsi_complete);
  q->PutRqBudget(cpu, rq);
  q->EndRequest(cpu, rq, BlkStatus::kOk);
  // scsi_run_queue_async: the starved list is always empty here (the host
  // limit is the shared tag set), so the rule is the hw queue re-run.
  if (k.knobs().run_all_hw_queues_on_completion) {
    q->RunHwQueuesAsync(cpu);
    return;
  }
  cpu.Charge(host_->fn_end_request_, restarts_line_.Read(k.machine(), cpu.id(), k.costs().line_read_hit));
  if (restarts_ != 0) {
    // atomic_cmpxchg(&sdev->restarts, old, 0) == old
    cpu.Charge(host_->fn_end_request_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    restarts_ = 0;
    q->RunHwQueuesAsync(cpu);
  }
}

}  // namespace blklab::model
