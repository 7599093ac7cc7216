#include <memory>
#include <vector>

#include "engine/host/cost_table.h"
#include "engine/model/blk_mq.h"
#include "engine/model/drivers/null_blk.h"
#include "engine/model/kernel.h"
#include "engine/sim/cpu.h"
#include "engine/sim/machine.h"
#include "gtest/gtest.h"

namespace blklab::model {
namespace {

std::vector<sim::CpuPlacement> Cpus(int n) {
  std::vector<sim::CpuPlacement> p(n);
  for (int i = 0; i < n; ++i) p[i] = sim::CpuPlacement{i, i / 8, i / 8, 0, 0};
  return p;
}

// A minimal synchronous submitter: keeps `depth` bios in flight on one CPU
// and counts completions; it sleeps when all its bios are in flight.
class Submitter : public BioOwner {
 public:
  Submitter(sim::Machine& m, RequestQueue& q, int cpu, int depth, uint64_t total)
      : m_(m), q_(q), cpu_(cpu), bios_(depth), total_(total), thread_(m, "sub", cpu) {
    for (auto& b : bios_) b.owner = this;
  }
  void Start() { thread_.Start(Run(), 0); }

  void BioEndio(sim::Cpu& cpu, Bio* bio, BlkStatus status) override {
    EXPECT_EQ(status, BlkStatus::kOk);
    ++completed_;
    --in_flight_;
    free_.push_back(bio);
    if (waiting_ && thread_.sleeping()) {
      waiting_ = false;
      thread_.Wake(cpu.now());
    }
  }

  uint64_t completed() const { return completed_; }
  int max_in_flight() const { return max_in_flight_; }

 private:
  sim::Task Run() {
    sim::Cpu& cpu = m_.cpu(cpu_);
    for (auto& b : bios_) free_.push_back(&b);
    uint64_t sector = 0;
    while (submitted_ < total_) {
      co_await cpu.Sync();
      if (free_.empty()) {
        waiting_ = true;
        co_await cpu.Sleep();
        continue;
      }
      Bio* bio = free_.back();
      free_.pop_back();
      bio->sector = (sector += 4096) % (1 << 30);
      bio->bytes = 4096;
      ++submitted_;
      ++in_flight_;
      if (in_flight_ > max_in_flight_) max_in_flight_ = in_flight_;
      co_await q_.SubmitBio(cpu, bio, nullptr);
    }
    while (completed_ < total_) {
      co_await cpu.Sync();
      if (completed_ < total_) {
        waiting_ = true;
        co_await cpu.Sleep();
      }
    }
  }

  sim::Machine& m_;
  RequestQueue& q_;
  int cpu_;
  std::vector<Bio> bios_;
  std::vector<Bio*> free_;
  uint64_t total_;
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  int in_flight_ = 0;
  int max_in_flight_ = 0;
  bool waiting_ = false;
  sim::Thread thread_;
};

struct Rig {
  explicit Rig(int ncpus, const NullBlkConfig& nb, QueueConfig qc = {})
      : machine(Cpus(ncpus), sim::MachineCosts{}),
        kernel(machine, costs, host::Knobs{}),
        dev(kernel, "nullb0", nb, qc) {}
  host::CostTable costs;
  sim::Machine machine;
  Kernel kernel;
  NullBlk dev;
};

TEST(NullBlkTest, Irqmode0CompletesInlineWithoutEvents) {
  NullBlkConfig nb;
  nb.irqmode = 0;
  Rig rig(1, nb);
  Submitter s(rig.machine, rig.dev.queue(), 0, 32, 10000);
  s.Start();
  rig.machine.sim().Run();
  EXPECT_EQ(s.completed(), 10000u);
  EXPECT_EQ(rig.dev.queue().requests_outstanding(), 0u);
  EXPECT_LE(rig.machine.sim().events_delivered(), 10u);
  // Three timestamps per IO with iostats and BLK_CGROUP on: bio->bi_issue,
  // start_time_ns and the end (no QUEUE_FLAG_STATS in this rig, so no
  // io_start_time_ns).
  EXPECT_EQ(rig.kernel.counter(Counter::k_ktime_get_ns), 30000u);
}

TEST(NullBlkTest, Irqmode2LatencyIsAtLeastCompletionNsec) {
  NullBlkConfig nb;
  nb.irqmode = 2;
  nb.completion_nsec = 50000;
  Rig rig(1, nb);
  Submitter s(rig.machine, rig.dev.queue(), 0, 1, 100);
  s.Start();
  rig.machine.sim().Run();
  EXPECT_EQ(s.completed(), 100u);
  EXPECT_GE(rig.machine.sim().Now(), 100 * 50000);
  EXPECT_EQ(rig.kernel.counter(Counter::k_hardirq), 100u);
}

TEST(NullBlkTest, TagExhaustionSleepsAndWakes) {
  NullBlkConfig nb;
  nb.irqmode = 2;
  nb.completion_nsec = 100000;
  nb.hw_queue_depth = 4;
  Rig rig(1, nb);
  Submitter s(rig.machine, rig.dev.queue(), 0, 32, 1000);
  s.Start();
  rig.machine.sim().Run();
  EXPECT_EQ(s.completed(), 1000u);
  EXPECT_GT(rig.kernel.counter(Counter::k_tag_sleep), 0u);
  EXPECT_GT(rig.kernel.counter(Counter::k_tag_wakeup), 0u);
  EXPECT_EQ(rig.dev.queue().requests_outstanding(), 0u);
  // Depth 4 and 100 us per command: at most 4 in service at a time.
  EXPECT_GE(rig.machine.sim().Now(), 1000 / 4 * 100000);
}

TEST(NullBlkTest, Irqmode1OnTwoCpusWithOneQueueUsesSoftirq) {
  NullBlkConfig nb;
  nb.irqmode = 1;
  Rig rig(2, nb);
  Submitter a(rig.machine, rig.dev.queue(), 0, 8, 2000);
  Submitter b(rig.machine, rig.dev.queue(), 1, 8, 2000);
  a.Start();
  b.Start();
  rig.machine.sim().Run();
  EXPECT_EQ(a.completed(), 2000u);
  EXPECT_EQ(b.completed(), 2000u);
  // Every completion goes through BLOCK_SOFTIRQ, and the per-CPU
  // blk_cpu_done list batches them: a run completes what queued up since the
  // raise (depth 8 per submitter), so there are far fewer runs than requests.
  const uint64_t runs = rig.kernel.counter(Counter::k_block_softirq);
  EXPECT_GT(runs, 0u);
  EXPECT_LE(runs * 2, 4000u);
  EXPECT_GT(rig.machine.cpu(0).mode_ns(sim::Mode::kSoftirq), 0);
}

TEST(NullBlkTest, MbpsCapThrottlesThroughDispatchListAndRestarts) {
  NullBlkConfig nb;
  nb.irqmode = 0;
  nb.mbps = 100;  // 100 MiB/s -> 4 KiB IOs at 25600 IOPS
  Rig rig(1, nb);
  Submitter s(rig.machine, rig.dev.queue(), 0, 16, 2560);
  s.Start();
  rig.machine.sim().Run();
  EXPECT_EQ(s.completed(), 2560u);
  EXPECT_GT(rig.kernel.counter(Counter::k_queue_rq_busy), 0u);
  // 10 MiB at 100 MiB/s takes ~100 ms of virtual time.
  EXPECT_GE(rig.machine.sim().Now(), 95 * sim::kNsPerMs);
  EXPECT_LE(rig.machine.sim().Now(), 110 * sim::kNsPerMs);
}

}  // namespace
}  // namespace blklab::model
