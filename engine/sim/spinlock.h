// engine/sim/spinlock.h
//
// SpinLock models a kernel qspinlock (docs/kernel-model.md §1.4): an uncontended
// acquire is an atomic on the lock's cacheline; contended waiters queue FIFO
// (MCS) with their CPUs busy, and that time is charged to
// `native_queued_spin_lock_slowpath`. An arriving waiter's xchg on the lock
// word takes the lock's line, so the holder's release store pays to get it
// back (charged to the holder, lengthening the section under contention). The kind says how the kernel takes
// the lock: spin_lock leaves hardirqs on (a spinner or holder serves them,
// see cpu.h), spin_lock_irqsave masks them while spinning and holding. On release the head waiter
// gets the lock after a handoff of lock_handoff_permille/1000 line transfers.
// The data the lock protects moves with it: by default the first access after
// a CPU change pays a transfer of one protected line (`data_line`); a user
// that models its critical sections' working set line by line (mq-deadline)
// turns that off (set_explicit_working_set) and charges its own lines. Two
// locks may share the cacheline of their lock words (ShareLockLine), as
// fields of one ____cacheline_aligned struct do. An interrupt that wants a
// lock while the context under it spins for another (a hardirq on top of a
// plain spin_lock spin) polls for it instead of queueing, and takes it only
// when it is free with nobody queued.
//
// Invariants: at most one holder; queued waiters are granted in arrival order;
//  every Lock() is matched by one Unlock() by the same CPU.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: Lock is a coroutine frame from the pool; O(1) otherwise.
#ifndef BLKLAB_ENGINE_SIM_SPINLOCK_H_
#define BLKLAB_ENGINE_SIM_SPINLOCK_H_

#include <cstdint>
#include <deque>
#include <string>

#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/task.h"

namespace blklab::sim {

struct SpinLockCosts {
  int64_t uncontended_ns = 15;     // spin lock+unlock, line local
  int64_t handoff_permille = 1500;  // handoff = 1.5 line transfers
};

// How the kernel code takes the lock.
enum class SpinLockKind : uint8_t {
  kSpinLock,         // spin_lock: hardirqs stay on
  kSpinLockIrqsave,  // spin_lock_irqsave / spin_lock_irq: hardirqs off
};

struct LockStats {
  uint64_t acquisitions = 0;
  uint64_t contended = 0;
  int64_t wait_ns = 0;
  int64_t hold_ns = 0;
  uint64_t max_waiters = 0;
  uint64_t holder_changes = 0;    // acquisitions by another CPU than the previous holder
  uint64_t remote_holder_changes = 0;  // of those, by a CPU outside the previous holder's LLC
  uint64_t line_transfers = 0;    // cacheline transfers by holders inside their sections
  int64_t wait_irqs_off_ns = 0;   // part of wait_ns spun with hardirqs masked
};

class SpinLock {
 public:
  // `fast_fn` is the function the uncontended path is charged to (e.g.
  // `_raw_spin_lock_irqsave`), `slow_fn` the spin
  // (`native_queued_spin_lock_slowpath`).
  SpinLock(Machine& machine, std::string name, SpinLockKind kind, FnId fast_fn, FnId slow_fn,
           SpinLockCosts costs);
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

  // Acquires the lock for the context running on `cpu`.
  Task Lock(Cpu& cpu);
  // Non-blocking attempt (spin_trylock): true and held, or false at once.
  // REQUIRES: the caller has Synced.
  bool TryLock(Cpu& cpu);
  // Releases; hands the lock to the next waiter if any.
  // REQUIRES: the caller has Synced since its last step (`co_await
  // cpu.Sync()`), so that the release happens at its own virtual time and not
  // ahead of other CPUs.
  void Unlock(Cpu& cpu);

  bool locked() const { return holder_ >= 0; }
  SpinLockKind kind() const { return kind_; }
  const std::string& name() const { return name_; }
  const LockStats& stats() const { return stats_; }
  CacheLine& data_line() { return data_line_; }
  // The lock's users charge the lines their sections touch themselves.
  void set_explicit_working_set() { implicit_data_line_ = false; }
  // This lock's word lives on `other`'s lock cacheline.
  void ShareLockLine(SpinLock& other) { lock_line_ = other.lock_line_; }
  // The cacheline of the lock word, for data that shares it (a list head in
  // the same ____cacheline_aligned struct).
  CacheLine& lock_line() { return *lock_line_; }

 private:
  struct Waiter {
    Cpu* cpu;
    SimTime since;
  };
  struct SpinAwaiter {
    SpinLock* lock;
    Cpu* cpu;
    bool await_ready() const { return false; }
    void await_suspend(std::coroutine_handle<> h) {
      // queued_spin_lock_slowpath: xchg_tail on the lock word takes its line.
      lock->lock_line_->Write(lock->machine_, cpu->id(), 0);
      lock->waiters_.push_back(Waiter{cpu, cpu->now()});
      if (lock->waiters_.size() > lock->stats_.max_waiters) {
        lock->stats_.max_waiters = lock->waiters_.size();
      }
      cpu->SuspendSpinning(h, lock->slow_fn_, lock->kind_ == SpinLockKind::kSpinLock);
    }
    void await_resume() const {}
  };
  void Acquired(Cpu& cpu);

  Machine& machine_;
  std::string name_;
  SpinLockKind kind_;
  FnId fast_fn_;
  FnId slow_fn_;
  SpinLockCosts costs_;
  CacheLine own_lock_line_;
  CacheLine* lock_line_ = &own_lock_line_;
  CacheLine data_line_;
  bool implicit_data_line_ = true;
  int holder_ = -1;
  int last_holder_ = -1;
  SimTime acquired_at_ = 0;
  uint64_t transfers_at_acquire_ = 0;
  PooledDeque<Waiter> waiters_;
  LockStats stats_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_SPINLOCK_H_
