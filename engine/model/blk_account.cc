// engine/model/blk_account.cc: RequestQueue's I/O accounting and its
// diagnostics: blk_account_io_start / _done and update_io_ticks (the
// /sys/block/X/stat counters, btt's stages), and the requests in flight as
// the timeout handler and the stall report see them. The rest of the request
// queue is in blk_mq.cc.
#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/model/blk_mq.h"

namespace blklab::model {

void RequestQueue::AccountStart(sim::Cpu& cpu, Request* rq) {
  if (config_.sysfs.iostats) {
    cpu.Charge(kernel_.fn.blk_account_io_start, kernel_.costs().blk_account_io_start);
    // update_io_ticks: a cmpxchg on the shared part stamp, at most once per jiffy.
    if (cpu.now() >= next_part_stamp_) {
      const int64_t jiffy = kernel_.jiffy_ns();
      next_part_stamp_ = (cpu.now() / jiffy + 1) * jiffy;
      cpu.Charge(kernel_.fn.blk_account_io_start,
                 part_stamp_line_.Write(kernel_.machine(), cpu.id(), kernel_.costs().atomic_local));
    }
  }
  UpdateIoTicks(cpu.now(), /*end=*/false);
  ++disk_.in_flight;
}

void RequestQueue::UpdateIoTicks(sim::SimTime now, bool end) {
  const int64_t now_jiffies = now / kernel_.jiffy_ns();
  if (now_jiffies <= disk_.stamp_jiffies) return;
  disk_.io_ticks_jiffies += end ? now_jiffies - disk_.stamp_jiffies : 1;
  disk_.stamp_jiffies = now_jiffies;
}

void RequestQueue::AccountDone(sim::Cpu& cpu, Request* rq, sim::SimTime now) {
  // __blk_mq_end_request_acct: the scheduler's completed_request, then
  // blk_account_io_done; neither for a passthrough command (no
  // RQF_USE_SCHED, blk_do_io_stat false).
  if (rq->passthrough) return;
  if (elevator_) elevator_->CompletedRequest(cpu, rq, now);
  if (config_.sysfs.iostats) {
    cpu.Charge(kernel_.fn.blk_account_io_done, kernel_.costs().blk_account_io_done);
  }
  const int dir = rq->op == ReqOp::kWrite ? 1 : 0;
  disk_.ios[dir] += 1;
  disk_.sectors[dir] += rq->bytes >> kSectorShift;
  disk_.ticks_ns[dir] += now - rq->alloc_time_ns;
  disk_.in_queue_ns += now - rq->alloc_time_ns;
  if (rq->issue_time_ns >= 0) {  // ended without reaching the driver: Q2C only
    disk_.g2d.Add(rq->issue_time_ns - rq->alloc_time_ns);
    disk_.d2c.Add(now - rq->issue_time_ns);
  }
  disk_.q2c.Add(now - (rq->queue_time_ns >= 0 ? rq->queue_time_ns : rq->alloc_time_ns));
  UpdateIoTicks(now, /*end=*/true);
  --disk_.in_flight;
}

void RequestQueue::FinishDiskStats(sim::SimTime t) {
  // part_stat_show / diskstats_show: update_io_ticks(part, jiffies, true)
  // while requests are in flight.
  if (disk_.in_flight > 0) UpdateIoTicks(t, /*end=*/true);
}

std::string RequestQueue::DescribeParking(const Request* rq) const {
  if (rq->state == Request::State::kInFlight) return "started, held by the driver";
  for (const Request* r = requeue_list_.front(); r != nullptr; r = r->next) {
    if (r == rq) return "on the requeue list (requeue work pending)";
  }
  for (const auto& h : hctxs_) {
    if (!h->DispatchHolds(rq)) continue;
    return absl::StrCat("parked on hctx->dispatch of hctx ", h->queue_num(), " (SCHED_RESTART ",
                        h->sched_restart() ? "set" : "clear", ", ",
                        h->run_work_pending() ? "a queue run pending" : "no queue run or delayed run pending",
                        h->stopped() ? ", hctx stopped" : "", ")");
  }
  if (rq->tag == kNoTag && rq->internal_tag != kNoTag) return "in the I/O scheduler";
  return "on a software queue or being inserted";
}

sim::SimTime RequestQueue::NextTimeout() const {
  sim::SimTime next = 0;
  const uint32_t nr_tag_objs = set_.config().hctx_shared ? 1 : set_.nr_hw_queues();
  for (uint32_t i = 0; i < nr_tag_objs; ++i) {
    const Tags& t = set_.tags(i);
    for (uint32_t tag = 0; tag < t.nr_tags(); ++tag) {
      const Request* rq = t.rq(tag);
      if (rq != nullptr && rq->q == this && rq->state == Request::State::kInFlight && !rq->timed_out &&
          (next == 0 || rq->deadline < next)) {
        next = rq->deadline;
      }
    }
  }
  return next;
}

void RequestQueue::RqTimedOut(sim::Cpu& cpu, Request* rq) {
  kernel_.Count(Counter::k_rq_timed_out);
  cpu.Charge(kernel_.fn.blk_mq_end_request, kernel_.costs().line_read_hit);
  rq->timed_out = true;
  absl::StatusOr<BlkEhTimerReturn> r = driver_->Timeout(cpu, rq);
  if (!r.ok()) {
    kernel_.Fail(absl::Status(
        r.status().code(),
        absl::StrCat(name_, ": request tag ", rq->tag, " sector ", rq->sector, " was in flight past io_timeout=",
                     config_.sysfs.io_timeout, " ms at ", cpu.now() / sim::kNsPerMs, " ms of virtual time; ",
                     r.status().message())));
    return;
  }
  if (*r == BlkEhTimerReturn::kResetTimer) timeout_.Add(cpu, rq, config_.timeout_timer);
}

std::vector<const Request*> RequestQueue::StuckRequests(sim::SimTime now, int64_t age_ns) const {
  std::vector<const Request*> out;
  const uint32_t nr_tag_objs = set_.config().hctx_shared ? 1 : set_.nr_hw_queues();
  for (uint32_t i = 0; i < nr_tag_objs; ++i) {
    const Tags& t = set_.tags(i);
    for (uint32_t tag = 0; tag < t.nr_tags(); ++tag) {
      const Request* rq = t.rq(tag);
      if (rq != nullptr && rq->q == this && now - rq->alloc_time_ns > age_ns) out.push_back(rq);
    }
  }
  for (const auto& st : sched_tags_) {
    for (uint32_t tag = 0; tag < st->nr_tags(); ++tag) {
      const Request* rq = st->rq(tag);
      // Requests holding a driver tag were listed above.
      if (rq != nullptr && rq->tag == kNoTag && now - rq->alloc_time_ns > age_ns) out.push_back(rq);
    }
  }
  return out;
}

}  // namespace blklab::model
