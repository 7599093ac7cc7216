#include <algorithm>
#include <cstdint>
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

TEST(SimulatorTest, RunStopsAtUntil) {
  Simulator sim;
  Recorder r;
  sim.Schedule(10, &r, 0, 1);
  sim.Schedule(50, &r, 0, 2);
  sim.Run(20);
  EXPECT_EQ(r.seen.size(), 1u);
  EXPECT_EQ(sim.pending_events(), 1u);
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
  SpinLock lock(m, "test->lock", fast, slow, SpinLockCosts{});
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
  SpinLock lock(m, "l", m.functions().Intern("_raw_spin_lock"), slow, SpinLockCosts{});
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

TEST(WorkQueueTest, PendingItemsCollapse) {
  Machine m(Cpus(1), MachineCosts{});
  WorkQueue wq(m, "kblockd", WorkQueueCosts{});
  CountingWork w;
  w.fn = m.functions().Intern("blk_mq_run_work_fn");
  auto kicker = [&](Cpu& cpu) -> Task {
    for (int i = 0; i < 5; ++i) wq.Queue(&cpu, &w, 0, 0);
    co_await cpu.Sync();
  };
  Thread t(m, "fio", 0);
  t.Start(kicker(m.cpu(0)), 0);
  m.sim().Run();
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
  Thread t(m, "fio", 0);
  t.Start(kicker(m.cpu(0)), 0);
  m.sim().Run();
  EXPECT_EQ(w.runs, 1);
  EXPECT_GE(m.cpu(0).now(), 3000000);
}

}  // namespace
}  // namespace blklab::sim
