// engine/model/drivers/scsi/scsi_host.h
//
// The SCSI mid-layer (drivers/scsi/scsi_lib.c, hosts.c; docs/kernel-model.md §2.6
// SCSI, §2.7 steps 3 and 6, §3.6), apart from any low-level driver:
//
//   * ScsiHost (struct Scsi_Host): one blk-mq tag set of `can_queue` tags
//     shared by all its LUNs (TAG_QUEUE_SHARED when there are several) and,
//     with host_tagset, by all `nr_hw_queues` hardware queues
//     (BLK_MQ_F_TAG_HCTX_SHARED: one Tags object for the host);
//   * ScsiDevice (struct scsi_device), the BlkMqDriver of one LUN's request
//     queue: scsi_mq_get_budget takes a bit of the LUN's budget_map, an
//     sbitmap of queue_depth (= cmd_per_lun) bits in words on their own
//     lines, from the CPU's allocation hint, so CPUs mostly keep to their
//     own word (with scsi_atomic_device_busy, 4.14 to 5.13's atomic
//     device_busy: one line every CPU of the LUN writes); a failure counts
//     sdev->restarts and, with
//     nothing of the LUN in flight, re-runs the queue after SCSI_QUEUE_DELAY
//     (3 ms) unless scsi_budget_idle_delay_run is off (RC5 patch 1);
//     a LUN whose device_blocked is set (the LLD answered DEVICE_BUSY)
//     passes only with nothing else in flight and device_blocked counted
//     down to zero;
//     scsi_queue_rq: scsi_host_queue_ready (host_blocked: with commands in
//     flight the LUN goes on the host's starved list, with none the count
//     goes down by one per attempt; with scsi_atomic_host_busy, 4.14's
//     atomic host_busy on one host-wide line, incremented here and
//     decremented at completion, and its can_queue check), blk_mq_start_request, the LLD's
//     ->queuecommand; a busy answer (SCSI_MLQUEUE_HOST_BUSY /
//     DEVICE_BUSY / TARGET_BUSY) sets host_blocked = 7 or device_blocked =
//     3 (scsi_set_blocked) and returns BLK_STS_RESOURCE, or, in the 5.8
//     era of run_all_hw_queues_on_completion, BLK_STS_DEV_RESOURCE when
//     other commands of the LUN are in flight (the mid-layer promises the
//     re-run on their completion);
//     ->complete (scsi_complete -> scsi_finish_command, which clears
//     host_blocked and device_blocked -> scsi_end_request ->
//     blk_mq_end_request) and the re-run rule: a non-empty starved list
//     queues sdev->requeue_work on kblockd (scsi_run_queue: the starved
//     LUNs' queues while the host is not blocked, then this LUN's);
//     otherwise with run_all_hw_queues_on_completion (<= 5.8) every hctx
//     of the queue is run, else only when atomic_cmpxchg(&sdev->restarts,
//     old, 0) finds a recorded budget failure;
//     ->timeout (scsi_timeout): a command past the queue's io_timeout is
//     marked complete (a late scsi_done is ignored) and its abort scheduled
//     on the host's TMF workqueue HZ/100 later (scsi_abort_command); the
//     abort handler (scmd_eh_abort_handler) asks the LLD's
//     eh_abort_handler and, when it succeeds, retries the command
//     (scsi_queue_insert with SCSI_MLQUEUE_EH_RETRY: the LUN blocked, the
//     request requeued) while scmd->retries <= allowed (5, sd). A second
//     timeout of the same command, a failed abort or retries used up need
//     the full error handler (scsi_eh_scmd_add) or end the I/O in error:
//     not modelled, the run fails naming it;
//   * ScsiLld (struct scsi_host_template): what a low-level driver gives
//     the mid-layer. It calls ScsiHost::Done (scsi_done) from its completion
//     context; the mid-layer then runs blk_mq_complete_request.
//
// Invariants: device_busy counts budgets held and never exceeds
//  queue_depth; host_busy counts commands the LLD holds; every command the
//  LLD accepts is done exactly once; a LUN is on the starved list at most
//  once.
// Thread-safety: thread-compatible; part of one simulation.
// Cost: CPU prices from the cost table (scsi_queue_rq, scsi_complete); the
//  LLD charges its own.
#ifndef BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_
#define BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"
#include "engine/model/tag_set.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/workqueue.h"

namespace blklab::model {

class ScsiDevice;

// SAM_STAT_TASK_SET_FULL: a command the LUN refused for lack of room.
inline constexpr uint8_t kSamStatTaskSetFull = 0x28;

// ->queuecommand's answer: 0 or SCSI_MLQUEUE_*_BUSY; kEhRetry is
// scsi_queue_insert's reason for a command the error handler retries.
enum class ScsiMlqueue : uint8_t { kOk, kHostBusy, kDeviceBusy, kTargetBusy, kEhRetry };

// What an error-handler callback of the LLD answered: SUCCESS or FAILED.
enum class ScsiEhResult : uint8_t { kSuccess, kFailed };

// What a low-level driver gives the mid-layer.
class ScsiLld {
 public:
  virtual ~ScsiLld() = default;
  // ->queuecommand for `rq` of `sdev`, after blk_mq_start_request. kOk: the
  // LLD accepted it and calls ScsiHost::Done once (possibly before
  // returning); otherwise it refused and holds nothing.
  virtual ScsiMlqueue QueueCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) = 0;
  // ->eh_abort_handler for a timed-out `rq`: on kSuccess the LLD no longer
  // holds it and will not call Done for it. The default: not modelled
  // (FAILED, and the run fails in the full error handler).
  virtual ScsiEhResult AbortCommand(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) { return ScsiEhResult::kFailed; }
  // The kernel function ->eh_abort_handler points at (for messages).
  virtual const char* abort_handler() const { return "the LLD's eh_abort_handler"; }
};

struct ScsiHostConfig {
  uint32_t can_queue = 4096;
  uint32_t nr_hw_queues = 1;
  bool host_tagset = true;
  uint32_t cmd_per_lun = 256;
};

class ScsiHost {
 public:
  // One LUN (request queue) per entry of `lun_names`; `host_name` names the
  // tag set (its lock is "<host_name>:tags->lock").
  ScsiHost(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
           const ScsiHostConfig& config, const QueueConfig& queue, ScsiLld* lld);
  ~ScsiHost();
  ScsiHost(const ScsiHost&) = delete;
  ScsiHost& operator=(const ScsiHost&) = delete;

  int nr_luns() const { return static_cast<int>(luns_.size()); }
  RequestQueue& queue(int lun);
  TagSet& tag_set() { return *set_; }
  Kernel& kernel() { return kernel_; }
  // sdev->restarts increments so far (budget failures), summed over LUNs.
  uint64_t budget_failures() const { return budget_failures_; }
  uint32_t host_busy() const { return host_busy_; }
  int host_blocked() const { return host_blocked_; }
  size_t starved() const { return starved_.size(); }

  // scsi_done: the LLD finished `rq`; blk_mq_complete_request places the
  // completion (->complete = scsi_complete). A command scsi_timeout already
  // marked complete is ignored (SCMD_STATE_COMPLETE).
  void Done(sim::Cpu& cpu, Request* rq) {
    if (rq->timed_out) return;
    rq->q->CompleteRequest(cpu, rq);
  }

 private:
  friend class ScsiDevice;
  static constexpr int kMaxHostBlocked = 7;  // SCSI_DEFAULT_HOST_BLOCKED

  // scsi_host_queue_ready: true, or false with `sdev` starved (host
  // blocked with commands in flight) or host_blocked counted down.
  sim::Task HostQueueReady(sim::Cpu& cpu, ScsiDevice& sdev, bool* ready);
  // 4.14's atomic_inc / atomic_dec of shost->host_busy, charged to `fn`.
  void HostBusyAtomic(sim::Cpu& cpu, sim::FnId fn) {
    cpu.Charge(fn, host_busy_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  }
  // scsi_run_queue (sdev->requeue_work): the starved LUNs, then `sdev`'s.
  sim::Task RunQueue(sim::Cpu& cpu, ScsiDevice& sdev);

  // The commands whose abort is scheduled (shost->eh_abort_list, each
  // scmd->abort_work due HZ/100 after its timeout), run by one work item
  // on the host's TMF workqueue in due order.
  struct PendingAbort {
    sim::SimTime due;
    ScsiDevice* sdev;
    Request* rq;
  };
  class AbortWork final : public sim::WorkItem {
   public:
    explicit AbortWork(ScsiHost* host) : host_(host) {}
    sim::Task Run(sim::Cpu& cpu) override;  // scmd_eh_abort_handler
   private:
    ScsiHost* host_;
  };
  // scsi_abort_command: schedules `rq`'s abort (false if one already was:
  // the command timed out again).
  bool ScheduleAbort(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq);

  Kernel& kernel_;
  ScsiHostConfig config_;
  ScsiLld* lld_;
  std::unique_ptr<TagSet> set_;
  std::vector<std::unique_ptr<ScsiDevice>> luns_;
  uint64_t budget_failures_ = 0;
  uint32_t host_busy_ = 0;              // scsi_host_busy: commands in the LLD
  int host_blocked_ = 0;                // shost->host_blocked
  std::vector<ScsiDevice*> starved_;    // shost->starved_list, oldest first
  sim::SpinLock host_lock_;             // shost->host_lock (starved list)
  sim::CacheLine host_state_line_;      // host_blocked, starved_list head
  sim::CacheLine host_busy_line_;       // 4.14's atomic shost->host_busy
  std::vector<PendingAbort> aborts_;    // due order (the same HZ/100 delay for all)
  AbortWork abort_work_{this};
  sim::FnId fn_timeout_, fn_abort_;
  sim::FnId fn_get_budget_, fn_put_budget_, fn_queue_rq_, fn_complete_, fn_end_request_, fn_run_queue_;
};

// struct scsi_device: one LUN, its request queue and its budget.
class ScsiDevice final : public BlkMqDriver {
 public:
  // `index`: the LUN's place on its host (seeds the budget map's per-CPU
  // allocation hints, which the kernel draws at random).
  ScsiDevice(ScsiHost* host, int index, uint32_t queue_depth, int ncpus);
  sim::Task QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last,
                    BlkStatus* status) override;                                     // scsi_queue_rq
  void Complete(sim::Cpu& cpu, Request* rq) override;                               // scsi_complete
  bool has_budget() const override { return true; }
  int GetBudget(sim::Cpu& cpu, RequestQueue* q) override;             // scsi_mq_get_budget
  void PutBudget(sim::Cpu& cpu, RequestQueue* q, int token) override;  // scsi_mq_put_budget
  absl::StatusOr<BlkEhTimerReturn> Timeout(sim::Cpu& cpu, Request* rq) override;  // scsi_timeout
  const char* timeout_handler() const override { return "scsi_timeout"; }

  RequestQueue& queue() { return *q_; }
  ScsiHost& host() { return *host_; }
  uint32_t device_busy() const { return device_busy_; }
  uint32_t queue_depth() const { return queue_depth_; }
  int device_blocked() const { return device_blocked_; }

 private:
  friend class ScsiHost;
  static constexpr int kMaxDeviceBlocked = 3;  // SCSI_DEFAULT_DEVICE_BLOCKED

  // sdev->requeue_work: scsi_requeue_run_queue on kblockd.
  class RequeueWork final : public sim::WorkItem {
   public:
    explicit RequeueWork(ScsiDevice* sdev) : sdev_(sdev) {}
    sim::Task Run(sim::Cpu& cpu) override { return sdev_->host_->RunQueue(cpu, *sdev_); }

   private:
    ScsiDevice* sdev_;
  };

  // scsi_set_blocked for a busy answer of the LLD.
  void SetBlocked(sim::Cpu& cpu, ScsiMlqueue reason);
  // scsi_queue_insert: block for `reason`, unbusy host and LUN, requeue.
  void QueueInsert(sim::Cpu& cpu, Request* rq, ScsiMlqueue reason);
  // BLK_STS_RESOURCE, or DEV_RESOURCE when the mid-layer will re-run.
  BlkStatus BusyStatus() const;

  // One word of sdev->budget_map (an sbitmap: each word on its own line).
  struct BudgetWord {
    uint64_t bits = 0;
    sim::CacheLine line;
  };
  // sbitmap_get on budget_map from this CPU's hint: the bit's word index is
  // the token, or -1 when every word is full.
  int BudgetMapGet(sim::Cpu& cpu);
  void BudgetMapPut(sim::Cpu& cpu, int token);
  // Gives a budget token back without counting (sbitmap_put / atomic_dec).
  void PutBudgetToken(sim::Cpu& cpu, int token);

  ScsiHost* host_;
  std::unique_ptr<RequestQueue> q_;
  uint32_t queue_depth_;
  uint32_t budget_shift_;                 // sbitmap_calculate_shift(queue_depth)
  std::vector<BudgetWord> budget_words_;  // budget_map (scsi_atomic_device_busy off)
  std::vector<uint32_t> budget_hint_;     // per CPU: alloc_hint
  uint32_t device_busy_ = 0;  // bits taken from budget_map
  uint32_t restarts_ = 0;     // sdev->restarts
  int device_blocked_ = 0;    // sdev->device_blocked
  // The starved list this LUN is on (shost->starved_list, or the local
  // list a running scsi_starved_list_run took it to), or null.
  std::vector<ScsiDevice*>* starved_on_ = nullptr;
  RequeueWork requeue_work_;
  sim::CacheLine budget_line_;
  sim::CacheLine restarts_line_;
};

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_DRIVERS_SCSI_SCSI_HOST_H_
