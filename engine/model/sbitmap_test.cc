// Unit tests of SbitmapQueue: allocation, deferred clear, and batched
// wake-ups of tag waiters (sbq_wake_ptr / wake_batch).
#include <memory>
#include <vector>

#include "engine/host/cost_table.h"
#include "engine/host/host_spec.h"
#include "engine/model/kernel.h"
#include "engine/model/sbitmap.h"
#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "gtest/gtest.h"

namespace blklab::model {
namespace {

struct SbitmapRig {
  explicit SbitmapRig(host::Knobs knobs = {})
      : machine(std::vector<sim::CpuPlacement>(1), sim::MachineCosts{}), kernel(machine, costs, knobs) {}
  // Starts `body` as a thread on CPU 0 at time `at`.
  void Start(sim::Task body, sim::SimTime at) {
    threads.push_back(std::make_unique<sim::Thread>(machine, "t", 0));
    threads.back()->Start(std::move(body), at);
  }
  host::CostTable costs;
  sim::Machine machine;
  Kernel kernel;
  std::vector<std::unique_ptr<sim::Thread>> threads;
};

sim::Task FillAll(sim::Cpu& cpu, SbitmapQueue& bt, std::vector<int>& bits) {
  co_await cpu.Sync();
  for (int b = bt.Get(cpu); b >= 0; b = bt.Get(cpu)) bits.push_back(b);
}

sim::Task WaitForTag(sim::Cpu& cpu, SbitmapQueue& bt, int& woken) {
  co_await cpu.Sync();
  uint32_t wait_index = 0;  // every waiter on the same wait queue
  sim::WaitQueue& wq = bt.NextWaitQueue(wait_index);
  bt.PrepareToWait();
  co_await wq.Wait(cpu);
  bt.FinishWait();
  ++woken;
}

sim::Task FreeOneByOne(sim::Cpu& cpu, SbitmapQueue& bt, const std::vector<int>& bits, size_t n,
                       std::vector<uint64_t>& wakeups_after) {
  for (size_t i = 0; i < n; ++i) {
    co_await cpu.Sync();
    bt.Clear(cpu, static_cast<uint32_t>(bits[i]));
    wakeups_after.push_back(bt.wakeups());
  }
}

// 64 tags: wake_batch = clamp(64 / 8, 1, 8) = 8. With 8 sleepers on one
// wait queue, frees 1..7 wake nobody; the 8th wakes all 8.
TEST(SbitmapQueueTest, WaitersAreWokenInBatchesOfWakeBatch) {
  SbitmapRig rig;
  SbitmapQueue bt(rig.kernel, 64);
  ASSERT_EQ(bt.wake_batch(), 8u);
  sim::Cpu& cpu = rig.machine.cpu(0);
  std::vector<int> bits;
  rig.Start(FillAll(cpu, bt, bits), 0);
  int woken = 0;
  for (int i = 0; i < 8; ++i) rig.Start(WaitForTag(cpu, bt, woken), 1000);
  std::vector<uint64_t> wakeups_after;
  rig.Start(FreeOneByOne(cpu, bt, bits, 8, wakeups_after), 1000000);
  rig.machine.sim().Run();
  ASSERT_EQ(bits.size(), 64u);
  ASSERT_EQ(wakeups_after.size(), 8u);
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(wakeups_after[i], 0u) << "after free " << i + 1;
  EXPECT_EQ(wakeups_after[7], 8u);
  EXPECT_EQ(woken, 8);
}

// Deferred clear: a freed bit goes to the word's `cleared` mask and is
// folded back only when an allocation finds the word full; without it the
// bit is free at once.
TEST(SbitmapQueueTest, DeferredClearKeepsTheBitBusyUntilFolded) {
  for (bool deferred : {true, false}) {
    SCOPED_TRACE(deferred);
    host::Knobs knobs;
    knobs.sbitmap_deferred_clear = deferred;
    SbitmapRig rig(knobs);
    SbitmapQueue bt(rig.kernel, 64);
    sim::Cpu& cpu = rig.machine.cpu(0);
    std::vector<int> bits;
    rig.Start(FillAll(cpu, bt, bits), 0);
    std::vector<uint64_t> unused;
    rig.Start(FreeOneByOne(cpu, bt, bits, 1, unused), 1000);
    rig.machine.sim().Run();
    EXPECT_EQ(bt.busy(), deferred ? 64u : 63u);
  }
}

}  // namespace
}  // namespace blklab::model
