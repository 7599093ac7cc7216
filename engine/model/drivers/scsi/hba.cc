#include "engine/model/drivers/scsi/hba.h"

#include <algorithm>
#include <string>
#include <utility>

#include "engine/model/hctx.h"

namespace blklab::model {

namespace {
constexpr uint32_t kIrqPollTriggerIoCount = 8;  // MPI3MR_IRQ_POLL_TRIGGER_IOCOUNT
constexpr int kIrqThreadRtPriority = 50;  // MAX_RT_PRIO / 2, setup_irq_thread
}  // namespace

Hba::Hba(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
         const HbaConfig& config, const QueueConfig& queue)
    : kernel_(kernel),
      config_(config),
      host_(kernel, std::move(host_name), lun_names, config.host, queue, this),
      fw_done_(this),
      reply_irq_(this),
      poll_timer_irq_(this),
      firmware_(ServiceStageSpec{config.firmware_nsec, config.firmware_nsec, config.max_iops, 0, 0}) {
  const ServiceStageSpec drive{config.drive_latency_nsec, config.drive_latency_nsec, config.drive_iops, 0, 0};
  drives_.assign(std::max<uint32_t>(config.drives, 1), ServiceStage(drive));
  const int ncpus = kernel.machine().num_cpus();
  reply_ = std::vector<ReplyQueue>(threaded_isr() ? std::max<uint32_t>(config.host.nr_hw_queues, 1) : ncpus);
  if (!threaded_isr()) {
    for (int c = 0; c < ncpus; ++c) reply_[c].cpu = c;
  }
  const bool mpi3mr = config.lld == 1;
  fn_queuecommand_ = kernel.Intern(mpi3mr ? "mpi3mr_qcmd" : "megasas_build_and_issue_cmd_fusion");
  fn_isr_ = kernel.Intern(mpi3mr ? "mpi3mr_isr" : "megasas_isr_fusion");
  fn_reply_ = kernel.Intern(mpi3mr ? "mpi3mr_process_op_reply_q" : "complete_cmd_fusion");
  fn_isr_poll_ = kernel.Intern("mpi3mr_isr_poll");
  fn_usleep_ = kernel.Intern("usleep_range_state");
  fn_edge_irq_ = kernel.Intern("handle_edge_irq");
}

int Hba::ReplyQueueOf(const Request* rq) {
  if (!threaded_isr()) return rq->mq_ctx->cpu();  // megasas_get_msix_index: reply_map[cpu]
  // mpi3mr_qcmd: the reply queue of blk_mq_unique_tag_to_hwq; its vector's
  // effective affinity is the first CPU of the hctx.
  const Hctx* hctx = rq->mq_hctx;
  const int q = static_cast<int>(hctx->queue_num() % reply_.size());
  ReplyQueue& r = reply_[q];
  if (r.cpu < 0) {
    r.cpu = hctx->cpumask().empty() ? rq->mq_ctx->cpu() : hctx->cpumask().front();
    r.sleep_timer.Init(&kernel_.machine(), r.cpu, &poll_timer_irq_, static_cast<uint64_t>(q));
  }
  return q;
}

ScsiMlqueue Hba::QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) {
  cpu.Charge(fn_queuecommand_, kernel_.costs().hba_queuecommand);
  // atomic_inc_return(&fw_outstanding) > max: give it back, HOST_BUSY.
  if (config_.fw_queue_depth > 0 && fw_outstanding_ >= config_.fw_queue_depth) return ScsiMlqueue::kHostBusy;
  ++fw_outstanding_;
  if (threaded_isr()) {
    // mpi3mr_op_request_post: pend_ios of the reply queue.
    ReplyQueue& r = reply_[ReplyQueueOf(rq)];
    if (++r.pend_ios > kIrqPollTriggerIoCount) r.enable_irq_poll = true;
  }
  // Firmware, then RAID-0: the stripe unit holding the first sector picks
  // the drive.
  const sim::SimTime fw = firmware_.Admit(cpu.now(), rq->op, rq->bytes);
  const uint64_t stripe = (rq->sector << kSectorShift) / config_.stripe_bytes;
  const sim::SimTime done = drives_[stripe % drives_.size()].Admit(fw, rq->op, rq->bytes);
  kernel_.machine().sim().ScheduleBulk(done, &fw_done_, 0, reinterpret_cast<uint64_t>(rq));
  return ScsiMlqueue::kOk;
}

void Hba::RaiseReplyIrq(int q) {
  ReplyQueue& r = reply_[q];
  if (r.irq_pending) return;
  r.irq_pending = true;
  sim::Machine& m = kernel_.machine();
  m.cpu(r.cpu).RaiseHardirq(m.sim().Now(), &reply_irq_, static_cast<uint64_t>(q));
}

void Hba::FirmwareDone::OnEvent(uint32_t, uint64_t arg) {
  // The firmware posts a reply descriptor on the request's reply queue and
  // signals its vector; one interrupt drains the queue.
  Request* rq = reinterpret_cast<Request*>(arg);
  const int q = h_->ReplyQueueOf(rq);
  ReplyQueue& r = h_->reply_[q];
  r.posted.push_back(rq);
  // Disabled: the first message is taken and masked (lazy disable), the
  // others wait in the device until enable_irq.
  if (r.irq_disabled && r.irq_replay) return;
  h_->RaiseReplyIrq(q);
}

sim::Task Hba::ProcessReplyQueue(sim::Cpu& cpu, int q, uint32_t* handled) {
  Kernel& k = kernel_;
  ReplyQueue& r = reply_[q];
  RequestList done;
  done.splice_tail(r.posted);
  while (!done.empty()) {
    Request* rq = done.pop_front();
    cpu.Charge(fn_reply_, k.costs().hba_reply_per_cmd);
    --fw_outstanding_;
    if (threaded_isr()) --r.pend_ios;
    ++*handled;
    host_.Done(cpu, rq);  // scsi_done -> blk_mq_complete_request
    co_await cpu.Sync();
  }
}

sim::Task Hba::ReplyIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  Kernel& k = h_->kernel_;
  const int q = static_cast<int>(arg);
  ReplyQueue& r = h_->reply_[q];
  if (r.irq_disabled) {
    // handle_edge_irq on a disabled vector: mask it, mark it pending.
    k.Count(Counter::k_hardirq);
    cpu.Charge(h_->fn_edge_irq_, k.costs().hardirq_entry_exit);
    co_await cpu.Sync();
    r.irq_pending = false;
    r.irq_replay = true;
    co_return;
  }
  sim::StackFrame frame(cpu, h_->fn_isr_);
  k.Count(Counter::k_hardirq);
  cpu.Charge(h_->fn_isr_, k.costs().hardirq_entry_exit);
  co_await cpu.Sync();
  r.irq_pending = false;
  uint32_t handled = 0;
  co_await h_->ProcessReplyQueue(cpu, q, &handled);
  if (h_->threaded_isr() && r.enable_irq_poll && r.pend_ios > 0) {
    // More replies to come: poll them from the irq thread.
    r.irq_disabled = true;  // disable_irq_nosync
    h_->WakeIrqThread(cpu, q);
  }
}

void Hba::WakeIrqThread(sim::Cpu& cpu, int q) {
  Kernel& k = kernel_;
  ReplyQueue& r = reply_[q];
  // The vector stays disabled until the thread, about to sleep, enables it.
  BLKLAB_CHECK(r.thread == nullptr || r.thread->sleeping());
  cpu.Charge(k.fn.try_to_wake_up, k.costs().try_to_wake_up);
  k.CpupriSet(cpu);  // enqueue_task_rt
  if (r.thread == nullptr) {
    // request_threaded_irq's "irq/N-mpi3mrX-msixQ", started at its first use.
    r.thread = std::make_unique<sim::Thread>(kernel_.machine(), "irq/mpi3mr0-msix" + std::to_string(q + 1), r.cpu);
    r.thread->set_sched_fifo(kIrqThreadRtPriority);
    r.thread->Start(IrqThreadBody(q), cpu.now());
    return;
  }
  r.thread->Wake(cpu.now());
}

sim::Task Hba::PollTimerIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  Kernel& k = h_->kernel_;
  cpu.Charge(k.fn.hrtimer_interrupt, k.costs().hrtimer_fire);
  co_await cpu.Sync();
  sim::Thread& t = *h_->reply_[arg].thread;
  if (!t.sleeping()) co_return;
  cpu.Charge(k.fn.try_to_wake_up, k.costs().try_to_wake_up);  // hrtimer_wakeup
  k.CpupriSet(cpu);
  t.Wake(cpu.now());
}

sim::Task Hba::IrqThreadBody(int q) {
  Kernel& k = kernel_;
  ReplyQueue& r = reply_[q];
  sim::Cpu& cpu = k.machine().cpu(r.cpu);
  sim::Simulator& sim = k.machine().sim();
  for (;;) {
    {
      sim::StackFrame frame(cpu, fn_isr_poll_);
      uint32_t handled = 0;
      do {
        co_await cpu.Sync();
        co_await ProcessReplyQueue(cpu, q, &handled);
        // usleep_range: the sleeper's hrtimer, then schedule() takes the
        // thread off the runqueue.
        cpu.Charge(fn_usleep_, k.costs().hrtimer_arm);
        co_await cpu.Sync();
        k.CpupriSet(cpu);  // dequeue_task_rt
        // A real-time sleeper's timer fires at min without slack, else at
        // its hard expiry.
        const int64_t sleep_ns =
            k.knobs().hrtimer_rt_no_slack ? config_.irq_poll_sleep_min_ns : config_.irq_poll_sleep_max_ns;
        r.sleep_timer.Start(std::max(cpu.now(), sim.Now()) + sleep_ns);
        co_await cpu.Sleep();
        co_await cpu.Sync();  // atomic_read(&pend_ios) at the wake-up
      } while (r.pend_ios > 0 && handled < config_.host.can_queue);
      co_await cpu.Sync();
      r.enable_irq_poll = false;
      // enable_irq: unmask; an interrupt taken while disabled is resent.
      r.irq_disabled = false;
      if (r.irq_replay) {
        r.irq_replay = false;
        RaiseReplyIrq(q);
      }
    }
    k.CpupriSet(cpu);
    co_await cpu.Sleep();
  }
}

}  // namespace blklab::model
