// engine/sim/workqueue.h
//
// WorkQueue models kblockd: a WQ_HIGHPRI per-CPU workqueue with one kworker
// thread (nice -20) per CPU (docs/kernel-model.md §1.5). Queueing a work item that
// is already pending does nothing (queue_work_on), so many kicks collapse into
// one run. Modifying it (mod_delayed_work_on, which
// kblockd_mod_delayed_work_on is) takes a pending item back wherever it is,
// on a CPU's list or behind a timer (try_to_grab_pending), and queues it
// again with the new CPU and delay: a run waiting behind a busy worker moves
// to the CPU the caller names, at the tail of that CPU's list, and a delay
// postpones even an item that was ready to run. A delay runs on the
// timer wheel when the queue has a tick rate (set_timer_wheel_hz): as
// __queue_delayed_work arms its timer_list for jiffies + the delay in
// jiffies (msecs_to_jiffies rounds up), and the wheel runs a timer at the
// jiffy after its expiry (TimerWheelExpiry), a 3 ms delay armed mid-jiffy
// runs 3-4 ms later at HZ=1000 and 4-8 ms later at HZ=250; without one it
// runs after exactly the delay. Work items are
// non-reentrant, as in __queue_work: an item queued (or whose timer fires)
// while its run is in progress goes to the list of the CPU running it,
// whatever CPU the caller named, and runs there after the current run.
//
// Invariants: an item is queued on at most one CPU at a time; an item whose
//  run is in progress may be queued again (it will run again, on the same
//  CPU, after this run): no two runs of one item overlap.
// Thread-safety: thread-compatible.
// Cost: O(1) per queueing, plus a scan of the CPU's (short) list when a
//  pending item is modified; a wake-up of the kworker if it sleeps.
#ifndef BLKLAB_ENGINE_SIM_WORKQUEUE_H_
#define BLKLAB_ENGINE_SIM_WORKQUEUE_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "engine/sim/cpu.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/task.h"

namespace blklab::sim {

class WorkQueue;

class WorkItem : public EventHandler {
 public:
  virtual ~WorkItem() = default;
  // The work function; runs in the kworker thread of the CPU it was queued on.
  virtual Task Run(Cpu& cpu) = 0;

  bool pending() const { return pending_; }

  void OnEvent(uint32_t kind, uint64_t gen) override;  // delayed timer expiry

 private:
  friend class WorkQueue;
  WorkQueue* wq_ = nullptr;
  bool pending_ = false;       // queued or timer armed
  int queued_cpu_ = -1;        // the CPU whose list holds it, or -1
  int running_cpu_ = -1;       // the CPU whose worker is running it, or -1
  bool timer_armed_ = false;
  int timer_cpu_ = 0;
  uint64_t timer_gen_ = 0;
  SimTime timer_expires_ = 0;
};

struct WorkQueueCosts {
  int64_t queue_ns = 150;        // queueing the item
  int64_t wake_ns = 400;         // try_to_wake_up of the sleeping kworker
};

class WorkQueue {
 public:
  WorkQueue(Machine& machine, std::string name, WorkQueueCosts costs);
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Queues `item` to run on `cpu` after `delay_ns` (0: now). Called from code
  // running on `caller` (whose time is charged); `caller` may be null for
  // calls from event context (the timer), which are not charged.
  // With `modify` (mod_delayed_work) a pending delayed item's timer moves.
  void Queue(Cpu* caller, WorkItem* item, int cpu, int64_t delay_ns, bool modify = false);

  // Runs delayed items at their timer-wheel bucket for a kernel with `hz`
  // ticks per second; 0 (the default): after exactly the delay.
  void set_timer_wheel_hz(int hz) { timer_wheel_hz_ = hz; }

  uint64_t runs() const { return runs_; }
  // Queueings sent to the CPU already running the item instead of the one
  // named (find_worker_executing_work).
  uint64_t reentry_redirects() const { return reentry_redirects_; }

 private:
  friend class WorkItem;
  struct PerCpu {
    std::unique_ptr<Thread> worker;
    PooledDeque<WorkItem*> items;
    bool started = false;
  };
  Task WorkerLoop(int cpu);
  void Enqueue(Cpu* caller, WorkItem* item, int cpu, SimTime at);

  Machine& machine_;
  std::string name_;
  WorkQueueCosts costs_;
  FnId fn_queue_;
  FnId fn_wake_;
  std::vector<PerCpu> per_cpu_;
  int timer_wheel_hz_ = 0;
  uint64_t runs_ = 0;
  uint64_t reentry_redirects_ = 0;
};

}  // namespace blklab::sim

#endif  // BLKLAB_ENGINE_SIM_WORKQUEUE_H_
