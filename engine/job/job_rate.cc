// engine/job/job_rate.cc
//
// JobThread's pacing: rate= / rate_iops= (fio's io_u.c rate_ddir,
// usec_sleep), flow= (flow.c flow_threshold_exceeded) and thinktime
// (backend.c handle_thinktime), and the timed wake-ups they sleep on.
#include "engine/job/job_thread.h"

#include <algorithm>
#include <cstdint>

#include "engine/job/job_rate.h"

namespace blklab::job {

void JobThread::OnEvent(uint32_t, uint64_t gen) {
  if (gen == rate_.wake_gen && thread_->sleeping()) thread_->Wake(kernel_.machine().sim().Now());
}

sim::Task JobThread::SleepUntil(sim::SimTime t) {
  co_await cpu().Sync();
  if (t <= cpu().now()) co_return;
  ++rate_.wake_gen;
  kernel_.machine().sim().Schedule(t, this, 0, rate_.wake_gen);
  while (cpu().now() < t) {
    co_await cpu().SleepMigratable();
    co_await cpu().Sync();
  }
}

sim::Task JobThread::FlowHold() {
  // flow_threshold_exceeded at the head of do_io's loop: while this job's
  // share of its flow's count is above its share of the flow's weight, it
  // is held back. Without flow_sleep fio `continue`s its loop: a busy loop
  // in user space, which only the peers' progress (other events) can end,
  // so it is charged up to the next event in one step. With flow_sleep it
  // quiesces (submits and reaps everything) and sleeps. Returns with the
  // I/O counted in the flow, or when the job is stopping.
  FioFlow& flow = *config_.flow;
  for (;;) {
    co_await cpu().Sync();
    if (Stopping()) {
      rate_.flow_held = false;
      co_return;
    }
    const double count_ratio = static_cast<double>(rate_.flow_count) / static_cast<double>(flow.counter);
    const double weight_ratio = static_cast<double>(spec_.flow) / static_cast<double>(flow.total_weight);
    rate_.flow_held = count_ratio > weight_ratio;
    if (!rate_.flow_held) {
      ++flow.counter;
      ++rate_.flow_count;
      co_return;
    }
    if (spec_.flow_sleep_us > 0) {
      co_await Quiesce();
      co_await SleepUntil(cpu().now() + static_cast<int64_t>(spec_.flow_sleep_us) * sim::kNsPerUs);
      continue;
    }
    const sim::SimTime until = std::min(cpu().RunAheadLimit(), config_.end_at);
    cpu().ChargeRaw(fn_flow_, std::max<int64_t>(until - cpu().now(), 1));
  }
}

workload::Direction JobThread::RateDirection(workload::Direction picked) const {
  // fio's rate_ddir: keep the mix's pick if it is not ahead of its rate;
  // else switch to the other direction if that one is behind (and the mix
  // has it); else take whichever may issue first (Throttle then sleeps to
  // its slot). A direction without a rate is never ahead.
  const int d = static_cast<int>(picked);
  const int o = d ^ 1;
  const sim::SimTime now = cpu().now();
  if (rate_.next[d] <= now) return picked;
  const uint32_t other_mix = picked == workload::Direction::kRead ? 100 - spec_.rwmixread : spec_.rwmixread;
  if (other_mix == 0) return picked;
  const workload::Direction other = static_cast<workload::Direction>(o);
  if (rate_.next[o] <= now) return other;
  return rate_.next[d] <= rate_.next[o] ? picked : other;
}

sim::Task JobThread::Throttle(IoU* u) {
  // rate / rate_iops (fio's rate_ddir): each direction may issue its next IO
  // only after 1/rate has passed, evenly (linear) or exponentially
  // distributed (poisson).
  const int d = static_cast<int>(u->dir);
  const uint64_t iops = spec_.rate_iops[d];
  const uint64_t bps = spec_.rate_bps[d];
  if (iops == 0 && bps == 0) co_return;
  double gap_ns = 0;
  if (iops > 0) gap_ns = 1e9 / static_cast<double>(iops);
  if (bps > 0) gap_ns = std::max(gap_ns, 1e9 * u->bio.bytes / static_cast<double>(bps));
  if (spec_.rate_process == workload::RateProcess::kPoisson) gap_ns = rate_.rng.Exponential(gap_ns);
  if (rate_.next[d] == 0) rate_.next[d] = config_.start_at;
  const sim::SimTime slot = rate_.next[d];
  rate_.next[d] = slot + static_cast<int64_t>(gap_ns);
  if (slot > cpu().now()) {
    // fio's rate_ddir quiesces before it sleeps (io_submit_mode=inline):
    // submit what is queued and reap everything in flight except `u`
    // (prepared, counted in ctx_.in_flight, not yet queued); then sleep to the
    // slot.
    if (!queued_.empty()) co_await Commit();
    if (!workload::IsSynchronous(spec_.ioengine)) {
      while (ctx_.in_flight > 1) {
        if (!TryReapFromRing(1, ctx_.in_flight - 1)) co_await Reap(1, ctx_.in_flight - 1);
      }
    }
    co_await SleepUntil(slot);
    u->start_time = cpu().now();
  }
}

sim::Task JobThread::ThinkTime(bool issued) {
  // handle_thinktime: every thinktime_blocks IOs, quiesce, spin, then sleep.
  const bool counts = issued == (spec_.thinktime_blocks_type == workload::ThinktimeBlocksType::kIssue);
  if (spec_.thinktime_ns <= 0 || !counts) co_return;
  if (++rate_.think_count < std::max<uint64_t>(spec_.thinktime_blocks, 1)) co_return;
  rate_.think_count = 0;
  co_await Quiesce();
  if (spec_.thinktime_spin_ns > 0) cpu().Charge(fn_usec_spin_, spec_.thinktime_spin_ns);
  const int64_t left = spec_.thinktime_ns - spec_.thinktime_spin_ns;
  if (left > 0) co_await SleepUntil(cpu().now() + left);
}

}  // namespace blklab::job
