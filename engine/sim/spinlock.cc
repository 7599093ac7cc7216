#include "engine/sim/spinlock.h"

#include <utility>

namespace blklab::sim {

SpinLock::SpinLock(Machine& machine, std::string name, FnId fast_fn, FnId slow_fn,
                   SpinLockCosts costs)
    : machine_(machine), name_(std::move(name)), fast_fn_(fast_fn), slow_fn_(slow_fn),
      costs_(costs) {
  machine.RegisterLock(this);
}

void SpinLock::Acquired(Cpu& cpu) {
  holder_ = cpu.id();
  acquired_at_ = cpu.now();
  ++stats_.acquisitions;
  cpu.EnterLock();
  // The protected data moves with the lock.
  const int64_t data = data_line_.Write(machine_, cpu.id(), 0);
  if (data > 0) cpu.Charge(fast_fn_, data);
}

Task SpinLock::Lock(Cpu& cpu) {
  co_await cpu.Sync();
  if (holder_ < 0 && waiters_.empty()) {
    cpu.Charge(fast_fn_, lock_line_.Write(machine_, cpu.id(), costs_.uncontended_ns));
    Acquired(cpu);
    co_return;
  }
  ++stats_.contended;
  const SimTime since = cpu.now();
  co_await SpinAwaiter{this, &cpu};
  // Granted: the spin has been charged to the slowpath by the CPU.
  stats_.wait_ns += cpu.now() - since;
  lock_line_.Write(machine_, cpu.id(), 0);  // the handoff already paid for the move
  Acquired(cpu);
}

bool SpinLock::TryLock(Cpu& cpu) {
  if (holder_ >= 0 || !waiters_.empty()) {
    cpu.Charge(fast_fn_, lock_line_.Read(machine_, cpu.id(), 2));
    return false;
  }
  cpu.Charge(fast_fn_, lock_line_.Write(machine_, cpu.id(), costs_.uncontended_ns));
  Acquired(cpu);
  return true;
}

void SpinLock::Unlock(Cpu& cpu) {
  BLKLAB_CHECK(holder_ == cpu.id());
  stats_.hold_ns += cpu.now() - acquired_at_;
  cpu.ExitLock();
  holder_ = -1;
  if (waiters_.empty()) return;
  Waiter w = waiters_.front();
  waiters_.pop_front();
  holder_ = w.cpu->id();  // reserved for the head waiter; nobody can barge in
  const int64_t handoff =
      machine_.TransferCost(cpu.id(), w.cpu->id()) * costs_.handoff_permille / 1000;
  SimTime at = cpu.now() + handoff;
  if (at < w.since) at = w.since;
  w.cpu->ResumeAfterSpin(at, w.since, slow_fn_);
}

}  // namespace blklab::sim
