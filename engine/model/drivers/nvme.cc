#include "engine/model/drivers/nvme.h"

#include <algorithm>
#include <utility>

namespace blklab::model {

Nvme::NvmeQueue::NvmeQueue(Kernel& kernel, const std::string& name)
    : sq_lock(kernel.machine(), name + ":nvmeq->sq_lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
              kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()),
      cq_poll_lock(kernel.machine(), name + ":nvmeq->cq_poll_lock", sim::SpinLockKind::kSpinLock, kernel.fn.raw_spin_lock,
                   kernel.fn.native_queued_spin_lock_slowpath, kernel.lock_costs()) {}

Nvme::Nvme(Kernel& kernel, std::string name, const NvmeConfig& config, const QueueConfig& queue)
    : kernel_(kernel),
      name_(std::move(name)),
      config_(config),
      media_(config.media),
      media_done_(this),
      irq_(this),
      coalesce_timer_(this) {
  const sim::Machine& m = kernel.machine();
  TagSetConfig ts;
  ts.nr_hw_queues = config.default_queues;
  ts.nr_poll_queues = config.poll_queues;
  ts.queue_depth = config.queue_depth;
  // nvme_pci_map_queues: the interrupt queues follow the managed-IRQ spread
  // (blk_mq_pci_map_queues), the poll queues group_cpus_evenly (6.x).
  ts.mq_map = GroupCpusEvenly(m, config.default_queues);
  if (config.poll_queues > 0) ts.poll_map = GroupCpusEvenly(m, config.poll_queues);
  set_ = std::make_unique<TagSet>(kernel, name_, ts);
  q_ = std::make_unique<RequestQueue>(kernel, name_, *set_, this, queue);
  for (int i = 0; i < q_->nr_hw_queues(); ++i) {
    auto nq = std::make_unique<NvmeQueue>(kernel, name_ + "q" + std::to_string(i + 1));
    Hctx* h = q_->hctx(i);
    nq->polled = h->is_poll();
    // The vector fires on one CPU of the queue's group: the last one.
    nq->irq_cpu = h->cpumask().back();
    queues_.push_back(std::move(nq));
  }
  fn_queue_rq_ = kernel.Intern("nvme_queue_rq");
  fn_queue_rqs_ = kernel.Intern("nvme_queue_rqs");
  fn_submit_cmds_ = kernel.Intern("nvme_submit_cmds");
  fn_irq_ = kernel.Intern("nvme_irq");
  fn_poll_ = kernel.Intern("nvme_poll");
  fn_complete_batch_ = kernel.Intern("nvme_pci_complete_batch");
  fn_complete_rq_ = kernel.Intern("nvme_pci_complete_rq");
  fn_commit_rqs_ = kernel.Intern("nvme_commit_rqs");
}

// --- submission ---------------------------------------------------------------

void Nvme::CopySqe(sim::Cpu& cpu, NvmeQueue& nq, Request* rq) {
  cpu.Charge(fn_submit_cmds_, kernel_.costs().nvme_sq_copy);
  nq.unfetched.push_back(rq);
}

void Nvme::RingSqDoorbell(sim::Cpu& cpu, NvmeQueue& nq) {
  if (nq.unfetched.empty()) return;
  cpu.Charge(fn_submit_cmds_, kernel_.costs().nvme_doorbell);
  // The controller fetches the SQEs the doorbell published; each goes
  // through the media.
  sim::Simulator& sim = kernel_.machine().sim();
  while (!nq.unfetched.empty()) {
    Request* rq = nq.unfetched.pop_front();
    const sim::SimTime done = media_.Admit(cpu.now(), rq->op, rq->bytes);
    sim.ScheduleBulk(done, &media_done_, 0, reinterpret_cast<uint64_t>(rq));
  }
}

sim::Task Nvme::QueueRq(sim::Cpu& cpu, Hctx* hctx, Request* rq, bool last, BlkStatus* status) {
  sim::StackFrame frame(cpu, fn_queue_rq_);
  // nvme_queue_rq: nvme_prep_rq (setup_cmd, DMA map, blk_mq_start_request),
  // then the SQE under sq_lock and the doorbell when `last`.
  cpu.Charge(fn_queue_rq_, kernel_.costs().nvme_prep_rq);
  q_->StartRequest(cpu, rq);
  NvmeQueue& nq = *queues_[hctx->queue_num()];
  co_await nq.sq_lock.Lock(cpu);
  CopySqe(cpu, nq, rq);
  if (last) RingSqDoorbell(cpu, nq);
  co_await cpu.Sync();
  nq.sq_lock.Unlock(cpu);
  *status = BlkStatus::kOk;
}

sim::Task Nvme::SubmitCmds(sim::Cpu& cpu, NvmeQueue& nq, RequestList& run) {
  co_await nq.sq_lock.Lock(cpu);
  while (!run.empty()) CopySqe(cpu, nq, run.pop_front());
  RingSqDoorbell(cpu, nq);
  co_await cpu.Sync();
  nq.sq_lock.Unlock(cpu);
}

sim::Task Nvme::QueueRqs(sim::Cpu& cpu, RequestList& list) {
  sim::StackFrame frame(cpu, fn_queue_rqs_);
  // nvme_queue_rqs: every request prepared outside the lock, then each run
  // of one hctx submitted by nvme_submit_cmds.
  RequestList run;
  Hctx* run_hctx = nullptr;
  while (!list.empty()) {
    Request* rq = list.pop_front();
    if (rq->mq_hctx != run_hctx && !run.empty()) {
      co_await SubmitCmds(cpu, *queues_[run_hctx->queue_num()], run);
    }
    run_hctx = rq->mq_hctx;
    cpu.Charge(fn_queue_rqs_, kernel_.costs().nvme_prep_rq);
    q_->StartRequest(cpu, rq);
    run.push_back(rq);
  }
  if (!run.empty()) co_await SubmitCmds(cpu, *queues_[run_hctx->queue_num()], run);
}

sim::Task Nvme::CommitRqs(sim::Cpu& cpu, Hctx* hctx) {
  sim::StackFrame frame(cpu, fn_commit_rqs_);
  // nvme_commit_rqs: ring a doorbell that a batch left unrung.
  NvmeQueue& nq = *queues_[hctx->queue_num()];
  cpu.Charge(fn_commit_rqs_, kernel_.costs().line_read_hit);
  co_await cpu.Sync();
  if (nq.unfetched.empty()) co_return;
  co_await nq.sq_lock.Lock(cpu);
  RingSqDoorbell(cpu, nq);
  co_await cpu.Sync();
  nq.sq_lock.Unlock(cpu);
}

// --- completion ---------------------------------------------------------------

void Nvme::MediaDone::OnEvent(uint32_t, uint64_t arg) { n_->PostCqe(reinterpret_cast<Request*>(arg)); }

void Nvme::PostCqe(Request* rq) {
  const uint32_t qid = rq->mq_hctx->queue_num();
  NvmeQueue& nq = *queues_[qid];
  nq.cq.push_back(rq);
  if (nq.polled) return;  // found by the next nvme_poll
  ++nq.posted_since_irq;
  if (config_.irq_coalesce_threshold > 0 || config_.irq_coalesce_time_ns > 0) {
    // Aggregation: interrupt at the threshold, or when the time runs out.
    if (config_.irq_coalesce_threshold > 0 && nq.posted_since_irq >= config_.irq_coalesce_threshold) {
      RaiseIrq(qid);
      return;
    }
    if (config_.irq_coalesce_time_ns > 0 && !nq.coalesce_timer_armed && !nq.irq_pending) {
      nq.coalesce_timer_armed = true;
      sim::Simulator& sim = kernel_.machine().sim();
      sim.Schedule(sim.Now() + config_.irq_coalesce_time_ns, &coalesce_timer_, 0, qid);
    }
    return;
  }
  RaiseIrq(qid);
}

void Nvme::CoalesceTimer::OnEvent(uint32_t, uint64_t qid) {
  NvmeQueue& nq = *n_->queues_[qid];
  nq.coalesce_timer_armed = false;
  if (!nq.cq.empty()) n_->RaiseIrq(static_cast<uint32_t>(qid));
}

void Nvme::RaiseIrq(uint32_t qid) {
  NvmeQueue& nq = *queues_[qid];
  nq.posted_since_irq = 0;
  if (nq.irq_pending) return;  // the handler in flight reaps it
  nq.irq_pending = true;
  sim::Machine& m = kernel_.machine();
  m.cpu(nq.irq_cpu).RaiseHardirq(m.sim().Now(), &irq_, qid);
}

int Nvme::ReapCq(sim::Cpu& cpu, uint32_t qid, sim::FnId fn) {
  // nvme_poll_cq: per CQE nvme_handle_cqe -> blk_mq_complete_request_remote
  // (polled or same CPU: local) -> io_comp_batch; one CQ doorbell; then
  // nvme_pci_complete_batch.
  NvmeQueue& nq = *queues_[qid];
  const auto& c = kernel_.costs();
  cpu.Charge(fn, nq.cq_line.Read(kernel_.machine(), cpu.id(), c.line_read_hit));
  int found = 0;
  while (!nq.cq.empty()) {
    Request* rq = nq.cq.pop_front();
    ++found;
    cpu.Charge(fn, c.nvme_cqe);
    if (!q_->CompleteRequestRemote(cpu, rq)) batch_.push_back(rq);
  }
  if (found == 0) return 0;
  cpu.Charge(fn, c.nvme_doorbell);  // nvme_ring_cq_doorbell
  if (!batch_.empty()) {
    for (Request* r = batch_.front(); r != nullptr; r = r->next) {
      cpu.Charge(fn_complete_batch_, c.nvme_complete_batch_rq);
    }
    q_->EndRequestBatch(cpu, batch_);
  }
  return found;
}

sim::Task Nvme::QueueIrq::Handle(sim::Cpu& cpu, uint64_t arg) {
  sim::StackFrame frame(cpu, n_->fn_irq_);
  Kernel& k = n_->kernel_;
  k.Count(Counter::k_hardirq);
  cpu.Charge(n_->fn_irq_, k.costs().hardirq_entry_exit);
  co_await cpu.Sync();
  const uint32_t qid = static_cast<uint32_t>(arg);
  n_->queues_[qid]->irq_pending = false;
  n_->ReapCq(cpu, qid, n_->fn_irq_);
}

sim::Task Nvme::Poll(sim::Cpu& cpu, Hctx* hctx, int* completed) {
  sim::StackFrame frame(cpu, fn_poll_);
  // nvme_poll: a lock-free look at the CQ; if a CQE is pending, reap under
  // cq_poll_lock.
  const uint32_t qid = hctx->queue_num();
  NvmeQueue& nq = *queues_[qid];
  cpu.Charge(fn_poll_, kernel_.costs().line_read_hit);
  *completed = 0;
  co_await cpu.Sync();
  if (nq.cq.empty()) co_return;
  co_await nq.cq_poll_lock.Lock(cpu);
  *completed = ReapCq(cpu, qid, fn_poll_);
  co_await cpu.Sync();
  nq.cq_poll_lock.Unlock(cpu);
}

void Nvme::Complete(sim::Cpu& cpu, Request* rq) {
  // ->complete (nvme_pci_complete_rq): a completion sent home by IPI or
  // BLOCK_SOFTIRQ ends on its own.
  cpu.Charge(fn_complete_rq_, kernel_.costs().nvme_complete_rq);
  q_->EndRequest(cpu, rq, BlkStatus::kOk);
}

}  // namespace blklab::model
