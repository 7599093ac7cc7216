// fio's io_uring engine (and io_uring_cmd) as the kernel sees it
// (docs/kernel-model.md §2.1): io_uring_enter per submitted batch, a plug above
// two SQEs with plug->nr_ios = batch, per-SQE issue (io_submit_sqes ->
// io_read -> blkdev_read_iter -> __blkdev_direct_IO_async), fget/fput
// unless registerfiles, page pinning unless fixedbufs, the per-CPU bio
// cache. Completions in the submitter's own context post their CQE at once;
// others go through task_work on the ring's work list (DEFER_TASKRUN, as
// fio sets it: a cmpxchg on a line the submitter owns) and wake the
// submitter if it waits in io_cqring_wait: once enough are queued for its
// wait (lazy wake, knob io_uring_lazy_wake), else at the first. IOPOLL (hipri): completions are only
// marked; the submitter spins in io_do_iopoll -> blk_hctx_poll. Polled bios
// are REQ_NOWAIT: a request that finds no tag ends with -EAGAIN and
// io_uring issues it again (REQ_F_REISSUE; the kernel hands it to io-wq,
// the model retries it from the polling loop, which keeps completing what
// holds the tags). The CQ ring is read from user space.
//
// io_uring_cmd (fio's engine for /dev/ngXnY): each SQE is an NVMe command
// (nvme_uring_cmd_io): a passthrough request allocated, the buffer mapped,
// and blk_execute_rq_nowait -- straight onto hctx->dispatch with no I/O
// scheduler, no bio merging and no disk statistics; completion comes back
// through task_work as for a read or write.
//
// Buffered I/O (direct=0): a read is tried without blocking (IOCB_NOWAIT |
// IOCB_WAITQ, 5.9+): cached pages are copied inside io_uring_enter and the
// CQE posted at once; otherwise the readahead it starts runs and the request
// waits on the locked page (__folio_lock_async), whose unlock queues a
// task_work retry (io_async_buf_func) that copies and posts the CQE; a page
// evicted meanwhile gets -EAGAIN and the read goes to io-wq. Buffered writes
// go to io-wq (ext4 has no non-blocking buffered writes): one worker per
// ring, the inode's hashed work run in order, each write blocking there
// (generic_perform_write, balance_dirty_pages) and completing through the
// ring's task_work.
#include <memory>
#include <string>
#include <vector>

#include "engine/job/io_engine.h"
#include "engine/job/io_engine_type.h"
#include "engine/sim/cacheline.h"

namespace blklab::job {
namespace {

class IoUringEngine final : public IoEngineModel {
 public:
  explicit IoUringEngine(IoContext& ctx) : ctx_(ctx) {
    auto& r = ctx.kernel.machine().functions();
    fn_io_uring_enter_ = r.Intern("__x64_sys_io_uring_enter");
    fn_io_submit_sqes_ = r.Intern("io_submit_sqes");
    fn_fget_ = r.Intern("fget");
    fn_pin_ = r.Intern("bio_iov_iter_get_pages");
    fn_io_req_complete_post_ = r.Intern("io_req_complete_post");
    fn_tctx_task_work_ = r.Intern("tctx_task_work");
    task_work_.reserve(std::max<uint32_t>(ctx.spec.iodepth, 1));
    if (ctx.page_cache != nullptr) {
      const uint32_t depth = std::max<uint32_t>(ctx.spec.iodepth, 1);
      waiters_.resize(depth);
      for (uint32_t i = 0; i < depth; ++i) waiters_[i].engine = this;
      retry_.assign(depth, false);
      iowq_queue_.Reset(depth);
      fn_io_wq_ = r.Intern("io_wq_worker");
      iowq_ = std::make_unique<sim::Thread>(ctx.kernel.machine(), "iou-wrk/" + ctx.spec.name, ctx.thread.cpu());
      iowq_->set_cpus_allowed(ctx.thread.cpus_allowed());
    }
    reissue_.reserve(std::max<uint32_t>(ctx.spec.iodepth, 1));
    reissuing_.reserve(std::max<uint32_t>(ctx.spec.iodepth, 1));
  }

  bool reaps_in_user_space() const override { return true; }
  bool polled() const override { return ctx_.spec.engine_flags.hipri && ctx_.spec.ioengine == workload::IoEngine::kIoUring; }

  sim::Task Commit(std::vector<IoU*>& batch) override {
    const auto& c = ctx_.kernel.costs();
    const auto& flags = ctx_.spec.engine_flags;
    if (ctx_.page_cache != nullptr) {
      co_await CommitBuffered(batch);
      co_return;
    }
    co_await SubmitBatch(
        ctx_, batch, fn_io_uring_enter_,
        [this, &c, &flags](IoU* u) {
          ctx_.cpu().Charge(fn_io_submit_sqes_, c.io_uring_issue_sqe);
          if (!flags.registerfiles) ctx_.cpu().Charge(fn_fget_, c.fget_fput);
          if (!flags.fixedbufs) ctx_.cpu().Charge(fn_pin_, PinCost(c, u->bio.bytes));
          ctx_.cpu().Charge(ctx_.kernel.fn.bio_alloc_bioset,
                          ctx_.kernel.knobs().bio_alloc_cache ? c.bio_alloc_cached : c.bio_alloc_slab);
        },
        [this] { RunTaskWork(); });
  }

  void Complete(sim::Cpu& cpu, IoU* u, model::BlkStatus status) override {
    const auto& c = ctx_.kernel.costs();
    if (status == model::BlkStatus::kAgain && u->bio.polled) {
      // io_complete_rw_iopoll: -EAGAIN -> REQ_F_REISSUE, no CQE.
      reissue_.push_back(u);
      return;
    }
    const bool own_context = &cpu == &ctx_.cpu() && cpu.level() == sim::Level::kTask &&
                             cpu.current_thread() == &ctx_.thread;
    if (u->bio.polled || own_context) {
      // IOPOLL: ki_complete only marks the request done (iopoll_completed);
      // the owning ring's io_do_iopoll posts the CQE when it polls next.
      // Own context: the CQE is posted at once.
      cpu.Charge(fn_io_req_complete_post_, c.io_uring_cqe_post);
      ctx_.Post(u);
      return;
    }
    // io_req_task_work_add -> io_req_local_work_add (DEFER_TASKRUN, which
    // fio and t/io_uring set): a cmpxchg onto the ring's work list, whose
    // line the submitter took when it last ran its task work. With
    // IOU_F_TWQ_LAZY_WAKE (6.5+) the waiter is woken only once the queued
    // work covers its wait (nr_tw >= cq_wait_nr); before, by the first item.
    cpu.Charge(fn_io_req_complete_post_, work_list_line_.Write(ctx_.kernel.machine(), cpu.id(), c.atomic_local));
    task_work_.push_back(u);
    if (ctx_.kernel.knobs().io_uring_lazy_wake && ctx_.completed.size() + task_work_.size() < ctx_.wait_for) return;
    ctx_.WakeWaiter(cpu);
  }

  sim::Task GetEvents(uint32_t min, uint32_t max, bool in_call) override {
    const auto& c = ctx_.kernel.costs();
    sim::StackFrame frame(ctx_.cpu(), fn_io_uring_enter_);
    if (ctx_.spec.engine_flags.hipri && ctx_.completed.size() < min) {
      // IOPOLL: io_uring_enter(GETEVENTS) -> io_iopoll_check: spin on the
      // poll queues until enough completions, no interrupt, no sleep.
      if (!in_call) ctx_.cpu().Charge(fn_io_uring_enter_, c.syscall_entry_exit);
      while (ctx_.completed.size() < min) {
        co_await ctx_.cpu().Sync();
        int n = 0;
        if (ctx_.queues.empty()) {
          co_await ctx_.queue->Poll(ctx_.cpu(), &n);
        } else {
          for (model::RequestQueue* q : ctx_.queues) {
            int k = 0;
            co_await q->Poll(ctx_.cpu(), &k);
            n += k;
          }
        }
        if (!reissue_.empty()) co_await Reissue();
        if (n == 0 && ctx_.completed.size() < min && ctx_.in_flight == ctx_.completed.size()) break;
      }
      co_return;
    }
    // The CQ ring is read from user space; enter the kernel only to wait.
    if (ctx_.completed.size() < min) {
      if (!in_call) ctx_.cpu().Charge(fn_io_uring_enter_, c.syscall_entry_exit);
      co_await ctx_.cpu().Sync();
      RunTaskWork();
      // io_cqring_wait: iowait while the task has requests in flight
      // (current_pending_io, 6.5+).
      co_await ctx_.SleepUntilCompleted(min, ctx_.in_flight > ctx_.completed.size(), [this] { RunTaskWork(); });
    }
  }

 private:
  // tctx_task_work: post the CQEs of completions that ran elsewhere.
  void RunTaskWork() {
    const auto& c = ctx_.kernel.costs();
    if (task_work_.empty()) return;
    // io_run_local_work: llist_del_all takes the whole list (an xchg).
    ctx_.cpu().Charge(fn_tctx_task_work_,
                    work_list_line_.Write(ctx_.kernel.machine(), ctx_.cpu().id(), c.atomic_local));
    for (IoU* u : task_work_) {
      ctx_.cpu().Charge(fn_tctx_task_work_, c.io_uring_task_work);
      if (!retry_.empty() && retry_[u->bio.cookie]) {
        // io_req_task_queue's retry of a buffered read whose page unlocked.
        retry_[u->bio.cookie] = false;
        const NowaitRead r = ctx_.page_cache->CheckRead(ctx_.cpu(), *u->mapping, FilePos(u), u->bio.bytes,
                                                        &waiters_[u->bio.cookie]);
        if (r == NowaitRead::kQueued) continue;
        if (r == NowaitRead::kAgain) {
          PunToIoWq(u);
          continue;
        }
      }
      ctx_.cpu().Charge(fn_io_req_complete_post_, c.io_uring_cqe_post);
      ctx_.Post(u);
    }
    task_work_.clear();
  }

  using NowaitRead = model::NowaitRead;

  // The non-blocking reader of one io_u.
  struct Waiter final : model::PageWaiter {
    IoUringEngine* engine = nullptr;
    IoU* u = nullptr;
    void PageUnlocked(sim::Cpu& cpu) override { engine->QueueRetry(cpu, u); }
  };

  uint64_t FilePos(const IoU* u) const { return (u->bio.sector << model::kSectorShift) - u->mapping->base_bytes; }

  // io_async_buf_func -> io_req_task_queue: the retry goes on the ring's
  // work list like a completion from elsewhere.
  void QueueRetry(sim::Cpu& cpu, IoU* u) {
    retry_[u->bio.cookie] = true;
    Complete(cpu, u, model::BlkStatus::kOk);
  }

  void PunToIoWq(IoU* u) {
    iowq_queue_.push_back(u);
    if (!iowq_started_) {
      iowq_started_ = true;
      iowq_->Start(IoWqBody(), ctx_.cpu().now());
    } else if (iowq_->sleeping()) {
      ctx_.cpu().Charge(ctx_.kernel.fn.try_to_wake_up, ctx_.kernel.costs().try_to_wake_up);
      iowq_->Wake(ctx_.cpu().now());
    }
  }

  // io_submit_sqes for a buffered ring: reads tried without blocking,
  // writes (and reads that got -EAGAIN) handed to io-wq.
  sim::Task CommitBuffered(std::vector<IoU*>& batch) {
    const auto& c = ctx_.kernel.costs();
    sim::StackFrame frame(ctx_.cpu(), fn_io_uring_enter_);
    ctx_.cpu().Charge(fn_io_uring_enter_, c.syscall_entry_exit);
    for (IoU* u : batch) {
      ctx_.cpu().Charge(fn_io_submit_sqes_, c.io_uring_issue_sqe);
      if (!ctx_.spec.engine_flags.registerfiles) ctx_.cpu().Charge(fn_fget_, c.fget_fput);
      u->state = IoU::State::kInFlight;
      if (u->bio.op == model::ReqOp::kDiscard) {
        co_await u->queue->SubmitBio(ctx_.cpu(), &u->bio, nullptr);
        continue;
      }
      if (u->bio.op == model::ReqOp::kWrite) {
        PunToIoWq(u);
        continue;
      }
      Waiter& w = waiters_[u->bio.cookie];
      w.u = u;
      NowaitRead r = NowaitRead::kDone;
      co_await ctx_.page_cache->ReadNowait(ctx_.cpu(), *u->ra, *u->mapping, FilePos(u), u->bio.bytes, &w, &r);
      if (r == NowaitRead::kDone) {
        Complete(ctx_.cpu(), u, model::BlkStatus::kOk);  // own context: the CQE at once
      } else if (r == NowaitRead::kAgain) {
        PunToIoWq(u);
      }
    }
    RunTaskWork();
    const sim::SimTime now = ctx_.cpu().now();
    for (IoU* u : batch) u->issue_time = now;
    co_await ctx_.cpu().PreemptPoint();
  }

  // io_wq_worker: the ring's hashed buffered work, in order, blocking.
  sim::Task IoWqBody() {
    for (;;) {
      sim::Cpu& cpu = iowq_->on_cpu();
      co_await cpu.Sync();
      if (iowq_queue_.empty()) {
        co_await cpu.SleepMigratable();
        continue;
      }
      IoU* u = iowq_queue_.front();
      iowq_queue_.pop_front();
      {
        sim::StackFrame frame(cpu, fn_io_wq_);
        cpu.Charge(fn_io_wq_, ctx_.kernel.costs().io_wq_work);  // io_worker_handle_work per item
        if (u->bio.op == model::ReqOp::kRead) {
          co_await ctx_.page_cache->Read(cpu, *u->ra, *u->mapping, FilePos(u), u->bio.bytes);
        } else {
          co_await ctx_.page_cache->Write(cpu, *u->mapping, FilePos(u), u->bio.bytes);
          co_await WriteSync(ctx_, cpu, u);
        }
      }
      co_await cpu.Sync();
      Complete(cpu, u, model::BlkStatus::kOk);  // not the ring's task: through task_work
      co_await cpu.PreemptPoint();
    }
  }

  // Issues again what ended with -EAGAIN (io_uring's reissue of a
  // REQ_F_REISSUE request): the SQE's issue path and submit_bio once more.
  sim::Task Reissue() {
    const auto& c = ctx_.kernel.costs();
    reissuing_.swap(reissue_);
    for (IoU* u : reissuing_) {
      ctx_.cpu().Charge(fn_io_submit_sqes_, c.io_uring_issue_sqe);
      if (u->inode != nullptr) co_await FileDio(ctx_, u);
      if (ctx_.spec.ioengine == workload::IoEngine::kIoUringCmd) {
        co_await u->queue->ExecutePassthrough(ctx_.cpu(), &u->bio);
      } else {
        co_await u->queue->SubmitBio(ctx_.cpu(), &u->bio, nullptr);
      }
    }
    reissuing_.clear();
  }

  IoContext& ctx_;
  std::vector<IoU*> task_work_;  // completions waiting for task_work
  sim::CacheLine work_list_line_;  // ctx->work_llist
  std::vector<IoU*> reissue_;    // polled requests that ended with -EAGAIN
  std::vector<IoU*> reissuing_;  // the batch Reissue is submitting
  // Buffered I/O: a waiter and a retry mark per io_u (by bio.cookie), and
  // the ring's io-wq worker with its queue.
  std::vector<Waiter> waiters_;
  std::vector<bool> retry_;
  std::unique_ptr<sim::Thread> iowq_;
  PtrRing<IoU> iowq_queue_;
  bool iowq_started_ = false;
  sim::FnId fn_io_wq_ = 0;
  sim::FnId fn_io_uring_enter_, fn_io_submit_sqes_, fn_fget_, fn_pin_, fn_io_req_complete_post_,
      fn_tctx_task_work_;
};

std::unique_ptr<IoEngineModel> MakeIoUringEngine(IoContext& ctx) { return std::make_unique<IoUringEngine>(ctx); }

}  // namespace

constinit const IoEngineType kIoUringIoEngineType = {.id = workload::IoEngine::kIoUring, .make = MakeIoUringEngine};
constinit const IoEngineType kIoUringCmdIoEngineType = {.id = workload::IoEngine::kIoUringCmd,
                                                        .make = MakeIoUringEngine};

}  // namespace blklab::job
