#include "engine/sim/spinlock.h"

#include <utility>

namespace blklab::sim {

SpinLock::SpinLock(Machine& machine, std::string name, SpinLockKind kind, FnId fast_fn,
                   FnId slow_fn, SpinLockCosts costs)
    : machine_(machine), name_(std::move(name)), kind_(kind), fast_fn_(fast_fn), slow_fn_(slow_fn),
      costs_(costs) {
  machine.RegisterLock(this);
}

void SpinLock::Acquired(Cpu& cpu) {
  holder_ = cpu.id();
  acquired_at_ = cpu.now();
  ++stats_.acquisitions;
  if (last_holder_ != cpu.id()) {
    ++stats_.holder_changes;
    // The first acquisition has no previous holder to be far from.
    if (last_holder_ >= 0 && !machine_.SameLlc(last_holder_, cpu.id())) ++stats_.remote_holder_changes;
  }
  last_holder_ = cpu.id();
  transfers_at_acquire_ = machine_.transfers(cpu.id());
  cpu.EnterLock(kind_ == SpinLockKind::kSpinLockIrqsave);
  // The protected data moves with the lock.
  if (!implicit_data_line_) return;
  const int64_t data = data_line_.Write(machine_, cpu.id(), 0);
  if (data > 0) cpu.Charge(fast_fn_, data);
}

Task SpinLock::Lock(Cpu& cpu) {
  StackFrame frame(cpu, fast_fn_);  // the slowpath shows under _raw_spin_lock*, as in perf
  // preempt_disable() comes first; Acquired takes the count the holder keeps.
  cpu.PreemptDisable();
  co_await cpu.Sync();
  // An interrupt taking a lock its CPU's interrupted context holds would
  // spin forever (the kernel's reason for spin_lock_irqsave).
  BLKLAB_CHECK(holder_ != cpu.id() && "lock taken on the CPU that holds it (irq-unsafe lock?)");
  if (holder_ < 0 && waiters_.empty()) {
    cpu.Charge(fast_fn_, lock_line_->Write(machine_, cpu.id(), costs_.uncontended_ns));
    Acquired(cpu);
    cpu.PreemptEnable();
    co_return;
  }
  ++stats_.contended;
  const SimTime since = cpu.now();
  if (cpu.spinning()) {
    // An interrupt wanting a lock while the context under it spins for
    // another: qspinlock queues it on a second per-CPU node; the model's CPU
    // spins for one context at a time, so the interrupt polls instead,
    // charging the spin up to the next event anywhere and looking again.
    // It does not barge ahead of queued waiters.
    while (holder_ >= 0 || !waiters_.empty()) {
      const SimTime limit = cpu.RunAheadLimit();
      if (limit > cpu.now()) cpu.ChargeRaw(slow_fn_, limit - cpu.now());
      co_await cpu.Sync();
    }
    stats_.wait_ns += cpu.now() - since;
    if (kind_ == SpinLockKind::kSpinLockIrqsave || cpu.irqs_disabled()) stats_.wait_irqs_off_ns += cpu.now() - since;
    cpu.Charge(fast_fn_, lock_line_->Write(machine_, cpu.id(), costs_.uncontended_ns));
    Acquired(cpu);
    cpu.PreemptEnable();
    co_return;
  }
  co_await SpinAwaiter{this, &cpu};
  // Granted: the spin has been charged to the slowpath by the CPU.
  stats_.wait_ns += cpu.now() - since;
  if (kind_ == SpinLockKind::kSpinLockIrqsave || cpu.irqs_disabled()) stats_.wait_irqs_off_ns += cpu.now() - since;
  lock_line_->Write(machine_, cpu.id(), 0);  // the handoff already paid for the move
  Acquired(cpu);
  cpu.PreemptEnable();
}

bool SpinLock::TryLock(Cpu& cpu) {
  if (holder_ >= 0 || !waiters_.empty()) {
    cpu.Charge(fast_fn_, lock_line_->Read(machine_, cpu.id(), 2));
    return false;
  }
  cpu.Charge(fast_fn_, lock_line_->Write(machine_, cpu.id(), costs_.uncontended_ns));
  Acquired(cpu);
  return true;
}

void SpinLock::Unlock(Cpu& cpu) {
  BLKLAB_CHECK(holder_ == cpu.id());
  // The release store needs the lock word's line, which arriving waiters took.
  const int64_t release = lock_line_->Write(machine_, cpu.id(), 0);
  if (release > 0) cpu.Charge(fast_fn_, release);
  stats_.hold_ns += cpu.now() - acquired_at_;
  stats_.line_transfers += machine_.transfers(cpu.id()) - transfers_at_acquire_;
  cpu.ExitLock(kind_ == SpinLockKind::kSpinLockIrqsave);
  holder_ = -1;
  if (waiters_.empty()) return;
  Waiter w = waiters_.front();
  waiters_.pop_front();
  holder_ = w.cpu->id();  // reserved for the head waiter; nobody can barge in
  const int64_t handoff =
      machine_.TransferCost(cpu.id(), w.cpu->id()) * costs_.handoff_permille / 1000;
  SimTime at = cpu.now() + handoff;
  if (at < w.since) at = w.since;
  w.cpu->ResumeAfterSpin(at);
}

}  // namespace blklab::sim
