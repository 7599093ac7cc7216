// The discrete-event core: the simulator, timers, RNG streams, the function
// registry, stack profiles, tasks, cache lines and access costs.
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
