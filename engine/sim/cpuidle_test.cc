// cpuidle: exit latencies, the menu governor, iowait, the tick and POLL.
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

// cpuidle. A thread on CPU 0 sleeps (in iowait when `iowait`) and a
// thread on CPU 1 wakes it every `period_ns`; returns, per wake-up, how long
// after it the sleeper ran again, and CPU 0's state entries.
struct IdleWakes {
  std::vector<int64_t> delays_ns;
  std::vector<uint64_t> usage;
  int nr_iowait_at_end = -1;
};
IdleWakes RunIdleWakes(std::vector<CpuidleState> states, bool iowait_limit, bool iowait, int64_t period_ns,
                       int wakes) {
  MachineCosts costs;
  costs.cpuidle_states = std::move(states);
  costs.menu_iowait_latency_limit = iowait_limit;
  Machine m(Cpus(2), costs);
  const FnId f = m.functions().Intern("work");
  IdleWakes out;
  std::vector<SimTime> woken_at;
  Thread sleeper(m, "sleeper", 0);
  Thread waker(m, "waker", 1);
  auto sleep_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    for (int i = 0; i < wakes; ++i) {
      cpu.Charge(f, 100);
      co_await cpu.Sync();
      if (iowait) {
        co_await cpu.IoSleep();
      } else {
        co_await cpu.Sleep();
      }
      // Resumed after the switch back from idle.
      out.delays_ns.push_back(cpu.now() - woken_at.back() - m.costs().context_switch_idle_ns);
    }
  };
  auto wake_body = [&]() -> Task {
    Cpu& cpu = m.cpu(1);
    for (int i = 0; i < wakes; ++i) {
      cpu.Charge(f, period_ns);
      co_await cpu.Sync();
      woken_at.push_back(cpu.now());
      sleeper.Wake(cpu.now());
    }
  };
  sleeper.Start(sleep_body(), 0);
  waker.Start(wake_body(), 0);
  m.sim().Run();
  for (size_t st = 0; st <= m.costs().cpuidle_states.size(); ++st) {
    out.usage.push_back(m.cpu(0).cpuidle_usage(static_cast<int>(st)));
  }
  out.nr_iowait_at_end = m.cpu(0).nr_iowait();
  return out;
}

// Without idle states a wake-up runs at once; with one, after its exit
// latency, which the governor takes for every idle period long enough.
TEST(CpuidleTest, AWakeUpWaitsForTheIdleStatesExitLatency) {
  constexpr int kWakes = 20;
  const IdleWakes polling = RunIdleWakes({}, false, false, 100000, kWakes);
  ASSERT_EQ(polling.delays_ns.size(), static_cast<size_t>(kWakes));
  for (int64_t d : polling.delays_ns) EXPECT_EQ(d, 0);
  const IdleWakes c1 = RunIdleWakes({{5000, 10000}}, false, false, 100000, kWakes);
  ASSERT_EQ(c1.delays_ns.size(), static_cast<size_t>(kWakes));
  for (int64_t d : c1.delays_ns) EXPECT_EQ(d, 5000);
  // Every sleep entered C1, and so did the end (the start at t = 0 entered
  // nothing: the wake-up was there first).
  EXPECT_EQ(c1.usage, (std::vector<uint64_t>{0, kWakes + 1}));
}

// menu before 6.13: with a task in iowait on the CPU the exit latency must
// stay under 1/11 of the predicted idle, so a 200 us period takes C1 (2 us),
// not C2 (30 us); without iowait, or without the limit, C2. A 15 us period
// under C1's 20 us residency polls in iowait (polling ends only after the
// residency), and without iowait takes C1 anyway (a physical state rather
// than polling when its latency is acceptable).
TEST(CpuidleTest, IowaitKeepsTheMenuGovernorShallow) {
  const std::vector<CpuidleState> states = {{2000, 4000}, {30000, 60000}};
  constexpr int kWakes = 40;
  auto tail_delay = [](const IdleWakes& w) { return w.delays_ns.back(); };
  const IdleWakes io_limited = RunIdleWakes(states, true, true, 200000, kWakes);
  EXPECT_EQ(tail_delay(io_limited), 2000);
  EXPECT_EQ(io_limited.nr_iowait_at_end, 0);  // woken: no longer counted
  EXPECT_GE(io_limited.usage[1], static_cast<uint64_t>(kWakes - 10));
  const IdleWakes no_limit = RunIdleWakes(states, false, true, 200000, kWakes);
  EXPECT_EQ(tail_delay(no_limit), 30000);
  EXPECT_GE(no_limit.usage[2], static_cast<uint64_t>(kWakes - 10));
  const IdleWakes no_iowait = RunIdleWakes(states, true, false, 200000, kWakes);
  EXPECT_EQ(tail_delay(no_iowait), 30000);
  const std::vector<CpuidleState> long_c1 = {{2000, 20000}, {30000, 60000}};
  const IdleWakes short_io = RunIdleWakes(long_c1, true, true, 15000, kWakes);
  EXPECT_EQ(tail_delay(short_io), 0);
  EXPECT_GE(short_io.usage[0], static_cast<uint64_t>(kWakes - 10));
  const IdleWakes short_no_iowait = RunIdleWakes(long_c1, true, false, 15000, kWakes);
  EXPECT_EQ(tail_delay(short_no_iowait), 2000);
}

// nr_iowait counts a thread asleep in io_schedule on the CPU it slept on,
// from the sleep to its wake-up, wherever it wakes: a wait-queue sleep
// (a tag wait) and a migratable one that wakes on another CPU because its
// own is busy. A plain sleep does not count.
TEST(CpuidleTest, NrIowaitCountsIoSleepersOnTheCpuTheySleptOn) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 0, 0, 0, 0}};
  Machine m(p, MachineCosts{});
  const FnId f = m.functions().Intern("work");
  WaitQueue wq;
  Thread queued(m, "queued", 0), mover(m, "mover", 0), plain(m, "plain", 0), hog(m, "hog", 0), waker(m, "waker", 2);
  mover.set_cpus_allowed({0, 1});
  int during = -1, after = -1, after_cpu1 = -1;
  int mover_woke_on = -1;
  auto queued_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    co_await cpu.Sync();
    co_await wq.IoWait(cpu);
  };
  auto mover_body = [&]() -> Task {
    co_await m.cpu(0).Sync();
    co_await m.cpu(0).SleepMigratable(/*iowait=*/true);
    mover_woke_on = mover.on_cpu().id();
  };
  auto plain_body = [&]() -> Task {
    co_await m.cpu(0).Sync();
    co_await m.cpu(0).Sleep();
  };
  auto hog_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    co_await cpu.Sync();
    co_await cpu.Sleep();  // woken at 10 us, then busy for 1 ms
    for (int i = 0; i < 100; ++i) {
      cpu.Charge(f, 10000);
      co_await cpu.Sync();
    }
  };
  auto wake_body = [&]() -> Task {
    Cpu& cpu = m.cpu(2);
    cpu.Charge(f, 10000);
    co_await cpu.Sync();
    during = m.cpu(0).nr_iowait();
    hog.Wake(cpu.now());
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
    wq.WakeOne(cpu.now());
    mover.Wake(cpu.now());
    plain.Wake(cpu.now());
    after = m.cpu(0).nr_iowait();
    after_cpu1 = m.cpu(1).nr_iowait();
  };
  queued.Start(queued_body(), 0);
  mover.Start(mover_body(), 0);
  plain.Start(plain_body(), 0);
  hog.Start(hog_body(), 0);
  waker.Start(wake_body(), 0);
  m.sim().Run();
  EXPECT_EQ(during, 2);  // queued and mover; not plain
  EXPECT_EQ(after, 0);
  EXPECT_EQ(after_cpu1, 0);
  EXPECT_EQ(mover_woke_on, 1);  // it did move: CPU 0 was busy with the hog
}

// A CPU that stopped its tick going idle ticks again once it runs: a
// thread sleeps 2 ms (no history: the deepest state, tick stopped), then
// computes for 5 ms under a 1 ms tick.
TEST(CpuidleTest, TheTickStoppedForAnIdleRunsAgainWhenTheCpuIsBusy) {
  MachineCosts costs;
  costs.cpuidle_states = {{5000, 10000}};
  costs.tick_period_ns = kNsPerMs;
  costs.tick_ns = 100;
  Machine m(Cpus(2), costs);
  const FnId f = m.functions().Intern("work");
  const FnId tick = m.functions().Intern("tick_sched_timer");
  Thread sleeper(m, "sleeper", 0), waker(m, "waker", 1);
  auto sleep_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    cpu.Charge(f, 1000);
    co_await cpu.Sync();
    co_await cpu.Sleep();
    for (int i = 0; i < 50; ++i) {
      cpu.Charge(f, 100000);
      co_await cpu.Sync();
    }
  };
  auto wake_body = [&]() -> Task {
    Cpu& cpu = m.cpu(1);
    cpu.Charge(f, 2 * kNsPerMs);
    co_await cpu.Sync();
    sleeper.Wake(cpu.now());
  };
  sleeper.Start(sleep_body(), 0);
  waker.Start(wake_body(), 0);
  m.sim().Run();
  EXPECT_EQ(m.cpu(0).cpuidle_usage(1), 2u);  // the sleep and the end
  // Four or five ticks in the 5 ms of work.
  EXPECT_GE(m.cpu(0).fn_ns(tick, Mode::kIrq), 4 * 100);
}

// Only timers still armed on the CPU count: with a timer due 5 us ahead,
// inside C1's 10 us residency, the first sleep (no history) polls; with
// that timer cancelled, or moved to another CPU, before the sleep, there is
// none and the sleep takes C1, whose exit the wake-up 3 us later pays.
TEST(CpuidleTest, ACancelledOrMovedTimerNoLongerCounts) {
  for (const int how : {0, 1, 2}) {  // kept, cancelled, moved
    SCOPED_TRACE(how);
    MachineCosts costs;
    costs.cpuidle_states = {{5000, 10000}};
    Machine m(Cpus(2), costs);
    const FnId f = m.functions().Intern("work");
    struct NopIrq : IrqHandler {
      Task Handle(Cpu&, uint64_t) override { co_return; }
    } irq;
    HrTimer timer;
    timer.Init(&m, 0, &irq, 0);
    Thread sleeper(m, "sleeper", 0), waker(m, "waker", 1);
    SimTime woken_at = -1;
    int64_t late_ns = -1;
    auto sleep_body = [&]() -> Task {
      Cpu& cpu = m.cpu(0);
      cpu.Charge(f, 100);
      co_await cpu.Sync();
      timer.Start(cpu.now() + 5000);
      if (how == 1) timer.Cancel();
      if (how == 2) timer.set_cpu(1);
      co_await cpu.Sleep();
      late_ns = cpu.now() - woken_at - m.costs().context_switch_idle_ns;
    };
    auto wake_body = [&]() -> Task {
      Cpu& cpu = m.cpu(1);
      cpu.Charge(f, 3000);
      co_await cpu.Sync();
      woken_at = cpu.now();
      sleeper.Wake(cpu.now());
    };
    sleeper.Start(sleep_body(), 0);
    waker.Start(wake_body(), 0);
    m.sim().Run();
    EXPECT_EQ(late_ns, how == 0 ? 0 : 5000);
  }
}

// POLL ends at its time limit (the first state's target residency of at
// least 10 us) and menu selects again, with the CPU's state at that time:
// two sleepers on CPU 0, in iowait, woken together every 40 us, so the
// exit latency allowed (under a 1/21 of the prediction) is below C1's 5 us
// and the CPU polls; each poll that reaches 20 us selects again (POLL, as
// the sleepers are still in iowait), and no wake-up after the first pays
// C1's exit.
TEST(CpuidleTest, APollThatReachesItsLimitSelectsAgain) {
  MachineCosts costs;
  costs.cpuidle_states = {{5000, 20000}};
  costs.menu_iowait_latency_limit = true;
  Machine m(Cpus(2), costs);
  const FnId f = m.functions().Intern("work");
  constexpr int kWakes = 40;
  Thread a(m, "a", 0), b(m, "b", 0), waker(m, "waker", 1);
  uint64_t polls = 0, c1 = 0;
  int64_t exit_wait_ns = -1;
  int done = 0;
  auto sleep_body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    for (int i = 0; i < kWakes; ++i) {
      cpu.Charge(f, 100);
      co_await cpu.Sync();
      co_await cpu.IoSleep();
    }
    if (++done == 2) {
      polls = cpu.cpuidle_usage(0);
      c1 = cpu.cpuidle_usage(1);
      exit_wait_ns = cpu.cpuidle_exit_wait_ns();
    }
  };
  auto wake_body = [&]() -> Task {
    Cpu& cpu = m.cpu(1);
    for (int i = 0; i < kWakes; ++i) {
      cpu.Charge(f, 40000);
      co_await cpu.Sync();
      a.Wake(cpu.now());
      b.Wake(cpu.now());
    }
  };
  a.Start(sleep_body(), 0);
  b.Start(sleep_body(), 0);
  waker.Start(wake_body(), 0);
  m.sim().Run();
  ASSERT_EQ(done, 2);
  EXPECT_GT(polls, static_cast<uint64_t>(3 * kWakes / 2));  // most waits polled twice
  // Only the first sleep, with no history yet, went to C1.
  EXPECT_EQ(c1, 1u);
  EXPECT_EQ(exit_wait_ns, 5000);
  EXPECT_EQ(m.cpu(0).nr_iowait(), 0);
}

// The next timer bounds the prediction: a CPU whose only wake-ups are its
// own timer 3 us ahead polls (the first state's 10 us residency would not
// pay off) even with no idle history, where it would otherwise go deep.
TEST(CpuidleTest, ATimerDueSoonKeepsTheCpuPolling) {
  MachineCosts costs;
  costs.cpuidle_states = {{5000, 10000}};
  Machine m(Cpus(1), costs);
  const FnId f = m.functions().Intern("work");
  struct WakeIrq : IrqHandler {
    Thread* t = nullptr;
    Task Handle(Cpu& cpu, uint64_t) override {
      t->Wake(cpu.now());
      co_return;
    }
  } irq;
  HrTimer timer;
  timer.Init(&m, 0, &irq, 0);
  Thread t(m, "sleeper", 0);
  irq.t = &t;
  constexpr int kSleeps = 10;
  std::vector<int64_t> late_ns;
  uint64_t polls = 0, deep = 0;
  auto body = [&]() -> Task {
    Cpu& cpu = m.cpu(0);
    for (int i = 0; i < kSleeps; ++i) {
      cpu.Charge(f, 100);
      co_await cpu.Sync();
      const SimTime due = cpu.now() + 3000;
      timer.Start(due);
      co_await cpu.Sleep();
      late_ns.push_back(cpu.now() - due - m.costs().context_switch_idle_ns);
    }
    polls = cpu.cpuidle_usage(0);
    deep = cpu.cpuidle_usage(1);
  };
  t.Start(body(), 0);
  m.sim().Run();
  ASSERT_EQ(late_ns.size(), static_cast<size_t>(kSleeps));
  for (int64_t d : late_ns) EXPECT_EQ(d, 0);
  // Every sleep polled (the start at t = 0 entered nothing: the wake-up
  // was there first).
  EXPECT_EQ(polls, static_cast<uint64_t>(kSleeps));
  EXPECT_EQ(deep, 0u);
}

}  // namespace
}  // namespace blklab::sim
