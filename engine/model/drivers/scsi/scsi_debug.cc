#include "engine/model/drivers/scsi/scsi_debug.h"

#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace blklab::model {

ScsiDebug::ScsiDebug(Kernel& kernel, int first_host_no, const std::vector<std::string>& lun_names,
                     const ScsiDebugConfig& config, const QueueConfig& queue)
    : kernel_(kernel), config_(config), response_irq_(this) {
  const size_t per_host = static_cast<size_t>(config.luns_per_host);
  BLKLAB_CHECK(lun_names.size() == per_host * static_cast<size_t>(config.hosts));
  const uint32_t tag_objs = config.host.host_tagset ? 1 : config.host.nr_hw_queues;
  for (int h = 0; h < config.hosts; ++h) {
    const auto first = lun_names.begin() + static_cast<std::ptrdiff_t>(per_host * static_cast<size_t>(h));
    const std::vector<std::string> names(first, first + static_cast<std::ptrdiff_t>(per_host));
    hosts_.push_back(std::make_unique<ScsiHost>(kernel, absl::StrCat("host", first_host_no + h), names,
                                                config.host, queue, this));
    timers_.emplace_back(static_cast<size_t>(tag_objs) * config.host.can_queue);
  }
  fn_queuecommand_ = kernel.Intern("scsi_debug_queuecommand");
  fn_device_access_ = kernel.Intern("do_device_access");
  fn_complete_ = kernel.Intern("sdebug_q_cmd_hrt_complete");
}

RequestQueue& ScsiDebug::queue(int lun) {
  const int per_host = config_.luns_per_host;
  return hosts_[static_cast<size_t>(lun / per_host)]->queue(lun % per_host);
}

sim::HrTimer& ScsiDebug::TimerFor(ScsiDevice& sdev, const Request* rq) {
  size_t h = 0;
  while (hosts_[h].get() != &sdev.host()) ++h;
  const size_t hwq = config_.host.host_tagset ? 0 : rq->mq_hctx->queue_num();
  return timers_[h][hwq * config_.host.can_queue + rq->tag];
}

ScsiMlqueue ScsiDebug::QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) {
  const host::CostTable& c = kernel_.costs();
  // scsi_debug_queuecommand: count the attempt, fake_host_busy, look the
  // opcode up, then resp_read / resp_write.
  ++cmnd_count_;
  cpu.Charge(fn_queuecommand_, c.sdebug_queuecommand);
  if (config_.every_nth != 0 && config_.inject_host_busy &&
      cmnd_count_ % static_cast<uint64_t>(std::abs(config_.every_nth)) == 0) {
    return ScsiMlqueue::kHostBusy;
  }
  // fake_timeout (after the fake_rw shortcut): every every_nth-th command is
  // ignored, no response ever (SDEBUG_OPT_MAC_TIMEOUT: reads and writes
  // only, which are all blklab sends); scsi_timeout takes it from there.
  if (config_.every_nth != 0 && config_.inject_timeout && !config_.fake_rw &&
      cmnd_count_ % static_cast<uint64_t>(std::abs(config_.every_nth)) == 0) {
    return ScsiMlqueue::kOk;
  }
  if (!config_.fake_rw && (rq->op == ReqOp::kRead || rq->op == ReqOp::kWrite)) {
    // do_device_access under sdeb_read_lock / sdeb_write_lock: the store's
    // rwlock word moves to this CPU twice, then the copy.
    sim::AccessCost ac = kernel_.Access(cpu);
    ac.Atomic(macc_lck_line_, c.atomic_local);
    ac.Work(c.sdebug_copy_per_kib * static_cast<int64_t>((rq->bytes + 1023) >> 10));
    ac.Atomic(macc_lck_line_, c.atomic_local);
    cpu.Charge(fn_device_access_, ac.Take());
  }
  ScsiHost& host = sdev.host();
  if (config_.delay_ns == 0) {
    // schedule_resp, respond_in_thread: scsi_done from here.
    host.Done(cpu, rq);
    return ScsiMlqueue::kOk;
  }
  // schedule_resp's queue-full injection, then hrtimer_start(...,
  // HRTIMER_MODE_REL_PINNED) on this CPU.
  uint32_t& in_q = num_in_q_[&sdev];
  rq->scsi_status = 0;
  if (config_.every_nth != 0 && config_.inject_rare_tsf && in_q + 1 == sdev.queue_depth() &&
      ++a_tsf_ >= static_cast<uint64_t>(std::abs(config_.every_nth))) {
    a_tsf_ = 0;
    rq->scsi_status = kSamStatTaskSetFull;
  }
  ++in_q;
  cpu.Charge(kernel_.fn.hrtimer_start, c.hrtimer_arm);
  sim::HrTimer& t = TimerFor(sdev, rq);
  t.Init(&kernel_.machine(), cpu.id(), &response_irq_, reinterpret_cast<uint64_t>(rq));
  t.Start(cpu.now() + config_.delay_ns);
  return ScsiMlqueue::kOk;
}

sim::Task ScsiDebug::ResponseIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  sim::StackFrame frame(cpu, sd_->fn_complete_);
  Kernel& k = sd_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(k.fn.hrtimer_interrupt, k.costs().hrtimer_fire);
  co_await cpu.Sync();
  // sdebug_q_cmd_complete: the queued-command bookkeeping, then scsi_done.
  Request* rq = reinterpret_cast<Request*>(arg);
  cpu.Charge(sd_->fn_complete_, k.costs().sdebug_q_cmd_complete);
  ScsiDevice& sdev = static_cast<ScsiDevice&>(rq->q->driver());
  --sd_->num_in_q_[&sdev];
  sdev.host().Done(cpu, rq);
}

ScsiEhResult ScsiDebug::AbortCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) {
  // scsi_debug_abort -> scsi_debug_abort_cmnd -> stop_qc_helper: cancel the
  // pending response, if any; the command leaves the LUN's queue.
  ++num_aborts_;
  if (config_.delay_ns != 0) {
    sim::HrTimer& t = TimerFor(sdev, rq);
    if (t.pending() && t.arg() == reinterpret_cast<uint64_t>(rq)) {
      cpu.Charge(kernel_.fn.hrtimer_start, kernel_.costs().hrtimer_arm);
      t.Cancel();
      --num_in_q_[&sdev];
    }
  }
  return ScsiEhResult::kSuccess;
}

}  // namespace blklab::model
