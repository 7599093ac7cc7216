// The CPU: charging, interrupt levels, softirqs, preemption, wake-up
// placement and balancing.
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

TEST(CpuTest, ChargesTimeToFunctionsAndModes) {
  Machine m(Cpus(1), MachineCosts{});
  FnId k = m.functions().Intern("blk_mq_submit_bio");
  FnId u = m.functions().Intern("fio:get_io_u");
  Thread t(m, "fio", 0);
  auto body = [](Cpu& cpu, FnId k, FnId u) -> Task {
    for (int i = 0; i < 10; ++i) {
      cpu.Charge(u, 10);
      co_await cpu.Sync();
      cpu.Charge(k, 20);
    }
  };
  t.Start(body(m.cpu(0), k, u), 100);
  m.sim().Run();
  const Cpu& c = m.cpu(0);
  EXPECT_EQ(c.fn_ns(k, Mode::kSys), 200);
  EXPECT_EQ(c.fn_ns(u, Mode::kUser), 100);
  EXPECT_EQ(c.mode_ns(Mode::kIdle), 100);
  EXPECT_EQ(c.now(), 100 + 300 + m.costs().context_switch_ns);
  EXPECT_EQ(t.state(), Thread::State::kDone);
  // A single CPU with nothing else pending needs no events besides the start.
  EXPECT_LE(m.sim().events_delivered(), 2u);
}

// A thread that sleeps with nothing else to run on its CPU pays for the
// switch to the idle task (__schedule in its own context, sys) and, woken
// on the same idle CPU, for the switch back: the idle switch each way, no
// mm switch. A switch between two threads still costs the full switch.
TEST(CpuTest, SleepingOntoAnIdleCpuCostsTheIdleSwitchBothWays) {
  Machine m(Cpus(2), MachineCosts{});
  const FnId f = m.functions().Intern("work");
  const FnId schedule = m.functions().Intern("__schedule");
  constexpr int kSleeps = 10;
  Thread sleeper(m, "sleeper", 0);
  Thread waker(m, "waker", 1);
  auto sleep_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    for (int i = 0; i < kSleeps; ++i) {
      cpu.Charge(f, 100);
      co_await cpu.Sync();
      co_await cpu.Sleep();
    }
  };
  auto wake_body = [&]() -> Task {
    Cpu& cpu = m.cpu(1);
    for (int i = 0; i < kSleeps; ++i) {
      cpu.Charge(f, 10000);
      co_await cpu.Sync();
      sleeper.Wake(cpu.now());
    }
  };
  sleeper.Start(sleep_body(), 0);
  waker.Start(wake_body(), 0);
  m.sim().Run();
  ASSERT_EQ(sleeper.state(), Thread::State::kDone);
  const int64_t idle_switch = m.costs().context_switch_idle_ns;
  ASSERT_GT(idle_switch, 0);
  EXPECT_LT(idle_switch, m.costs().context_switch_ns);
  // The first pick is a full switch (from nothing); then each sleep is one
  // switch to idle and each wake-up one switch back.
  const int64_t switches_ns = m.costs().context_switch_ns + 2 * kSleeps * idle_switch;
  EXPECT_EQ(m.cpu(0).fn_ns(schedule, Mode::kSys), switches_ns);
  EXPECT_EQ(sleeper.stats().mode_ns[static_cast<int>(Mode::kSys)], kSleeps * 100 + switches_ns);
  EXPECT_EQ(m.cpu(0).context_switches(), 1u);
}

TEST(CpuTest, TwoThreadsOnTwoCpusRunInParallel) {
  Machine m(Cpus(2), MachineCosts{});
  FnId f = m.functions().Intern("work");
  Thread a(m, "a", 0), b(m, "b", 1);
  a.Start(Worker(m.cpu(0), f, 100, 10), 0);
  b.Start(Worker(m.cpu(1), f, 100, 10), 0);
  m.sim().Run();
  EXPECT_EQ(m.cpu(0).now(), m.cpu(1).now());
  EXPECT_EQ(m.cpu(0).fn_ns(f, Mode::kSys), 1000);
}

struct CountingIrq : IrqHandler {
  int taken = 0;
  SimTime at = -1;
  FnId fn;
  Task Handle(Cpu& cpu, uint64_t arg) override {
    ++taken;
    at = cpu.now();
    cpu.Charge(fn, 100);
    co_return;
  }
};

TEST(CpuTest, HrTimerFiresInHardirqAndPreemptsAtSync) {
  Machine m(Cpus(1), MachineCosts{});
  FnId f = m.functions().Intern("work");
  CountingIrq irq;
  irq.fn = m.functions().Intern("null_cmd_timer_expired");
  HrTimer timer;
  timer.Init(&m, 0, &irq, 0);
  timer.Start(5000);
  Thread t(m, "fio", 0);
  t.Start(Worker(m.cpu(0), f, 100, 100), 0);
  m.sim().Run();
  EXPECT_EQ(irq.taken, 1);
  EXPECT_GE(irq.at, 5000);
  EXPECT_LT(irq.at, 5000 + 100);  // taken at the next step boundary
  EXPECT_EQ(m.cpu(0).mode_ns(Mode::kIrq), 100);
}

// A thread sleeps on CPU 0 while a hog keeps CPU 0 busy for 2 ms; another
// thread wakes it from CPU 2 at 20 us. CPUs 0 and 1 share an LLC, 2 and 3
// another; CPU 1 runs a hog for `cpu1_busy_us` (0: idle). Returns the CPU
// the sleeper resumed on and when.
struct Resumed {
  int cpu = -1;
  SimTime at = -1;
  uint64_t migrations = 0;
};
Resumed WakeUp(bool allowed_all, bool migratable_sleep, int cpu1_busy_us) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 1, 0, 0, 0}, {3, 1, 0, 0, 0}};
  Machine m(p, MachineCosts{});
  FnId f = m.functions().Intern("work");
  Resumed r;
  Thread sleeper(m, "sleeper", 0);
  if (allowed_all) sleeper.set_cpus_allowed({0, 1, 2, 3});
  auto sleep_body = [&]() -> Task {
    Cpu& cpu = sleeper.on_cpu();
    cpu.Charge(f, 10);
    co_await cpu.Sync();
    if (migratable_sleep) {
      co_await cpu.SleepMigratable();
    } else {
      co_await cpu.Sleep();
    }
    co_await sleeper.on_cpu().Sync();
    r.cpu = sleeper.on_cpu().id();
    r.at = sleeper.on_cpu().now();
    sleeper.on_cpu().Charge(f, 10);
  };
  auto hog_body = [&](Cpu& cpu, int us) -> Task {
    for (int i = 0; i < us; ++i) {
      cpu.Charge(f, 1000);
      co_await cpu.Sync();
    }
  };
  auto waker_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 20000);
    co_await cpu.Sync();
    sleeper.Wake(cpu.now());
  };
  Thread hog(m, "hog", 0), hog1(m, "hog1", 1), waker(m, "waker", 2);
  sleeper.Start(sleep_body(), 0);
  hog.Start(hog_body(m.cpu(0), 2000), 0);
  if (cpu1_busy_us > 0) hog1.Start(hog_body(m.cpu(1), cpu1_busy_us), 0);
  waker.Start(waker_body(m.cpu(2)), 0);
  m.sim().Run();
  EXPECT_EQ(sleeper.state(), Thread::State::kDone);
  r.migrations = sleeper.migrations();
  return r;
}

TEST(CpuTest, WakeUpMovesAThreadToAnIdleCpuOfItsLlc) {
  // Its CPU is busy, CPU 1 of its LLC idle: select_idle_sibling picks 1.
  Resumed r = WakeUp(true, true, 0);
  EXPECT_EQ(r.cpu, 1);
  EXPECT_LT(r.at, 25000);
  EXPECT_EQ(r.migrations, 1u);
  // CPU 1 busy until 1 ms: it waits on CPU 0 until CPU 1 goes idle and
  // pulls it (newidle balancing; it last ran 1 ms ago: cache cold).
  r = WakeUp(true, true, 1000);
  EXPECT_EQ(r.cpu, 1);
  EXPECT_GE(r.at, 1000000);
  EXPECT_LT(r.at, 1010000);
  EXPECT_EQ(r.migrations, 1u);
  // CPU 1 idle at 300 us, when it last ran 300 us ago: cache hot, so it
  // stays and waits for CPU 0.
  r = WakeUp(true, true, 300);
  EXPECT_EQ(r.cpu, 0);
  EXPECT_GE(r.at, 2000000);
  EXPECT_EQ(r.migrations, 0u);
  // CPU 1 busy longer than CPU 0: it stays, although CPU 3 of the other
  // LLC is idle (a wake-up looks in the LLC; only a CPU going idle pulls).
  r = WakeUp(true, true, 4000);
  EXPECT_EQ(r.cpu, 0);
  EXPECT_GE(r.at, 2000000);
  EXPECT_LT(r.at, 2010000);
  EXPECT_EQ(r.migrations, 0u);
  // Pinned (no affinity set): it stays.
  EXPECT_EQ(WakeUp(false, true, 0).cpu, 0);
  EXPECT_EQ(WakeUp(false, true, 1000).cpu, 0);
  // A sleep inside a kernel path (Cpu::Sleep) wakes where it slept and is
  // not pulled.
  r = WakeUp(true, false, 1000);
  EXPECT_EQ(r.cpu, 0);
  EXPECT_EQ(r.migrations, 0u);
}

// Newidle balancing. A thread pre-empted at its return to user space holds
// no kernel state, so an idle CPU may pull it like a woken one
// (can_migrate_task takes any queued task that is not cache hot). A
// kworker (nice -20) pre-empts it on CPU 0 at 100 us and runs for 3 ms;
// CPU 1 runs a thread until 2 ms, which then has nothing left to do. With
// `brief_idles`, the kworker also wakes a short task on CPU 1 every 20 us
// until 1.9 ms, so that CPU idles 15 us at a time. Returns when the user
// thread first ran on CPU 1 (-1: never) and its migrations. No tick: only
// newidle balancing acts.
Resumed PullAfterKworker(bool brief_idles) {
  Machine m(Cpus(2), MachineCosts{});
  FnId f = m.functions().Intern("work");
  Thread user(m, "fio", 0), kworker(m, "kworker", 0, -20), other(m, "other", 1), brief(m, "brief", 1);
  user.set_cpus_allowed({0, 1});
  Resumed r;
  bool brief_done = false;
  auto user_body = [&]() -> Task {
    for (int i = 0; i < 3000 && r.at < 0; ++i) {
      user.on_cpu().Charge(f, 1000);
      co_await user.on_cpu().PreemptPointMigratable();
      if (user.on_cpu().id() == 1) r.at = user.on_cpu().now();
    }
  };
  auto kworker_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sleep();
    for (int i = 0; i < 3000; ++i) {
      cpu.Charge(f, 1000);
      co_await cpu.Sync();
      if (brief_idles && i % 20 == 0 && cpu.now() < 1900000) brief.Wake(cpu.now());
    }
    brief_done = true;
    brief.Wake(cpu.now());
  };
  auto other_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 100000);
    co_await cpu.Sync();
    kworker.Wake(cpu.now());
    if (brief_idles) co_return;
    for (int i = 0; i < 1900; ++i) {
      cpu.Charge(f, 1000);
      co_await cpu.Sync();
    }
  };
  auto brief_body = [&](Cpu& cpu) -> Task {
    while (!brief_done) {
      co_await cpu.Sleep();
      cpu.Charge(f, 5000);
    }
  };
  user.Start(user_body(), 0);
  kworker.Start(kworker_body(m.cpu(0)), 0);
  other.Start(other_body(m.cpu(1)), 0);
  brief.Start(brief_body(m.cpu(1)), 0);
  m.sim().Run();
  r.cpu = user.on_cpu().id();
  r.migrations = user.migrations();
  EXPECT_EQ(m.queued_movable(), 0);
  return r;
}

TEST(CpuTest, NewidleBalancingPullsAThreadPreemptedAtTheUserBoundary) {
  // CPU 1 goes idle at 2 ms and pulls it (it last ran 1.9 ms ago); left in
  // CPU 0's queue it would run there again after the kworker, at 3.1 ms.
  Resumed r = PullAfterKworker(false);
  EXPECT_GE(r.at, 2000000);
  EXPECT_LT(r.at, 2010000);
  EXPECT_EQ(r.migrations, 1u);
}

TEST(CpuTest, NewidleBalancingSkipsACpuWhoseIdlePeriodsAreShort) {
  // rq->avg_idle: CPU 1's 15 us idle periods bring its average under the
  // 0.5 ms migration cost after a few wake-ups, so it never pulls the
  // waiting thread (without the gate: at its first idle after 0.6 ms).
  Resumed r = PullAfterKworker(true);
  EXPECT_EQ(r.at, -1);
  EXPECT_EQ(r.migrations, 0u);
}

// The periodic balance runs once per interval (the LLC's CPU count in ms,
// here 2), and its interval restarts at every tick that balances
// (rq->next_balance), even when it finds every waiting thread pinned. CPU 0
// runs a hog; a thread woken in the kernel (Cpu::Sleep) queues behind it at
// 0.5 ms; a thread allowed CPUs 0 and 2 (the other LLC) wakes behind them
// from a migratable sleep at 1.5 ms. Returns when and where that one ran.
Resumed BalanceAfterAQueuedThread(bool queued_is_pinned) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 1, 0, 0, 0}, {3, 1, 0, 0, 0}};
  MachineCosts c;
  c.tick_period_ns = 1000000;
  Machine m(p, c);
  FnId f = m.functions().Intern("work");
  Thread hog(m, "hog", 0), queued(m, "queued", 0), mover(m, "mover", 0), waker(m, "waker", 3);
  mover.set_cpus_allowed({0, 2});
  // The hog may run on CPU 1 too, so that it counts in CPU 0's load.
  hog.set_cpus_allowed({0, 1});
  if (!queued_is_pinned) queued.set_cpus_allowed({0, 1});
  Resumed r;
  auto queued_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sleep();
    cpu.Charge(f, 10);
  };
  auto mover_body = [&]() -> Task {
    mover.on_cpu().Charge(f, 10);
    co_await mover.on_cpu().Sync();
    co_await mover.on_cpu().SleepMigratable();
    co_await mover.on_cpu().Sync();
    r.cpu = mover.on_cpu().id();
    r.at = mover.on_cpu().now();
  };
  auto waker_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 500000);
    co_await cpu.Sync();
    queued.Wake(cpu.now());
    cpu.Charge(f, 1000000);
    co_await cpu.Sync();
    mover.Wake(cpu.now());
  };
  mover.Start(mover_body(), 0);
  queued.Start(queued_body(m.cpu(0)), 0);
  hog.Start(Worker(m.cpu(0), f, 5000, 1000), 0);
  waker.Start(waker_body(m.cpu(3)), 0);
  m.sim().Run();
  return r;
}

TEST(CpuTest, PeriodicBalanceIntervalRestartsAtEveryBalancingTick) {
  // The 1 ms tick balances and finds the queued thread pinned: the next
  // balance is at 3 ms, not 2.
  Resumed r = BalanceAfterAQueuedThread(true);
  EXPECT_EQ(r.cpu, 2);
  EXPECT_GE(r.at, 3000000);
  EXPECT_LT(r.at, 3010000);
  // Allowed other CPUs, the kernel would have moved the queued thread at
  // 1 ms; the model cannot (it sleeps inside the kernel), so that tick does
  // not count and the 2 ms tick moves the other one.
  r = BalanceAfterAQueuedThread(false);
  EXPECT_EQ(r.cpu, 2);
  EXPECT_GE(r.at, 2000000);
  EXPECT_LT(r.at, 2010000);
}

// Softirqs raised from task context wake ksoftirqd and wait for a
// pre-emption point (or a hardirq exit); raised in a hardirq they run at
// its exit.
struct RaiseFromTask : IrqHandler {
  int runs = 0;
  SimTime at = -1;
  Task Handle(Cpu& cpu, uint64_t) override {
    ++runs;
    at = cpu.now();
    co_return;
  }
};

Task RaiseThenWork(Cpu& cpu, IrqHandler* h, FnId f, bool preempt_point, bool* woke) {
  co_await cpu.Sync();
  *woke = cpu.RaiseSoftirq(h, 0);
  for (int i = 0; i < 10; ++i) {
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
  }
  if (preempt_point) co_await cpu.PreemptPoint();
  for (int i = 0; i < 10; ++i) {
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
  }
}

TEST(CpuTest, TaskContextSoftirqRunsInKsoftirqdAtAPreemptionPoint) {
  for (bool preempt_point : {false, true}) {
    SCOPED_TRACE(preempt_point ? "with a pre-emption point" : "without");
    MachineCosts c;
    c.context_switch_ns = 500;
    Machine m(Cpus(1), c);
    FnId f = m.functions().Intern("work");
    RaiseFromTask h;
    bool woke = false;
    Thread t(m, "fio", 0);
    t.Start(RaiseThenWork(m.cpu(0), &h, f, preempt_point, &woke), 0);
    m.sim().Run();
    EXPECT_TRUE(woke);
    ASSERT_EQ(h.runs, 1);
    // Not at the next Sync: after 10 us of work at the pre-emption point,
    // else when the task ends; two context switches either way.
    EXPECT_GE(h.at, 10000);
    if (preempt_point) {
      EXPECT_LT(h.at, 20000);
      EXPECT_EQ(m.cpu(0).fn_ns(m.functions().Intern("__schedule"), Mode::kSys), 2 * 500 + 500);
    } else {
      EXPECT_GE(h.at, 20000);
    }
  }
}

// With CONFIG_PREEMPT the woken ksoftirqd does not wait for a pre-emption
// point: it takes the CPU at the task's next Sync (blk_mq_raise_softirq's
// preempt_enable), then the task resumes.
TEST(CpuTest, FullPreemptionRunsATaskContextSoftirqAtOnce) {
  for (bool full : {false, true}) {
    SCOPED_TRACE(full ? "CONFIG_PREEMPT" : "PREEMPT_VOLUNTARY");
    MachineCosts c;
    c.context_switch_ns = 500;
    c.full_preemption = full;
    Machine m(Cpus(1), c);
    FnId f = m.functions().Intern("work");
    RaiseFromTask h;
    bool woke = false;
    Thread t(m, "fio", 0);
    t.Start(RaiseThenWork(m.cpu(0), &h, f, /*preempt_point=*/false, &woke), 0);
    m.sim().Run();
    EXPECT_TRUE(woke);
    ASSERT_EQ(h.runs, 1);
    if (full) {
      // The task's first switch-in (500), 1 us of work to its next Sync, the
      // switch to ksoftirqd (500); three switches with the one back.
      EXPECT_EQ(h.at, 500 + 1000 + 500);
      EXPECT_EQ(m.cpu(0).fn_ns(m.functions().Intern("__schedule"), Mode::kSys), 3 * 500);
    } else {
      EXPECT_GE(h.at, 20000);
    }
  }
}

// spin_lock() disables pre-emption before it tries the lock: under
// CONFIG_PREEMPT a ksoftirqd woken just before (a state bit set between,
// like DD_DISPATCHING) takes the CPU after the unlock, never at the Sync
// that orders the attempt.
TEST(CpuTest, NoPreemptionBetweenSpinLockAndItsAttempt) {
  MachineCosts c;
  c.context_switch_ns = 500;
  c.full_preemption = true;
  Machine m(Cpus(1), c);
  FnId f = m.functions().Intern("work");
  SpinLock lock(m, "l", SpinLockKind::kSpinLock, m.functions().Intern("_raw_spin_lock"),
                m.functions().Intern("native_queued_spin_lock_slowpath"), SpinLockCosts{});
  RaiseFromTask h;
  SimTime unlocked_at = -1;
  auto body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sync();
    EXPECT_TRUE(cpu.RaiseSoftirq(&h, 0));
    co_await lock.Lock(cpu);
    EXPECT_EQ(h.runs, 0);  // not pre-empted on the way in
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
    lock.Unlock(cpu);
    unlocked_at = cpu.now();
    cpu.Charge(f, 1000);
    co_await cpu.Sync();  // the first pre-emption point: ksoftirqd runs
    cpu.Charge(f, 1000);
  };
  Thread t(m, "fio", 0);
  t.Start(body(m.cpu(0)), 0);
  m.sim().Run();
  ASSERT_EQ(h.runs, 1);
  EXPECT_GT(h.at, unlocked_at);
  EXPECT_LT(h.at, unlocked_at + 2000);
}

// A SCHED_FIFO thread (a threaded interrupt handler) woken while a nice -20
// kworker runs takes the CPU at the kworker's next Sync, ahead of a woken
// ksoftirqd, and a woken CFS thread never pre-empts it, not even at its
// pre-emption points.
// A kworker (nice -20) on CPU 0 that sleeps at once and notes when it runs
// after its wake-up, which a thread on CPU 1 sends after 9.5 us of work.
struct WokenKworker {
  Thread worker;
  Thread waker;
  SimTime ran_at = -1;
  SimTime woke_at = -1;
  WokenKworker(Machine& m, FnId f) : worker(m, "kworker/0:1H", 0, -20), waker(m, "waker", 1) {
    worker.Start(WorkerBody(m.cpu(0), f), 0);
    waker.Start(WakerBody(m.cpu(1), f), 0);
  }
  Task WorkerBody(Cpu& cpu, FnId f) {
    co_await cpu.Sleep();
    ran_at = cpu.now();
    cpu.Charge(f, 100);
  }
  Task WakerBody(Cpu& cpu, FnId f) {
    cpu.Charge(f, 9500);
    co_await cpu.Sync();
    woke_at = cpu.now();
    worker.Wake(cpu.now());
  }
};

// Without full pre-emption (PREEMPT_VOLUNTARY) a woken kworker (nice -20)
// waits for a kernel loop's next pre-emption point, and a loop that has
// none keeps the CPU to its end; user code is pre-empted at its next step
// (the return to user space of the next interrupt); with full pre-emption
// kernel code too.
TEST(CpuTest, WithoutFullPreemptionKernelCodeYieldsOnlyAtPreemptionPoints) {
  struct Case {
    bool full;
    const char* fn;
    bool points;
    SimTime first_step;  // when the kworker may run at the earliest (then a context switch)
  };
  for (const Case& k : {Case{false, "blk_mq_run_hw_queue", false, 100000}, Case{false, "blk_mq_run_hw_queue", true, 10000},
                        Case{false, "fio:get_io_u", false, 10000}, Case{true, "blk_mq_run_hw_queue", false, 10000}}) {
    MachineCosts c;
    c.full_preemption = k.full;
    Machine m(Cpus(2), c);
    FnId f = m.functions().Intern(k.fn, /*user=*/k.fn[0] == 'f');
    WokenKworker kworker(m, f);
    Thread loop(m, "fio", 0);
    loop.Start(k.points ? YieldingWorker(m.cpu(0), f, 100, 1000) : Worker(m.cpu(0), f, 100, 1000), 0);
    m.sim().Run();
    const SimTime ran_at = kworker.ran_at;
    EXPECT_GE(ran_at, k.first_step) << k.full << " " << k.fn << " " << k.points;
    EXPECT_LE(ran_at, k.first_step + 5000) << k.full << " " << k.fn << " " << k.points;
  }
}

}  // namespace
}  // namespace blklab::sim
