// engine/model/elevator.h
//
// Elevator is the model's `struct elevator_mq_ops` (block/elevator.h): what
// an I/O scheduler plugs into blk-mq (docs/kernel-model.md §2.2, §2.4, §2.5). Every
// operation takes the hardware context it is called for, as the kernel's do,
// so per-hctx schedulers (kyber) fit as well as per-queue ones
// (mq-deadline, bfq, which ignore it):
//
//   InitHctx         ->init_hctx: per-hctx data, once the hctx has its ctxs
//   LimitDepth       ->limit_depth: a shallow tag depth for this allocation
//   BioMerge         ->bio_merge: merge a bio into a queued request
//   PrepareRequest   ->prepare_request: a scheduler tag was just taken
//   InsertRequests   ->insert_requests: a list of requests enters the scheduler
//   DispatchRequest  ->dispatch_request: the next request for this hctx, or null
//   HasWork          ->has_work: lock-free check used by blk_mq_run_hw_queue
//   CompletedRequest ->completed_request: the request ended on the device
//   FinishRequest    ->finish_request: the request is freed
//
// ElevatorType is `struct elevator_type`: a name (the host spec's
// host::Scheduler) and init_sched, which builds the scheduler's private data
// for one request queue from its sysfs settings and the host's knobs. The
// registry (elevator.cc) lists every type; adding a scheduler is one file
// under sched/ plus one registry line (and its name in host_spec.h's
// BLKLAB_SCHEDULERS).
//
// Invariants: every request handed to InsertRequests is returned by
//  DispatchRequest exactly once (the model does not requeue); queued()
//  counts those not yet returned. BioMerge merges bios into queued requests
//  and never removes a request.
// Thread-safety: thread-compatible; part of one simulation. Operations touch
//  shared state only after cpu.Sync(), like every model path.
// Cost: each implementation charges its own cost-table entries.
#ifndef BLKLAB_ENGINE_MODEL_ELEVATOR_H_
#define BLKLAB_ENGINE_MODEL_ELEVATOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/host/host_spec.h"
#include "engine/model/kernel.h"
#include "engine/model/request.h"
#include "engine/sim/task.h"

namespace blklab::model {

class Hctx;

// The largest request a scheduler's merge may build when its queue does not
// say (RequestQueue::max_request_bytes, the queue's max_sectors).
inline constexpr uint32_t kMaxMergeBytes = 512 * 1024;

class Elevator {
 public:
  virtual ~Elevator() = default;

  // ->init_hctx: called once per hctx of the queue, after its ctxs are mapped.
  virtual void InitHctx(Hctx* hctx) {}
  // ->limit_depth: the shallow depth an allocation for `bio` may use in each
  // word of the scheduler tags' sbitmap (v6.6 semantics), or 0 for all of it.
  virtual uint32_t LimitDepth(const Bio& bio) { return 0; }
  // ->bio_merge: tries to merge `bio` into a queued request; *merged_into is
  // that request or null. REQUIRES: the caller has Synced.
  virtual sim::Task BioMerge(sim::Cpu& cpu, Hctx* hctx, Bio* bio, Request** merged_into) = 0;
  // ->prepare_request.
  virtual void PrepareRequest(sim::Cpu& cpu, Request* rq) {}
  // ->insert_requests: takes every request of `list` (left empty).
  virtual sim::Task InsertRequests(sim::Cpu& cpu, Hctx* hctx, RequestList& list) = 0;
  // ->dispatch_request: the next request to dispatch on `hctx`, or null.
  virtual sim::Task DispatchRequest(sim::Cpu& cpu, Hctx* hctx, Request** out) = 0;
  // ->has_work: whether DispatchRequest may find something (lock-free).
  virtual bool HasWork(sim::Cpu& cpu, Hctx* hctx) = 0;
  // ->completed_request: the device finished `rq` at `now`.
  virtual void CompletedRequest(sim::Cpu& cpu, Request* rq, sim::SimTime now) {}
  // ->finish_request: `rq` is being freed.
  virtual void FinishRequest(sim::Cpu& cpu, Request* rq) {}

  // Requests inside the scheduler (inserted, not yet dispatched).
  virtual size_t queued() const = 0;
  // ELEVATOR_F_MQ_AWARE: dispatches per hardware queue (kyber), so every
  // hctx is run; mq-deadline and bfq dispatch from the caller's hctx.
  virtual bool mq_aware() const { return false; }
};

// What elevator_init / elevator_switch hand a scheduler's init_sched.
struct ElevatorInit {
  Kernel* kernel = nullptr;
  std::string qname;               // the request queue's (device's) name
  const host::QueueSpec* sysfs = nullptr;  // /sys/block/X/queue, iosched tunables included
  uint32_t nr_requests = 0;        // q->nr_requests (resolved)
  const std::vector<int>* cgroup_bfq_weights = nullptr;  // blkcg id -> bfq.weight (host spec cgroups)
  bool rotational = false;         // /sys/block/X/queue/rotational
  uint32_t max_request_bytes = kMaxMergeBytes;  // the queue's max_sectors, in bytes
};

struct ElevatorType {
  host::Scheduler name;
  std::unique_ptr<Elevator> (*init_sched)(const ElevatorInit& init);
};

// The registered type of scheduler `s`, or nullptr (none, or not modelled).
const ElevatorType* FindElevatorType(host::Scheduler s);

}  // namespace blklab::model

#endif  // BLKLAB_ENGINE_MODEL_ELEVATOR_H_
