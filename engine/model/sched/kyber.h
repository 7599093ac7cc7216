// engine/model/sched/kyber.h
//
// KyberSched models block/kyber-iosched.c (v6.x) behind the Elevator
// interface (elevator.h), as the kernel builds it:
//
//  * Per request queue (struct kyber_queue_data): one token sbitmap_queue per
//    scheduling domain (READ 256, WRITE 128, DISCARD 64, OTHER 16 tokens),
//    shared by every hctx of the queue; latency targets (read_lat_nsec,
//    write_lat_nsec from sysfs, 5 s for discards); per-CPU latency
//    histograms (8 buckets of target/4 per domain, for the total latency
//    from allocation and the I/O latency from blk_mq_start_request, which
//    needs QUEUE_FLAG_STATS: kyber enables blk-stat accounting); and the
//    timer that folds the histograms every HZ/10 after a completion
//    (timer_reduce) and resizes the domains: when any domain's I/O-latency
//    p90 is past its target ("congestion") every domain is scaled by its
//    total-latency p99 (depth * (bucket + 1) / 4: shrunk when the p99 beat
//    the target, grown when it missed), else only the domains that missed
//    their target grow. A percentile needs 500 samples or 1 s.
//  * Per hctx (struct kyber_hctx_data): khd->lock, one flushed list per
//    domain, the current domain and its batch (16 reads, 8 writes, 1
//    discard / other before moving to the next domain), and one
//    kyber_ctx_queue per software queue mapped to the hctx (its own lock
//    and a list per domain, one cacheline-aligned struct) with a per-domain
//    kcq_map sbitmap (8 bits per word, each word on its own line).
//
//   BioMerge         kyber_bio_merge: blk_bio_list_merge under the submitting
//                    CPU's kcq->lock, the last 8 requests of the bio's domain
//   InsertRequests   kyber_insert_requests: onto the kcq list under its lock,
//                    kcq_map bit set
//   DispatchRequest  kyber_dispatch_request under khd->lock: a domain token
//                    first (__sbitmap_queue_get); only with one are the busy
//                    kcqs flushed into khd->rqs (requests left in the kcqs
//                    can still merge). Without one, the hctx queues its
//                    domain_wait on the token sbitmap's wait queue and the
//                    next freed token runs the hctx (kyber_domain_wake ->
//                    blk_mq_run_hw_queue async); the dispatch returns null
//                    and blk-mq's delayed run (BLK_MQ_BUDGET_DELAY) backs it
//                    up.
//   HasWork          kyber_has_work: khd->rqs heads and kcq_map words
//   CompletedRequest kyber_completed_request: two histogram samples on this
//                    CPU's line, timer_reduce
//   FinishRequest    kyber_finish_request: the domain token back
//                    (sbitmap_queue_clear, which may wake a domain_wait)
//
// kyber_limit_depth: async requests (blklab's discards; direct reads and
// writes are synchronous) get async_depth = 75% of each sched-tags word.
//
// Invariants: a request is in exactly one of its kcq list or khd->rqs until
//  dispatched; a dispatched request holds one token of its domain until it
//  is freed; tokens in use per domain never exceed the depth at which they
//  were taken (a shrink lets those above the new depth drain); queued()
//  counts inserted, undispatched requests.
// Thread-safety: thread-compatible; part of one simulation. Shared state is
//  touched only after cpu.Sync().
// Cost: flat bodies (kyber_insert_request, kyber_dispatch_request,
//  kyber_completed_request; the merge scan as blk-mq's sw-queue merge rows)
//  plus the lines each path touches (lock words, list heads, kcq_map words,
//  token words, the request's line). Model bookkeeping: O(1) per request,
//  O(ctxs / 8) per flush, O(CPUs) per timer.
#ifndef BLKLAB_ENGINE_MODEL_SCHED_KYBER_H_
#define BLKLAB_ENGINE_MODEL_SCHED_KYBER_H_

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/model/elevator.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/sbitmap.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/task.h"
#include "engine/sim/timer.h"

namespace blklab::model {

// kyber's sysfs tunables (/sys/block/X/queue/iosched).
struct KyberConfig {
  int64_t read_lat_nsec = 2'000'000;
  int64_t write_lat_nsec = 10'000'000;
  uint32_t max_request_bytes = kMaxMergeBytes;  // the queue's max_sectors

  static KyberConfig From(const host::IoschedTunables& iosched);
};

struct KyberStats {
  uint64_t inserted = 0;
  uint64_t merged = 0;
  uint64_t dispatched = 0;
  uint64_t throttled = 0;     // a dispatch found its domain out of tokens
  uint64_t domain_wakes = 0;  // kyber_domain_wake ran a hctx
  uint64_t timer_runs = 0;
  uint64_t resizes = 0;       // kyber_resize_domain changed a depth
};

class KyberSched final : public Elevator {
 public:
  enum Domain { kRead = 0, kWrite = 1, kDiscard = 2, kOther = 3 };
  static constexpr int kNumDomains = 4;
  static constexpr uint32_t kDepth[kNumDomains] = {256, 128, 64, 16};
  static constexpr uint32_t kBatchSize[kNumDomains] = {16, 8, 1, 1};
  static constexpr int kLatencyShift = 2;
  static constexpr int kGoodBuckets = 1 << kLatencyShift;
  static constexpr int kLatencyBuckets = 2 << kLatencyShift;

  KyberSched(Kernel& kernel, const std::string& qname, const KyberConfig& config);
  KyberSched(const KyberSched&) = delete;
  KyberSched& operator=(const KyberSched&) = delete;

  void InitHctx(Hctx* hctx) override;
  uint32_t LimitDepth(const Bio& bio) override { return bio.op == ReqOp::kDiscard ? async_depth_ : 0; }
  sim::Task BioMerge(sim::Cpu& cpu, Hctx* hctx, Bio* bio, Request** merged_into) override;
  void PrepareRequest(sim::Cpu& cpu, Request* rq) override { rq->elv_token = -1; }
  sim::Task InsertRequests(sim::Cpu& cpu, Hctx* hctx, RequestList& list) override;
  sim::Task DispatchRequest(sim::Cpu& cpu, Hctx* hctx, Request** out) override;
  bool HasWork(sim::Cpu& cpu, Hctx* hctx) override;
  void CompletedRequest(sim::Cpu& cpu, Request* rq, sim::SimTime now) override;
  void FinishRequest(sim::Cpu& cpu, Request* rq) override;
  size_t queued() const override { return queued_; }
  bool mq_aware() const override { return true; }  // ELEVATOR_F_MQ_AWARE

  // The token depth of `domain` now, and the tokens it has in use.
  uint32_t domain_depth(int domain) const { return tokens_[domain]->depth(); }
  uint32_t domain_busy(int domain) const { return tokens_[domain]->busy(); }
  const KyberStats& stats() const { return stats_; }

  // kyber_sched_domain: the domain of a request or bio of `op`.
  static int DomainOf(ReqOp op) {
    return op == ReqOp::kRead ? kRead : op == ReqOp::kWrite ? kWrite : kDiscard;
  }
  // add_latency_sample's bucket for `latency_ns` against `target_ns`.
  static int LatencyBucket(int64_t target_ns, int64_t latency_ns);

 private:
  // struct kyber_ctx_queue: lock and lists on one aligned line.
  struct Kcq {
    Kcq(Kernel& kernel, const std::string& name);
    sim::SpinLock lock;
    std::array<RequestList, kNumDomains> rq_list;
  };
  // khd->domain_wait[d]: queued on a token sbitmap, runs its hctx.
  struct DomainWait final : public SbqWaiter {
    KyberSched* kyber = nullptr;
    Hctx* hctx = nullptr;
    void SbqWake(sim::Cpu& cpu) override;
  };
  struct Khd {
    Khd(Kernel& kernel, const std::string& name);
    sim::SpinLock lock;  // its line also holds the rqs heads
    std::array<RequestList, kNumDomains> rqs;
    sim::CacheLine state_line;  // cur_domain, batching
    int cur_domain = 0;
    uint32_t batching = 0;
    std::vector<std::unique_ptr<Kcq>> kcqs;
    std::array<std::vector<uint8_t>, kNumDomains> kcq_map;  // 8 bits per word
    std::array<std::vector<sim::CacheLine>, kNumDomains> kcq_map_lines;
    std::array<DomainWait, kNumDomains> domain_wait;
    std::array<uint32_t, kNumDomains> wait_index = {0, 0, 0, 0};
  };
  // The per-CPU struct kyber_cpu_latency: [domain][type][bucket].
  struct CpuLatency {
    std::array<std::array<std::array<uint32_t, kLatencyBuckets>, 2>, kNumDomains - 1> buckets{};
    sim::CacheLine line;
  };
  class TimerIrq final : public sim::IrqHandler {
   public:
    explicit TimerIrq(KyberSched* k) : k_(k) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // kyber_timer_fn
   private:
    KyberSched* k_;
  };

  Khd& KhdOf(Hctx* hctx);
  // kyber_get_domain_token for khd's current domain. REQUIRES: khd->lock held.
  int GetDomainToken(sim::Cpu& cpu, Khd& khd, Hctx* hctx);
  // kyber_dispatch_cur_domain. REQUIRES: khd->lock held.
  sim::Task DispatchCurDomain(sim::Cpu& cpu, Khd& khd, Hctx* hctx, Request** out);
  // kyber_flush_busy_kcqs: every busy kcq's list of `domain` onto khd.rqs.
  sim::Task FlushBusyKcqs(sim::Cpu& cpu, Khd& khd, int domain);
  // calculate_percentile for the summed histogram; -1 without enough samples.
  int CalculatePercentile(sim::SimTime now, int domain, int type, int percentile);
  void TimerFn(sim::Cpu& cpu);  // kyber_timer_fn

  Kernel& kernel_;
  std::string qname_;
  std::array<int64_t, kNumDomains - 1> latency_targets_;
  std::array<std::unique_ptr<SbitmapQueue>, kNumDomains> tokens_;  // kqd->domain_tokens
  std::vector<std::unique_ptr<Khd>> khds_;  // by hctx queue_num
  std::vector<CpuLatency> cpu_latency_;
  std::array<std::array<std::array<uint32_t, kLatencyBuckets>, 2>, kNumDomains - 1> latency_buckets_{};
  std::array<sim::SimTime, kNumDomains - 1> latency_timeout_{};  // 0: not started
  std::array<int, kNumDomains - 1> domain_p99_ = {-1, -1, -1};
  TimerIrq timer_irq_{this};
  sim::HrTimer timer_;       // kqd->timer (a jiffies timer)
  sim::SimTime timer_expires_ = 0;  // kqd->timer.expires (it runs at its wheel bucket)
  sim::CacheLine kqd_line_;  // the timer and the tunables, read at every completion
  size_t queued_ = 0;
  uint32_t max_request_bytes_;  // the queue's max_sectors
  uint32_t async_depth_ = 0;  // kqd->async_depth (KYBER_ASYNC_PERCENT of a word)
  KyberStats stats_;
  sim::FnId fn_bio_merge_, fn_insert_, fn_dispatch_, fn_has_work_, fn_completed_, fn_finish_, fn_timer_;
};

// The registry entry (elevator.cc).
extern const ElevatorType kKyberElevator;

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SCHED_KYBER_H_
