// engine/job/t_io_uring_thread.h
//
// TioUringThread is one submitter thread of fio's t/io_uring benchmark on a
// simulated CPU, with the tool's own loop, which is much leaner than fio's
// (no per-IO statistics unless -t1):
//
//   1. prep: when nothing is prepared and fewer than `depth` are in flight,
//      fill min(depth - inflight, batch_submit) SQEs: pick the file (stay on
//      one until it has ceil(depth / nr_files) pending, then move on), pick
//      the offset (random: uniform over whole bs blocks but the last two;
//      sequential: a cursor per file);
//   2. one io_uring_enter(to_submit, to_wait): to_wait is 0 while the
//      prepared batch still fits below depth, else min(inflight + to_submit,
//      batch_complete) with GETEVENTS: the kernel submits, then polls (IOPOLL)
//      or sleeps until to_wait CQEs are there;
//   3. reap every CQE in the ring from user space.
//
// `done` counts submitted IOs (what the enter accepted), `calls` the enters,
// `reaps` the CQEs: the tool's per-second line is made of their deltas. With
// -t1, each prepared batch gets a timestamp slot (nr_batch of them, slot 0
// never sampled) and each group of reaped CQEs of one slot adds its latency
// to a histogram, once the first second has passed.
//
// The legacy aio (-a1) and preadv2 (-S1) modes use the libaio and sync
// engine models with the same counters; -N1 submits no-ops (io_uring only).
//
// Invariants: inflight == prepared + submitted - reaped; at most depth.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: the I/O engine's costs plus t_io_uring_per_io of user work per IO.
#ifndef BLKLAB_ENGINE_JOB_T_IO_URING_THREAD_H_
#define BLKLAB_ENGINE_JOB_T_IO_URING_THREAD_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/job/io_engine.h"
#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/sim/cpu.h"
#include "engine/sim/rng.h"
#include "engine/stats/histogram.h"
#include "engine/workload/job_spec.h"
#include "engine/workload/t_io_uring.h"

namespace blklab::job {

struct TioUringFile {
  model::RequestQueue* queue = nullptr;
  uint64_t size_bytes = 0;
};

struct TioUringThreadConfig {
  const workload::TioUringSpec* spec = nullptr;
  int index = 0;  // submitter index
  int cpu = 0;
  std::vector<TioUringFile> files;
  uint64_t seed = 0;
  sim::SimTime end_at = sim::kSimTimeNever;
  sim::SimTime stats_from = sim::kNsPerSec;  // -t1 samples start after the first second
};

class TioUringThread final : public model::BioOwner {
 public:
  TioUringThread(model::Kernel& kernel, const TioUringThreadConfig& config);
  TioUringThread(const TioUringThread&) = delete;
  TioUringThread& operator=(const TioUringThread&) = delete;

  void Start();
  // The loop ended (runtime over); exited(): and what was in flight ended.
  bool done() const { return finished_; }
  sim::SimTime finished_at() const { return finished_at_; }
  bool exited() const { return exited_; }
  sim::SimTime exited_at() const { return exited_at_; }
  // Cumulative counters (the tool's `done`, `calls`, `reaps`).
  uint64_t submitted() const { return done_; }
  uint64_t calls() const { return calls_; }
  uint64_t reaps() const { return reaps_; }
  const stats::LatencyHistogram& latency() const { return latency_; }
  const TioUringThreadConfig& config() const { return config_; }

  void BioEndio(sim::Cpu& cpu, model::Bio* bio, model::BlkStatus status) override;

 private:
  sim::Task Main();
  void Prep(uint32_t n);
  void Reap();
  uint64_t NextOffset(uint32_t file);

  model::Kernel& kernel_;
  TioUringThreadConfig config_;
  const workload::TioUringSpec& spec_;
  workload::JobSpec engine_spec_;  // the engine model's view (flags, depth)
  sim::Cpu& cpu_;
  std::unique_ptr<sim::Thread> thread_;
  std::vector<IoU> io_us_;
  std::vector<IoU*> free_;
  std::vector<IoU*> prepped_;
  IoContext ctx_;
  std::unique_ptr<IoEngineModel> engine_;
  sim::RngStream rng_;
  std::vector<uint32_t> pending_;     // per file
  std::vector<uint64_t> cur_off_;     // per file (sequential)
  std::vector<uint64_t> max_blocks_;  // per file
  uint32_t cur_file_ = 0;
  uint32_t file_depth_ = 1;
  uint64_t done_ = 0, calls_ = 0, reaps_ = 0;
  // -t1
  std::vector<sim::SimTime> clock_batch_;
  uint32_t clock_index_ = 1;
  stats::LatencyHistogram latency_;
  bool finished_ = false;
  sim::SimTime finished_at_ = 0;
  bool exited_ = false;
  sim::SimTime exited_at_ = 0;
  sim::FnId fn_user_, fn_enter_, fn_fget_;
};

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_T_IO_URING_THREAD_H_
