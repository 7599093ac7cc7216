// engine/sim/waitqueue.h
//
// WaitQueue models a kernel wait_queue_head: threads sleep on it until woken.
// Callers check their condition and, if it does not hold, call Wait with no
// Sync in between (the check and the sleep are one step, as prepare_to_wait
// + schedule make them atomic against wake-ups in the kernel).
//
// Invariants: a thread is on at most one WaitQueue; WakeOne wakes in FIFO order.
// Thread-safety: thread-compatible.
// Cost: O(1).
#ifndef BLKLAB_ENGINE_SIM_WAITQUEUE_H_
#define BLKLAB_ENGINE_SIM_WAITQUEUE_H_

#include <deque>

#include "engine/sim/cpu.h"
#include "engine/sim/pool_allocator.h"

namespace blklab::sim {

class WaitQueue {
 public:
  // Puts the running thread of `cpu` to sleep on this queue.
  Cpu::SleepAwaiter Wait(Cpu& cpu) {
    BLKLAB_CHECK(cpu.current_thread() != nullptr);
    waiters_.push_back(cpu.current_thread());
    return cpu.Sleep();
  }

  // The same in io_schedule (the sleeper counts in its CPU's nr_iowait).
  Cpu::IoSleepAwaiter IoWait(Cpu& cpu) {
    BLKLAB_CHECK(cpu.current_thread() != nullptr);
    waiters_.push_back(cpu.current_thread());
    return cpu.IoSleep();
  }

  // Wakes the first sleeper at `at`; false if none. The caller charges
  // try_to_wake_up.
  bool WakeOne(SimTime at) {
    while (!waiters_.empty()) {
      Thread* t = waiters_.front();
      waiters_.pop_front();
      if (t->sleeping()) {
        t->Wake(at);
        return true;
      }
    }
    return false;
  }

  int WakeAll(SimTime at) {
    int n = 0;
    while (WakeOne(at)) ++n;
    return n;
  }

  // finish_wait: drops `t` if it is still queued (woken by someone else).
  void Remove(const Thread* t) {
    for (auto it = waiters_.begin(); it != waiters_.end(); ++it) {
      if (*it == t) {
        waiters_.erase(it);
        return;
      }
    }
  }

  bool empty() const { return waiters_.empty(); }
  size_t size() const { return waiters_.size(); }

 private:
  PooledDeque<Thread*> waiters_;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_WAITQUEUE_H_
