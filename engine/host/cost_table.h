// engine/host/cost_table.h
//
// CostTable is the one table of CPU costs that prices every simulated kernel
// and user-space step (KERNEL_MODEL.md §4.2). Each entry has a kernel-style
// name, a default in nanoseconds for an x86 core at about 4-5 GHz, and a source
// tag: kSrc (a published number), kDerived (worked out from one) or kGuess.
// Hosts may override entries by name (host spec `costs:` map).
//
// Calibration rule (KERNEL_MODEL.md §4.3): constants are fitted once against
// the calibration numbers of REFERENCE_CASES.md and never per scenario.
//
// Invariants: every entry is >= 0.
// Thread-safety: a plain value type.
// Cost: fields are read directly on the hot path.
#ifndef BLKLAB_ENGINE_HOST_COST_TABLE_H_
#define BLKLAB_ENGINE_HOST_COST_TABLE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace blklab::host {

enum class CostSource { kSrc, kDerived, kGuess };

// X(field, default_ns, source, description)
#define BLKLAB_COST_TABLE(X)                                                                      \
  X(ktime_get_ns, 17, kDerived, "ktime_get_ns -> read_tsc, one timestamp (RC2: 3 per IO ~ 50 ns)") \
  X(fio_user_per_io, 10, kGuess, "fio's user-space work per IO (fio:*)")                        \
  X(t_io_uring_per_io, 10, kGuess, "t/io_uring user-space work per IO: file, offset, SQE, CQE")   \
  X(syscall_entry_exit, 150, kGuess, "syscall entry+exit (io_uring_enter, io_submit, pread)")    \
  X(io_uring_issue_sqe, 25, kGuess, "io_submit_sqes+io_read+blkdev_read_iter+__blkdev_direct_IO_async per SQE") \
  X(io_uring_cqe_post, 8, kGuess, "io_req_complete_post / CQE batch flush per CQE")             \
  X(io_uring_task_work, 30, kGuess, "task_work hop to the submitter for an IRQ completion")      \
  X(libaio_submit_iocb, 150, kGuess, "io_submit_one+aio_read+fget/fput per iocb")               \
  X(libaio_event, 120, kGuess, "aio_complete under completion_lock + read_events copy per event") \
  X(psync_per_io, 60, kGuess, "pread/pwrite path: fdget, rw_verify_area, blkdev_read_iter")     \
  X(page_pin_4k, 60, kGuess, "pin_user_pages_fast + unpin per 4 KiB of non-fixed buffer")     \
  X(fget_fput, 20, kGuess, "fget+fput for an unregistered file")                                \
  X(bio_alloc_cached, 8, kDerived, "bio_alloc_bioset+bio_put from the per-CPU bio cache")       \
  X(bio_alloc_slab, 35, kDerived, "bio_alloc_bioset+bio_put from the slab")                     \
  X(submit_bio_noacct, 10, kGuess, "submit_bio_noacct sanity checks")                           \
  X(blk_mq_submit_bio, 22, kGuess, "blk_mq_submit_bio + blk_mq_rq_ctx_init, no timestamp")      \
  X(plug_merge, 3, kGuess, "blk_attempt_plug_merge")                                            \
  X(sw_queue_merge_base, 10, kGuess, "none: sw-queue merge scan, fixed part")                   \
  X(sw_queue_merge_per_rq, 5, kGuess, "none: sw-queue merge scan, per request scanned")         \
  X(sbitmap_get, 10, kGuess, "__sbitmap_queue_get on a local word")                             \
  X(sbitmap_get_batch_per_tag, 3, kGuess, "__sbitmap_queue_get_batch per tag")                  \
  X(sbitmap_clear, 8, kGuess, "sbitmap_queue_clear without waiters")                            \
  X(sbitmap_clear_bulk_per_tag, 3, kGuess, "sbitmap_queue_clear bulk per tag")                  \
  X(blk_account_io_start, 8, kGuess, "blk_account_io_start")                                    \
  X(blk_account_io_done, 8, kGuess, "blk_account_io_done")                                      \
  X(plug_add_flush_per_rq, 5, kGuess, "blk_add_rq_to_plug + flush per request")                 \
  X(run_hw_queue_check, 3, kGuess, "blk_mq_run_hw_queue need-run check (cache hot)")            \
  X(sbitmap_any_bit_set_per_word, 5, kGuess, "sbitmap_any_bit_set per word (cache hot)")        \
  X(dispatch_rq_list_per_rq, 15, kGuess, "blk_mq_dispatch_rq_list per request")                 \
  X(dd_bio_merge, 40, kGuess, "dd_bio_merge lookup (dd->lock held)")                            \
  X(dd_insert_request, 50, kGuess, "dd_insert_request fixed part (dd->lock held)")              \
  X(dd_insert_per_log2, 8, kGuess, "dd_insert_request per log2(queued)")                        \
  X(dd_dispatch_request, 50, kGuess, "dd_dispatch_request (dd->lock held)")                     \
  X(dd_has_work, 3, kGuess, "dd_has_work lock-free list-head checks (cache hot)")               \
  X(dd_side_list_add, 10, kGuess, "dd_insert_requests splice onto the side list (insert_lock held)") \
  X(null_queue_rq, 20, kGuess, "null_queue_rq + null_handle_cmd")                               \
  X(nvme_prep_rq, 25, kGuess, "nvme_prep_rq: nvme_setup_cmd, single-segment DMA map, per request") \
  X(nvme_sq_copy, 5, kGuess, "nvme_sq_copy_cmd: 64-byte SQE copy and tail update (sq_lock held)") \
  X(nvme_doorbell, 25, kGuess, "nvme_write_sq_db / nvme_ring_cq_doorbell: one posted MMIO write") \
  X(nvme_cqe, 15, kGuess, "nvme_handle_cqe per CQE (tag lookup, status, batch add)")            \
  X(nvme_complete_batch_rq, 8, kGuess, "nvme_pci_unmap_rq + nvme_complete_batch_req per request") \
  X(nvme_complete_rq, 40, kGuess, "nvme_pci_complete_rq: unmap + nvme_complete_rq, single path") \
  X(hardirq_entry_exit, 600, kGuess, "hardirq entry/exit for a device interrupt")               \
  X(end_request_batch, 20, kGuess, "blk_mq_end_request_batch per request")                      \
  X(end_request_single, 50, kGuess, "blk_mq_end_request .. blk_mq_free_request, single")        \
  X(scsi_queue_rq, 300, kGuess, "scsi_queue_rq + scsi_prepare_cmd + sd_init_command")            \
  X(scsi_complete, 250, kGuess, "scsi_complete -> scsi_end_request, no re-run")                 \
  X(hba_queuecommand, 800, kGuess, "LLD queuecommand (megaraid/mpi3mr build + issue), 500-1500")   \
  X(hba_reply_per_cmd, 150, kGuess, "LLD reply-queue processing per completed command")          \
  X(busy_iter_per_bit, 40, kGuess, "bt_iter per busy tag: rqs[] read, rq->ref get/put, callback")  \
  X(timeout_timer_fire, 300, kGuess, "q->timeout timer expiry (blk_rq_timed_out_timer) in irq")  \
  X(complete_request_local, 10, kGuess, "blk_mq_complete_request, completed locally")           \
  X(raise_softirq, 100, kGuess, "blk_mq_complete_request raising BLOCK_SOFTIRQ")                \
  X(ipi_send, 150, kGuess, "smp_call_function_single_async, sender side")                       \
  X(ipi_receive, 800, kGuess, "IPI receive: hardirq + BLOCK_SOFTIRQ on the target")             \
  X(ipi_delivery_latency, 1000, kGuess, "IPI wire latency from send to the target's hardirq")   \
  X(softirq_entry_exit, 100, kGuess, "softirq entry/exit")                                      \
  X(try_to_wake_up, 400, kGuess, "try_to_wake_up of a sleeping task")                           \
  X(context_switch, 1070, kSrc, "thread context switch (pipe ping-pong, weak source)")           \
  X(kworker_queue, 150, kGuess, "queueing a kblockd work item (plus wake + switch if asleep)")  \
  X(hrtimer_arm, 50, kGuess, "hrtimer_start")                                                   \
  X(hrtimer_fire, 300, kGuess, "hrtimer interrupt and callback dispatch")                       \
  X(blkg_associate, 32, kDerived, "bio_associate_blkg + blkg put (BLK_CGROUP)")                \
  X(blk_cgroup_bio_start, 27, kDerived, "blk_cgroup_bio_start per-CPU cgroup stats")            \
  X(blk_throtl_bio_call, 6, kDerived, "blk_throtl_bio out-of-line call with no limits")         \
  X(atomic_local, 8, kGuess, "atomic RMW on a line this CPU owns")                              \
  X(line_transfer_llc, 40, kGuess, "cacheline transfer within a CCX/LLC")                       \
  X(line_transfer_die, 100, kGuess, "cacheline transfer to another CCD or die")                 \
  X(line_transfer_socket, 180, kGuess, "cacheline transfer to another socket")                  \
  X(line_read_hit, 2, kGuess, "read of a line this CPU holds a current copy of")                \
  X(spin_lock_uncontended, 15, kGuess, "spin lock+unlock, uncontended, line local")             \
  X(lock_handoff_permille, 1500, kGuess, "contended handoff cost, per mille of a line transfer") \
  X(percpu_ref, 2, kGuess, "percpu_ref get/put (q_usage_counter)")                              \
  X(rcu_read_section, 1, kGuess, "RCU read-side section around dispatch")                       \
  X(io_poll_per_call, 30, kGuess, "io_do_iopoll -> blk_hctx_poll -> driver poll, one pass")

struct CostTable {
#define BLKLAB_COST_FIELD(name, def, src, desc) int64_t name = def;
  BLKLAB_COST_TABLE(BLKLAB_COST_FIELD)
#undef BLKLAB_COST_FIELD
};

struct CostEntryInfo {
  std::string_view name;
  int64_t CostTable::*field;
  int64_t default_ns;
  CostSource source;
  std::string_view description;
};

// All entries, in table order.
std::span<const CostEntryInfo> CostEntries();

// Sets entry `name` to `value_ns`. InvalidArgument names the entry when it is
// unknown or the value is negative.
absl::Status SetCost(CostTable& table, std::string_view name, int64_t value_ns);

std::string_view CostSourceTag(CostSource source);  // "src", "derived", "guess"

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_COST_TABLE_H_
