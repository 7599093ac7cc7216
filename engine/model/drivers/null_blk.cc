#include "engine/model/drivers/null_blk.h"

#include <utility>

namespace blklab::model {

namespace {
constexpr int64_t kTicksPerSec = 50;                                  // null_blk TICKS_PER_SEC
constexpr int64_t kBwTimerIntervalNs = sim::kNsPerSec / kTicksPerSec;  // TIMER_INTERVAL: 20 ms
// mb_per_tick(): bytes the device may move per tick.
int64_t BytesPerTick(uint64_t mbps) { return (int64_t{1} << 20) / kTicksPerSec * static_cast<int64_t>(mbps); }
}

TagSetConfig NullBlkTagSetConfig(const NullBlkConfig& config) {
  TagSetConfig ts;
  ts.nr_hw_queues = config.submit_queues;
  ts.queue_depth = config.hw_queue_depth;
  ts.blocking = config.blocking;
  ts.nr_poll_queues = config.poll_queues;
  ts.hctx_shared = config.shared_tag_bitmap;
  return ts;
}

NullBlk::NullBlk(Kernel& kernel, std::string name, const NullBlkConfig& config, const QueueConfig& queue,
                 TagSet* shared_set)
    : kernel_(kernel), name_(std::move(name)), config_(config), timer_irq_(this), bw_timer_(this) {
  if (shared_set == nullptr) {
    own_set_ = std::make_unique<TagSet>(kernel, name_, NullBlkTagSetConfig(config));
    set_ = own_set_.get();
  } else {
    set_ = shared_set;
  }
  q_ = std::make_unique<RequestQueue>(kernel, name_, *set_, this, queue);
  cmd_timers_.resize(static_cast<size_t>(set_->nr_hw_queues()) * config.hw_queue_depth);
  poll_lists_.resize(set_->nr_hw_queues());
  for (size_t i = 0; i < cmd_timers_.size(); ++i) {
    cmd_timers_[i].Init(&kernel.machine(), 0, &timer_irq_, 0);
  }
  fn_queue_rq_ = kernel.Intern("null_queue_rq");
  fn_complete_rq_ = kernel.Intern("null_complete_rq");
  fn_timer_expired_ = kernel.Intern("null_cmd_timer_expired");
  bw_budget_bytes_ = BytesPerTick(config.mbps);
}

sim::Task NullBlk::QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) {
  sim::StackFrame frame(cpu, fn_queue_rq_);
  *status = NullQueueRq(cpu, hctx, rq);
  co_return;
}

BlkStatus NullBlk::NullQueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq) {
  cpu.Charge(fn_queue_rq_, kernel_.costs().null_queue_rq);
  if (config_.mbps > 0) {
    // null_handle_throttled: the budget refills every tick (nullb_bwtimer_fn);
    // the request's bytes are taken first, and a negative budget stops the
    // queues and returns DEV_RESOURCE (the bytes stay taken until the refill).
    const int64_t window = cpu.now() / kBwTimerIntervalNs;
    if (window != bw_window_) {
      bw_window_ = window;
      bw_budget_bytes_ = BytesPerTick(config_.mbps);
    }
    bw_budget_bytes_ -= rq->bytes;
    if (bw_budget_bytes_ < 0) {
      q_->StopHwQueues();
      if (!bw_timer_armed_) {
        bw_timer_armed_ = true;
        kernel_.machine().sim().Schedule(
            (cpu.now() / kBwTimerIntervalNs + 1) * kBwTimerIntervalNs, &bw_timer_, 0, 0);
      }
      return BlkStatus::kDevResource;
    }
  }
  q_->StartRequest(cpu, rq);
  if (hctx->is_poll()) {
    // Poll queue: the command is done at once and waits for ->poll.
    poll_lists_[hctx->queue_num()].push_back(rq);
    return BlkStatus::kOk;
  }
  switch (config_.irqmode) {
    case 0:
      q_->EndRequest(cpu, rq, BlkStatus::kOk);
      break;
    case 1:
      q_->CompleteRequest(cpu, rq);
      break;
    default: {
      // null_cmd_end_timer: hrtimer on this CPU, completion_nsec from now.
      cpu.Charge(kernel_.fn.hrtimer_start, kernel_.costs().hrtimer_arm);
      const size_t idx = static_cast<size_t>(hctx->queue_num()) * config_.hw_queue_depth + rq->tag;
      sim::HrTimer& t = cmd_timers_[idx];
      t.Init(&kernel_.machine(), cpu.id(), &timer_irq_, reinterpret_cast<uint64_t>(rq));
      t.Start(cpu.now() + config_.completion_nsec);
      break;
    }
  }
  return BlkStatus::kOk;
}

void NullBlk::Complete(sim::Cpu& cpu, Request* rq) {
  // null_complete_rq -> end_cmd
  cpu.Charge(fn_complete_rq_, kernel_.costs().line_read_hit);
  q_->EndRequest(cpu, rq, BlkStatus::kOk);
}

sim::Task NullBlk::Poll(sim::Cpu& cpu, Hctx* hctx, int* completed) {
  // null_poll: everything done on this poll queue ends through one
  // io_comp_batch (blk_mq_end_request_batch).
  RequestList& list = poll_lists_[hctx->queue_num()];
  int n = 0;
  for (Request* rq = list.front(); rq != nullptr; rq = rq->next) {
    cpu.Charge(fn_complete_rq_, kernel_.costs().line_read_hit);
    ++n;
  }
  q_->EndRequestBatch(cpu, list);
  *completed = n;
  co_return;
}

sim::Task NullBlk::TimerIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  sim::StackFrame frame(cpu, nb_->fn_timer_expired_);
  Kernel& k = nb_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(k.fn.hrtimer_interrupt, k.costs().hrtimer_fire);
  co_await cpu.Sync();
  cpu.Charge(nb_->fn_timer_expired_, k.costs().line_read_hit);
  nb_->q_->EndRequest(cpu, reinterpret_cast<Request*>(arg), BlkStatus::kOk);
}

void NullBlk::BwTimer::OnEvent(uint32_t, uint64_t) {
  // nullb_bwtimer_fn: refill, restart the stopped queues.
  nb_->bw_timer_armed_ = false;
  nb_->q_->StartStoppedHwQueues(nullptr);
}

}  // namespace blklab::model
