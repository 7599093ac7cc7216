// engine/model/blk_mq.h
//
// The multi-queue block layer (block/blk-mq.c, blk-mq-sched.c, blk-core.c):
// per-CPU software queues (Ctx = blk_mq_ctx), hardware contexts (Hctx =
// blk_mq_hw_ctx) with their dispatch list, SCHED_RESTART bit and run work,
// the request queue, the plug, and the paths between them
// (KERNEL_MODEL.md §2.2–§2.8):
//
//   SubmitBio          submit_bio -> submit_bio_noacct -> blk_mq_submit_bio
//   FlushPlug          blk_finish_plug -> blk_mq_flush_plug_list
//   RunHwQueue(Async)  blk_mq_run_hw_queue(hctx, async)
//   DispatchRequests   blk_mq_sched_dispatch_requests (scheduler none)
//   DispatchRqList     blk_mq_dispatch_rq_list
//   StartRequest       blk_mq_start_request (called by drivers)
//   CompleteRequest    blk_mq_complete_request (placement by rq_affinity)
//   EndRequest         blk_mq_end_request -> bio_endio, tag put, restart
//
// Each function charges the cost-table entries of the kernel functions it
// stands for, under those functions' names. Shared state (sbitmap words,
// locks, lists other CPUs read) is touched only after Sync().
//
// Invariants: every request that is allocated is eventually ended (no lost
//  request): it is always in exactly one of plug list, sw queue,
//  hctx->dispatch, the driver, or being ended. Tags are returned exactly
//  once. A request parked on hctx->dispatch has SCHED_RESTART set or a run
//  scheduled.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: no allocation per I/O; one coroutine frame per SubmitBio.
#ifndef BLKLAB_ENGINE_MODEL_BLK_MQ_H_
#define BLKLAB_ENGINE_MODEL_BLK_MQ_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/kernel.h"
#include "engine/model/mq_deadline.h"
#include "engine/model/request.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/task.h"
#include "engine/sim/timer.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

class Hctx;
class RequestQueue;

// blk_mq_ops: what a driver provides.
class BlkMqDriver {
 public:
  virtual ~BlkMqDriver() = default;
  // ->queue_rq. The driver calls q->StartRequest(rq) when it accepts it.
  virtual BlkStatus QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last) = 0;
  // ->commit_rqs: ring a deferred doorbell.
  virtual void CommitRqs(sim::Cpu& cpu, Hctx* hctx) {}
  // ->complete: runs where blk_mq_complete_request placed the completion.
  virtual void Complete(sim::Cpu& cpu, Request* rq) = 0;
  // ->poll: completes what a poll queue has finished; returns the count.
  virtual int Poll(sim::Cpu& cpu, Hctx* hctx) { return 0; }
  // ->get_budget / ->put_budget (SCSI only): has_budget() says whether the
  // driver has them at all.
  virtual bool has_budget() const { return false; }
  virtual bool GetBudget(sim::Cpu& cpu, RequestQueue* q) { return true; }
  virtual void PutBudget(sim::Cpu& cpu, RequestQueue* q) {}
};

enum class Elevator : uint8_t { kNone, kMqDeadline };

// /sys/block/X/queue attributes the model honours.
struct QueueConfig {
  Elevator scheduler = Elevator::kNone;
  uint32_t nr_requests = 0;  // 0: the tag depth (none)
  bool iostats = true;
  int rq_affinity = 1;       // 0, 1 (SAME_COMP), 2 (SAME_FORCE)
  int nomerges = 0;          // 0, 1 (no complex merges), 2 (no merges)
  DeadlineConfig deadline;   // mq-deadline tunables and RC4 switches
  // q->timeout: the per-queue request timer and its timeout work (about
  // every 5 s under IO). Off for bare model rigs that run until no event is
  // left; the engine turns it on.
  bool timeout_timer = false;
};

// blk_mq_ctx: one per CPU per queue.
class Ctx {
 public:
  Ctx(Kernel& kernel, const std::string& qname, int cpu);
  int cpu() const { return cpu_; }
  Hctx* hctx(bool polled = false) const { return hctx_[polled ? 1 : 0]; }

 private:
  friend class RequestQueue;
  friend class Hctx;
  int cpu_;
  Hctx* hctx_[2] = {nullptr, nullptr};  // ctx->hctxs[HCTX_TYPE_DEFAULT / _POLL]
  uint32_t index_hw_[2] = {0, 0};       // bit in that hctx's ctx_map
  sim::SpinLock lock_;        // ctx->lock
  RequestList rq_list_;       // ctx->rq_lists[HCTX_TYPE_DEFAULT]
  sim::CacheLine list_line_;
};

// blk_mq_hw_ctx.
class Hctx {
 public:
  Hctx(Kernel& kernel, RequestQueue* q, uint32_t queue_num, Tags* tags);
  uint32_t queue_num() const { return queue_num_; }
  bool is_poll() const { return is_poll_; }
  RequestQueue* queue() const { return q_; }
  Tags& tags() { return *tags_; }
  bool stopped() const { return stopped_; }
  bool sched_restart() const { return sched_restart_; }
  size_t dispatch_len() const { return dispatch_.size(); }
  uint32_t dispatch_busy() const { return dispatch_busy_; }
  uint32_t wait_index = 0;  // bt_wait_ptr rotation

 private:
  friend class RequestQueue;
  class RunWork final : public sim::WorkItem {
   public:
    explicit RunWork(Hctx* hctx) : hctx_(hctx) {}
    sim::Task Run(sim::Cpu& cpu) override;  // blk_mq_run_work_fn

   private:
    Hctx* hctx_;
  };

  RequestQueue* q_;
  uint32_t queue_num_;
  bool is_poll_ = false;
  Tags* tags_;
  bool stopped_ = false;        // BLK_MQ_S_STOPPED
  bool sched_restart_ = false;  // BLK_MQ_S_SCHED_RESTART
  uint32_t dispatch_busy_ = 0;  // EWMA (blk_mq_update_dispatch_busy)
  sim::SpinLock lock_;          // hctx->lock
  RequestList dispatch_;        // hctx->dispatch
  sim::CacheLine state_line_;   // hctx->state
  sim::CacheLine dispatch_line_;
  std::vector<Ctx*> ctxs_;
  std::vector<uint64_t> ctx_map_;           // pending ctx bits, 8 per word
  std::vector<sim::CacheLine> ctx_map_lines_;
  std::vector<int> cpumask_;
  int next_cpu_index_ = 0;
  int next_cpu_batch_ = 0;
  uint32_t dispatch_from_ = 0;
  Tags* sched_tags_ = nullptr;  // hctx->sched_tags (mq-deadline)
  bool tag_active_ = false;     // BLK_MQ_S_TAG_ACTIVE (per-hctx tags, shared set)
  uint32_t nr_active_ = 0;      // hctx->nr_active
  sim::CacheLine nr_active_line_;
  bool on_dispatch_wait_ = false;  // hctx->dispatch_wait queued on the tags
  RunWork run_work_;
};

// blk_plug (per submitting task, on its stack in the kernel).
struct Plug {
  RequestList mq_list;
  RequestList cached_rqs;  // plug->cached_rq (5.16+ batched allocation)
  uint32_t rq_count = 0;
  uint32_t nr_ios = 1;
  RequestQueue* q = nullptr;    // queue of the last request added
  bool multiple_queues = false;
  sim::SimTime cached_time_ns = -1;  // blk_time_get_ns cache (plug_cache_time)
};

// Per-direction disk statistics (/proc/diskstats, fio's "Disk stats").
struct DiskStats {
  uint64_t ios[2] = {};
  uint64_t merges[2] = {};
  uint64_t sectors[2] = {};
  int64_t ticks_ns[2] = {};
  int64_t io_ticks_ns = 0;  // time with at least one request in flight
  int64_t in_queue_ns = 0;  // sum of request lifetimes
  uint32_t in_flight = 0;
  sim::SimTime busy_since = 0;
};

class RequestQueue {
 public:
  RequestQueue(Kernel& kernel, std::string name, TagSet& set, BlkMqDriver* driver,
               const QueueConfig& config);
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  const std::string& name() const { return name_; }
  const QueueConfig& config() const { return config_; }
  Kernel& kernel() { return kernel_; }
  TagSet& tag_set() { return set_; }
  int nr_hw_queues() const { return static_cast<int>(hctxs_.size()); }
  Hctx* hctx(int i) { return hctxs_[i].get(); }
  Ctx* ctx(int cpu) { return ctxs_[cpu].get(); }
  const DiskStats& disk_stats() const { return disk_; }
  // Closes the io_ticks busy interval at `t` (end of run).
  void FinishDiskStats(sim::SimTime t);
  // Requests allocated and not yet ended.
  uint64_t requests_outstanding() const { return allocated_ - ended_; }
  uint64_t requests_ended() const { return ended_; }
  // The allocated requests whose age at `now` exceeds `age_ns` (stall check).
  std::vector<const Request*> StuckRequests(sim::SimTime now, int64_t age_ns) const;

  // submit_bio(): the whole submission path of one bio. `plug` may be null.
  sim::Task SubmitBio(sim::Cpu& cpu, Bio* bio, Plug* plug);
  // blk_finish_plug / blk_flush_plug: issue what the plug holds.
  static sim::Task FlushPlug(sim::Cpu& cpu, Plug* plug, bool from_schedule);

  sim::Task RunHwQueue(sim::Cpu& cpu, Hctx* hctx);        // async = false
  void RunHwQueueAsync(sim::Cpu& cpu, Hctx* hctx);        // async = true
  void DelayRunHwQueue(sim::Cpu* cpu, Hctx* hctx, int64_t delay_ns);
  void RunHwQueuesAsync(sim::Cpu& cpu);                   // blk_mq_run_hw_queues(q, true)
  void DelayRunHwQueues(sim::Cpu* cpu, int64_t delay_ns);  // blk_mq_delay_run_hw_queues
  void StopHwQueues();                                     // blk_mq_stop_hw_queues
  void StartStoppedHwQueues(sim::Cpu* cpu);                // blk_mq_start_stopped_hw_queues(q, true)

  // Driver-facing.
  void StartRequest(sim::Cpu& cpu, Request* rq);
  void CompleteRequest(sim::Cpu& cpu, Request* rq);
  // `batched`: ended through an io_comp_batch (blk_mq_end_request_batch).
  void EndRequest(sim::Cpu& cpu, Request* rq, BlkStatus status, bool batched = false);
  // blk_hctx_poll: polls the poll queue CPU `cpu` maps to; returns completions.
  int Poll(sim::Cpu& cpu);
  bool has_poll_queues() const { return set_.config().nr_poll_queues > 0; }
  // The elevator (null for none).
  DeadlineSched* elevator() { return dd_.get(); }
  // Puts the request's SCSI budget back if it holds one.
  void PutRqBudget(sim::Cpu& cpu, Request* rq);
  // Requests holding a driver tag of this queue (fair-sharing accounting).
  uint32_t nr_active_requests() const { return nr_active_shared_; }

 private:
  friend class Hctx;
  class DoneSoftirq final : public sim::IrqHandler {
   public:
    explicit DoneSoftirq(RequestQueue* q) : q_(q) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // blk_done_softirq

   private:
    RequestQueue* q_;
  };
  class CompletionIpi final : public sim::IrqHandler {
   public:
    explicit CompletionIpi(RequestQueue* q) : q_(q) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // __blk_mq_complete_request_remote

   private:
    RequestQueue* q_;
  };
  class TimeoutTimer final : public sim::IrqHandler {
   public:
    explicit TimeoutTimer(RequestQueue* q) : q_(q) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t arg) override;  // blk_rq_timed_out_timer

   private:
    RequestQueue* q_;
  };
  class TimeoutWork final : public sim::WorkItem {
   public:
    explicit TimeoutWork(RequestQueue* q) : q_(q) {}
    sim::Task Run(sim::Cpu& cpu) override;  // blk_mq_timeout_work

   private:
    RequestQueue* q_;
  };
  // blk_mq_queue_tag_busy_iter over `tags` for blk_mq_check_expired; only
  // requests of this queue (and of `hctx` unless null) count. Returns the
  // earliest deadline seen (0: none).
  sim::Task BusyIter(sim::Cpu& cpu, Tags& tags, Hctx* hctx, sim::SimTime* next);
  // blk_add_timer's q->timeout arming (blk_rq_timeout, round_jiffies_up).
  sim::SimTime TimeoutExpiry(int cpu, sim::SimTime deadline, sim::SimTime now) const;

  Hctx* MapQueue(int cpu, bool polled = false) { return ctxs_[cpu]->hctx(polled); }
  bool NeedTimestamp() const { return config_.iostats || config_.scheduler != Elevator::kNone; }
  Request* AllocRequestFast(sim::Cpu& cpu, Bio* bio, Plug* plug);
  sim::Task GetRequestSlow(sim::Cpu& cpu, Bio* bio, Plug* plug, Request** out);
  void InitRequest(sim::Cpu& cpu, Request* rq, Bio* bio, Hctx* hctx, Plug* plug);
  bool AttemptPlugMerge(sim::Cpu& cpu, Plug* plug, Bio* bio);
  BlkStatus IssueDirectly(sim::Cpu& cpu, Request* rq, bool last);
  sim::Task IssueDirectlyBusy(sim::Cpu& cpu, Request* rq);
  sim::Task InsertAndRun(sim::Cpu& cpu, Request* rq, bool run_async);
  sim::Task BypassInsert(sim::Cpu& cpu, Request* rq, bool at_head);
  sim::Task DispatchRequests(sim::Cpu& cpu, Hctx* hctx);
  sim::Task DoDispatchSched(sim::Cpu& cpu, Hctx* hctx);
  sim::Task DoDispatchSchedOnce(sim::Cpu& cpu, Hctx* hctx, bool* progress);
  sim::Task InsertRequestsSched(sim::Cpu& cpu, RequestList& list, Hctx* hctx, bool run_async);
  bool SharedTags() const { return set_.nr_queues() > 1; }
  void TagBusy(sim::Cpu& cpu, Hctx* hctx);
  bool MayQueue(sim::Cpu& cpu, Hctx* hctx);
  void IncActive(sim::Cpu& cpu, Hctx* hctx);
  void DecActive(sim::Cpu& cpu, Hctx* hctx);
  bool GetDriverTag(sim::Cpu& cpu, Request* rq);
  Tags& AllocTags(Hctx* hctx) { return dd_ ? *hctx->sched_tags_ : hctx->tags(); }
  sim::Task DispatchRqList(sim::Cpu& cpu, Hctx* hctx, RequestList& list, bool* progress);
  sim::Task FlushBusyCtxs(sim::Cpu& cpu, Hctx* hctx, RequestList& out);
  bool HasPending(sim::Cpu& cpu, Hctx* hctx);
  void MarkCtxPending(sim::Cpu& cpu, Ctx* ctx, Hctx* hctx);
  void UpdateDispatchBusy(Hctx* hctx, bool busy);
  int NextCpu(sim::Cpu& cpu, Hctx* hctx);
  void FreeRequest(sim::Cpu& cpu, Request* rq, bool bulk);
  void FreeCachedRequests(sim::Cpu& cpu, Plug* plug);
  void AccountStart(sim::Cpu& cpu, Request* rq);
  void AccountDone(sim::Cpu& cpu, Request* rq, sim::SimTime now);

  Kernel& kernel_;
  std::string name_;
  TagSet& set_;
  BlkMqDriver* driver_;
  QueueConfig config_;
  std::vector<std::unique_ptr<Hctx>> hctxs_;
  std::vector<std::unique_ptr<Ctx>> ctxs_;
  DoneSoftirq done_softirq_;
  CompletionIpi completion_ipi_;
  DiskStats disk_;
  sim::CacheLine part_stamp_line_;
  sim::SimTime next_part_stamp_ = 0;  // the next jiffy boundary
  uint64_t allocated_ = 0;
  uint64_t ended_ = 0;
  std::unique_ptr<DeadlineSched> dd_;             // q->elevator
  std::vector<std::unique_ptr<Tags>> sched_tags_;  // per hctx, or one (host-shared tags)
  bool hctx_active_ = false;        // QUEUE_FLAG_HCTX_ACTIVE (host-shared tags)
  uint32_t nr_active_shared_ = 0;   // q->nr_active_requests_shared_tags
  sim::CacheLine nr_active_shared_line_;
  TimeoutTimer timeout_irq_;
  TimeoutWork timeout_work_;
  sim::HrTimer timeout_timer_;  // q->timeout
  sim::FnId fn_timeout_timer_, fn_timeout_work_, fn_busy_iter_, fn_find_and_get_req_,
      fn_for_each_set_, fn_check_expired_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_MQ_H_
