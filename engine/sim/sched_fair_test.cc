// CFS and EEVDF: slices, lag, weights, schedstat, real-time threads, SMT.
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

}  // namespace
}  // namespace blklab::sim
