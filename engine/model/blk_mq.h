// engine/model/blk_mq.h
//
// RequestQueue models `struct request_queue` and the queue-wide paths of
// blk-mq (block/blk-mq.c, blk-core.c; docs/kernel-model.md §2.2–§2.7):
//
//   SubmitBio          submit_bio -> submit_bio_noacct -> blk_mq_submit_bio:
//                      merges, request allocation (plug cache, batched
//                      tags, sleeping for a tag), plug or issue
//   FlushPlug          blk_finish_plug -> blk_mq_flush_plug_list
//   StartRequest       blk_mq_start_request (called by drivers)
//   CompleteRequest    blk_mq_complete_request (placement by rq_affinity)
//   EndRequest         blk_mq_end_request -> bio_endio, tag put, restart
//   Poll               blk_hctx_poll
//   RunHwQueuesAsync / DelayRunHwQueues / Stop- / StartStoppedHwQueues
//                      the queue-wide run helpers
//
// The per-hctx paths (queue runs, dispatch, shared-tag accounting) are in
// hctx.h, the scheduler behind the Elevator interface (elevator.h), the
// timeout timer and its busy walk in blk_timeout.h.
//
// Each function charges the cost-table entries of the kernel functions it
// stands for, under those functions' names. Shared state (sbitmap words,
// locks, lists other CPUs read) is touched only after Sync().
//
// Invariants: every request that is allocated is eventually ended (no lost
//  request): it is always in exactly one of plug list, sw queue, the
//  elevator, hctx->dispatch, the driver, or being ended. Tags are returned
//  exactly once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: no allocation per I/O; one coroutine frame per SubmitBio.
#ifndef BLKLAB_ENGINE_MODEL_BLK_MQ_H_
#define BLKLAB_ENGINE_MODEL_BLK_MQ_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/model/blk_mq_ops.h"
#include "engine/model/blk_timeout.h"
#include "engine/model/elevator.h"
#include "engine/model/hctx.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/task.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

// A request queue's settings: its /sys/block/X/queue attributes as the host
// spec gives them (scheduler and its iosched tunables, nr_requests, iostats,
// rq_affinity, nomerges), read by the model directly.
struct QueueConfig {
  host::QueueSpec sysfs;
  // q->timeout: the per-queue request timer and its timeout work (about
  // every 5 s under IO). Off for bare model rigs that run until no event is
  // left; the engine turns it on.
  bool timeout_timer = false;
  // QUEUE_FLAG_STATS: a blk-stat consumer is registered (wbt here; also
  // iolatency, iocost, kyber in the kernel). blk_mq_start_request then
  // stamps io_start_time_ns.
  bool queue_stats = false;
  // blkcg id -> the cgroup's bfq.weight (host spec `cgroups`; id 0 is the
  // root cgroup). Only bfq reads it.
  std::vector<int> cgroup_bfq_weights;
  // queue/max_sectors_kb in 512-byte sectors, as the driver sets its limits
  // (null_blk leaves blk_set_default_limits' BLK_SAFE_MAX_SECTORS, 255):
  // a bio over it is split (__bio_split_to_limits) and no merge grows a
  // request past it.
  uint32_t max_sectors = 1024;
  uint32_t logical_block_bytes = 512;
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

// One stage of a request's life as btt measures it from a blktrace: count,
// sum, min and max of its duration.
struct StageStats {
  uint64_t n = 0;
  int64_t sum_ns = 0;
  int64_t min_ns = 0;
  int64_t max_ns = 0;
  void Add(int64_t ns) {
    min_ns = n == 0 ? ns : std::min(min_ns, ns);
    max_ns = n == 0 ? ns : std::max(max_ns, ns);
    sum_ns += ns;
    ++n;
  }
};

// Per-direction disk statistics (/proc/diskstats, fio's "Disk stats"), and
// btt's stages: Q2G from a bio's submit_bio (Q) to the allocation of its
// request (G: the wait for a tag included), per request allocated; of each
// completed request G2D from its allocation to its last issue to the driver
// (D, blk_mq_start_request), D2C from there to its completion (C,
// blk_mq_end_request: the softirq or IPI that ends it included), Q2C the
// whole.
struct DiskStats {
  StageStats q2g, g2d, d2c, q2c;
  uint64_t ios[2] = {};
  uint64_t merges[2] = {};
  uint64_t sectors[2] = {};
  int64_t ticks_ns[2] = {};
  // io_ticks as the kernel counts it (update_io_ticks, 5.0 to 6.11): in
  // jiffies; the first accounted start after a jiffy boundary adds 1, the
  // first completion the jiffies since bd_stamp, and bd_stamp moves to now.
  // A device that sees I/O every jiffy counts every jiffy, however short
  // each request is (fio's util near 100%).
  int64_t io_ticks_jiffies = 0;
  int64_t stamp_jiffies = 0;  // part->bd_stamp
  int64_t in_queue_ns = 0;  // sum of request lifetimes
  uint32_t in_flight = 0;
};

class RequestQueue {
 public:
  RequestQueue(Kernel& kernel, std::string name, TagSet& set, BlkMqDriver* driver,
               const QueueConfig& config);
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  const std::string& name() const { return name_; }
  const QueueConfig& config() const { return config_; }
  // The largest request: max_sectors rounded down to the logical block
  // (get_max_io_size), in bytes.
  uint32_t max_request_bytes() const { return max_request_bytes_; }
  Kernel& kernel() { return kernel_; }
  TagSet& tag_set() { return set_; }
  const TagSet& tag_set() const { return set_; }
  BlkMqDriver& driver() { return *driver_; }
  // q->elevator (null for none).
  Elevator* elevator() { return elevator_.get(); }
  int nr_hw_queues() const { return static_cast<int>(hctxs_.size()); }
  Hctx* hctx(int i) { return hctxs_[i].get(); }
  Ctx* ctx(int cpu) { return ctxs_[cpu].get(); }
  // More than one queue on the tag set: TAG_QUEUE_SHARED (fair sharing).
  bool tags_shared() const { return set_.nr_queues() > 1; }
  // q->shared_hctx_restart (4.14): hctxs of this queue with SCHED_RESTART
  // marked while the tag set is shared; its line.
  int& shared_hctx_restart() { return shared_hctx_restart_; }
  sim::CacheLine& shared_restart_line() { return shared_restart_line_; }
  const DiskStats& disk_stats() const { return disk_; }
  // What reading /sys/block/X/stat at `t` does to io_ticks (end of run):
  // update_io_ticks when requests are in flight.
  void FinishDiskStats(sim::SimTime t);
  // Requests allocated and not yet ended.
  uint64_t requests_outstanding() const { return allocated_ - ended_; }
  uint64_t requests_ended() const { return ended_; }
  // The allocated requests whose age at `now` exceeds `age_ns` (stall check).
  std::vector<const Request*> StuckRequests(sim::SimTime now, int64_t age_ns) const;
  // Where `rq` waits and what would run it on (the stall report): "in the
  // driver", "parked on hctx->dispatch of hctx N (...)", "in the I/O
  // scheduler", "on a software queue".
  std::string DescribeParking(const Request* rq) const;

  // submit_bio(): the whole submission path of one bio. `plug` may be null.
  sim::Task SubmitBio(sim::Cpu& cpu, Bio* bio, Plug* plug);
  // blk_execute_rq of a passthrough command (SG_IO) carried by `bio` (its
  // op the media access): a request without scheduler or accounting, put on
  // hctx->dispatch and run at once; completes through bio->owner as any bio.
  sim::Task ExecutePassthrough(sim::Cpu& cpu, Bio* bio);
  // blk_finish_plug / blk_flush_plug (__blk_flush_plug): issue what the plug
  // holds, then free the requests it cached and did not use.
  static sim::Task FlushPlug(sim::Cpu& cpu, Plug* plug, bool from_schedule);
  // blk_mq_flush_plug_list alone (a full plug flushed from
  // blk_add_rq_to_plug): the cached requests stay for the next bios.
  static sim::Task FlushPlugList(sim::Cpu& cpu, Plug* plug, bool from_schedule);

  void RunHwQueuesAsync(sim::Cpu& cpu);                   // blk_mq_run_hw_queues(q, true)
  sim::Task RunHwQueues(sim::Cpu& cpu);                   // blk_mq_run_hw_queues(q, false)
  void DelayRunHwQueues(sim::Cpu* cpu, int64_t delay_ns);  // blk_mq_delay_run_hw_queues
  // blk_mq_get_sq_hctx: the hctx of `cpu` when the scheduler ignores
  // hardware queues (knob sq_sched_runs_own_hctx), else null (run them all).
  Hctx* SqHctx(sim::Cpu* cpu);
  void StopHwQueues();                                     // blk_mq_stop_hw_queues
  void StartStoppedHwQueues(sim::Cpu* cpu);                // blk_mq_start_stopped_hw_queues(q, true)

  // Driver-facing.
  void StartRequest(sim::Cpu& cpu, Request* rq);
  // blk_mq_rq_timed_out (from the timeout work): RQF_TIMED_OUT, the driver's
  // ->timeout, and the timer again for BLK_EH_RESET_TIMER. A ->timeout the
  // model does not follow fails the run (Kernel::Fail), naming it.
  void RqTimedOut(sim::Cpu& cpu, Request* rq);
  // The earliest deadline of a request in flight that the timeout work has
  // yet to hand to ->timeout, or 0 (the stall check waits for it).
  sim::SimTime NextTimeout() const;
  // blk_mq_requeue_request(rq, true): back to idle and onto q->requeue_list;
  // kblockd's requeue work inserts it on hctx->dispatch (the driver already
  // prepared it: RQF_DONTPREP) and runs the queue. The request keeps its
  // driver tag while it waits.
  void RequeueRequest(sim::Cpu& cpu, Request* rq);
  // __blk_mq_requeue_request's state change: a started request the driver
  // answered busy goes back to idle (not in flight).
  static void UnstartRequest(Request* rq) {
    if (rq->state == Request::State::kInFlight) rq->state = Request::State::kAllocated;
  }
  void CompleteRequest(sim::Cpu& cpu, Request* rq);
  // blk_mq_complete_request_remote: hands the completion to the submitting
  // CPU (IPI) or to BLOCK_SOFTIRQ and returns true, or returns false when
  // the caller completes it here (inline, or in its io_comp_batch).
  bool CompleteRequestRemote(sim::Cpu& cpu, Request* rq);
  // blk_mq_end_request: one request, its own end timestamp.
  void EndRequest(sim::Cpu& cpu, Request* rq, BlkStatus status);
  // blk_mq_end_request_batch: the requests of an io_comp_batch (emptied),
  // one timestamp for all of them, tags put in bulk. Before batched
  // completion (knob batched_completion off) each ends on its own.
  void EndRequestBatch(sim::Cpu& cpu, RequestList& list);
  // blk_hctx_poll: polls the poll queue CPU `cpu` maps to; *completed is
  // how many requests it ended.
  sim::Task Poll(sim::Cpu& cpu, int* completed);
  bool has_poll_queues() const { return set_.config().nr_poll_queues > 0; }
  // ->complete (q->mq_ops->complete), from BLOCK_SOFTIRQ (blk_softirq.h).
  void MqOpsComplete(sim::Cpu& cpu, Request* rq);
  // Puts the request's SCSI budget back if it holds one.
  void PutRqBudget(sim::Cpu& cpu, Request* rq);

  // Host-wide shared tags (BLK_MQ_F_TAG_HCTX_SHARED): the queue, not each
  // hctx, is the tag set's user (QUEUE_FLAG_HCTX_ACTIVE and
  // q->nr_active_requests_shared_tags).
  struct SharedTagUsage {
    bool active = false;
    uint32_t nr_active = 0;
    sim::CacheLine nr_active_line;
  };
  SharedTagUsage& shared_usage() { return shared_usage_; }
  // Requests holding a driver tag of this queue (fair-sharing accounting).
  uint32_t nr_active_requests() const { return shared_usage_.nr_active; }

 private:
  // Whether blk_mq_run_hw_queues runs `h` given the preferred hctx `sq`.
  static bool RunsWith(const Hctx& h, const Hctx* sq);
  Hctx* MapQueue(int cpu, bool polled = false) { return ctxs_[cpu]->hctx(polled); }
  bool NeedTimestamp() const { return config_.sysfs.iostats || elevator_ != nullptr; }
  // The tags a request is allocated from: the scheduler's, else the driver's.
  Tags& AllocTags(Hctx* hctx) { return elevator_ ? *hctx->sched_tags() : hctx->tags(); }
  Request* AllocRequestFast(sim::Cpu& cpu, Bio* bio, Plug* plug);
  sim::Task GetRequestSlow(sim::Cpu& cpu, Bio* bio, Plug* plug, Request** out);
  void InitRequest(sim::Cpu& cpu, Request* rq, Bio* bio, Hctx* hctx, Plug* plug);
  // __bio_split_to_limits: `bio` (over max_request_bytes_) submitted as
  // pieces of max_request_bytes_, the last shorter; it ends when all have.
  sim::Task SubmitSplit(sim::Cpu& cpu, Bio* bio, Plug* plug);
  bool AttemptPlugMerge(sim::Cpu& cpu, Plug* plug, Bio* bio);
  // blk_bio_list_merge on a software queue's list (no scheduler); true when
  // a request of `hctx` took `bio`. REQUIRES: the ctx's lock is held.
  bool SwQueueMerge(sim::Cpu& cpu, RequestList& list, Hctx* hctx, Bio* bio);
  // blk_mq_try_issue_directly; *status is the driver's answer.
  sim::Task IssueDirectly(sim::Cpu& cpu, Request* rq, bool last, BlkStatus* status);
  sim::Task IssueDirectlyBusy(sim::Cpu& cpu, Request* rq);
  sim::Task InsertAndRun(sim::Cpu& cpu, Request* rq, bool run_async);
  sim::Task InsertRequestsSched(sim::Cpu& cpu, RequestList& list, Hctx* hctx, bool run_async);
  void FreeRequest(sim::Cpu& cpu, Request* rq, bool bulk);
  void EndBios(sim::Cpu& cpu, Request* rq, BlkStatus status);
  // blk_mq_free_plug_rqs: each unused cached request back to its own queue.
  static void FreeCachedRequests(sim::Cpu& cpu, Plug* plug);
  void AccountStart(sim::Cpu& cpu, Request* rq);
  void AccountDone(sim::Cpu& cpu, Request* rq, sim::SimTime now);
  // update_io_ticks at `now` (true: from a completion).
  void UpdateIoTicks(sim::SimTime now, bool end);

  Kernel& kernel_;
  std::string name_;
  TagSet& set_;
  int shared_hctx_restart_ = 0;
  sim::CacheLine shared_restart_line_;
  BlkMqDriver* driver_;
  QueueConfig config_;
  uint32_t max_request_bytes_ = 512 * 1024;
  std::vector<std::unique_ptr<Hctx>> hctxs_;
  std::vector<std::unique_ptr<Ctx>> ctxs_;
  DiskStats disk_;
  sim::CacheLine part_stamp_line_;
  sim::SimTime next_part_stamp_ = 0;  // the next jiffy boundary
  sim::FnId fn_blk_execute_rq_;
  uint64_t allocated_ = 0;
  uint64_t ended_ = 0;
  std::unique_ptr<Elevator> elevator_;             // q->elevator
  std::vector<std::unique_ptr<Tags>> sched_tags_;  // per hctx, or one (host-shared tags)
  SharedTagUsage shared_usage_;
  QueueTimeout timeout_;

  // q->requeue_work: blk_mq_requeue_work on kblockd.
  class RequeueWork final : public sim::WorkItem {
   public:
    explicit RequeueWork(RequestQueue* q) : q_(q) {}
    sim::Task Run(sim::Cpu& cpu) override;

   private:
    RequestQueue* q_;
  };
  RequestList requeue_list_;     // q->requeue_list
  sim::CacheLine requeue_line_;  // q->requeue_lock and the list head
  RequeueWork requeue_work_{this};
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_BLK_MQ_H_
