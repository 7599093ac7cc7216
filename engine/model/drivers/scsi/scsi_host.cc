#include "engine/model/drivers/scsi/scsi_host.h"

#include <utility>

namespace blklab::model {

namespace {
constexpr int64_t kScsiQueueDelayNs = 3 * sim::kNsPerMs;  // SCSI_QUEUE_DELAY
}  // namespace

ScsiHost::ScsiHost(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
                   const ScsiHostConfig& config, const QueueConfig& queue, ScsiLld* lld)
    : kernel_(kernel), config_(config), lld_(lld) {
  TagSetConfig ts;
  ts.nr_hw_queues = config.nr_hw_queues;
  ts.queue_depth = config.can_queue;
  ts.hctx_shared = config.host_tagset;
  set_ = std::make_unique<TagSet>(kernel, host_name, ts);
  for (const std::string& name : lun_names) {
    auto dev = std::make_unique<ScsiDevice>(this, config.cmd_per_lun);
    dev->q_ = std::make_unique<RequestQueue>(kernel, name, *set_, dev.get(), queue);
    luns_.push_back(std::move(dev));
  }
  fn_get_budget_ = kernel.Intern("scsi_mq_get_budget");
  fn_put_budget_ = kernel.Intern("scsi_mq_put_budget");
  fn_queue_rq_ = kernel.Intern("scsi_queue_rq");
  fn_complete_ = kernel.Intern("scsi_complete");
  fn_end_request_ = kernel.Intern("scsi_end_request");
}

ScsiHost::~ScsiHost() = default;

RequestQueue& ScsiHost::queue(int lun) { return luns_[lun]->queue(); }

// --- budget (scsi_mq_get_budget / scsi_mq_put_budget) ----------------------

bool ScsiDevice::GetBudget(sim::Cpu& cpu, RequestQueue* rq_q) {
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
  k.Count(Counter::k_budget_failure);
  cpu.Charge(host_->fn_get_budget_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  if (device_busy_ == 0 && k.knobs().scsi_budget_idle_delay_run) {
    rq_q->DelayRunHwQueues(&cpu, kScsiQueueDelayNs);
  }
  return false;
}

void ScsiDevice::PutBudget(sim::Cpu& cpu, RequestQueue* rq_q) {
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_put_budget_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  --device_busy_;
}

// --- submission and completion ------------------------------------------------

sim::Task ScsiDevice::QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) {
  // scsi_queue_rq: device/target/host ready checks, scsi_prepare_cmd,
  // blk_mq_start_request, scsi_dispatch_cmd -> LLD queuecommand.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_queue_rq_, k.costs().scsi_queue_rq);
  q_->StartRequest(cpu, rq);
  host_->lld_->QueueCommand(cpu, *this, rq);
  *status = BlkStatus::kOk;
  co_return;
}

void ScsiDevice::Complete(sim::Cpu& cpu, Request* rq) {
  // scsi_complete -> scsi_finish_command -> scsi_device_unbusy ->
  // scsi_io_completion -> scsi_end_request.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_complete_, k.costs().scsi_complete);
  q_->PutRqBudget(cpu, rq);
  q_->EndRequest(cpu, rq, BlkStatus::kOk);
  // scsi_run_queue_async: the starved list is always empty here (the host
  // limit is the shared tag set), so the rule is the hw queue re-run.
  if (k.knobs().run_all_hw_queues_on_completion) {
    q_->RunHwQueuesAsync(cpu);
    return;
  }
  cpu.Charge(host_->fn_end_request_, restarts_line_.Read(k.machine(), cpu.id(), k.costs().line_read_hit));
  if (restarts_ != 0) {
    // atomic_cmpxchg(&sdev->restarts, old, 0) == old
    cpu.Charge(host_->fn_end_request_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    restarts_ = 0;
    q_->RunHwQueuesAsync(cpu);
  }
}

}  // namespace blklab::model
