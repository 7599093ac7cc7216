// Spinlocks, wait queues and workqueues.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "engine/sim/cacheline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "engine/sim/rng.h"
#include "engine/sim/sim_test_util.h"
#include "engine/sim/simulator.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/timer.h"
#include "engine/sim/waitqueue.h"
#include "engine/sim/workqueue.h"
#include "gtest/gtest.h"

namespace blklab::sim {
namespace {

using test::Cpus;
using test::Recorder;
using test::Worker;
using test::YieldingWorker;

Task LockLoop(Cpu& cpu, SpinLock& lock, FnId f, int n, int64_t hold_ns) {
  for (int i = 0; i < n; ++i) {
    co_await lock.Lock(cpu);
    cpu.Charge(f, hold_ns);
    co_await cpu.Sync();
    lock.Unlock(cpu);
    co_await cpu.Sync();
    cpu.Charge(f, 5);
  }
}

TEST(SpinLockTest, TwoCpusContendAndSpinInSlowpath) {
  Machine m(Cpus(2), MachineCosts{});
  FnId f = m.functions().Intern("critical_section");
  FnId fast = m.functions().Intern("_raw_spin_lock");
  FnId slow = m.functions().Intern("native_queued_spin_lock_slowpath");
  SpinLock lock(m, "test->lock", SpinLockKind::kSpinLockIrqsave, fast, slow, SpinLockCosts{});
  Thread a(m, "a", 0), b(m, "b", 1);
  a.Start(LockLoop(m.cpu(0), lock, f, 1000, 100), 0);
  b.Start(LockLoop(m.cpu(1), lock, f, 1000, 100), 0);
  m.sim().Run();
  EXPECT_EQ(lock.stats().acquisitions, 2000u);
  EXPECT_GT(lock.stats().contended, 1000u);
  const int64_t slowpath = m.cpu(0).fn_ns(slow, Mode::kSys) + m.cpu(1).fn_ns(slow, Mode::kSys);
  EXPECT_GT(slowpath, 0);
  EXPECT_EQ(slowpath, lock.stats().wait_ns);
  EXPECT_FALSE(lock.locked());
  // The lock serialises: total time >= all hold time.
  EXPECT_GE(std::max(m.cpu(0).now(), m.cpu(1).now()), 2000 * 100);
}

TEST(SpinLockTest, UncontendedOnOneCpuNeverSpins) {
  Machine m(Cpus(1), MachineCosts{});
  FnId f = m.functions().Intern("cs");
  FnId slow = m.functions().Intern("native_queued_spin_lock_slowpath");
  SpinLock lock(m, "l", SpinLockKind::kSpinLock, m.functions().Intern("_raw_spin_lock"), slow, SpinLockCosts{});
  Thread a(m, "a", 0);
  a.Start(LockLoop(m.cpu(0), lock, f, 100, 10), 0);
  m.sim().Run();
  EXPECT_EQ(lock.stats().contended, 0u);
  EXPECT_EQ(m.cpu(0).fn_ns(slow, Mode::kSys), 0);
}

TEST(WaitQueueTest, SleepersWakeAndRun) {
  Machine m(Cpus(2), MachineCosts{});
  FnId f = m.functions().Intern("work");
  WaitQueue wq;
  bool flag = false;
  SimTime woke_at = -1;
  auto sleeper = [&](Cpu& cpu) -> Task {
    co_await cpu.Sync();
    if (!flag) co_await wq.Wait(cpu);
    woke_at = cpu.now();
    cpu.Charge(f, 10);
  };
  auto waker = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 10000);
    co_await cpu.Sync();
    flag = true;
    wq.WakeOne(cpu.now());
  };
  Thread a(m, "a", 0), b(m, "b", 1);
  a.Start(sleeper(m.cpu(0)), 0);
  b.Start(waker(m.cpu(1)), 0);
  m.sim().Run();
  EXPECT_GE(woke_at, 10000);
  EXPECT_EQ(a.state(), Thread::State::kDone);
}

struct CountingWork : WorkItem {
  int runs = 0;
  FnId fn;
  Task Run(Cpu& cpu) override {
    ++runs;
    cpu.Charge(fn, 50);
    co_return;
  }
};

// Runs `kicker` as fio's thread on CPU `cpu` until the simulation ends (the
// lambda outlives its coroutine: the caller keeps it).
template <typename Kicker>
void RunKicker(Machine& m, int cpu, Kicker& kicker) {
  Thread t(m, "fio", cpu);
  t.Start(kicker(m.cpu(cpu)), 0);
  m.sim().Run();
}

TEST(WorkQueueTest, PendingItemsCollapse) {
  Machine m(Cpus(1), MachineCosts{});
  WorkQueue wq(m, "kblockd", WorkQueueCosts{});
  CountingWork w;
  w.fn = m.functions().Intern("blk_mq_run_work_fn");
  auto kicker = [&](Cpu& cpu) -> Task {
    for (int i = 0; i < 5; ++i) wq.Queue(&cpu, &w, 0, 0);
    co_await cpu.Sync();
  };
  RunKicker(m, 0, kicker);
  EXPECT_EQ(w.runs, 1);
}

TEST(WorkQueueTest, DelayedWorkRunsAfterDelay) {
  Machine m(Cpus(1), MachineCosts{});
  WorkQueue wq(m, "kblockd", WorkQueueCosts{});
  CountingWork w;
  w.fn = m.functions().Intern("blk_mq_run_work_fn");
  auto kicker = [&](Cpu& cpu) -> Task {
    wq.Queue(&cpu, &w, 0, 3000000);
    co_await cpu.Sync();
  };
  RunKicker(m, 0, kicker);
  EXPECT_EQ(w.runs, 1);
  EXPECT_GE(m.cpu(0).now(), 3000000);
}

// A work item that keeps its worker busy for 1 ms (a timeout walk).
struct HogWork : WorkItem {
  FnId fn;
  Task Run(Cpu& cpu) override {
    for (int i = 0; i < 1000; ++i) {
      cpu.Charge(fn, 1000);
      co_await cpu.Sync();
    }
  }
};

struct WhereWork : WorkItem {
  int cpu_ran = -1;
  SimTime ran_at = -1;
  Task Run(Cpu& cpu) override {
    cpu_ran = cpu.id();
    ran_at = cpu.now();
    co_return;
  }
};

// On the timer wheel a delayed work's timer expires at jiffies + the delay
// in whole jiffies and runs at the next jiffy after that (calc_index rounds
// up): 3 ms queued 0.4 ms into a jiffy runs at 4 ms at HZ=1000 and, as one
// jiffy, at 8 ms at HZ=250; without the wheel at exactly 3.4 ms.
TEST(WorkQueueTest, DelayedWorkRunsAtTheJiffyAfterItsTimerExpires) {
  for (const auto& [hz, ran_at] : {std::pair<int, SimTime>{0, 3400000}, {1000, 4000000}, {250, 8000000}}) {
    Machine m(Cpus(1), MachineCosts{});
    WorkQueue wq(m, "kblockd", WorkQueueCosts{.queue_ns = 0, .wake_ns = 0});
    wq.set_timer_wheel_hz(hz);
    WhereWork w;
    auto kicker = [&](Cpu& cpu) -> Task {
      cpu.Charge(m.functions().Intern("fio"), 400000);
      wq.Queue(&cpu, &w, 0, 3000000);
      co_await cpu.Sync();
    };
    RunKicker(m, 0, kicker);
    // (plus the kworker's wake-up and context switch)
    EXPECT_GE(w.ran_at, ran_at) << "HZ=" << hz;
    EXPECT_LT(w.ran_at, ran_at + 10000) << "HZ=" << hz;
  }
}

// mod_delayed_work_on takes a pending item back from the list where it
// waits behind a busy worker and queues it on the CPU it names (blk-mq's
// kblockd_mod_delayed_work_on with blk_mq_hctx_next_cpu's next CPU);
// queue_work_on leaves it where it is.
TEST(WorkQueueTest, ModifyMovesAPendingItemToTheNamedCpu) {
  for (bool modify : {false, true}) {
    Machine m(Cpus(2), MachineCosts{});
    WorkQueue wq(m, "kblockd", WorkQueueCosts{});
    HogWork hog;
    hog.fn = m.functions().Intern("blk_mq_timeout_work");
    WhereWork w;
    auto kicker = [&](Cpu& cpu) -> Task {
      wq.Queue(&cpu, &hog, 0, 0);
      wq.Queue(&cpu, &w, 0, 0, modify);
      cpu.Charge(hog.fn, 10000);
      co_await cpu.Sync();
      wq.Queue(&cpu, &w, 1, 0, modify);
      co_await cpu.Sync();
    };
    RunKicker(m, 1, kicker);
    if (modify) {
      EXPECT_EQ(w.cpu_ran, 1);
      EXPECT_LT(w.ran_at, 1000000);
    } else {
      EXPECT_EQ(w.cpu_ran, 0);
      EXPECT_GE(w.ran_at, 1000000);
    }
  }
}

// A delay given to mod_delayed_work_on postpones an item that was ready.
TEST(WorkQueueTest, ModifyWithADelayPostponesAReadyItem) {
  Machine m(Cpus(1), MachineCosts{});
  WorkQueue wq(m, "kblockd", WorkQueueCosts{});
  WhereWork w;
  auto kicker = [&](Cpu& cpu) -> Task {
    wq.Queue(&cpu, &w, 0, 0, /*modify=*/true);
    wq.Queue(&cpu, &w, 0, 3000000, /*modify=*/true);
    co_await cpu.Sync();
  };
  RunKicker(m, 0, kicker);
  EXPECT_GE(w.ran_at, 3000000);
}

// A work item that records each run's CPU and span, and queues itself on
// the other CPU while its first run is still in progress.
struct ReentrantWork : WorkItem {
  WorkQueue* wq = nullptr;
  FnId fn;
  struct Span {
    int cpu;
    SimTime start, end;
  };
  std::vector<Span> spans;
  Task Run(Cpu& cpu) override {
    Span span{cpu.id(), cpu.now(), 0};
    for (int i = 0; i < 100; ++i) {
      cpu.Charge(fn, 1000);
      co_await cpu.Sync();
      if (spans.empty() && i == 10) wq->Queue(&cpu, this, 1 - cpu.id(), 0, /*modify=*/true);
    }
    span.end = cpu.now();
    spans.push_back(span);
  }
};

// __queue_work's non-reentrancy: queued while it runs on CPU 0, the item
// runs again on CPU 0 after that run ends, not at once on the CPU named
// (two kworkers would otherwise run one hctx's run_work side by side).
TEST(WorkQueueTest, AnItemQueuedWhileItRunsRunsAgainWhereItRuns) {
  Machine m(Cpus(2), MachineCosts{});
  WorkQueue wq(m, "kblockd", WorkQueueCosts{});
  ReentrantWork w;
  w.wq = &wq;
  w.fn = m.functions().Intern("blk_mq_run_work_fn");
  auto kicker = [&](Cpu& cpu) -> Task {
    wq.Queue(&cpu, &w, 0, 0);
    co_await cpu.Sync();
  };
  RunKicker(m, 0, kicker);
  ASSERT_EQ(w.spans.size(), 2u);
  EXPECT_EQ(w.spans[0].cpu, 0);
  EXPECT_EQ(w.spans[1].cpu, 0);
  EXPECT_GE(w.spans[1].start, w.spans[0].end);
  EXPECT_EQ(wq.reentry_redirects(), 1u);
}

// One hold of `lock` for `hold_ns` (split in 1 us steps), starting at once.
Task HoldOnce(Cpu& cpu, SpinLock& lock, FnId f, int64_t hold_ns) {
  co_await lock.Lock(cpu);
  for (int64_t t = 0; t < hold_ns; t += 1000) {
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
  }
  lock.Unlock(cpu);
}

// Waits `delay_ns`, then one Lock/Unlock.
Task LockAfter(Cpu& cpu, SpinLock& lock, FnId f, int64_t delay_ns, SimTime* got_at) {
  cpu.Charge(f, delay_ns);
  co_await lock.Lock(cpu);
  *got_at = cpu.now();
  co_await cpu.Sync();
  lock.Unlock(cpu);
}

// A hardirq that arrives while its CPU spins: served at once on a plain
// spin_lock (interrupts on), held back until the grant on spin_lock_irqsave.
// The grant that lands during the interrupt waits for it, and the spin is
// charged only outside the interrupt.
TEST(SpinLockTest, PlainSpinServesHardirqsIrqsaveSpinHoldsThemBack) {
  for (SpinLockKind kind : {SpinLockKind::kSpinLock, SpinLockKind::kSpinLockIrqsave}) {
    SCOPED_TRACE(kind == SpinLockKind::kSpinLock ? "spin_lock" : "spin_lock_irqsave");
    Machine m(Cpus(2), MachineCosts{});
    FnId f = m.functions().Intern("cs");
    FnId slow = m.functions().Intern("native_queued_spin_lock_slowpath");
    SpinLock lock(m, "l", kind, m.functions().Intern("_raw_spin_lock"), slow, SpinLockCosts{});
    CountingIrq irq;
    irq.fn = m.functions().Intern("irq_handler");
    SimTime got_at = -1;
    Thread a(m, "holder", 0), b(m, "spinner", 1);
    a.Start(HoldOnce(m.cpu(0), lock, f, 10000), 0);
    b.Start(LockAfter(m.cpu(1), lock, f, 1000, &got_at), 0);
    m.cpu(1).RaiseHardirq(3000, &irq, 0);
    m.sim().Run();
    ASSERT_EQ(irq.taken, 1);
    const int64_t spin = m.cpu(1).fn_ns(slow, Mode::kSys);
    if (kind == SpinLockKind::kSpinLock) {
      EXPECT_EQ(irq.at, 3000);
      EXPECT_EQ(lock.stats().wait_irqs_off_ns, 0);
    } else {
      EXPECT_GE(irq.at, got_at);  // after the grant (and the critical section)
      EXPECT_EQ(lock.stats().wait_irqs_off_ns, lock.stats().wait_ns);
    }
    EXPECT_GE(got_at, 10000);
    // Busy time on the spinner: 1 us of work, the spin, 100 ns of irq, the section.
    EXPECT_EQ(m.cpu(1).mode_ns(Mode::kIrq), 100);
    EXPECT_EQ(spin + (kind == SpinLockKind::kSpinLock ? 100 : 0), lock.stats().wait_ns)
        << "the interrupt's time is not spin time";
  }
}

// The release store needs the lock word's line back from the waiter that
// took it with its xchg: the holder pays one transfer at unlock.
TEST(SpinLockTest, ArrivingWaiterTakesTheLockLine) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}};  // two CCXs
  MachineCosts c;
  Machine m(p, c);
  FnId f = m.functions().Intern("cs");
  FnId fast = m.functions().Intern("_raw_spin_lock");
  SpinLock lock(m, "l", SpinLockKind::kSpinLock, fast, m.functions().Intern("slow"), SpinLockCosts{});
  SimTime got_at = -1;
  Thread a(m, "holder", 0), b(m, "waiter", 1);
  a.Start(HoldOnce(m.cpu(0), lock, f, 5000), 0);
  b.Start(LockAfter(m.cpu(1), lock, f, 1000, &got_at), 0);
  m.sim().Run();
  // Holder: acquire (uncontended_ns) + 5 us + the release transfer.
  EXPECT_EQ(m.cpu(0).fn_ns(fast, Mode::kSys), SpinLockCosts{}.uncontended_ns + c.die_ns);
  EXPECT_EQ(lock.stats().holder_changes, 2u);
}

// lockstat's remote%: a hand-over counts as remote when the new holder sits
// outside the previous holder's last-level cache; SMT siblings and CPUs of
// one CCX are near, and the first acquisition has nobody to be far from.
TEST(SpinLockTest, RemoteHolderChangesCountHandOversAcrossTheLlc) {
  // CPUs 0 and 1: SMT siblings; 2: the same CCX; 3: another CCX of the die.
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 1, 0, 0, 0}};
  Machine m(p, MachineCosts{});
  FnId f = m.functions().Intern("cs");
  SpinLock lock(m, "l", SpinLockKind::kSpinLock, m.functions().Intern("_raw_spin_lock"),
                m.functions().Intern("slow"), SpinLockCosts{});
  // Holders in turn: 0, 1 (sibling), 2 (same CCX), 3 (remote), 3 (no
  // change), 0 (remote again).
  const int order[] = {0, 1, 2, 3, 3, 0};
  std::vector<std::unique_ptr<Thread>> threads;
  SimTime at = 0;
  for (int cpu : order) {
    threads.push_back(std::make_unique<Thread>(m, "t" + std::to_string(threads.size()), cpu));
    threads.back()->Start(HoldOnce(m.cpu(cpu), lock, f, 1000), at);
    at += 10000;
  }
  m.sim().Run();
  EXPECT_EQ(lock.stats().acquisitions, 6u);
  EXPECT_EQ(lock.stats().holder_changes, 5u);
  EXPECT_EQ(lock.stats().remote_holder_changes, 2u);
}

}  // namespace
}  // namespace blklab::sim
