#include "engine/model/drivers/scsi/scsi_host.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "engine/util/check.h"

namespace blklab::model {

namespace {
constexpr int64_t kScsiQueueDelayNs = 3 * sim::kNsPerMs;  // SCSI_QUEUE_DELAY
}  // namespace

ScsiHost::ScsiHost(Kernel& kernel, std::string host_name, const std::vector<std::string>& lun_names,
                   const ScsiHostConfig& config, const QueueConfig& queue, ScsiLld* lld)
    : kernel_(kernel),
      config_(config),
      lld_(lld),
      host_lock_(kernel.machine(), host_name + ":host_lock", sim::SpinLockKind::kSpinLockIrqsave,
                 kernel.fn.raw_spin_lock, kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {
  TagSetConfig ts;
  ts.nr_hw_queues = config.nr_hw_queues;
  ts.queue_depth = config.can_queue;
  ts.hctx_shared = config.host_tagset;
  set_ = std::make_unique<TagSet>(kernel, host_name, ts);
  for (const std::string& name : lun_names) {
    auto dev = std::make_unique<ScsiDevice>(this, static_cast<int>(luns_.size()), config.cmd_per_lun,
                                            kernel.machine().num_cpus());
    dev->q_ = std::make_unique<RequestQueue>(kernel, name, *set_, dev.get(), queue);
    luns_.push_back(std::move(dev));
  }
  fn_get_budget_ = kernel.Intern("scsi_mq_get_budget");
  fn_put_budget_ = kernel.Intern("scsi_mq_put_budget");
  fn_queue_rq_ = kernel.Intern("scsi_queue_rq");
  fn_complete_ = kernel.Intern("scsi_complete");
  fn_end_request_ = kernel.Intern("scsi_end_request");
  fn_run_queue_ = kernel.Intern("scsi_run_queue");
  fn_timeout_ = kernel.Intern("scsi_timeout");
  fn_abort_ = kernel.Intern("scmd_eh_abort_handler");
}

ScsiHost::~ScsiHost() = default;

RequestQueue& ScsiHost::queue(int lun) { return luns_[lun]->queue(); }

// --- budget (scsi_mq_get_budget / scsi_mq_put_budget) ----------------------

namespace {
// lib/sbitmap.c sbitmap_calculate_shift: 64-bit words, narrowed until there
// are at least 4 of them.
uint32_t SbitmapShift(uint32_t depth) {
  uint32_t shift = 6;
  if (depth >= 4) {
    while ((4u << shift) > depth) --shift;
  }
  return shift;
}
}  // namespace

ScsiDevice::ScsiDevice(ScsiHost* host, int index, uint32_t queue_depth, int ncpus)
    : host_(host), queue_depth_(queue_depth), budget_shift_(SbitmapShift(queue_depth)), requeue_work_(this) {
  budget_words_ = std::vector<BudgetWord>(((queue_depth - 1) >> budget_shift_) + 1);
  // sbitmap_init_node draws each CPU's hint at random below the depth: a
  // fixed hash of (LUN, CPU) here.
  budget_hint_.resize(static_cast<size_t>(ncpus));
  for (int c = 0; c < ncpus; ++c) {
    const uint64_t h = (static_cast<uint64_t>(index) * 0x9E3779B97F4A7C15ull) ^
                       (static_cast<uint64_t>(c + 1) * 0xC2B2AE3D27D4EB4Full);
    budget_hint_[static_cast<size_t>(c)] = static_cast<uint32_t>((h >> 17) % queue_depth);
  }
}

int ScsiDevice::BudgetMapGet(sim::Cpu& cpu) {
  // sbitmap_get: from the hint's word, the first clear bit at or after the
  // hint (then from the word's start), else the next words.
  Kernel& k = host_->kernel_;
  const sim::Machine& m = k.machine();
  uint32_t& hint_ref = budget_hint_[static_cast<size_t>(cpu.id())];
  const uint32_t hint = hint_ref < queue_depth_ ? hint_ref : 0;
  const uint32_t nwords = static_cast<uint32_t>(budget_words_.size());
  const uint32_t word_bits = 1u << budget_shift_;
  uint32_t index = hint >> budget_shift_;
  uint32_t from = hint & (word_bits - 1);
  int64_t cost = 0;
  int result = -1;
  for (uint32_t i = 0; i < nwords && result < 0; ++i) {
    BudgetWord& w = budget_words_[index];
    const uint32_t bits = std::min(word_bits, queue_depth_ - (index << budget_shift_));
    for (uint32_t pass = 0; pass < 2 && result < 0; ++pass) {
      for (uint32_t b = pass == 0 ? from : 0; b < (pass == 0 ? bits : from); ++b) {
        if ((w.bits >> b & 1) == 0) {
          w.bits |= uint64_t{1} << b;
          result = static_cast<int>((index << budget_shift_) + b);
          break;
        }
      }
    }
    if (result >= 0) {
      cost += w.line.Write(m, cpu.id(), k.costs().atomic_local);
      break;
    }
    cost += w.line.Read(m, cpu.id(), k.costs().line_read_hit);
    from = 0;
    index = index + 1 == nwords ? 0 : index + 1;
  }
  cpu.Charge(host_->fn_get_budget_, cost);
  // update_alloc_hint_after_get
  if (result < 0) {
    hint_ref = 0;
  } else if (static_cast<uint32_t>(result) == hint) {
    hint_ref = static_cast<uint32_t>(result) + 1 >= queue_depth_ ? 0 : static_cast<uint32_t>(result) + 1;
  }
  return result;
}

void ScsiDevice::BudgetMapPut(sim::Cpu& cpu, int token) {
  Kernel& k = host_->kernel_;
  BudgetWord& w = budget_words_[static_cast<size_t>(token) >> budget_shift_];
  w.bits &= ~(uint64_t{1} << (static_cast<uint32_t>(token) & ((1u << budget_shift_) - 1)));
  cpu.Charge(host_->fn_put_budget_, w.line.Write(k.machine(), cpu.id(), k.costs().atomic_local));
}

int ScsiDevice::GetBudget(sim::Cpu& cpu, RequestQueue* rq_q) {
  // scsi_dev_queue_ready: a bit of budget_map (or, 4.14 to 5.13, an atomic
  // increment of device_busy); a blocked LUN passes only with nothing else
  // in flight, once device_blocked has counted down to zero.
  Kernel& k = host_->kernel_;
  int token = -1;
  if (k.knobs().scsi_atomic_device_busy) {
    cpu.Charge(host_->fn_get_budget_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    if (device_busy_ < queue_depth_) token = 0;
  } else {
    token = BudgetMapGet(cpu);
  }
  if (token >= 0 && device_blocked_ > 0 && (device_busy_ > 0 || --device_blocked_ > 0)) {
    PutBudgetToken(cpu, token);
    token = -1;
  }
  if (token >= 0) {
    ++device_busy_;
    return token;
  }
  // Budget failure: record it for the completion side's re-run rule.
  ++restarts_;
  ++host_->budget_failures_;
  k.Count(Counter::k_budget_failure);
  cpu.Charge(host_->fn_get_budget_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  // Nothing of the LUN in flight (and it is not in SDEV_BLOCK, which is not
  // modelled): no completion will re-run it, so a delayed run does (RC5
  // patch 1).
  if (device_busy_ == 0 && k.knobs().scsi_budget_idle_delay_run) {
    rq_q->DelayRunHwQueues(&cpu, kScsiQueueDelayNs);
  }
  return -1;
}

void ScsiDevice::PutBudgetToken(sim::Cpu& cpu, int token) {
  Kernel& k = host_->kernel_;
  if (k.knobs().scsi_atomic_device_busy) {
    cpu.Charge(host_->fn_put_budget_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
  } else {
    BudgetMapPut(cpu, token);
  }
}

void ScsiDevice::PutBudget(sim::Cpu& cpu, RequestQueue*, int token) {
  BLKLAB_CHECK(device_busy_ > 0 && "budget put more often than taken");
  PutBudgetToken(cpu, token);
  --device_busy_;
}

// --- submission and completion ------------------------------------------------

sim::Task ScsiHost::HostQueueReady(sim::Cpu& cpu, ScsiDevice& sdev, bool* ready) {
  // REQUIRES: the caller has Synced. Reading host_blocked and the starved
  // entry is a hit on lines nobody writes in steady state (priced in the
  // scsi_queue_rq body); only a blocked host or a starved LUN costs more.
  *ready = true;
  if (host_blocked_ == 0 && sdev.starved_on_ == nullptr) co_return;
  bool starve = false;
  if (host_blocked_ > 0) {
    if (host_busy_ > 0) {
      starve = true;
    } else {
      cpu.Charge(fn_queue_rq_, host_state_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
      if (--host_blocked_ > 0) {
        *ready = false;
        co_return;
      }
    }
  }
  if (!starve && sdev.starved_on_ == nullptr) co_return;
  // Onto (or off) the starved list, under host_lock.
  co_await host_lock_.Lock(cpu);
  cpu.Charge(fn_queue_rq_, host_state_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  if (starve && sdev.starved_on_ == nullptr) {
    sdev.starved_on_ = &starved_;
    starved_.push_back(&sdev);
  } else if (!starve && sdev.starved_on_ != nullptr) {
    // list_del_init from whichever list holds it.
    std::vector<ScsiDevice*>& l = *sdev.starved_on_;
    l.erase(std::find(l.begin(), l.end(), &sdev));
    sdev.starved_on_ = nullptr;
  }
  co_await cpu.Sync();
  host_lock_.Unlock(cpu);
  *ready = !starve;
}

sim::Task ScsiHost::RunQueue(sim::Cpu& cpu, ScsiDevice& sdev) {
  sim::StackFrame frame(cpu, fn_run_queue_);
  // scsi_run_queue: scsi_starved_list_run while the host is not blocked,
  // then blk_mq_run_hw_queues(q, false) for this LUN.
  co_await cpu.Sync();
  cpu.Charge(fn_run_queue_, host_state_line_.Read(kernel_.machine(), cpu.id(), kernel_.costs().line_read_hit));
  if (!starved_.empty()) {
    co_await host_lock_.Lock(cpu);
    std::vector<ScsiDevice*> list;
    list.swap(starved_);
    for (ScsiDevice* s : list) s->starved_on_ = &list;
    cpu.Charge(fn_run_queue_, host_state_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    while (!list.empty() && host_blocked_ == 0) {
      ScsiDevice* s = list.front();
      list.erase(list.begin());
      s->starved_on_ = nullptr;
      co_await cpu.Sync();
      host_lock_.Unlock(cpu);
      co_await s->q_->RunHwQueues(cpu);
      co_await host_lock_.Lock(cpu);
    }
    // Whatever the blocked host left goes back in front.
    for (ScsiDevice* s : starved_) s->starved_on_ = &list;
    list.insert(list.end(), starved_.begin(), starved_.end());
    starved_.swap(list);
    for (ScsiDevice* s : starved_) s->starved_on_ = &starved_;
    co_await cpu.Sync();
    host_lock_.Unlock(cpu);
  }
  co_await sdev.q_->RunHwQueues(cpu);
}

void ScsiDevice::SetBlocked(sim::Cpu& cpu, ScsiMlqueue reason) {
  // scsi_set_blocked: HOST_BUSY blocks the host; DEVICE_BUSY (and
  // TARGET_BUSY: one LUN per target here) the LUN.
  Kernel& k = host_->kernel_;
  if (reason == ScsiMlqueue::kHostBusy) {
    cpu.Charge(host_->fn_queue_rq_,
               host_->host_state_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    host_->host_blocked_ = ScsiHost::kMaxHostBlocked;
  } else {
    cpu.Charge(host_->fn_queue_rq_, budget_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    device_blocked_ = kMaxDeviceBlocked;
  }
}

BlkStatus ScsiDevice::BusyStatus() const {
  // scsi_queue_rq's out_put_budget: RESOURCE (blk-mq re-runs after
  // BLK_MQ_RESOURCE_DELAY) or DEV_RESOURCE (the mid-layer promises the
  // re-run on completion). Until the restarts rule (5.9+; knob
  // run_all_hw_queues_on_completion) DEV_RESOURCE was chosen whenever other
  // commands of the LUN were in flight (device_busy counts this one's
  // budget, not yet put); since then only for a LUN in SDEV_BLOCK, which
  // is not modelled.
  if (host_->kernel_.knobs().run_all_hw_queues_on_completion && device_busy_ > 1) return BlkStatus::kDevResource;
  return BlkStatus::kResource;
}

sim::Task ScsiDevice::QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) {
  sim::StackFrame frame(cpu, host_->fn_queue_rq_);
  // scsi_queue_rq: device/target/host ready checks, scsi_prepare_cmd,
  // blk_mq_start_request, scsi_dispatch_cmd -> LLD queuecommand.
  Kernel& k = host_->kernel_;
  bool ready = true;
  // Only a blocked host or a starved LUN needs the coroutine (hot path).
  if (host_->host_blocked_ > 0 || starved_on_ != nullptr) co_await host_->HostQueueReady(cpu, *this, &ready);
  cpu.Charge(host_->fn_queue_rq_, k.costs().scsi_queue_rq);
  if (!ready) {
    *status = BusyStatus();
    co_return;
  }
  if (k.knobs().scsi_atomic_host_busy) {
    // 4.14 scsi_host_queue_ready: atomic_inc_return(&shost->host_busy), one
    // host-wide line every CPU writes, and the can_queue check.
    host_->HostBusyAtomic(cpu, host_->fn_queue_rq_);
    if (host_->host_busy_ >= host_->config_.can_queue) {
      host_->HostBusyAtomic(cpu, host_->fn_queue_rq_);
      *status = BusyStatus();
      co_return;
    }
  }
  q_->StartRequest(cpu, rq);
  ++host_->host_busy_;
  const ScsiMlqueue reason = host_->lld_->QueueCommand(cpu, *this, rq);
  if (reason != ScsiMlqueue::kOk) {
    BLKLAB_CHECK(host_->host_busy_ > 0);
    --host_->host_busy_;
    if (k.knobs().scsi_atomic_host_busy) {
      host_->HostBusyAtomic(cpu, host_->fn_queue_rq_);
    }
    SetBlocked(cpu, reason);
    *status = BusyStatus();
    co_return;
  }
  *status = BlkStatus::kOk;
}

void ScsiDevice::Complete(sim::Cpu& cpu, Request* rq) {
  // scsi_complete -> scsi_finish_command (scsi_device_unbusy; a completed
  // command unblocks the host and the LUN) -> scsi_io_completion ->
  // scsi_end_request.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_complete_, k.costs().scsi_complete);
  if (rq->scsi_status == kSamStatTaskSetFull) {
    // scsi_decide_disposition: QUEUE FULL -> ADD_TO_MLQUEUE ->
    // scsi_queue_insert(cmd, SCSI_MLQUEUE_DEVICE_BUSY). scsi_finish_command
    // is not reached, so nothing unblocks. (scsi_track_queue_full lowers
    // the depth only after more than 10 such events in distinct windows:
    // not modelled.)
    rq->scsi_status = 0;
    QueueInsert(cpu, rq, ScsiMlqueue::kDeviceBusy);
    return;
  }
  BLKLAB_CHECK(host_->host_busy_ > 0);
  --host_->host_busy_;
  if (k.knobs().scsi_atomic_host_busy) {
    // 4.14 scsi_device_unbusy: atomic_dec(&shost->host_busy).
    host_->HostBusyAtomic(cpu, host_->fn_complete_);
  }
  if (host_->host_blocked_ > 0) {
    cpu.Charge(host_->fn_complete_,
               host_->host_state_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    host_->host_blocked_ = 0;
  }
  device_blocked_ = 0;
  q_->PutRqBudget(cpu, rq);
  q_->EndRequest(cpu, rq, BlkStatus::kOk);
  // scsi_run_queue_async: a starved host re-runs through requeue_work (the
  // list_empty check reads a line only a starving host writes).
  if (!host_->starved_.empty()) {
    k.kblockd().Queue(&cpu, &requeue_work_, cpu.id(), 0);
    return;
  }
  if (k.knobs().run_all_hw_queues_on_completion) {
    q_->RunHwQueuesAsync(cpu);
    return;
  }
  cpu.Charge(host_->fn_end_request_, restarts_line_.Read(k.machine(), cpu.id(), k.costs().line_read_hit));
  if (restarts_ != 0) {
    // atomic_cmpxchg(&sdev->restarts, old, 0) == old
    cpu.Charge(host_->fn_end_request_, restarts_line_.Write(k.machine(), cpu.id(), k.costs().atomic_local));
    restarts_ = 0;
    q_->RunHwQueuesAsync(cpu);
  }
}

void ScsiDevice::QueueInsert(sim::Cpu& cpu, Request* rq, ScsiMlqueue reason) {
  // __scsi_queue_insert(cmd, reason, unbusy = true): scsi_set_blocked,
  // scsi_device_unbusy, blk_mq_requeue_request(rq, true).
  Kernel& k = host_->kernel_;
  SetBlocked(cpu, reason);
  BLKLAB_CHECK(host_->host_busy_ > 0);
  --host_->host_busy_;
  if (k.knobs().scsi_atomic_host_busy) host_->HostBusyAtomic(cpu, host_->fn_complete_);
  q_->PutRqBudget(cpu, rq);
  q_->RequeueRequest(cpu, rq);
}

// --- timeouts ----------------------------------------------------------------

namespace {
constexpr uint8_t kSdMaxRetries = 5;  // SD_MAX_RETRIES: sd's scmd->allowed
}  // namespace

absl::StatusOr<BlkEhTimerReturn> ScsiDevice::Timeout(sim::Cpu& cpu, Request* rq) {
  // scsi_timeout: no eh_timed_out in the modelled LLDs; SCMD_STATE_COMPLETE
  // (rq->timed_out: a late scsi_done is ignored); scsi_abort_command.
  Kernel& k = host_->kernel_;
  cpu.Charge(host_->fn_timeout_, k.costs().scsi_complete);
  if (!host_->ScheduleAbort(cpu, *this, rq)) {
    return absl::UnimplementedError(
        "scsi_timeout: the command timed out again after its abort and retry, which escalates to the full "
        "SCSI error handler (scsi_eh_scmd_add: the host in recovery, device and host resets); not modelled");
  }
  return BlkEhTimerReturn::kDone;
}

bool ScsiHost::ScheduleAbort(sim::Cpu& cpu, ScsiDevice& sdev, Request* rq) {
  // scsi_abort_command: SCSI_EH_ABORT_SCHEDULED already set -> FAILED;
  // else onto shost->eh_abort_list under host_lock, and
  // queue_delayed_work(shost->tmf_work_q, &scmd->abort_work, HZ / 100).
  if (rq->eh_abort_scheduled) return false;
  rq->eh_abort_scheduled = true;
  cpu.Charge(fn_timeout_, host_state_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
  const int64_t delay_ns = std::max(kernel_.hz() / 100, 1) * kernel_.jiffy_ns();
  aborts_.push_back(PendingAbort{cpu.now() + delay_ns, &sdev, rq});
  if (!abort_work_.pending() && aborts_.size() == 1) kernel_.kblockd().Queue(&cpu, &abort_work_, cpu.id(), delay_ns);
  return true;
}

sim::Task ScsiHost::AbortWork::Run(sim::Cpu& cpu) {
  // scmd_eh_abort_handler for every command whose abort is due: the LLD's
  // eh_abort_handler; on SUCCESS, DID_TIME_OUT and a retry while allowed.
  ScsiHost* h = host_;
  Kernel& k = h->kernel_;
  co_await cpu.Sync();
  while (!h->aborts_.empty() && h->aborts_.front().due <= cpu.now()) {
    const PendingAbort a = h->aborts_.front();
    h->aborts_.erase(h->aborts_.begin());
    k.Count(Counter::k_scsi_eh_abort);
    cpu.Charge(h->fn_abort_, k.costs().scsi_complete);
    const std::string what = absl::StrCat(a.sdev->queue().name(), ": timed-out command tag ", a.rq->tag, " sector ",
                                          a.rq->sector, ": ");
    if (h->lld_->AbortCommand(cpu, *a.sdev, a.rq) != ScsiEhResult::kSuccess) {
      k.Fail(absl::UnimplementedError(absl::StrCat(
          what, h->lld_->abort_handler(),
          " did not abort it; the full SCSI error handler (scsi_eh_scmd_add) is not modelled")));
      continue;
    }
    // scsi_noretry_cmd: no (a file-system read or write without FAILFAST);
    // scsi_cmd_retry_allowed: ++retries <= allowed.
    if (++a.rq->retries > kSdMaxRetries) {
      k.Fail(absl::UnimplementedError(absl::StrCat(
          what, "retries used up: the I/O ends with DID_TIME_OUT, and I/O errors are not modelled")));
      continue;
    }
    k.Count(Counter::k_scsi_eh_retry);
    a.sdev->QueueInsert(cpu, a.rq, ScsiMlqueue::kEhRetry);
  }
  if (!h->aborts_.empty() && !h->abort_work_.pending()) {
    k.kblockd().Queue(&cpu, &h->abort_work_, cpu.id(), h->aborts_.front().due - cpu.now());
  }
}

}  // namespace blklab::model
