// engine/model/sched/bfq.h
//
// BfqSched models block/bfq-iosched.c, bfq-wf2q.c and bfq-cgroup.c (v6.x)
// behind the Elevator interface (elevator.h), one `struct bfq_data` per
// request queue (bfq.cc: requests, the in-service queue, the elevator
// operations; bfq_queues.cc: groups, queues, merges, bursts, tag limits;
// bfq_wf2q.cc: B-WF2Q+):
//
//  * One bfqd->lock for everything, taken with interrupts off
//    (spin_lock_irq; spin_lock_irqsave at completion): the bio merge probe,
//    the insert, the dispatch and the completion hooks each take it once per
//    request. This lock is what limits bfq at high IOPS.
//  * Per-process queues (struct bfq_queue): each submitting task (a fio
//    thread: its own io_context) gets one sync queue per blkio cgroup it
//    submits from. Requests are kept in sector order (served C-LOOK from the
//    last dispatched position, a backward seek within back_seek_max counted
//    back_seek_penalty times as far) and in a FIFO whose head is served first
//    when its fifo_expire_sync deadline has passed at the start of a budget.
//  * B-WF2Q+ (bfq-wf2q.c): a service tree per I/O priority class (RT, BE,
//    IDLE) per group. An entity activated from idle starts at max(vtime,
//    its old finish) and finishes at start + budget / weight (service in
//    sectors, fixed point); the tree's vtime advances by served / wsum, wsum
//    counting idle entities until vtime passes their finish (the idle tree);
//    the next entity is the eligible one (start <= vtime) with the smallest
//    finish, vtime jumping to the smallest start when none is eligible. RT
//    is served before BE, BE before IDLE, except that IDLE gets a turn when
//    it waited BFQ_CL_IDLE_TIMEOUT (HZ / 5). At expiry a queue is charged the
//    service it received (or, if it was slow, a time-proportional share of
//    its budget), requeued at start = finish if it still has requests.
//  * Weights: a queue's from its I/O priority, (8 - level) * 10 (no class:
//    best effort, level 4); a group's from the cgroup's bfq.weight (host
//    spec `cgroups`), default 100. Groups are entities of the root group's
//    tree, beside the root cgroup's queues.
//  * Budgets: the in-service queue dispatches until its next request does not
//    fit its budget (BUDGET_EXHAUSTED), it has none left and is not worth
//    waiting for (NO_MORE_REQUESTS), its idle timer fires (TOO_IDLE), or it
//    ran past timeout_sync (BUDGET_TIMEOUT). Its next budget follows
//    __bfq_bfqq_recalc_budget; max_budget is autotuned from the measured peak
//    rate (peak rate x timeout_sync) unless the max_budget tunable is set.
//  * Idling: when the in-service sync queue runs empty, bfq keeps the device
//    for it if bfq_better_to_idle says so: idling boosts throughput (a
//    rotational device without command queueing, or a sequential queue on a
//    device without it) or is needed for service guarantees (an asymmetric
//    scenario: queues or groups with different weights busy, a weight-raised
//    queue among others, strict_guarantees). While the queue has requests in
//    flight bfq waits for them; when the last completes it arms the idle
//    timer for slice_idle (BFQ_MIN_TT, 2 ms, for a seeky queue in a symmetric
//    scenario) and a new request of the queue cancels it. Command queueing
//    (hw_tag) is detected from the driver's depth as bfq_update_hw_tag does.
//    Think time: a queue whose mean think time exceeds slice_idle is not
//    idled for.
//  * low_latency: a queue created after BFQ_BURST_INTERVAL-long quiet is
//    "interactive" and weight-raised (x30) for bfq_wr_duration (from the
//    peak rate, 3 to 25 s); queues created in a burst of 8 or more within
//    180 ms of each other (fio's numjobs) are not.
//
//  * Injection: while bfq keeps the device for an empty in-service queue, it
//    dispatches other busy queues' requests as long as fewer than the
//    queue's inject_limit requests are in the drive. The limit is learnt
//    from the queue's total service time (request arrival to completion)
//    with and without injection, sampled while the process has a single
//    request (bic->requests <= 1) and reset every second (0 for a queue with
//    a short think time): a deep-queue job keeps it at 0.
//
//  * Stable merging (bfq_do_or_sched_stable_merge, 5.14+): a sync queue
//    created within bfq_burst_interval (180 ms) of the last queue created in
//    its group, with the same I/O priority, is merged into that one at once
//    on a non-rotational device with command queueing (the processes'
//    requests go to one shared queue for good: fio's numjobs clones become
//    one queue); the last-created queue moves on when 600 ms have passed
//    or the priority or group differs. Burst handling then sees only the
//    first queue. bic->requests (injection sampling) stays per process.
//  * Tag limits (bfq_limit_depth): sync reads may use every scheduler tag,
//    direct writes 3/4 of each sbitmap word, discards 1/2 (less while a
//    weight-raised queue is busy); and a queue, or its cgroup, that already
//    holds its weight's share of nr_requests (bfqq_request_over_limit:
//    round(nr_requests x weight / wsum) at each level, higher classes' wsum
//    folded in x8) gets one bit of each word, so that eight QD1 processes
//    cannot take every tag from a ninth.
//
// Not modelled (documented): the same process's async queue and the
// waker / woken queues as injection sources, the delayed stable merge of
// a rotational or non-queueing device and queue merging of cooperating
// processes by sector proximity (bfq_setup_cooperator), soft real-time
// weight raising (a queue must idle and come back at a bounded rate; fio
// jobs without thinktime never qualify), async (buffered) writes, and the
// per-cgroup blkio.bfq.* statistics.
//
// Invariants: a queued request is in its queue's sort and FIFO sets and the
//  merge hash until dispatched; a queue is busy (on a service tree as active)
//  iff it has queued requests or is in service; rq_in_driver counts
//  dispatched, uncompleted requests; vtime never decreases.
// Thread-safety: thread-compatible; part of one simulation. Shared state is
//  touched only after cpu.Sync().
// The completion hook takes bfqd->lock at once when it is free; when another
// CPU holds it, the completion's section runs from an irq work item queued on
// the completing CPU at that instant, which spins for the lock with hardirqs
// off (its time shows in irq mode rather than the completing softirq's).
// Cost: the flat bodies bfq_bio_merge, bfq_insert_request,
//  bfq_dispatch_request and bfq_completed_request (derived from the
//  documented ratio of bfq's per-request locked time to mq-deadline's), plus
//  the lines they touch: bfqd's state line, the queue's line and the
//  request's line. Model bookkeeping: O(log n) per request, O(entities) per
//  queue selection.
#ifndef BLKLAB_ENGINE_MODEL_SCHED_BFQ_H_
#define BLKLAB_ENGINE_MODEL_SCHED_BFQ_H_

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/model/elevator.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/sim/cacheline.h"
#include "engine/sim/pool_allocator.h"
#include "engine/sim/spinlock.h"
#include "engine/sim/task.h"
#include "engine/sim/timer.h"

namespace blklab::model {

class RequestQueue;

// bfq's sysfs tunables (/sys/block/X/queue/iosched) and the queue's cgroups.
struct BfqConfig {
  // queue/nomerges=1 (QUEUE_FLAG_NOXMERGES): elv_merge tries only
  // q->last_merge's back merge here, no hash or front lookup.
  bool noxmerges = false;
  uint32_t max_request_bytes = kMaxMergeBytes;  // the queue's max_sectors
  bool stable_merge = true;  // knobs.bfq_stable_merge
  int64_t slice_idle_ns = 8'000'000;
  bool low_latency = true;
  int64_t timeout_ns = 125'000'000;
  uint64_t user_max_budget = 0;  // sectors; 0 = autotuned
  bool strict_guarantees = false;
  uint64_t back_seek_max_sectors = 16384 * 2;
  uint32_t back_seek_penalty = 2;
  int64_t fifo_expire_sync_ns = 125'000'000;
  bool rotational = false;
  std::vector<int> cgroup_weights;  // blkcg id -> bfq.weight (id 0: root)

  static BfqConfig From(const host::IoschedTunables& iosched);
};

struct BfqStats {
  uint64_t inserted = 0;
  uint64_t merged = 0;
  uint64_t dispatched = 0;
  uint64_t queues_created = 0;
  uint64_t stable_merges = 0;  // processes whose queue joined the group's last one
  uint64_t expired[5] = {0, 0, 0, 0, 0};  // by BfqSched::Reason
  uint64_t idle_timer_armed = 0;
  uint64_t idle_timer_fired = 0;
  uint64_t idle_cancelled = 0;  // a request arrived while idling
  uint64_t wr_raised = 0;       // queues weight-raised as interactive
  uint64_t completion_lock_busy = 0;  // completions that found bfqd->lock held
  uint64_t injected = 0;              // dispatches injected while idling
};

class BfqSched final : public Elevator {
 public:
  // enum bfqq_expiration.
  enum Reason { kTooIdle = 0, kBudgetTimeout, kBudgetExhausted, kNoMoreRequests, kPreempted };
  static constexpr int kNumClasses = 3;  // RT, BE, IDLE

  BfqSched(Kernel& kernel, const std::string& qname, const BfqConfig& config);
  BfqSched(const BfqSched&) = delete;
  BfqSched& operator=(const BfqSched&) = delete;

  void InitHctx(Hctx* hctx) override;
  uint32_t LimitDepth(const Bio& bio) override;
  sim::Task BioMerge(sim::Cpu& cpu, Hctx* hctx, Bio* bio, Request** merged_into) override;
  sim::Task InsertRequests(sim::Cpu& cpu, Hctx* hctx, RequestList& list) override;
  sim::Task DispatchRequest(sim::Cpu& cpu, Hctx* hctx, Request** out) override;
  bool HasWork(sim::Cpu& cpu, Hctx* hctx) override;
  void CompletedRequest(sim::Cpu& cpu, Request* rq, sim::SimTime now) override;
  size_t queued() const override { return queued_; }

  const BfqStats& stats() const { return stats_; }
  // (8 - level) * 10: bfq_ioprio_to_weight.
  static int IoprioToWeight(int level) { return (8 - level) * 10; }

 private:
  // bfq's own constants (no sysfs file), with the kernel's names.
  static constexpr int kServiceShift = 22;                      // WFQ_SERVICE_SHIFT
  static constexpr uint64_t kDefaultMaxBudget = 16 * 1024;      // bfq_default_max_budget, sectors
  static constexpr uint64_t kStatsMinBudgets = 194;             // bfq_stats_min_budgets
  static constexpr int64_t kMinTtNs = 2 * sim::kNsPerMs;        // BFQ_MIN_TT
  static constexpr int64_t kWrMinIdleNs = 2000 * sim::kNsPerMs;  // bfq_wr_min_idle_time
  static constexpr int64_t kBurstIntervalNs = 180 * sim::kNsPerMs;     // bfq_burst_interval
  static constexpr int64_t kStableMergeWindowNs = 600 * sim::kNsPerMs;  // bfq_activation_stable_merging
  static constexpr int64_t kClassIdleTimeoutNs = 200 * sim::kNsPerMs;  // BFQ_CL_IDLE_TIMEOUT (HZ / 5)
  static constexpr int kLargeBurstThresh = 8;                   // bfq_large_burst_thresh
  static constexpr int kWrCoeff = 30;                           // bfq_wr_coeff
  static constexpr uint64_t kMaxServiceFromWr = 120000;         // sectors
  static constexpr uint64_t kSeekThrSectors = 800;              // BFQQ_SEEK_THR
  static constexpr uint32_t kSectThrNonrot = 64;                // BFQQ_SECT_THR_NONROT
  static constexpr int kHwQueueThreshold = 3, kHwQueueSamples = 32;
  // Peak rate, sectors per second: ref_rate {14000, 33000} in (sectors/us) << 16
  // and ref_wr_duration {7000, 2500} ms (bfq_init_queue / bfq_init).
  static constexpr double kRefRate[2] = {14000.0 * 1e6 / 65536, 33000.0 * 1e6 / 65536};
  static constexpr int64_t kRefWrDurationMs[2] = {7000, 2500};
  static constexpr int64_t kRateRefIntervalNs = sim::kNsPerSec;  // BFQ_RATE_REF_INTERVAL
  static constexpr int kRateMinSamples = 32;
  static constexpr int64_t kRateMinIntervalNs = 300 * sim::kNsPerMs;

  static int ClassIndex(int ioprio_class) {
    // IOPRIO_CLASS_RT = 1 -> 0, BE (and none) -> 1, IDLE = 3 -> 2.
    return ioprio_class == 1 ? 0 : ioprio_class == 3 ? 2 : 1;
  }
  static uint64_t Sectors(const Request* rq) { return rq->bytes >> kSectorShift; }
  static uint64_t EndSector(const Request* rq) { return rq->sector + Sectors(rq); }

  struct Group;
  struct Queue;
  // struct bfq_entity: a queue's or a group's place in its parent's tree.
  struct Entity {
    uint64_t id = 0;          // creation order: ties and determinism
    int weight = 100;         // current (raised) weight
    int cls = 1;              // 0 RT, 1 BE, 2 IDLE
    uint64_t budget = 0;      // sectors
    uint64_t service = 0;     // sectors received in the current turn
    uint64_t start = 0;       // virtual times, fixed point
    uint64_t finish = 0;
    bool active = false;      // on its tree as active (busy or in service)
    int allocated = 0;        // requests inserted and not yet completed (entity->allocated)
    bool idle = false;        // on the idle tree (wsum still counts it)
    Group* parent = nullptr;  // the group whose tree holds it
    Queue* bfqq = nullptr;    // the queue, or null for a group
    Group* my_group = nullptr;
  };
  // struct bfq_service_tree.
  struct ServiceTree {
    sim::PooledSet<std::pair<uint64_t, uint64_t>> active;  // (finish, id)
    sim::PooledSet<std::pair<uint64_t, uint64_t>> idle;    // (finish, id)
    std::map<uint64_t, Entity*> by_id;
    uint64_t vtime = 0;
    uint64_t wsum = 0;
  };
  struct Group {
    int blkcg = 0;
    Queue* last_created = nullptr;  // last_bfqq_created: stable merges join it
    Entity entity;  // unused for the root group
    std::array<ServiceTree, kNumClasses> st;
    Entity* in_service = nullptr;  // the child entity in service
    int pending_queues = 0;  // num_queues_with_pending_reqs
  };
  struct Queue {
    uint64_t key = 0;  // ioc << 16 | blkcg
    sim::SimTime creation_time = 0;
    int ioprio_class = 0, ioprio_level = 0;
    Entity entity;
    int orig_weight = 40;
    sim::PooledSet<std::pair<uint64_t, uint64_t>> sort;  // (sector, seq)
    sim::PooledSet<std::pair<int64_t, uint64_t>> fifo;   // (fifo_time, seq)
    sim::PooledMap<uint64_t, Request*> rqs;               // seq -> request
    uint32_t dispatched = 0;
    uint64_t max_budget = 0;
    uint64_t last_position = 0;
    sim::SimTime budget_timeout = 0;
    sim::SimTime service_from = 0;  // when it was set in service
    bool wait_request = false;
    bool non_blocking_wait_rq = false;  // expired empty, waiting for its own requests
    bool fifo_checked = false;     // the FIFO was looked at this budget
    // think time and seekiness (bfq_update_io_thinktime / _seektime)
    sim::SimTime last_end_request = 0;
    uint64_t ttime_samples = 0, ttime_total = 0, ttime_mean = 0;
    uint32_t seek_history = 0;
    // weight raising
    int wr_coeff = 1;
    sim::SimTime wr_start = 0;
    int64_t wr_cur_max_time = 0;
    bool in_large_burst = false;
    uint64_t service_from_wr = 0;
    // queue_weights_tree / groups-with-pending membership (busy or in flight)
    bool counted_active = false;
    int counted_weight = 0;
    std::list<Queue*>::iterator active_pos;  // in active_list_ while entity.active
    // injection (bfq_choose_bfqq_for_injection / bfq_update_inject_limit)
    uint32_t inject_limit = 0;
    int64_t last_serv_time_ns = 0;
    sim::SimTime decrease_time = std::numeric_limits<int64_t>::min() / 2;
    sim::CacheLine line;
  };
  // An interrupt whose handler is a member coroutine.
  class Irq final : public sim::IrqHandler {
   public:
    Irq(BfqSched* b, sim::Task (BfqSched::*fn)(sim::Cpu&)) : b_(b), fn_(fn) {}
    sim::Task Handle(sim::Cpu& cpu, uint64_t) override { return (b_->*fn_)(cpu); }

   private:
    BfqSched* b_;
    sim::Task (BfqSched::*fn_)(sim::Cpu&);
  };
  // A completion waiting for the lock: its queue, and whether it was the
  // request the inject limit samples.
  struct Done {
    Queue* q;
    uint64_t bic;  // the submitting process's key (ioc << 16 | blkcg)
    bool waited;
  };
  // bfq_finish_requeue_request's locked part. REQUIRES: lock_ held by `cpu`.
  void CompleteLocked(sim::Cpu& cpu, Queue* q, uint64_t bic, bool waited, sim::SimTime now);
  // The queue a process's requests go to (its own, or the one it was
  // stably merged into), or null before its first request.
  Queue* FindQueue(uint64_t bic) const;
  static uint64_t BicKey(uint32_t ioc, int blkcg) { return (uint64_t{ioc} << 16) | static_cast<uint64_t>(blkcg); }
  Queue* GetQueue(sim::Cpu& cpu, uint32_t ioc, int blkcg, int ioprio_class, int ioprio_level);
  Group* GetGroup(int blkcg);
  static uint64_t Delta(uint64_t service, int weight);
  // B-WF2Q+.
  void ActivateEntity(Entity* e, bool requeue);
  void DeactivateEntity(Entity* e, bool keep_service);
  void Served(Queue* q, uint64_t sectors);
  void ForgetIdle(ServiceTree& st);
  void ActiveInsert(ServiceTree& st, Entity* e);
  void ActiveErase(ServiceTree& st, Entity* e);
  Entity* NextEntity(Group* g, sim::SimTime now);
  Queue* SelectNextQueue(sim::SimTime now);
  // Queues.
  void AddRequest(sim::Cpu& cpu, Queue* q, Request* rq);
  void RemoveRequest(Queue* q, Request* rq);
  Request* NextRequest(Queue* q);
  void AddBusy(sim::Cpu& cpu, Queue* q);
  // Enters or leaves the weights tree and the group's pending count as the
  // queue becomes busy / has requests in flight, or neither.
  void SyncActive(Queue* q);
  void HandleBurst(sim::SimTime now, Queue* q);
  void UpdateWr(sim::SimTime now, Queue* q);
  // The in-service queue.
  Queue* SelectQueue(sim::Cpu& cpu);
  void SetInService(sim::Cpu& cpu, Queue* q);
  void Expire(sim::Cpu& cpu, Queue* q, Reason reason);
  void RecalcBudget(Queue* q, Reason reason);
  bool BetterToIdle(const Queue* q) const;
  bool IdlingBoostsThr(const Queue* q) const;
  Queue* ChooseForInjection(Queue* in_serv);
  void UpdateInjectLimit(Queue* q, sim::SimTime now);
  bool AsymmetricScenario(const Queue* q) const;
  bool Seeky(const Queue* q) const;
  bool ShortThinkTime(const Queue* q) const;
  bool BudgetTimedOut(const Queue* q, sim::SimTime now) const;
  void ArmIdleTimer(sim::Cpu& cpu, Queue* q);
  void IdleTimerFired(sim::Cpu& cpu);
  void UpdatePeakRate(sim::SimTime now, Request* rq);
  uint64_t MaxBudget() const;
  int64_t WrDuration() const;

  Kernel& kernel_;
  std::string qname_;
  BfqConfig config_;
  RequestQueue* q_ = nullptr;
  uint32_t word_bits_ = 0;  // bits per sched-tags sbitmap word
  uint32_t nr_requests_ = 0;  // the sched tags' depth, q->nr_requests
  // bfqq_request_over_limit: whether the queue of `bio`'s process, or a
  // group above it, holds at least its weight's share of `limit` requests.
  bool RequestOverLimit(const Bio& bio, uint32_t limit) const;
  sim::SpinLock lock_;  // bfqd->lock
  sim::CacheLine bfqd_line_;  // in-service queue, counters, peak rate
  sim::CacheLine st_line_;    // service trees
  std::map<uint64_t, std::unique_ptr<Queue>> queues_;  // by the creating process's key
  std::map<uint64_t, Queue*> merged_into_;  // a stably merged process's key -> the shared queue
  std::map<uint64_t, uint32_t> bic_requests_;  // bic->requests: inserted, not yet finished
  std::map<int, std::unique_ptr<Group>> groups_;
  std::list<Queue*> active_list_;  // bfqd->active_list: queues on an active tree, newest first
  // injection state (bfqd)
  Request* waited_rq_ = nullptr;
  bool wait_dispatch_ = false;
  bool rqs_injected_ = false;
  sim::SimTime last_empty_occupied_ns_ = 0;
  Group root_;
  uint64_t next_id_ = 1;
  uint64_t next_seq_ = 1;
  sim::PooledMap<std::pair<uint64_t, uint64_t>, Request*> hash_;  // (end sector, seq): back merges
  Request* last_merge_ = nullptr;
  Queue* in_service_ = nullptr;
  sim::SimTime now_ = 0;          // the current operation's time
  uint64_t last_position_ = 0;    // bfqd->last_position
  uint64_t budgets_assigned_ = 0;
  std::array<int, kNumClasses> class_busy_ = {0, 0, 0};
  size_t queued_ = 0;
  uint32_t rq_in_driver_ = 0;
  int busy_queues_ = 0;
  int wr_busy_queues_ = 0;
  std::map<int, int> busy_weights_;  // weight -> busy queues with it (weights_tree)
  int groups_with_pending_ = 0;
  sim::SimTime last_idle_class_served_ = 0;
  // hw_tag detection (bfq_update_hw_tag): -1 unknown (counts as queueing)
  int hw_tag_ = -1;
  int hw_tag_samples_ = 0;
  uint32_t max_rq_in_driver_ = 0;
  // peak rate (sectors per second), over windows of at least 100 ms
  double peak_rate_ = 0;
  sim::SimTime rate_window_start_ = -1;
  uint64_t rate_window_sectors_ = 0;
  uint64_t rate_samples_ = 0, rate_seq_samples_ = 0;
  sim::SimTime last_dispatch_ = 0;
  // burst detection
  sim::SimTime last_ins_in_burst_ = -(int64_t{1} << 60);
  int burst_size_ = 0;
  bool large_burst_ = false;
  std::vector<Queue*> burst_list_;
  // bfq_idle_slice_timer; a completion that waits for bfqd->lock.
  sim::Task IdleTimerIrq(sim::Cpu& cpu);
  sim::Task DoneIrq(sim::Cpu& cpu);
  Irq idle_irq_{this, &BfqSched::IdleTimerIrq};
  Irq done_irq_{this, &BfqSched::DoneIrq};
  std::vector<sim::PooledDeque<Done>> deferred_done_;  // per CPU
  sim::HrTimer idle_timer_;
  Queue* idle_queue_ = nullptr;
  BfqStats stats_;
  sim::FnId fn_bio_merge_, fn_insert_, fn_dispatch_, fn_has_work_, fn_completed_, fn_timer_;
};

// The registry entry (elevator.cc).
extern const ElevatorType kBfqElevator;

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_SCHED_BFQ_H_
