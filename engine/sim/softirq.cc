#include "engine/sim/cpu.h"

#include <memory>
#include <string>

namespace blklab::sim {

bool Cpu::RaiseSoftirq(IrqHandler* handler, uint64_t arg) {
  softirq_pending_.push_back(IrqWork{handler, arg});
  bool woke = false;
  if (level_ == Level::kTask && !in_ksoftirqd()) {
    // raise_softirq outside interrupt context: wakeup_softirqd.
    if (ksoftirqd_ == nullptr) {
      ksoftirqd_ = std::make_unique<Thread>(machine_, "ksoftirqd/" + std::to_string(id_), id_);
      ksoftirqd_->wakeup_preempts_ = true;
      ksoftirqd_->Start(KsoftirqdBody(), now_);
      woke = true;
    } else if (ksoftirqd_->sleeping()) {
      ksoftirqd_->Wake(now_);
      woke = true;
    }
  }
  UpdatePreempt();
  return woke;
}

Task Cpu::KsoftirqdBody() {
  for (;;) {
    // run_ksoftirqd: the pending softirqs run on top of this thread at its
    // Syncs (Loop starts them while ksoftirqd is current).
    while (!softirq_pending_.empty() || softirq_.active) co_await Sync();
    co_await Sleep();
  }
}

std::coroutine_handle<> Cpu::StartSoftirq() {
  irq_exit_ = false;
  IrqWork w = softirq_pending_.front();
  softirq_pending_.pop_front();
  softirq_.active = true;
  if (stacks_ != nullptr) StartIrqStack(Level::kSoftirq);
  level_ = Level::kSoftirq;
  UpdateThreadAccount();
  softirq_.task = w.handler->Handle(*this, w.arg);
  softirq_.resume = softirq_.task.handle();
  return softirq_.resume;
}

void Cpu::ExitSoftirq() {
  softirq_.active = false;
  softirq_.task = Task();
  level_ = Level::kTask;
  irq_exit_ = true;  // __do_softirq goes on with what is pending
}

}  // namespace blklab::sim
