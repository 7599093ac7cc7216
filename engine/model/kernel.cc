#include "engine/model/kernel.h"

#include "engine/model/blk_softirq.h"

namespace blklab::model {

const char* CounterName(Counter c) {
  switch (c) {
#define BLKLAB_COUNTER_NAME(name) \
  case Counter::k_##name:         \
    return #name;
    BLKLAB_KERNEL_COUNTERS(BLKLAB_COUNTER_NAME)
#undef BLKLAB_COUNTER_NAME
    case Counter::kNumCounters:
      break;
  }
  return "?";
}

Kernel::Kernel(sim::Machine& machine, const host::CostTable& costs, const host::Knobs& knobs, int hz)
    : machine_(machine),
      costs_(costs),
      knobs_(knobs),
      hz_(hz),
      kblockd_(machine, "kblockd",
               sim::WorkQueueCosts{costs.kworker_queue, costs.try_to_wake_up}) {
  if (knobs.timer_wheel_granularity) kblockd_.set_timer_wheel_hz(hz);
  cpu_done_ = std::make_unique<BlkCpuDone>(*this);
  auto& r = machine.functions();
  fn.ktime_get_ns = r.Intern("ktime_get_ns");
  fn.submit_bio_noacct = r.Intern("submit_bio_noacct");
  fn.blk_mq_submit_bio = r.Intern("blk_mq_submit_bio");
  fn.bio_alloc_bioset = r.Intern("bio_alloc_bioset");
  fn.down_read = r.Intern("down_read");
  fn.up_read = r.Intern("up_read");
  fn.iomap_dio_rw = r.Intern("iomap_dio_rw");
  fn.bio_associate_blkg = r.Intern("bio_associate_blkg");
  fn.blk_cgroup_bio_start = r.Intern("blk_cgroup_bio_start");
  fn.blk_throtl_bio = r.Intern("blk_throtl_bio");
  fn.blk_attempt_plug_merge = r.Intern("blk_attempt_plug_merge");
  fn.blk_mq_attempt_bio_merge = r.Intern("blk_mq_attempt_bio_merge");
  fn.sbitmap_queue_get = r.Intern("__sbitmap_queue_get");
  fn.sbitmap_queue_clear = r.Intern("sbitmap_queue_clear");
  fn.blk_account_io_start = r.Intern("blk_account_io_start");
  fn.blk_account_io_done = r.Intern("blk_account_io_done");
  fn.blk_add_rq_to_plug = r.Intern("blk_add_rq_to_plug");
  fn.blk_mq_flush_plug_list = r.Intern("blk_mq_flush_plug_list");
  fn.blk_mq_run_hw_queue = r.Intern("blk_mq_run_hw_queue");
  fn.sbitmap_any_bit_set = r.Intern("sbitmap_any_bit_set");
  fn.flush_busy_ctx = r.Intern("flush_busy_ctx");
  fn.dispatch_rq_from_ctx = r.Intern("dispatch_rq_from_ctx");
  fn.blk_mq_dispatch_rq_list = r.Intern("blk_mq_dispatch_rq_list");
  fn.blk_mq_end_request = r.Intern("blk_mq_end_request");
  fn.blk_mq_complete_request = r.Intern("blk_mq_complete_request");
  fn.blk_mq_raise_softirq = r.Intern("blk_mq_raise_softirq");
  fn.smp_call_function_single_async = r.Intern("smp_call_function_single_async");
  fn.generic_smp_call_function_single_interrupt =
      r.Intern("generic_smp_call_function_single_interrupt");
  fn.blk_done_softirq = r.Intern("blk_done_softirq");
  fn.try_to_wake_up = r.Intern("try_to_wake_up");
  fn.percpu_ref_get = r.Intern("percpu_ref_get_many");
  fn.rcu_read_lock = r.Intern("__rcu_read_lock");
  fn.io_schedule = r.Intern("io_schedule");
  fn.raw_spin_lock = r.Intern("_raw_spin_lock");
  fn.raw_spin_lock_irqsave = r.Intern("_raw_spin_lock_irqsave");
  fn.native_queued_spin_lock_slowpath = r.Intern("native_queued_spin_lock_slowpath");
  fn.blk_mq_sched_restart = r.Intern("blk_mq_sched_restart");
  fn.blk_mq_get_tag = r.Intern("blk_mq_get_tag");
  fn.blk_mq_insert_request = r.Intern("blk_mq_insert_request");
  fn.blk_mq_try_issue_directly = r.Intern("blk_mq_try_issue_directly");
  fn.hrtimer_start = r.Intern("hrtimer_start_range_ns");
  fn.hrtimer_interrupt = r.Intern("hrtimer_interrupt");
  fn.irq_exit_rcu = r.Intern("irq_exit_rcu");
  fn.blk_hctx_poll = r.Intern("blk_hctx_poll");
  fn.blk_mq_end_request_batch = r.Intern("blk_mq_end_request_batch");
  fn.cpupri_set = r.Intern("cpupri_set");
  cpupri_cpu_to_pri_lines_.resize((machine.num_cpus() + 15) / 16);
  fn.blk_mq_run_hw_queues = r.Intern("blk_mq_run_hw_queues");
  fn.blk_mq_run_work_fn = r.Intern("blk_mq_run_work_fn");
  fn.blk_mq_sched_dispatch_requests = r.Intern("blk_mq_sched_dispatch_requests");
  fn.blk_mq_do_dispatch_sched = r.Intern("blk_mq_do_dispatch_sched");
  fn.blk_mq_do_dispatch_ctx = r.Intern("blk_mq_do_dispatch_ctx");
}

Kernel::~Kernel() = default;

void Kernel::CpupriSet(sim::Cpu& cpu) {
  // The old vector: cpumask_clear_cpu, atomic_dec; the new one:
  // cpumask_set_cpu, atomic_inc; then cp->cpu_to_pri[cpu] = newpri.
  int64_t ns = 0;
  for (int v = 0; v < 2; ++v) {
    ns += WriteLine(cpu, cpupri_mask_line_[v]);
    ns += WriteLine(cpu, cpupri_count_line_[v]);
  }
  ns += WriteLine(cpu, cpupri_cpu_to_pri_lines_[static_cast<size_t>(cpu.id()) / 16]);
  cpu.Charge(fn.cpupri_set, ns);
}

}  // namespace blklab::model
