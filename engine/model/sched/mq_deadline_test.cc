// Unit tests of DeadlineSched (mq-deadline) on its own: sort order, FIFO
// expiry, direction choice, merges, and the RC4 switches' bookkeeping.
#include <memory>
#include <utility>
#include <vector>

#include "engine/host/cost_table.h"
#include "engine/model/kernel.h"
#include "engine/model/sched/mq_deadline.h"
#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "gtest/gtest.h"

namespace blklab::model {
namespace {

std::vector<sim::CpuPlacement> Cpus(int n) {
  std::vector<sim::CpuPlacement> p(n);
  for (int i = 0; i < n; ++i) p[i] = sim::CpuPlacement{i, 0, 0, 0, 0};
  return p;
}

struct Rig {
  explicit Rig(const DeadlineConfig& dc = {})
      : machine(Cpus(1), sim::MachineCosts{}),
        kernel(machine, costs, host::Knobs{}),
        dd(kernel, "sda", dc) {}
  // Runs `body` as a task on CPU 0 until it finishes.
  void Run(sim::Task body) {
    threads.push_back(std::make_unique<sim::Thread>(machine, "t", 0));
    threads.back()->Start(std::move(body), machine.sim().Now());
    machine.sim().Run();
  }
  host::CostTable costs;
  sim::Machine machine;
  Kernel kernel;
  DeadlineSched dd;
  std::vector<std::unique_ptr<sim::Thread>> threads;
};

Request Rq(uint64_t sector, ReqOp op = ReqOp::kRead, uint32_t bytes = 4096) {
  Request rq;
  rq.sector = sector;
  rq.op = op;
  rq.bytes = bytes;
  return rq;
}

sim::Task InsertAll(Rig& rig, std::vector<Request>& rqs) {
  sim::Cpu& cpu = rig.machine.cpu(0);
  RequestList list;
  for (Request& r : rqs) list.push_back(&r);
  co_await rig.dd.InsertRequests(cpu, nullptr, list);
}

sim::Task DispatchAll(Rig& rig, std::vector<uint64_t>& sectors) {
  sim::Cpu& cpu = rig.machine.cpu(0);
  for (;;) {
    Request* rq = nullptr;
    co_await rig.dd.DispatchRequest(cpu, nullptr, &rq);
    if (rq == nullptr) break;
    sectors.push_back(rq->sector);
  }
}

TEST(DeadlineSchedTest, DispatchesInSectorOrderAndTakesDdLockPerCall) {
  Rig rig;
  std::vector<Request> rqs = {Rq(3000), Rq(1000), Rq(2000)};
  rig.Run(InsertAll(rig, rqs));
  EXPECT_EQ(rig.dd.queued(), 3u);
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  EXPECT_EQ(order, (std::vector<uint64_t>{1000, 2000, 3000}));
  EXPECT_EQ(rig.dd.queued(), 0u);
  // One acquisition for the insert batch, one per dispatch call (4 calls).
  EXPECT_EQ(rig.dd.lock().stats().acquisitions, 5u);
}

Request PrioRq(uint64_t sector, uint8_t ioprio_class) {
  Request rq = Rq(sector);
  rq.ioprio_class = ioprio_class;
  return rq;
}

// Dispatches one request (null when the scheduler holds back).
Request* DispatchOne(Rig& rig) {
  Request* out = nullptr;
  rig.Run([](Rig& r, Request** o) -> sim::Task {
    co_await r.dd.DispatchRequest(r.machine.cpu(0), nullptr, o);
  }(rig, &out));
  return out;
}

// Three priority levels: RT before BE before IDLE whatever the sectors, and
// a lower level waits while a higher one still has requests in flight
// (dispatched, not finished: dd_queued).
TEST(DeadlineSchedTest, HigherPriorityFirstAndLowerWaitsForItsCompletions) {
  Rig rig;
  std::vector<Request> rqs = {PrioRq(100, 3), PrioRq(200, 2), PrioRq(300, 1), PrioRq(400, 0)};
  rig.Run(InsertAll(rig, rqs));
  Request* rt = DispatchOne(rig);
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->sector, 300u);
  // The RT request is in flight: BE and IDLE wait.
  EXPECT_EQ(DispatchOne(rig), nullptr);
  rig.dd.FinishRequest(rig.machine.cpu(0), rt);
  // BE (class none is BE) in sector order, then IDLE.
  Request* be1 = DispatchOne(rig);
  ASSERT_NE(be1, nullptr);
  EXPECT_EQ(be1->sector, 200u);
  rig.dd.FinishRequest(rig.machine.cpu(0), be1);
  Request* be2 = DispatchOne(rig);
  ASSERT_NE(be2, nullptr);
  EXPECT_EQ(be2->sector, 400u);
  rig.dd.FinishRequest(rig.machine.cpu(0), be2);
  Request* idle = DispatchOne(rig);
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ(idle->sector, 100u);
}

// Two RT requests and an older BE one; the first dispatch happens at once,
// the second after 2 ms. Returns the two sectors dispatched.
std::pair<uint64_t, uint64_t> RtThenWait(int64_t aging_ns) {
  DeadlineConfig dc;
  dc.prio_aging_expire_ns = aging_ns;
  Rig rig(dc);
  std::vector<Request> rt = {PrioRq(500, 1), PrioRq(600, 1)};
  std::vector<Request> be = {PrioRq(100, 2)};
  rig.Run(InsertAll(rig, be));
  rig.Run(InsertAll(rig, rt));
  Request* first = DispatchOne(rig);
  rig.Run([](Rig& r) -> sim::Task {
    r.machine.cpu(0).Charge(r.kernel.fn.io_schedule, 2000000);
    co_await r.machine.cpu(0).Sync();
  }(rig));
  Request* second = DispatchOne(rig);
  return {first != nullptr ? first->sector : 0, second != nullptr ? second->sector : 0};
}

// prio_aging_expire: a BE request that has waited longer than the aging
// time is served although RT requests are in flight; a fresh one is not.
TEST(DeadlineSchedTest, AgedLowerPriorityRequestIsServed) {
  // 1 ms aging: BE has not waited long enough at first, then it has.
  EXPECT_EQ(RtThenWait(1000000), (std::pair<uint64_t, uint64_t>{500, 100}));
  // Without aging the RT requests go first.
  EXPECT_EQ(RtThenWait(0), (std::pair<uint64_t, uint64_t>{500, 600}));
}

TEST(DeadlineSchedTest, ExpiredFifoHeadWinsOverSortOrder) {
  DeadlineConfig dc;
  dc.read_expire_ns = 1000;
  dc.fifo_batch = 1;
  Rig rig(dc);
  std::vector<Request> first = {Rq(9000)};
  rig.Run(InsertAll(rig, first));
  std::vector<Request> later = {Rq(100), Rq(200)};
  // Let the first request's deadline pass before the others arrive.
  rig.Run([](Rig& r, std::vector<Request>& v) -> sim::Task {
    sim::Cpu& cpu = r.machine.cpu(0);
    cpu.Charge(r.kernel.fn.io_schedule, 5000);
    co_await cpu.Sync();
    RequestList list;
    for (Request& q : v) list.push_back(&q);
    co_await r.dd.InsertRequests(cpu, nullptr, list);
  }(rig, later));
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  // The first call continues the (initial) batch in sort order from
  // latest_pos = 0; once the batch is over the expired FIFO head wins.
  ASSERT_EQ(order.size(), 3u);
  EXPECT_EQ(order[0], 100u);
  EXPECT_EQ(order[1], 9000u);
}

TEST(DeadlineSchedTest, WritesAreServedAfterWritesStarvedReadBatches) {
  DeadlineConfig dc;
  dc.fifo_batch = 1;
  dc.writes_starved = 2;
  Rig rig(dc);
  std::vector<Request> rqs = {Rq(100), Rq(200), Rq(300), Rq(400), Rq(5000, ReqOp::kWrite)};
  rig.Run(InsertAll(rig, rqs));
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  ASSERT_EQ(order.size(), 5u);
  // The initial batch, then writes_starved (2) read batches, then the write.
  EXPECT_EQ(order[3], 5000u);
}

// writes_starved over the values sysfs accepts: the first call continues the
// initial read batch, then N read batches pass over the queued write, so
// with fifo_batch=1 the write is dispatched (N + 1)th after the first; 0
// sends it at the first choice (dd->starved++ >= 0).
class WritesStarvedTest : public ::testing::TestWithParam<int> {};

TEST_P(WritesStarvedTest, WriteGoesAfterThatManyReadBatches) {
  DeadlineConfig dc;
  dc.fifo_batch = 1;
  dc.writes_starved = GetParam();
  Rig rig(dc);
  std::vector<Request> rqs;
  for (int i = 0; i < 12; ++i) rqs.push_back(Rq(100 + 100 * static_cast<uint64_t>(i)));
  rqs.push_back(Rq(50000, ReqOp::kWrite));
  rig.Run(InsertAll(rig, rqs));
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  ASSERT_EQ(order.size(), rqs.size());
  EXPECT_EQ(order[static_cast<size_t>(1 + GetParam())], 50000u);
}

INSTANTIATE_TEST_SUITE_P(Values, WritesStarvedTest, ::testing::Values(0, 1, 2, 4, 8));

// fifo_batch over its values: with writes_starved=1 and both directions
// queued, the initial read batch runs on into the first chosen read batch
// (2 x fifo_batch reads), then fifo_batch writes, then fifo_batch reads.
class FifoBatchTest : public ::testing::TestWithParam<int> {};

TEST_P(FifoBatchTest, BatchesAreFifoBatchLong) {
  const int batch = GetParam();
  DeadlineConfig dc;
  dc.fifo_batch = batch;
  dc.writes_starved = 1;
  Rig rig(dc);
  std::vector<Request> rqs;
  for (int i = 0; i < 4 * batch; ++i) rqs.push_back(Rq(100 + 8 * static_cast<uint64_t>(i)));
  for (int i = 0; i < 4 * batch; ++i) rqs.push_back(Rq(1000000 + 8 * static_cast<uint64_t>(i), ReqOp::kWrite));
  rig.Run(InsertAll(rig, rqs));
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  ASSERT_EQ(order.size(), rqs.size());
  auto is_write = [&order](int i) { return order[static_cast<size_t>(i)] >= 1000000; };
  for (int i = 0; i < 2 * batch; ++i) EXPECT_FALSE(is_write(i)) << "dispatch " << i;
  for (int i = 2 * batch; i < 3 * batch; ++i) EXPECT_TRUE(is_write(i)) << "dispatch " << i;
  EXPECT_FALSE(is_write(3 * batch));
}

INSTANTIATE_TEST_SUITE_P(Values, FifoBatchTest, ::testing::Values(1, 4, 16, 64));

TEST(DeadlineSchedTest, BackMergeAppendsTheBio) {
  Rig rig;
  std::vector<Request> rqs = {Rq(1000)};
  Bio first;
  rqs[0].bio = rqs[0].biotail = &first;
  rqs[0].nr_bios = 1;
  rig.Run(InsertAll(rig, rqs));
  Bio bio;
  bio.sector = 1000 + 8;
  bio.bytes = 4096;
  Request* merged = nullptr;
  rig.Run([](Rig& r, Bio* b, Request** out) -> sim::Task {
    co_await r.dd.BioMerge(r.machine.cpu(0), nullptr, b, out);
  }(rig, &bio, &merged));
  EXPECT_EQ(merged, &rqs[0]);
  EXPECT_EQ(rqs[0].bytes, 8192u);
  EXPECT_EQ(rqs[0].nr_bios, 2u);
  EXPECT_EQ(rig.dd.stats().merged, 1u);
}

TEST(DeadlineSchedTest, SideListsInsertWithoutDdLockAndDispatchDrainsThem) {
  DeadlineConfig dc;
  dc.insert_side_lists = true;
  dc.serialize_dispatch = true;
  Rig rig(dc);
  std::vector<Request> rqs = {Rq(300), Rq(100)};
  rig.Run(InsertAll(rig, rqs));
  EXPECT_EQ(rig.dd.lock().stats().acquisitions, 0u);
  EXPECT_EQ(rig.dd.queued(), 2u);
  std::vector<uint64_t> order;
  rig.Run(DispatchAll(rig, order));
  EXPECT_EQ(order, (std::vector<uint64_t>{100, 300}));
  // dd_do_insert runs on every dispatch call that wins DD_DISPATCHING, the
  // side lists empty or not: one insert_lock for the insert, then one per
  // call (two that found a request, one that found none).
  EXPECT_EQ(rig.dd.insert_lock().stats().acquisitions, 1u + 3u);
  EXPECT_EQ(rig.dd.lock().stats().acquisitions, 3u);
}

}  // namespace
}  // namespace blklab::model
