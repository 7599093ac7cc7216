#include "engine/model/blk_softirq.h"

#include <algorithm>
#include <utility>

#include "engine/model/blk_mq.h"
#include "engine/model/kernel.h"

namespace blklab::model {

BlkCpuDone::BlkCpuDone(Kernel& kernel)
    : kernel_(kernel), done_(kernel.machine().num_cpus()),
      spare_(kernel.machine().num_cpus()),
      lines_(static_cast<size_t>(kernel.machine().num_cpus())),
      softirq_(this), ipi_(this) {}

void BlkCpuDone::RaiseSoftirq(sim::Cpu& cpu, Request* rq) {
  const auto& c = kernel_.costs();
  // llist_add on this CPU's blk_cpu_done; raise_softirq only if it was empty.
  cpu.Charge(kernel_.fn.blk_mq_raise_softirq,
             lines_[static_cast<size_t>(cpu.id())].Write(kernel_.machine(), cpu.id(), c.atomic_local));
  std::vector<Done>& list = done_[cpu.id()];
  list.push_back({rq, cpu.now()});
  if (list.size() > 1) return;  // a BLOCK_SOFTIRQ run is already pending
  cpu.Charge(kernel_.fn.blk_mq_raise_softirq, c.raise_softirq);
  if (cpu.RaiseSoftirq(&softirq_, 0)) cpu.Charge(kernel_.fn.try_to_wake_up, c.try_to_wake_up);
}

void BlkCpuDone::SendIpi(sim::Cpu& cpu, Request* rq, int target) {
  const auto& c = kernel_.costs();
  // llist_add on the submitter's blk_cpu_done, whose line comes over.
  cpu.Charge(kernel_.fn.blk_mq_complete_request,
             lines_[static_cast<size_t>(target)].Write(kernel_.machine(), cpu.id(), c.atomic_local));
  std::vector<Done>& list = done_[target];
  list.push_back({rq, cpu.now()});
  if (list.size() > 1) return;  // the target's softirq (or its IPI) is on the way
  cpu.Charge(kernel_.fn.smp_call_function_single_async, c.ipi_send);
  DeliverIpi(target, cpu.now());
}

void BlkCpuDone::DeliverIpi(int target, sim::SimTime sent_at) {
  kernel_.Count(Counter::k_ipi);
  kernel_.machine().cpu(target).RaiseHardirq(sent_at + kernel_.costs().ipi_delivery_latency, &ipi_, 0);
}

sim::Task BlkCpuDone::CompletionIpi::Handle(sim::Cpu& cpu, uint64_t) {
  sim::StackFrame frame(cpu, d_->kernel_.fn.generic_smp_call_function_single_interrupt);
  Kernel& k = d_->kernel_;
  k.Count(Counter::k_hardirq);
  // ipi_receive covers the hardirq and the BLOCK_SOFTIRQ it raises; the
  // softirq charges its own entry/exit, the hardirq the rest.
  cpu.Charge(k.fn.generic_smp_call_function_single_interrupt,
             std::max<int64_t>(k.costs().ipi_receive - k.costs().softirq_entry_exit, 0));
  cpu.RaiseSoftirq(&d_->softirq_, 0);
  co_return;
}

sim::Task BlkCpuDone::DoneSoftirq::Handle(sim::Cpu& cpu, uint64_t) {
  sim::StackFrame frame(cpu, d_->kernel_.fn.blk_done_softirq);
  Kernel& k = d_->kernel_;
  k.Count(Counter::k_block_softirq);
  cpu.Charge(k.fn.blk_done_softirq, k.costs().softirq_entry_exit);
  co_await cpu.Sync();
  // llist_del_all: the requests queued so far; later ones raise again.
  cpu.Charge(k.fn.blk_done_softirq,
             d_->lines_[static_cast<size_t>(cpu.id())].Write(k.machine(), cpu.id(), k.costs().atomic_local));
  std::vector<Done> list = std::move(d_->spare_[cpu.id()]);
  std::vector<Done>& pending = d_->done_[cpu.id()];
  list.swap(pending);
  // Added after now (by a CPU that ran ahead): not ours; the first of them
  // found the list empty and sent the IPI.
  sim::SimTime later = sim::kSimTimeNever;
  size_t kept = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i].at <= cpu.now()) {
      list[kept++] = list[i];
    } else {
      later = std::min(later, list[i].at);
      pending.push_back(list[i]);
    }
  }
  list.resize(kept);
  if (later != sim::kSimTimeNever) d_->DeliverIpi(cpu.id(), later);
  for (const Done& e : list) {
    co_await cpu.Sync();
    e.rq->q->MqOpsComplete(cpu, e.rq);
  }
  list.clear();
  d_->spare_[cpu.id()] = std::move(list);
}

}  // namespace blklab::model
