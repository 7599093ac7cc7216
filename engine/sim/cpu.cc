#include "engine/sim/cpu.h"

#include <algorithm>
#include <utility>

namespace blklab::sim {

Thread::Thread(Machine& machine, std::string name, int cpu, int nice)
    : machine_(machine), name_(std::move(name)), cpu_(cpu), nice_(nice) {
  BLKLAB_CHECK(cpu >= 0 && cpu < machine.num_cpus());
  Cpu& c = machine.cpu(cpu);
  wake_gen_ = c.threads_by_index_.size();  // index of this thread on its CPU
  c.threads_by_index_.push_back(this);
}

void Thread::Start(Task root, SimTime at) {
  BLKLAB_CHECK(state_ == State::kNew);
  root_ = std::move(root);
  resume_ = root_.handle();
  state_ = State::kRunnable;
  machine_.sim().Schedule(at, &machine_.cpu(cpu_), Cpu::kWake, wake_gen_);
}

void Thread::Wake(SimTime at) {
  if (state_ != State::kSleeping) return;
  state_ = State::kRunnable;
  machine_.sim().Schedule(at, &machine_.cpu(cpu_), Cpu::kWake, wake_gen_);
}

Cpu::Cpu(Machine& machine, int id) : machine_(machine), id_(id) {
  fn_schedule_ = machine.functions().Intern("__schedule");
}

void Cpu::GrowAccounts(FnId fn) {
  const FunctionRegistry& r = machine_.functions();
  const FnId n = static_cast<FnId>(std::max<size_t>(r.size(), fn + 1));
  fn_ns_.resize(static_cast<size_t>(n) * kNumModes, 0);
  user_flags_.resize(n);
  for (FnId i = 0; i < n; ++i) {
    user_flags_[i] = static_cast<uint8_t>(i < r.size() && r.is_user(i) ? Mode::kUser : Mode::kSys);
  }
  nr_fns_ = n;
}

void Cpu::Suspend(std::coroutine_handle<> h, SuspendReason reason) {
  switch (level_) {
    case Level::kHardirq:
      hardirq_.resume = h;
      break;
    case Level::kSoftirq:
      softirq_.resume = h;
      break;
    case Level::kTask:
      BLKLAB_CHECK(current_thread_ != nullptr);
      current_thread_->resume_ = h;
      break;
  }
  reason_ = reason;
  if (reason == SuspendReason::kSpin) spinning_ = true;
}

void Cpu::ResumeAfterSpin(SimTime at, SimTime since, FnId slowpath_fn) {
  spin_since_ = since;
  spin_fn_ = slowpath_fn;
  machine_.sim().Schedule(at, this, kSpinGranted, 0);
}

void Cpu::RaiseHardirq(SimTime at, IrqHandler* handler, uint64_t arg) {
  uint32_t slot;
  if (!free_arrival_slots_.empty()) {
    slot = free_arrival_slots_.back();
    free_arrival_slots_.pop_back();
    hardirq_arrivals_[slot] = IrqWork{handler, arg};
  } else {
    slot = static_cast<uint32_t>(hardirq_arrivals_.size());
    hardirq_arrivals_.push_back(IrqWork{handler, arg});
  }
  machine_.sim().Schedule(at, this, kHardirqArrive, slot);
}

void Cpu::RaiseSoftirq(IrqHandler* handler, uint64_t arg) {
  softirq_pending_.push_back(IrqWork{handler, arg});
  UpdatePreempt();
}

int64_t Cpu::mode_ns(Mode m) const {
  if (m == Mode::kIdle) return idle_ns_;
  int64_t total = 0;
  for (size_t slot = static_cast<size_t>(m); slot < fn_ns_.size(); slot += kNumModes) {
    total += fn_ns_[slot];
  }
  return total;
}

void Cpu::AccountIdleUntil(SimTime t) {
  if (t > now_) {
    if (idle_) idle_ns_ += t - now_;
    now_ = t;
  }
}

void Cpu::UpdatePreempt() {
  bool p = false;
  if (level_ < Level::kHardirq && !hardirq_pending_.empty()) p = true;
  if (level_ < Level::kSoftirq && !softirq_pending_.empty()) p = true;
  if (!p && level_ == Level::kTask && current_thread_ != nullptr) {
    for (const Thread* t : runqueue_) {
      if (t->nice_ < current_thread_->nice_) {
        p = true;
        break;
      }
    }
  }
  preempt_pending_ = p;
}

void Cpu::Kick(SimTime at) {
  if (spinning_ || in_loop_ || !idle_) return;  // the CPU will look at its work itself
  if (run_scheduled_at_ <= at) return;
  ++run_gen_;
  run_scheduled_at_ = at;
  machine_.sim().Schedule(at, this, kRun, run_gen_);
}

void Cpu::ArriveHardirq(IrqWork w) {
  hardirq_pending_.push_back(w);
  UpdatePreempt();
  Kick(machine_.sim().Now());
}

void Cpu::EnqueueRunnable(Thread* t) {
  runqueue_.push_back(t);
  if (current_thread_ != nullptr && slice_end_ == kSimTimeNever) {
    slice_end_ = std::max(now_, machine_.sim().Now()) + machine_.costs().sched_slice_ns;
  }
  UpdatePreempt();
  Kick(machine_.sim().Now());
}

void Cpu::OnEvent(uint32_t kind, uint64_t arg) {
  const SimTime t = machine_.sim().Now();
  switch (kind) {
    case kRun:
      if (arg != run_gen_) return;  // superseded
      run_scheduled_at_ = kSimTimeNever;
      break;
    case kHardirqArrive: {
      IrqWork w = hardirq_arrivals_[arg];
      free_arrival_slots_.push_back(static_cast<uint32_t>(arg));
      ArriveHardirq(w);
      return;
    }
    case kWake:
      EnqueueRunnable(threads_by_index_[arg]);
      return;
    case kSpinGranted:
      BLKLAB_CHECK(spinning_);
      spinning_ = false;
      // The granted context resumes first: the lock is reserved for it, so
      // an interrupt or another thread run now could spin on it forever.
      resuming_spin_ = true;
      UpdateThreadAccount();
      Charge(spin_fn_, t - spin_since_);
      break;
  }
  if (idle_ && t > now_) idle_ns_ += t - now_;
  if (t > now_) now_ = t;
  Loop();
}

void Cpu::Loop() {
  in_loop_ = true;
  for (;;) {
    std::coroutine_handle<> h;
    Level run_level;
    if (hardirq_.active) {
      run_level = Level::kHardirq;
      h = hardirq_.resume;
    } else if (!hardirq_pending_.empty() && lock_depth_ == 0 && !resuming_spin_) {
      IrqWork w = hardirq_pending_.front();
      hardirq_pending_.pop_front();
      hardirq_.active = true;
      level_ = Level::kHardirq;  // the handler's first steps are charged as irq
      UpdateThreadAccount();
      hardirq_.task = w.handler->Handle(*this, w.arg);
      hardirq_.resume = hardirq_.task.handle();
      run_level = Level::kHardirq;
      h = hardirq_.resume;
    } else if (softirq_.active) {
      run_level = Level::kSoftirq;
      h = softirq_.resume;
    } else if (!softirq_pending_.empty() && lock_depth_ == 0 && !resuming_spin_) {
      IrqWork w = softirq_pending_.front();
      softirq_pending_.pop_front();
      softirq_.active = true;
      level_ = Level::kSoftirq;
      UpdateThreadAccount();
      softirq_.task = w.handler->Handle(*this, w.arg);
      softirq_.resume = softirq_.task.handle();
      run_level = Level::kSoftirq;
      h = softirq_.resume;
    } else {
      run_level = Level::kTask;
      level_ = Level::kTask;
      if (current_thread_ != nullptr && lock_depth_ == 0 && !resuming_spin_) {
        // Wake-up pre-emption by a higher-priority (lower nice) thread, or
        // the end of the time slice with an equal one waiting.
        const bool slice_over = now_ >= slice_end_;
        for (Thread* t : runqueue_) {
          if (t->nice_ < current_thread_->nice_ || (slice_over && t->nice_ == current_thread_->nice_)) {
            current_thread_->state_ = Thread::State::kRunnable;
            runqueue_.push_back(current_thread_);
            current_thread_ = nullptr;
            break;
          }
        }
        if (current_thread_ != nullptr && slice_over) {
          slice_end_ = runqueue_.empty() ? kSimTimeNever : now_ + machine_.costs().sched_slice_ns;
        }
      }
      if (current_thread_ == nullptr) {
        if (runqueue_.empty()) {
          idle_ = true;
          in_loop_ = false;
          preempt_pending_ = false;
          return;
        }
        // Lowest nice first, FIFO among equals.
        auto best = runqueue_.begin();
        for (auto it = runqueue_.begin(); it != runqueue_.end(); ++it) {
          if ((*it)->nice_ < (*best)->nice_) best = it;
        }
        Thread* next = *best;
        runqueue_.erase(best);
        idle_ = false;
        current_thread_ = next;
        slice_end_ = runqueue_.empty() ? kSimTimeNever : now_ + machine_.costs().sched_slice_ns;
        UpdateThreadAccount();
        if (next != last_thread_) {
          Charge(fn_schedule_, machine_.costs().context_switch_ns);
          ++next->context_switches_;
        }
        last_thread_ = next;
        next->state_ = Thread::State::kRunning;
      }
      h = current_thread_->resume_;
    }
    idle_ = false;
    level_ = run_level;
    UpdatePreempt();
    UpdateThreadAccount();
    reason_ = SuspendReason::kNone;
    resuming_spin_ = false;
    RunChain(h);

    // The context returned control: finished or suspended.
    if (run_level == Level::kHardirq && hardirq_.task.done()) {
      hardirq_.active = false;
      hardirq_.task = Task();
      level_ = Level::kTask;
      continue;
    }
    if (run_level == Level::kSoftirq && softirq_.task.done()) {
      softirq_.active = false;
      softirq_.task = Task();
      level_ = Level::kTask;
      continue;
    }
    if (run_level == Level::kTask && current_thread_->root_.done()) {
      current_thread_->state_ = Thread::State::kDone;
      current_thread_ = nullptr;
      continue;
    }
    switch (reason_) {
      case SuspendReason::kYield:
        ++run_gen_;
        run_scheduled_at_ = now_;
        machine_.sim().Schedule(now_, this, kRun, run_gen_);
        in_loop_ = false;
        return;
      case SuspendReason::kSpin:
        in_loop_ = false;
        return;
      case SuspendReason::kSleep:
        BLKLAB_CHECK(run_level == Level::kTask);
        current_thread_->state_ = Thread::State::kSleeping;
        current_thread_ = nullptr;
        continue;
      case SuspendReason::kNone:
        BLKLAB_CHECK(false && "context suspended without telling its CPU why");
    }
  }
}

}  // namespace blklab::sim
