#include "engine/sim/workqueue.h"

#include <algorithm>
#include <utility>

#include "engine/sim/timer.h"

namespace blklab::sim {

WorkQueue::WorkQueue(Machine& machine, std::string name, WorkQueueCosts costs)
    : machine_(machine), name_(std::move(name)), costs_(costs) {
  fn_queue_ = machine.functions().Intern("kblockd_mod_delayed_work_on");
  fn_wake_ = machine.functions().Intern("try_to_wake_up");
  per_cpu_.resize(machine.num_cpus());
}

void WorkItem::OnEvent(uint32_t, uint64_t gen) {
  if (!timer_armed_ || gen != timer_gen_) return;
  timer_armed_ = false;
  wq_->Enqueue(nullptr, this, timer_cpu_, wq_->machine_.sim().Now());
}

void WorkQueue::Queue(Cpu* caller, WorkItem* item, int cpu, int64_t delay_ns, bool modify) {
  if (caller != nullptr) caller->Charge(fn_queue_, costs_.queue_ns);
  const SimTime now = caller != nullptr ? caller->now() : machine_.sim().Now();
  item->wq_ = this;
  if (item->pending_) {
    // queue_work_on: already pending, nothing to do.
    if (!modify) return;
    // mod_delayed_work_on: take it back (its timer, or its place on a
    // CPU's list) and queue it again below.
    if (item->timer_armed_) {
      item->timer_armed_ = false;
      ++item->timer_gen_;
    } else if (item->queued_cpu_ >= 0) {
      PooledDeque<WorkItem*>& items = per_cpu_[item->queued_cpu_].items;
      items.erase(std::find(items.begin(), items.end(), item));
      item->queued_cpu_ = -1;
    }
  }
  item->pending_ = true;
  if (delay_ns > 0) {
    item->timer_armed_ = true;
    ++item->timer_gen_;
    item->timer_cpu_ = cpu;
    item->timer_expires_ = now + delay_ns;
    if (timer_wheel_hz_ > 0) {
      // timer->expires = jiffies + delay, the delay in whole jiffies.
      const int64_t jiffy = kNsPerSec / timer_wheel_hz_;
      const SimTime expires = (now / jiffy + (delay_ns + jiffy - 1) / jiffy) * jiffy;
      item->timer_expires_ = TimerWheelExpiry(now, expires, timer_wheel_hz_);
    }
    machine_.sim().ScheduleBulk(item->timer_expires_, item, 0, item->timer_gen_);
    return;
  }
  Enqueue(caller, item, cpu, now);
}

void WorkQueue::Enqueue(Cpu* caller, WorkItem* item, int cpu, SimTime at) {
  // __queue_work: a work item still running on some CPU's pool is queued
  // there, so that it never runs twice at once.
  if (item->running_cpu_ >= 0 && item->running_cpu_ != cpu) {
    cpu = item->running_cpu_;
    ++reentry_redirects_;
  }
  PerCpu& pc = per_cpu_[cpu];
  pc.items.push_back(item);
  item->queued_cpu_ = cpu;
  if (!pc.started) {
    pc.started = true;
    pc.worker = std::make_unique<Thread>(machine_, "kworker/" + std::to_string(cpu) + ":1H", cpu,
                                         -20);
    pc.worker->Start(WorkerLoop(cpu), at);
    return;
  }
  if (pc.worker->sleeping()) {
    if (caller != nullptr) caller->Charge(fn_wake_, costs_.wake_ns);
    pc.worker->Wake(caller != nullptr ? caller->now() : at);
  }
}

Task WorkQueue::WorkerLoop(int cpu_id) {
  Cpu& cpu = machine_.cpu(cpu_id);
  PerCpu& pc = per_cpu_[cpu_id];
  for (;;) {
    while (!pc.items.empty()) {
      WorkItem* item = pc.items.front();
      pc.items.pop_front();
      item->pending_ = false;
      item->queued_cpu_ = -1;
      ++runs_;
      item->running_cpu_ = cpu_id;
      co_await item->Run(cpu);
      item->running_cpu_ = -1;
      co_await cpu.PreemptPoint();  // process_one_work's cond_resched
    }
    co_await cpu.Sleep();
  }
}

}  // namespace blklab::sim
