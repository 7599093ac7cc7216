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
#include "engine/sim/simulator.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/timer.h"
#include "engine/sim/waitqueue.h"
#include "engine/sim/workqueue.h"
#include "gtest/gtest.h"

namespace blklab::sim {
namespace {

std::vector<CpuPlacement> Cpus(int n) {
  std::vector<CpuPlacement> p(n);
  for (int i = 0; i < n; ++i) p[i] = CpuPlacement{i, 0, 0, 0, 0};
  return p;
}

struct Recorder : EventHandler {
  std::vector<uint64_t> seen;
  void OnEvent(uint32_t, uint64_t arg) override { seen.push_back(arg); }
};

TEST(SimulatorTest, DeliversInTimeThenSchedulingOrder) {
  Simulator sim;
  Recorder r;
  sim.Schedule(30, &r, 0, 1);
  sim.Schedule(10, &r, 0, 2);
  sim.Schedule(30, &r, 0, 3);
  sim.Schedule(10, &r, 0, 4);
  sim.Schedule(20, &r, 0, 5);
  EXPECT_EQ(sim.Run(), 5u);
  EXPECT_EQ(r.seen, (std::vector<uint64_t>{2, 4, 5, 1, 3}));
  EXPECT_EQ(sim.Now(), 30);
}

// The near and bulk heaps share one order: ties at one time go by
// scheduling order whichever heap holds them, and a pseudo-random mix
// delivers exactly as sorting on (time, scheduling order) would.
TEST(SimulatorTest, BulkAndNearEventsShareOneOrder) {
  Simulator sim;
  Recorder r;
  sim.ScheduleBulk(10, &r, 0, 1);
  sim.Schedule(10, &r, 0, 2);
  sim.ScheduleBulk(5, &r, 0, 3);
  sim.Schedule(10, &r, 0, 4);
  sim.ScheduleBulk(10, &r, 0, 5);
  EXPECT_EQ(sim.pending_events(), 5u);
  EXPECT_EQ(sim.NextEventTime(), 5);
  EXPECT_EQ(sim.Run(), 5u);
  EXPECT_EQ(r.seen, (std::vector<uint64_t>{3, 1, 2, 4, 5}));

  Simulator mixed;
  Recorder got;
  std::vector<std::pair<SimTime, uint64_t>> want;
  RngStream rng(11, 0);
  for (uint64_t i = 0; i < 5000; ++i) {
    const SimTime at = static_cast<SimTime>(rng.UniformBelow(300));
    if (rng.UniformBelow(2) == 0) {
      mixed.Schedule(at, &got, 0, i);
    } else {
      mixed.ScheduleBulk(at, &got, 0, i);
    }
    want.emplace_back(at, i);
  }
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  EXPECT_EQ(mixed.Run(), 5000u);
  ASSERT_EQ(got.seen.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(got.seen[i], want[i].second) << i;
}

// While a handler runs, the event being delivered is out of the queue:
// NextEventTime and pending_events see the rest, and events it schedules
// into either heap keep the one order.
TEST(SimulatorTest, HandlersSeeTheQueueWithoutTheirOwnEvent) {
  struct Probe : EventHandler {
    Simulator* sim = nullptr;
    std::vector<std::tuple<uint64_t, SimTime, size_t>> seen;
    void OnEvent(uint32_t, uint64_t arg) override {
      seen.emplace_back(arg, sim->NextEventTime(), sim->pending_events());
      if (arg == 1) {
        sim->Schedule(12, this, 0, 4);
        sim->ScheduleBulk(12, this, 0, 5);
      }
    }
  };
  Simulator sim;
  Probe p;
  p.sim = &sim;
  sim.Schedule(10, &p, 0, 1);
  sim.Schedule(20, &p, 0, 2);
  sim.ScheduleBulk(15, &p, 0, 3);
  EXPECT_EQ(sim.Run(), 5u);
  const std::vector<std::tuple<uint64_t, SimTime, size_t>> want = {
      {1, 15, 2}, {4, 12, 3}, {5, 15, 2}, {3, 20, 1}, {2, kSimTimeNever, 0}};
  EXPECT_EQ(p.seen, want);
}

TEST(SimulatorTest, RunStopsAtUntil) {
  Simulator sim;
  Recorder r;
  sim.Schedule(10, &r, 0, 1);
  sim.Schedule(50, &r, 0, 2);
  sim.Run(20);
  EXPECT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(sim.pending_events(), 1u);
}

// kernel/time/timer.c's calc_wheel_index at HZ=1000: level n holds
// distances below 63 << 3n jiffies in buckets of 8^n jiffies, and a timer
// runs at the first bucket boundary after its expiry.
TEST(TimerWheelTest, TimersRunAtTheirLevelsNextBucketBoundary) {
  constexpr int64_t kMs = 1000000;
  constexpr int kHz = 1000;
  EXPECT_EQ(TimerWheelExpiry(0, 3 * kMs, kHz), 4 * kMs);        // level 0: the next jiffy
  EXPECT_EQ(TimerWheelExpiry(0, 62 * kMs, kHz), 63 * kMs);
  EXPECT_EQ(TimerWheelExpiry(0, 100 * kMs, kHz), 104 * kMs);    // level 1: 8 jiffies
  EXPECT_EQ(TimerWheelExpiry(0, 1000 * kMs, kHz), 1024 * kMs);  // level 2: 64
  EXPECT_EQ(TimerWheelExpiry(0, 6024 * kMs, kHz), 6144 * kMs);  // level 3: 512
  EXPECT_EQ(TimerWheelExpiry(0, 6144 * kMs, kHz), 6656 * kMs);  // strictly after
  // The level follows the distance from now, the bucket the absolute time:
  // two queues' timers armed 60 ms apart, 6.024 s ahead each, run together.
  EXPECT_EQ(TimerWheelExpiry(1000 * kMs, 7024 * kMs, kHz), 7168 * kMs);
  EXPECT_EQ(TimerWheelExpiry(1060 * kMs, 7084 * kMs, kHz), 7168 * kMs);
  // A sub-jiffy expiry counts as its jiffy; HZ=250 has 4 ms jiffies.
  EXPECT_EQ(TimerWheelExpiry(0, 2500000, kHz), 4 * kMs);
  EXPECT_EQ(TimerWheelExpiry(0, 6024 * kMs, 250), 1536 * 4 * kMs);  // 1506 jiffies: level 2
}

TEST(RngTest, StreamsAreDeterministicAndIndependent) {
  RngStream a(42, RngStreamId::kOffset), b(42, RngStreamId::kOffset), c(43, RngStreamId::kOffset),
      d(42, RngStreamId::kBlockSize);
  int same_c = 0, same_d = 0;
  for (int i = 0; i < 100; ++i) {
    uint64_t x = a.NextU64();
    EXPECT_EQ(x, b.NextU64());
    same_c += x == c.NextU64();
    same_d += x == d.NextU64();
  }
  EXPECT_LT(same_c, 2);
  EXPECT_LT(same_d, 2);
}

TEST(RngTest, UniformBelowIsInRangeAndRoughlyUniform) {
  RngStream r(7, 1);
  int counts[10] = {};
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = r.UniformBelow(10);
    ASSERT_LT(v, 10u);
    ++counts[v];
  }
  for (int c : counts) {
    EXPECT_GT(c, 9500);
    EXPECT_LT(c, 10500);
  }
}

// A thread that charges `steps` × `ns` to one function.
Task Worker(Cpu& cpu, FnId fn, int steps, int64_t ns) {
  for (int i = 0; i < steps; ++i) {
    co_await cpu.Sync();
    cpu.Charge(fn, ns);
  }
}

// The same with a voluntary pre-emption point before each step (a kworker
// between work items, cond_resched).
Task YieldingWorker(Cpu& cpu, FnId fn, int steps, int64_t ns) {
  for (int i = 0; i < steps; ++i) {
    co_await cpu.PreemptPoint();
    cpu.Charge(fn, ns);
  }
}

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

// A composite row (FunctionRegistry::SetParts) reports its time split by
// weight, the parts summing to the whole, the rounding remainder on the
// whole's own part; other functions report their own time.
TEST(FunctionRegistryTest, SplitsACompositeRowByWeight) {
  FunctionRegistry r;
  const FnId whole = r.Intern("whole");
  const FnId a = r.Intern("a");
  const FnId b = r.Intern("b");
  r.SetParts(whole, {{whole, 1}, {a, 2}, {b, 3}});
  std::vector<std::pair<FnId, int64_t>> out;
  r.SplitTime(whole, 601, [&](FnId fn, int64_t ns) { out.emplace_back(fn, ns); });
  EXPECT_EQ(out, (std::vector<std::pair<FnId, int64_t>>{{a, 200}, {b, 300}, {whole, 101}}));
  out.clear();
  r.SplitTime(a, 7, [&](FnId fn, int64_t ns) { out.emplace_back(fn, ns); });
  EXPECT_EQ(out, (std::vector<std::pair<FnId, int64_t>>{{a, 7}}));
}

// Two threads sharing one CPU switch at their slices' ends: the switch's
// time is charged to __schedule as one cost, and the reports spread it over
// the functions perf shows for a switch, switch_mm_irqs_off above
// __schedule's own share (5.72 % against 3.70 % in the cited profile), as
// callees of __schedule in the folded stacks, with no time lost.
TEST(StackProfileTest, AContextSwitchSpreadsOverTheFunctionsPerfShows) {
  Machine m(Cpus(1), MachineCosts{});
  m.EnableStacks();
  const FnId f = m.functions().Intern("work");
  Thread a(m, "a", 0);
  Thread b(m, "b", 0);
  a.Start(Worker(m.cpu(0), f, 5000, 1000), 0);
  b.Start(Worker(m.cpu(0), f, 5000, 1000), 0);
  m.sim().Run();
  const FnId schedule = m.functions().Intern("__schedule");
  const int64_t switch_ns = m.cpu(0).fn_ns(schedule, Mode::kSys);
  ASSERT_GE(m.cpu(0).context_switches(), 2u);
  EXPECT_EQ(switch_ns, static_cast<int64_t>(m.cpu(0).context_switches()) * m.costs().context_switch_ns);
  int64_t own = 0, mm = 0, total = 0, below = 0;
  for (const auto& [stack, ns] : m.stacks()->Folded(m.functions())) {
    total += ns;
    if (stack.ends_with(";__schedule")) own += ns;
    if (stack.ends_with(";__schedule;switch_mm_irqs_off")) mm += ns;
    if (stack.find(";__schedule;") != std::string::npos) below += ns;
  }
  EXPECT_EQ(total, m.cpu(0).busy_ns());
  EXPECT_EQ(own + below, switch_ns);
  EXPECT_GT(mm, own);
  EXPECT_LT(own, switch_ns / 5);
}

// Awaiting a child and completing hand control over through RunChain's
// trampoline: half a million round trips must leave the host stack where it
// was (a chain of resume() calls would grow it by a frame or two per trip and,
// unoptimized or under AddressSanitizer, overflow it).
struct StackSpan {
  uintptr_t lowest = UINTPTR_MAX;
  uintptr_t highest = 0;
  void Note() {
    int marker = 0;
    auto here = reinterpret_cast<uintptr_t>(&marker);
    lowest = std::min(lowest, here);
    highest = std::max(highest, here);
  }
};

Task Leaf(StackSpan& span) {
  span.Note();
  co_return;
}

Task Middle(StackSpan& span) {
  co_await Leaf(span);
  co_await Leaf(span);
}

TEST(TaskTest, AwaitAndCompletionDoNotGrowTheHostStack) {
  Machine m(Cpus(1), MachineCosts{});
  Thread t(m, "loop", 0);
  StackSpan span;
  int rounds = 0;
  auto body = [](StackSpan& span, int& rounds) -> Task {
    for (int i = 0; i < 250000; ++i) {
      co_await Middle(span);
      ++rounds;
    }
  };
  t.Start(body(span, rounds), 0);
  m.sim().Run();
  EXPECT_EQ(rounds, 250000);
  EXPECT_EQ(t.state(), Thread::State::kDone);
  EXPECT_LT(span.highest - span.lowest, 64u * 1024) << "the host stack grew with each await";
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

TEST(CacheLineTest, TransfersOnlyWhenOwnerChanges) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 0, 0, 0, 0}, {2, 1, 1, 0, 0}, {3, 2, 2, 1, 1}};
  MachineCosts c;
  Machine m(p, c);
  CacheLine line;
  EXPECT_EQ(line.Write(m, 0, 8), 8);
  EXPECT_EQ(line.Write(m, 0, 8), 8);
  EXPECT_EQ(line.Read(m, 1, 2), c.llc_ns);
  EXPECT_EQ(line.Read(m, 1, 2), 2);
  EXPECT_EQ(line.Write(m, 2, 8), 8 + c.die_ns);
  EXPECT_EQ(line.Write(m, 3, 8), 8 + c.socket_ns);
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

// A nice -20 kworker (WokenKworker) woken at 10 us on CPU 0, where a
// "fio" hog of 400 steps of 10 us started at 1 us: CFS's rules or EEVDF,
// 1 ms slices, 500 ns context switches.
struct KworkerBehindHog {
  static MachineCosts Costs(bool eevdf) {
    MachineCosts c;
    c.eevdf = eevdf;
    c.context_switch_ns = 500;
    c.sched_slice_ns = 1000000;
    return c;
  }
  explicit KworkerBehindHog(bool eevdf)
      : m(Cpus(2), Costs(eevdf)), f(m.functions().Intern("blk_mq_run_hw_queue")), kworker(m, f), hog(m, "fio", 0) {
    // The kworker runs first, alone, and goes to sleep with no lag.
    hog.Start(YieldingWorker(m.cpu(0), f, 400, 10000), 1000);
    m.sim().Run();
  }
  Machine m;
  FnId f;
  WokenKworker kworker;
  Thread hog;
};

// EEVDF (6.6+): a woken thread whose lag is zero (it last ran alone) does
// not pre-empt a running thread that is eligible and inside the slice it was
// picked with (RUN_TO_PARITY), even at nice -20: it waits for that slice,
// here the first half slice a new thread gets. CFS before 6.6 lets the
// nice -20 kworker in at the next pre-emption point.
TEST(CpuTest, EevdfAWokenThreadWaitsForTheRunningThreadsSlice) {
  for (bool eevdf : {false, true}) {
    KworkerBehindHog run(eevdf);
    const SimTime ran_at = run.kworker.ran_at;
    const SimTime expected = eevdf ? 500000 : 10000;
    EXPECT_GE(ran_at, expected) << eevdf;
    EXPECT_LE(ran_at, expected + 12000) << eevdf;
  }
}

// schedstat: a woken thread's run_delay is its wait in the runqueue, from
// the wake-up to the pick (the context switch after it is not counted), and
// pcount counts its picks; the thread it pre-empted waits in turn.
TEST(CpuTest, SchedstatRunDelayIsTheRunqueueWait) {
  for (bool eevdf : {false, true}) {
    KworkerBehindHog run(eevdf);
    const WokenKworker& kworker = run.kworker;
    const ThreadStats& k = kworker.worker.stats();
    const int64_t wait = kworker.ran_at - kworker.woke_at;
    const int64_t context_switch_ns = run.m.costs().context_switch_ns;
    EXPECT_EQ(k.pcount, 2u) << eevdf;  // its first run, then after the wake-up
    EXPECT_GE(k.run_delay_ns, wait - context_switch_ns) << eevdf;
    EXPECT_LE(k.run_delay_ns, wait) << eevdf;
    EXPECT_EQ(k.max_delay_ns, k.run_delay_ns) << eevdf;  // the first run did not wait
    EXPECT_GE(k.max_delay_at, kworker.woke_at) << eevdf;
    EXPECT_LE(k.max_delay_at, kworker.ran_at) << eevdf;
    EXPECT_EQ(k.comm, "kworker/0:1H");
    // The hog ran, was pre-empted by the kworker and picked again after it.
    const ThreadStats& h = run.hog.stats();
    EXPECT_EQ(h.pcount, 2u) << eevdf;
    EXPECT_GT(h.run_delay_ns, 100) << eevdf;  // the kworker's 100 ns and a switch
    EXPECT_LT(h.run_delay_ns, 2000) << eevdf;
    EXPECT_GT(h.mode_ns[static_cast<int>(Mode::kSys)], 400 * 10000 - 1) << eevdf;
  }
  // ThreadStats outlive their thread (the report reads them at the end).
  MachineCosts c;
  Machine m(Cpus(1), c);
  { Thread gone(m, "gone", 0); }
  ASSERT_EQ(m.thread_stats().size(), 1u);
  EXPECT_EQ(m.thread_stats().front().comm, "gone");
}

// EEVDF with 1 ms slices and free context switches.
MachineCosts EevdfCosts() {
  MachineCosts c;
  c.eevdf = true;
  c.context_switch_ns = 0;
  c.sched_slice_ns = 1000000;
  return c;
}

// EEVDF: lag survives a sleep. A thread that waited for the CPU and ran
// less than its share sleeps with positive lag; woken, it is placed before
// the average, the running thread is no longer eligible, and the woken one
// takes the CPU at the next pre-emption point despite the running thread's
// fresh slice.
TEST(CpuTest, EevdfAThreadOwedTimeTakesTheCpuWhenWoken) {
  const MachineCosts c = EevdfCosts();
  Machine m(Cpus(2), c);
  FnId f = m.functions().Intern("blk_mq_run_hw_queue");
  Thread hog(m, "fio", 0), owed(m, "owed", 0), waker(m, "waker", 1);
  SimTime first_ran = -1, woken_at = -1, ran_again = -1;
  auto owed_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sync();
    first_ran = cpu.now();
    cpu.Charge(f, 10000);
    co_await cpu.Sleep();
    ran_again = cpu.now();
  };
  auto waker_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 1000000);
    co_await cpu.Sync();
    woken_at = cpu.now();
    owed.Wake(cpu.now());
  };
  hog.Start(YieldingWorker(m.cpu(0), f, 400, 10000), 0);
  owed.Start(owed_body(m.cpu(0)), 0);
  waker.Start(waker_body(m.cpu(1)), 0);
  m.sim().Run();
  // Equal deadlines at the start: the hog first, for its half slice.
  EXPECT_EQ(first_ran, 500000);
  EXPECT_EQ(woken_at, 1000000);
  EXPECT_GE(ran_again, woken_at);
  EXPECT_LE(ran_again, woken_at + 10000);  // the hog's next pre-emption point
}

// EEVDF shares a CPU by weight: nice -5 (3121) against nice 0 (1024) gets
// about three quarters; CFS before 6.6 in the model lets the lower nice
// value take the CPU whenever it wants it.
TEST(CpuTest, EevdfSharesACpuByWeight) {
  const MachineCosts c = EevdfCosts();
  Machine m(Cpus(1), c);
  FnId f = m.functions().Intern("blk_mq_run_hw_queue");
  Thread heavy(m, "heavy", 0, -5), light(m, "light", 0);
  double heavy_ns = 0, light_ns = 0;  // when the heavy one is done
  auto heavy_body = [&](Cpu& cpu) -> Task {
    co_await YieldingWorker(cpu, f, 3000, 10000);
    heavy_ns = static_cast<double>(heavy.sys_ns());
    light_ns = static_cast<double>(light.sys_ns());
  };
  heavy.Start(heavy_body(m.cpu(0)), 0);
  light.Start(YieldingWorker(m.cpu(0), f, 3000, 10000), 0);
  m.sim().Run();
  EXPECT_NEAR(heavy_ns / (heavy_ns + light_ns), 3121.0 / (3121 + 1024), 0.03);
}

TEST(CpuTest, ARealTimeThreadTakesTheCpuAndKeepsIt) {
  MachineCosts c;
  c.context_switch_ns = 500;
  Machine m(Cpus(2), c);
  FnId f = m.functions().Intern("work");
  Thread hog(m, "kworker", 0, -20), rt(m, "irq/thread", 0), soft(m, "ksoftirqd", 0), waker(m, "waker", 1);
  rt.set_sched_fifo(50);
  soft.set_wakeup_preempts(true);
  EXPECT_TRUE(rt.rt());
  EXPECT_FALSE(hog.rt());
  SimTime rt_start = -1, rt_end = -1, soft_at = -1, woken_at = -1;
  auto rt_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sleep();
    rt_start = cpu.now();
    for (int i = 0; i < 20; ++i) {
      cpu.Charge(f, 1000);
      co_await cpu.PreemptPoint();
    }
    rt_end = cpu.now();
  };
  auto soft_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sleep();
    soft_at = cpu.now();
    cpu.Charge(f, 100);
  };
  auto waker_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 10000);
    co_await cpu.Sync();
    woken_at = cpu.now();
    soft.Wake(cpu.now());
    rt.Wake(cpu.now());
  };
  rt.Start(rt_body(m.cpu(0)), 0);
  soft.Start(soft_body(m.cpu(0)), 0);
  hog.Start(YieldingWorker(m.cpu(0), f, 100, 1000), 0);
  waker.Start(waker_body(m.cpu(1)), 0);
  m.sim().Run();
  EXPECT_EQ(rt.state(), Thread::State::kDone);
  EXPECT_EQ(hog.state(), Thread::State::kDone);
  EXPECT_GE(woken_at, 10000);
  EXPECT_GE(rt_start, woken_at);
  EXPECT_LE(rt_start, woken_at + 1000 + 500);  // the kworker's next step boundary, one switch
  EXPECT_EQ(rt_end - rt_start, 20 * 1000);  // nobody ran in between
  EXPECT_GE(soft_at, rt_end);
}

// A CFS thread a real-time one pre-empts keeps its place: it runs again as
// soon as the real-time thread sleeps, with the rest of its slice, before a
// CFS thread of the same nice that was waiting for the CPU.
TEST(CpuTest, AThreadPreemptedByARealTimeOneKeepsItsPlace) {
  MachineCosts c;
  c.context_switch_ns = 500;
  c.sched_slice_ns = 1000000;
  Machine m(Cpus(2), c);
  FnId f = m.functions().Intern("work");
  Thread first(m, "first", 0), second(m, "second", 0), rt(m, "irq/thread", 0), waker(m, "waker", 1);
  rt.set_sched_fifo(50);
  SimTime rt_end = -1, first_resumed = -1, second_start = -1;
  auto first_body = [&](Cpu& cpu) -> Task {
    for (int i = 0; i < 2000; ++i) {  // 2 ms: longer than its slice
      cpu.Charge(f, 1000);
      co_await cpu.Sync();
      if (rt_end >= 0 && first_resumed < 0) first_resumed = cpu.now();
    }
  };
  auto second_body = [&](Cpu& cpu) -> Task {
    second_start = cpu.now();
    cpu.Charge(f, 1000);
    co_return;
  };
  auto rt_body = [&](Cpu& cpu) -> Task {
    co_await cpu.Sleep();
    cpu.Charge(f, 5000);
    co_await cpu.Sync();
    rt_end = cpu.now();
  };
  auto waker_body = [&](Cpu& cpu) -> Task {
    cpu.Charge(f, 20000);
    co_await cpu.Sync();
    rt.Wake(cpu.now());
  };
  rt.Start(rt_body(m.cpu(0)), 0);
  first.Start(first_body(m.cpu(0)), 0);
  second.Start(second_body(m.cpu(0)), 0);
  waker.Start(waker_body(m.cpu(1)), 0);
  m.sim().Run();
  ASSERT_GE(rt_end, 20000);
  EXPECT_LE(first_resumed, rt_end + 1000 + 500);  // its next step, one switch
  EXPECT_GE(second_start, 1000000);               // only when first's slice ends
}

TEST(CpuTest, TickRunsPendingSoftirqsOnABusyCpu) {
  MachineCosts c;
  c.tick_period_ns = 1000000;
  c.tick_ns = 1000;
  Machine m(Cpus(1), c);
  FnId f = m.functions().Intern("work");
  RaiseFromTask h;
  bool woke = false;
  auto body = [](Cpu& cpu, IrqHandler* h, FnId f, bool* woke) -> Task {
    co_await cpu.Sync();
    *woke = cpu.RaiseSoftirq(h, 0);
    for (int i = 0; i < 3000; ++i) {  // 3 ms with no pre-emption point
      cpu.Charge(f, 1000);
      co_await cpu.Sync();
    }
  };
  Thread t(m, "kworker", 0, -20);
  t.Start(body(m.cpu(0), &h, f, &woke), 0);
  m.sim().Run();
  ASSERT_EQ(h.runs, 1);
  // The first tick's irq exit: at the first jiffy boundary (1 ms) after its
  // 1 us handler.
  EXPECT_GE(h.at, 1000000);
  EXPECT_LE(h.at, 1000000 + 2000);
  // Three or four ticks while busy, none after.
  const int64_t tick = m.cpu(0).fn_ns(m.functions().Intern("tick_sched_timer"), Mode::kIrq);
  EXPECT_GE(tick, 3000);
  EXPECT_LE(tick, 4000);
}

// SMT: work runs slower while the sibling works, a little slower while it
// spins, at full speed while it idles.
TEST(CpuTest, SmtSiblingsShareExecution) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};  // one core, two threads
  MachineCosts c;
  c.smt_busy_permille = 1500;
  c.smt_spin_permille = 1100;
  Machine m(p, c);
  FnId f = m.functions().Intern("work");
  Thread a(m, "a", 0);
  a.Start(Worker(m.cpu(0), f, 100, 100), 0);
  m.sim().Run();
  EXPECT_EQ(m.cpu(0).fn_ns(f, Mode::kSys), 10000);  // sibling idle
  Machine m2(p, c);
  FnId f2 = m2.functions().Intern("work");
  Thread x(m2, "x", 0), y(m2, "y", 1);
  x.Start(Worker(m2.cpu(0), f2, 100, 100), 0);
  y.Start(Worker(m2.cpu(1), f2, 1000, 100), 0);
  m2.sim().Run();
  EXPECT_EQ(m2.cpu(0).fn_ns(f2, Mode::kSys), 15000);  // sibling busy throughout
}

// x86 TSO pricing: dependent loads add up, independent ones and stores
// overlap, an atomic waits for the stores before it.
TEST(AccessCostTest, LoadsChainStoresOverlapAtomicsDrain) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}};
  MachineCosts c;
  Machine m(p, c);
  CacheLine a, b, d, e;
  for (CacheLine* l : {&a, &b, &d, &e}) l->Write(m, 1, 0);  // all last written on CPU 1
  AccessCost chain(m, 0, 2);
  chain.Load(a);
  chain.Load(b);
  EXPECT_EQ(chain.Take(), 2 * c.die_ns);
  for (CacheLine* l : {&a, &b}) l->Write(m, 1, 0);
  AccessCost parallel(m, 0, 2);
  parallel.LoadIndependent(a);
  parallel.LoadIndependent(b);
  EXPECT_EQ(parallel.Take(), c.die_ns);  // one miss's latency
  AccessCost stores(m, 0, 2);
  stores.Store(d);
  stores.Store(e);
  stores.Work(10);
  EXPECT_EQ(stores.Take(), c.die_ns + 10);  // the misses overlap the work
  for (CacheLine* l : {&d, &e}) l->Write(m, 1, 0);
  AccessCost atomic(m, 0, 2);
  atomic.Store(d);
  atomic.Atomic(e, 8);
  EXPECT_EQ(atomic.Take(), c.die_ns + (8 + c.die_ns));
}

// Hits are latency only on a dependent chain: a pointer chase pays one hit
// per step, independent loads one hit for the batch, stores none.
TEST(AccessCostTest, HitsCostOnlyOnTheDependentChain) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}};
  MachineCosts c;
  Machine m(p, c);
  std::vector<CacheLine> lines(5);
  for (CacheLine& l : lines) l.Write(m, 0, 0);  // CPU 0 owns them all
  AccessCost chain(m, 0, 2);
  for (CacheLine& l : lines) chain.Load(l);
  EXPECT_EQ(chain.Take(), 5 * 2);
  AccessCost batch(m, 0, 2);
  for (CacheLine& l : lines) batch.LoadIndependent(l);
  EXPECT_EQ(batch.Take(), 2);
  AccessCost stores(m, 0, 2);
  for (CacheLine& l : lines) stores.Store(l);
  stores.Work(7);
  EXPECT_EQ(stores.Take(), 7);
}

// A read miss comes from the nearest copy, not from the last writer.
TEST(CacheLineTest, ReadMissServedByNearestSharer) {
  std::vector<CpuPlacement> p = {{0, 0, 0, 0, 0}, {1, 1, 1, 0, 0}, {2, 1, 1, 0, 0}};
  MachineCosts c;
  Machine m(p, c);
  CacheLine line;
  line.Write(m, 0, 0);
  EXPECT_EQ(line.Read(m, 1, 2), c.die_ns);  // from CPU 0, another CCX
  EXPECT_EQ(line.Read(m, 2, 2), c.llc_ns);  // from CPU 1, same CCX
}

// Sharers past CPU 63 live outside the inline word: the nearest copy and
// the farthest invalidation still see them.
TEST(CacheLineTest, SharersBeyondSixtyFourCpus) {
  std::vector<CpuPlacement> p(130);
  for (int i = 0; i < 130; ++i) p[i] = CpuPlacement{i, i / 8, i / 64, i / 128, i / 128};
  MachineCosts c;
  Machine m(p, c);
  CacheLine line;
  line.Write(m, 0, 0);
  EXPECT_EQ(line.Read(m, 129, 2), c.socket_ns);  // from CPU 0, the other socket
  EXPECT_EQ(line.Read(m, 128, 2), c.llc_ns);     // from CPU 129, same CCX
  EXPECT_EQ(line.Read(m, 70, 2), c.die_ns);      // from CPU 0: same socket, other die
  EXPECT_EQ(line.Write(m, 0, 5), 5 + c.socket_ns);  // the owner upgrades: farthest sharer invalidated
  EXPECT_EQ(line.Read(m, 129, 2), c.socket_ns);
  EXPECT_EQ(line.transfers(), 4u);
}

}  // namespace
}  // namespace blklab::sim
