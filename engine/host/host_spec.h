// engine/host/host_spec.h
//
// HostSpec is the typed description of one simulated machine: its CPU
// topology, kernel (HZ, Kconfig options, era knobs), block devices with their
// driver parameters and /sys/block/<dev>/queue settings, and cost-table
// overrides. It is what a user writes as YAML or JSON (docs/architecture.md, "Host
// specs"), what presets are made of (presets.h), and what the topology builder
// wires into a simulation. Field names are the kernel's: null_blk and
// scsi_debug module parameters, nvme-pci module parameters, sysfs queue
// attributes and Kconfig names.
//
// Every field has a default, so a document only names what it changes. The
// defaults describe a modern 6.x kernel (6.9 or later) and the drivers' own
// module-parameter defaults. Era knobs (`knobs`) switch single mechanisms back
// to what older kernels did; the reference cases (docs/reference-cases.md) flip
// them one at a time.
//
// Invariants (after ParseHostSpec / ValidateHostSpec succeed): every field is
//   within its documented range, device names are unique, each device has
//   exactly one driver, knobs.config_blk_cgroup == kernel.config.blk_cgroup,
//   and the whole host fits HostLimits (CPUs, devices, hw queues, tags), so a
//   server can accept specs from untrusted clients.
// Thread-safety: plain value types.
// Cost: parsing and validation are O(document size); nothing here is on the
//   simulation hot path.
#ifndef BLKLAB_ENGINE_HOST_HOST_SPEC_H_
#define BLKLAB_ENGINE_HOST_HOST_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/host/cost_table.h"
#include "engine/util/doc_node.h"

namespace blklab::host {

// Field lists. Each entry: (field, default, min, max, meaning). INT fields are
// `int`, INT64 fields `int64_t`, BOOL fields `bool` (min/max unused). The
// same lists drive decoding, range validation and JSON output, so the header
// is the reference for every key a document may use.

// cpus: logical CPU topology. Logical CPUs are numbered as Linux on x86 does:
// cpu c is physical core (c % cores) thread (c / cores), so cpu i and
// i + cores are SMT siblings; cores are numbered socket by socket, LLC group
// (CCX) by LLC group.
#define BLKLAB_CPU_FIELDS(INT, INT64, BOOL)                                                        \
  INT(count, 1, 1, 65536, "logical CPUs, all threads of all sockets (HostLimits caps it)")               \
  INT(threads_per_core, 1, 1, 8, "SMT threads per physical core")                                   \
  INT(cores_per_ccx, 0, 0, 1024, "physical cores sharing one LLC (a CCX); 0 = the whole socket")    \
  INT(ccx_per_die, 1, 1, 64, "LLC groups per die (CCD); dies matter for reporting only")            \
  INT(sockets, 1, 1, 16, "sockets")                                                                 \
  INT(numa_nodes_per_socket, 1, 1, 16, "NUMA nodes per socket (NPS); splits a socket's cores evenly") \
  INT(speed_permille, 1000, 100, 10000,                                                             \
      "how fast a core runs kernel and fio code, per mille of the cost table's reference core "     \
      "(a Ryzen 9 5950X); core-work rows cost 1000/speed_permille of their value (cost_table.h)")     \
  INT64(cpuidle_state1_exit_latency_ns, 0, 0, 100000000,                                            \
        "cpuidle: the first hardware idle state's exit latency (sysfs cpuidle/state1/latency); 0 = no " \
        "cpuidle states: an idle CPU polls (idle=poll) and a wake-up runs at once")                   \
  INT64(cpuidle_state1_target_residency_ns, 0, 0, 1000000000,                                       \
        "its target residency (state1/residency): the menu governor enters it for a predicted idle "  \
        "this long; 0 = twice the exit latency (acpi_idle's latency_factor)")                          \
  INT64(cpuidle_state2_exit_latency_ns, 0, 0, 100000000,                                            \
        "a deeper state's exit latency (state2); 0 = none. Needs state1, and no less than its latency") \
  INT64(cpuidle_state2_target_residency_ns, 0, 0, 1000000000,                                       \
        "its target residency; 0 = twice the exit latency")

// kernel.config: Kconfig options of the block layer. Defaults are a typical
// distribution 6.x config. Options that depend on BLK_CGROUP are forced off
// when a document turns BLK_CGROUP off without naming them.
#define BLKLAB_KCONFIG_FIELDS(INT, INT64, BOOL)                                                    \
  BOOL(BLK_CGROUP, true, 0, 0, "block cgroup support: blkg association and per-cgroup stats per IO") \
  BOOL(BLK_DEV_THROTTLING, true, 0, 0, "blk-throttle (depends on BLK_CGROUP)")                      \
  BOOL(BLK_CGROUP_IOCOST, true, 0, 0, "io.cost controller, inactive unless configured (BLK_CGROUP)") \
  BOOL(BLK_WBT, true, 0, 0, "writeback throttling (rq_qos)")                                        \
  BOOL(BLK_DEBUG_FS, true, 0, 0, "blk-mq debugfs")                                                  \
  BOOL(PREEMPT, false, 0, 0,                                                                         \
       "full kernel pre-emption: a woken ksoftirqd takes the CPU at once outside spinlocks "          \
       "(false: PREEMPT_VOLUNTARY, at the next voluntary pre-emption point)")                       \
  BOOL(IRQ_TIME_ACCOUNTING, true, 0, 0,                                                             \
       "fine-grained irq time accounting: hardirq and softirq time is not charged to the task it "   \
       "interrupted (false, Kconfig's default: a task's rusage, fio's sys, includes it)")

// knobs: model switches, one per mechanism a kernel patch changed. Defaults
// are what a 6.9+ kernel does.
#define BLKLAB_KNOB_FIELDS(INT, INT64, BOOL)                                                          \
  BOOL(tag_busy_iter_shared_once, true, 0, 0,                                                         \
       "RC1: with host-shared tags the busy iterator walks the bitmap once per queue (5.16+)")        \
  BOOL(busy_iter_takes_tags_lock, true, 0, 0,                                                         \
       "RC1: blk_mq_find_and_get_req takes tags->lock per busy bit (5.14+)")                          \
  BOOL(blk_timeout_relaxed_rounding, true, 0, 0,                                                      \
       "RC1: blk_add_timer adds roundup_pow_of_two(HZ) jiffies instead of round_jiffies_up (5.9+)")   \
  BOOL(timer_wheel_granularity, true, 0, 0,                                                            \
       "RC1: timer_list timers fire at their timer-wheel bucket (4.8+'s non-cascading wheel): "        \
       "q->timeout at the next multiple of 512 jiffies for a timer 4-32 s ahead at HZ=1000, kblockd's " \
       "delayed runs (3 ms: 3-4 ms at HZ=1000, 4-8 ms at HZ=250) and other delayed works at the jiffy " \
       "after jiffies + the delay in jiffies, kyber's timer at its 8-jiffy bucket; false: q->timeout "   \
       "and kyber's timer at their expiry, delayed works after exactly the delay")                     \
  BOOL(config_blk_cgroup, true, 0, 0, "RC2: mirrors kernel.config.BLK_CGROUP (set either, not both differently)") \
  BOOL(throttle_fast_path_inline, true, 0, 0, "RC2: blk_throtl_bio fast-path test inlined (5.16+)")   \
  BOOL(cgroup_inherit_bio_start_time, true, 0, 0,                                                     \
       "RC2: request start time taken from bio->bi_issue, saving a ktime_get_ns (5.16+)")             \
  BOOL(run_all_hw_queues_on_completion, false, 0, 0,                                                  \
       "RC3: scsi_end_request always runs all hw queues (true before the ~5.10 sdev->restarts fix)")  \
  BOOL(skip_run_queues_without_elevator, false, 0, 0,                                                 \
       "RC3: rejected shortcut, blk_mq_run_hw_queues returns early without an elevator (stalls)")     \
  BOOL(dd_serialize_dispatch, true, 0, 0, "RC4: DD_DISPATCHING, one mq-deadline dispatcher at a time (6.9)") \
  BOOL(dd_insert_buckets, false, 0, 0, "RC4: Jens's per-CPU insertion buckets (not merged)")           \
  BOOL(dd_insert_side_lists, true, 0, 0, "RC4: Bart's insert side lists drained by the dispatcher (6.9)") \
  BOOL(dd_skip_merge_if_contended, true, 0, 0, "RC4: dd_bio_merge trylocks and skips when busy (6.9)") \
  BOOL(sched_batch_dispatch, true, 0, 0,                                                              \
       "__blk_mq_do_dispatch_sched collects up to nr_requests requests from the scheduler per "        \
       "blk_mq_dispatch_rq_list (6e6fcbc27e77, 5.10+); false: one request per call (4.14-5.9)")         \
  BOOL(dispatch_busy_with_scheduler, true, 0, 0,                                                      \
       "blk_mq_update_dispatch_busy keeps hctx->dispatch_busy under a scheduler too, so a dispatch "   \
       "that ran out of driver tags makes the next ones take one request at a time (cb9516be7708, "    \
       "5.14+); false: only queues without a scheduler (4.19-5.13)")                                    \
  BOOL(dispatch_loop_checks_dispatch_list, true, 0, 0,                                               \
       "the scheduler's dispatch loop stops when hctx->dispatch holds requests and "                     \
       "blk_mq_sched_dispatch_requests runs once more at once, then through kblockd (-EAGAIN, 5.8+); "    \
       "a call of blk_mq_dispatch_rq_list that leaves requests ends the loop; blk_mq_do_dispatch_ctx "   \
       "polls hctx->dispatch the same way. false: the loops before 5.8, which never look at "              \
       "hctx->dispatch, and 4.14's rule that a call which queued anything goes round again")             \
  BOOL(dispatch_leftovers_at_tail, true, 0, 0,                                                         \
       "blk_mq_dispatch_rq_list parks the requests the driver did not take at the tail of "                 \
       "hctx->dispatch, behind those other CPUs parked first (01e99aeca397, 5.6+); false: at its head, "   \
       "so the batch parked last goes ahead of those parked before it (4.14-5.5)")                                                          \
  BOOL(dd_async_depth_scaled, true, 0, 0,                                                              \
       "mq-deadline's async_depth defaults to nr_requests and is scaled to each sched-tags word "       \
       "(dd_to_word_depth), the tags' min_shallow_depth 1 (39823b47bbd4, 6.11; stable 6.1.105, 6.6.46); " \
       "false: 3/4 of a sched-tags word, a written value used as given per word (6.6-6.10)")             \
  BOOL(bfq_stable_merge, true, 0, 0,                                                                   \
       "bfq merges a sync queue created within 180 ms of its group's last one, with the same ioprio, "  \
       "into that one on a non-rotational queueing device (bfq_do_or_sched_stable_merge, \"block, bfq: " \
       "merge bursts of newly-created queues\", 5.14): fio's numjobs clones share one queue; false: "   \
       "one queue per process, the burst heuristics alone (before 5.14)")                                 \
  BOOL(dd_async_depth_old_nr_requests, true, 0, 0,                                                     \
       "with dd_async_depth_scaled: blk_mq_update_nr_requests calls dd_depth_updated before it stores "  \
       "the new nr_requests, so after a write of nr_requests the default async_depth stays the "          \
       "scheduler's own (2 x min(tags, 128)) while dd_to_word_depth divides by the value written "        \
       "(6.1.192); false: async_depth follows the value written")                                          \
  BOOL(menu_iowait_latency_limit, false, 0, 0,                                                        \
       "cpuidle's menu governor lets a CPU with tasks asleep in iowait enter only states whose exit "      \
       "latency is under the predicted idle / (1 + 10 x those tasks) (performance_multiplier, until "      \
       "38f83090f515 in 6.13); false: under the predicted idle")                                           \
  BOOL(dispatch_loop_time_limit, true, 0, 0,                                                          \
       "blk_mq_do_dispatch_sched hands the queue to kblockd when the CPU is wanted (need_resched) or "   \
       "after a second (5.18+, stable 5.10+ from 2022); false: it loops while rounds dispatch")         \
  BOOL(sq_sched_runs_own_hctx, true, 0, 0,                                                           \
       "blk_mq_run_hw_queues and blk_mq_delay_run_hw_queues under a scheduler that ignores hw queues "   \
       "(mq-deadline, bfq) run only the calling CPU's hctx and those with requests on hctx->dispatch (5.13+)") \
  BOOL(restart_walks_shared_tag_queues, false, 0, 0,                                                  \
       "RC5: blk_mq_sched_restart walks every queue on a shared tag set (4.14)")                       \
  BOOL(scsi_budget_idle_delay_run, true, 0, 0,                                                        \
       "RC5: budget failure with nothing in flight re-runs the queue after SCSI_QUEUE_DELAY")         \
  BOOL(scsi_atomic_device_busy, false, 0, 0, "RC5 era: atomic sdev->device_busy instead of budget_map") \
  BOOL(scsi_atomic_host_busy, false, 0, 0, "RC5 era: atomic shost->host_busy checked per command")    \
  BOOL(sbitmap_deferred_clear, true, 0, 0, "sbitmap deferred clear (4.20+)")                          \
  BOOL(plug_request_cache, true, 0, 0, "plug->cached_rq + batched tag allocation (5.16+)")            \
  BOOL(queue_rqs, true, 0, 0, "->queue_rqs: a plug's requests go to the driver as one batch (5.17+)")  \
  BOOL(batched_completion, true, 0, 0, "io_comp_batch / blk_mq_end_request_batch (5.16+)")            \
  BOOL(plug_cache_time, true, 0, 0, "timestamp cached in struct blk_plug (6.9)")                      \
  BOOL(bio_alloc_cache, true, 0, 0, "per-CPU bio cache for non-polled IO (5.16+)")                    \
  BOOL(hrtimer_rt_no_slack, true, 0, 0,                                                               \
       "schedule_hrtimeout_range gives a real-time sleeper no slack, so usleep_range(min, max) sleeps min " \
       "(0c52310f2600: 6.3; stable 5.10/5.15/6.1, 2024); false: it sleeps to max (mpi3mr's irq thread)")          \
  BOOL(sched_eevdf, true, 0, 0,                                                                       \
       "EEVDF (6.6+) schedules CFS threads: lag kept across sleeps, eligibility, virtual deadlines; "      \
       "the running thread keeps the CPU while eligible and inside its slice (RUN_TO_PARITY), so a woken " \
       "ksoftirqd or kworker waits for it; false: CFS before 6.6, where such a wake-up pre-empts at the "  \
       "next pre-emption point")                                                                        \
  BOOL(io_uring_lazy_wake, true, 0, 0,                                                                \
       "io_uring DEFER_TASKRUN rings (fio 3.33+): a completion wakes the waiter only once enough task work " \
       "is queued for its wait (IOU_F_TWQ_LAZY_WAKE, 6.5+); false: the first one wakes it")            \
  BOOL(blk_mq_budget_contention_rerun, true, 0, 0,                                                    \
       "RC5 era: blk_mq_dispatch_rq_list re-runs after BLK_MQ_RESOURCE_DELAY when the budget ran out, and " \
       "a dispatch from the scheduler or the software queues that gets nothing after taking a budget "       \
       "kicks the queue's hctxs after BLK_MQ_BUDGET_DELAY (a0823421a4d7, 5.8+)")                            \
  BOOL(scsi_debug_qfull_did_ok, false, 0, 0,                                                          \
       "RC5 era: scsi_debug's TASK SET FULL completes with DID_OK and the mid-layer requeues it (before 5.17)") \
  BOOL(scsi_debug_cmd_per_lun_max_queue, true, 0, 0,                                                 \
       "scsi_debug's cmd_per_lun (each LUN's queue_depth) is max_queue (6.1 has it); false: 4.14's "    \
       "DEF_CMD_PER_LUN 255, above can_queue, so the LUN budget never binds")

// devices[].null_blk: module parameters, defaults as in drivers/block/null_blk.
#define BLKLAB_NULL_BLK_FIELDS(INT, INT64, BOOL)                                                    \
  INT(queue_mode, 2, 0, 2, "0 = bio, 1 = legacy request (pre-5.0), 2 = blk-mq")                      \
  INT(submit_queues, 1, 1, 1024, "submission hw queues")                                             \
  INT(poll_queues, 1, 0, 1024, "IOPOLL hw queues (null_blk's default is 1)")                          \
  INT(hw_queue_depth, 64, 1, 4096, "tags per hw queue")                                               \
  INT(irqmode, 1, 0, 2, "0 = complete inline in queue_rq, 1 = softirq, 2 = hrtimer after completion_nsec") \
  INT64(completion_nsec, 10000, 0, 10000000000, "irqmode=2 completion delay, ns")                    \
  INT(home_node, -1, -1, 1023, "NUMA node of the device, -1 = NUMA_NO_NODE")                          \
  BOOL(use_per_node_hctx, false, 0, 0, "one hw queue per NUMA node")                                  \
  BOOL(no_sched, false, 0, 0, "no IO scheduler (BLK_MQ_F_NO_SCHED)")                                  \
  BOOL(blocking, false, 0, 0, "BLK_MQ_F_BLOCKING: SRCU, queue runs from kworkers")                    \
  BOOL(shared_tags, false, 0, 0, "one tag set for all nr_devices (TAG_QUEUE_SHARED)")                 \
  BOOL(shared_tag_bitmap, false, 0, 0, "host-wide tags across hw queues (BLK_MQ_F_TAG_HCTX_SHARED)")  \
  INT(nr_devices, 1, 1, 256, "identical devices created from this entry")                            \
  INT64(gb, 250, 1, 1048576, "device size, GiB")                                                      \
  INT(bs, 512, 512, 4096, "logical block size, bytes (power of two)")                                \
  BOOL(memory_backed, false, 0, 0, "store data in memory (copy under a per-device lock)")             \
  INT64(mbps, 0, 0, 1000000, "bandwidth cap, MB/s (0 = none)")

// devices[].nvme: nvme-pci module parameters and the controller's limits,
// plus the media model (docs/kernel-model.md §3.7; drivers/nvme/host/pci.c): the
// driver asks for one I/O queue per CPU (nr_io_queues overrides it) plus
// write_queues and poll_queues and gets at most max_queues; poll queues come
// out of that and always leave one interrupt queue. CPUs map to queues as
// the managed-IRQ spread puts them (SMT siblings together), and each
// interrupt queue's completions arrive on one CPU of its group. The media is
// one timing stage (model/media): read/write service time, IOPS and
// bandwidth ceilings, internal parallelism. Optional interrupt coalescing
// (Set Features 08h: the driver never sets it; the controller's default is
// off): an interrupt waits for `irq_coalesce_threshold` completions or
// `irq_coalesce_time_us`, whichever comes first.
#define BLKLAB_NVME_FIELDS(INT, INT64, BOOL)                                                        \
  INT(nr_io_queues, 0, 0, 1024, "interrupt-driven I/O queues wanted; 0 = one per CPU (the driver's ask)") \
  INT(max_queues, 128, 1, 1024, "controller limit on I/O queues (Number of Queues feature)")       \
  INT(io_queue_depth, 1024, 2, 4095, "entries per I/O queue (tag depth = io_queue_depth - 1)")         \
  INT(write_queues, 0, 0, 1024, "extra queues for writes (reads then get their own map)")           \
  INT(poll_queues, 0, 0, 1024, "IOPOLL queues (no interrupt)")                                      \
  INT64(latency_nsec, 10000, 0, 1000000000, "media read service time, ns [guess per drive]")       \
  INT64(write_latency_nsec, 0, 0, 1000000000, "media write service time, ns; 0 = latency_nsec")    \
  INT64(max_iops, 0, 0, 1000000000, "drive IOPS ceiling (0 = none)")                                  \
  INT64(max_mbps, 0, 0, 100000000, "drive bandwidth ceiling, MB/s (0 = none)")                        \
  INT(parallelism, 0, 0, 65536, "commands the media serves at once (0 = unlimited)")                \
  INT(irq_coalesce_threshold, 0, 0, 255, "interrupt coalescing: completions per interrupt (0 = off)") \
  INT(irq_coalesce_time_us, 0, 0, 25500, "interrupt coalescing: longest wait, us (0 = off)")        \
  INT(bs, 512, 512, 4096, "logical block size, bytes (power of two)")                                \
  INT64(gb, 1000, 1, 1048576, "namespace size, GiB")

// devices[].scsi_debug: module parameters, defaults as in drivers/scsi/scsi_debug.c (2020+).
#define BLKLAB_SCSI_DEBUG_FIELDS(INT, INT64, BOOL)                                                  \
  INT(delay, 1, 0, 1000, "response delay in jiffies (0 = inline in the submitter)")                  \
  INT64(ndelay, 0, 0, 999999999, "response delay in ns via hrtimer; > 0 overrides delay")           \
  INT(max_queue, 192, 1, 192, "queued commands per submit queue (SDEBUG_CANQUEUE = 192)")            \
  INT(host_max_queue, 0, 0, 192, "host-wide queue depth; > 0 sets host_tagset")                      \
  INT(submit_queues, 1, 1, 1024, "hw queues")                                                        \
  INT(poll_queues, 0, 0, 1024, "IOPOLL hw queues")                                                   \
  INT(num_tgts, 1, 1, 256, "targets per host")                                                       \
  INT(max_luns, 1, 1, 256, "LUNs per target")                                                        \
  INT(add_host, 1, 1, 16, "hosts")                                                                   \
  INT(every_nth, 0, 0, 1000000, "error injection period (with opts)")                                \
  INT(opts, 0, 0, 2147483647, "SDEBUG_OPT_* bits")                                                   \
  BOOL(fake_rw, false, 0, 0, "skip data transfer")                                                   \
  BOOL(statistics, false, 0, 0, "collect statistics")                                                \
  INT(sector_size, 512, 512, 4096, "logical block size, bytes (power of two)")                      \
  INT64(dev_size_mb, 8, 1, 1048576, "size of the shared ram disk, MiB")                              \
  INT(queue_depth, 0, 0, 202,                                                                        \
      "each LUN's queue_depth as written to /sys/class/scsi_device/*/device/queue_depth "             \
      "(sdebug_change_qdepth: 1..SDEBUG_CANQUEUE + 10); 0 = cmd_per_lun")

// devices[].hba: a generic RAID/HBA "firmware" SCSI host (megaraid_sas,
// mpi3mr; docs/kernel-model.md §3.6, §3.7): one Scsi_Host whose tag set of
// can_queue tags is shared host-wide (host_tagset) by `virtual_drives` LUNs,
// each its own request queue (TAG_QUEUE_SHARED when there are several), with
// `nr_hw_queues` hardware queues exposed to blk-mq. Each command costs the
// LLD's CPU time (cost table: hba_queuecommand, hba_reply_per_cmd), waits
// `firmware_nsec` in the controller (at most `max_iops` per second), and is
// served by one of `drives` backing drives chosen by RAID-0 striping over
// `stripe_kb` (each drive: `drive_latency_nsec`, at most `drive_iops`).
// Completions come back on the reply queue of the submitting CPU.
// The LUNs are named after the entry: an entry called sdb makes sdb, sdc, ...
// sdz, sdaa, ... (the sd driver's naming); any other name gets -0, -1, ...
#define BLKLAB_HBA_FIELDS(INT, INT64, BOOL)                                                         \
  INT(lld, 0, 0, 1, "low-level driver whose names the profile uses: 0 = megaraid_sas, 1 = mpi3mr")     \
  INT(can_queue, 4096, 1, 4096, "host-wide tags (shost->can_queue)")                                   \
  INT(nr_hw_queues, 1, 1, 128, "hw queues exposed to blk-mq (RC3 hba_exposed_hw_queues: 1 or 128)")     \
  BOOL(host_tagset, true, 0, 0, "one tag space for all hw queues (BLK_MQ_F_TAG_HCTX_SHARED)")           \
  INT(virtual_drives, 1, 1, 256, "LUNs presented (request queues sharing the host's tag set)")         \
  INT(cmd_per_lun, 256, 1, 4096, "per-LUN queue depth (sdev->queue_depth, the SCSI budget)")           \
  INT64(firmware_nsec, 2000, 0, 1000000000, "controller firmware time per command, ns [guess]")       \
  INT64(max_iops, 0, 0, 1000000000, "controller IOPS ceiling, 0 = none")                              \
  INT(drives, 1, 1, 256, "backing drives striped as RAID-0 under every LUN")                          \
  INT64(drive_iops, 0, 0, 1000000000, "per-drive IOPS ceiling, 0 = none")                              \
  INT64(drive_latency_nsec, 80000, 0, 1000000000, "per-drive read latency, ns [guess]")                \
  INT(stripe_kb, 64, 4, 65536, "RAID-0 stripe unit, KiB")                                            \
  INT(sector_size, 512, 512, 4096, "logical block size, bytes (power of two)")                      \
  INT64(gb, 1000, 1, 1048576, "size of each virtual drive, GiB")                                      \
  INT(fw_queue_depth, 0, 0, 4096,                                                                   \
      "commands the firmware takes at once; beyond it queuecommand answers HOST_BUSY (0 = can_queue)") \
  INT(irq_poll_sleep_min_us, 2, 1, 100000,                                                          \
      "mpi3mr: usleep_range min of the irq thread between polls, us (MPI3MR_IRQ_POLL_SLEEP: 2; 20 in 2024's fix)") \
  INT(irq_poll_sleep_max_us, 20, 1, 1000000,                                                        \
      "mpi3mr: usleep_range max, us (10 x MPI3MR_IRQ_POLL_SLEEP; 21 in 2024's fix)")

// devices[].queue.iosched, /sys/block/X/queue/iosched: each scheduler's tunables, X(INT, INT64, BOOL)
// lists; a spec may set only those of its queue's scheduler.
#define BLKLAB_DEADLINE_TUNABLES(INT, INT64, BOOL)                                                   \
  INT(read_expire, 500, 0, 3600000, "read deadline, ms")                                             \
  INT(write_expire, 5000, 0, 3600000, "write deadline, ms")                                          \
  INT(prio_aging_expire, 10000, 0, 3600000, "priority aging, ms")                                    \
  INT(writes_starved, 2, 0, 1024, "read batches before a write batch")                              \
  INT(fifo_batch, 16, 1, 1024, "requests per batch")                                                 \
  BOOL(front_merges, true, 0, 0, "try front merges")                                                 \
  INT(async_depth, 0, 0, 4096, "requests writes may hold; 0 = the kernel's (knobs.dd_async_depth_scaled)")
#define BLKLAB_KYBER_TUNABLES(INT, INT64, BOOL)                                                      \
  INT64(read_lat_nsec, 2000000, 1, 100000000000, "kyber: read latency target, ns")                   \
  INT64(write_lat_nsec, 10000000, 1, 100000000000, "kyber: write latency target, ns")
#define BLKLAB_BFQ_TUNABLES(INT, INT64, BOOL)                                                        \
  INT(slice_idle, 8, 0, 1000, "bfq: idle time for the in-service sync queue, ms")                    \
  INT64(slice_idle_us, -1, -1, 1000000, "bfq: the same idle time in us; -1 = slice_idle x 1000")     \
  BOOL(low_latency, true, 0, 0, "bfq: weight-raise interactive queues")                              \
  INT(timeout_sync, 125, 1, 10000, "bfq: budget timeout of a sync queue, ms")                        \
  INT(max_budget, 0, 0, 1048576, "bfq: maximum budget, sectors; 0 = autotuned from the peak rate")  \
  BOOL(strict_guarantees, false, 0, 0, "bfq: idle and wait for in-flight requests whatever the scenario") \
  INT(back_seek_max, 16384, 0, 1048576, "bfq: backward seek distance still served in order, KiB")   \
  INT(back_seek_penalty, 2, 1, 1000, "bfq: cost multiplier of a backward seek")                     \
  INT(fifo_expire_sync, 125, 1, 3600000, "bfq: sync request deadline, ms")                           \
  INT(fifo_expire_async, 250, 1, 3600000, "bfq: async request deadline, ms")
#define BLKLAB_IOSCHED_FIELDS(INT, INT64, BOOL) \
  BLKLAB_DEADLINE_TUNABLES(INT, INT64, BOOL)    \
  BLKLAB_KYBER_TUNABLES(INT, INT64, BOOL)       \
  BLKLAB_BFQ_TUNABLES(INT, INT64, BOOL)

// devices[].queue: /sys/block/X/queue attributes (scheduler handled apart).
#define BLKLAB_QUEUE_FIELDS(INT, INT64, BOOL)                                                       \
  INT(nr_requests, 0, 0, 4096, "scheduler/queue depth; 0 = kernel default (resolved), else >= 4")    \
  BOOL(iostats, true, 0, 0, "per-IO disk statistics (blk_account_io_*)")                             \
  INT(rq_affinity, 1, 0, 2, "0 = complete where the IRQ lands, 1 = same LLC group, 2 = same CPU")   \
  INT(nomerges, 0, 0, 2, "0 = all merges, 1 = simple one-hit merges only, 2 = none")               \
  BOOL(io_poll, false, 0, 0, "polled IO enabled (needs poll queues)")                                 \
  INT(wbt_lat_usec, -1, -1, 100000000,                                                                \
      "writeback throttling target; -1 = the kernel's default (on), 0 = off. With kernel.config."    \
      "BLK_WBT, wbt's stats callback sets QUEUE_FLAG_STATS: blk_mq_start_request stamps io_start_time_ns") \
  INT(io_timeout, 30000, 1, 86400000, "request timeout (q->rq_timeout), ms")                          \
  INT(read_ahead_kb, 128, 0, 65536, "the page cache's readahead window for buffered reads (bdi->ra_pages), KiB")

#define BLKLAB_DECLARE_INT(name, def, lo, hi, doc) int name = def;
#define BLKLAB_DECLARE_INT64(name, def, lo, hi, doc) int64_t name = def;
#define BLKLAB_DECLARE_BOOL(name, def, lo, hi, doc) bool name = def;
#define BLKLAB_DECLARE_FIELDS(LIST) LIST(BLKLAB_DECLARE_INT, BLKLAB_DECLARE_INT64, BLKLAB_DECLARE_BOOL)

struct CpuSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_CPU_FIELDS)
  friend bool operator==(const CpuSpec&, const CpuSpec&) = default;
};

// A cpuidle state's target residency as resolved (the field, or twice the
// exit latency when the field is 0). `state` is 1 or 2.
inline int64_t CpuidleTargetResidencyNs(const CpuSpec& c, int state) {
  const int64_t latency = state == 1 ? c.cpuidle_state1_exit_latency_ns : c.cpuidle_state2_exit_latency_ns;
  const int64_t residency = state == 1 ? c.cpuidle_state1_target_residency_ns : c.cpuidle_state2_target_residency_ns;
  return residency != 0 ? residency : 2 * latency;
}

// Kconfig options keep their kernel spelling (an exception to member naming,
// so the document key and the field read the same).
struct KernelConfig {
  BLKLAB_DECLARE_FIELDS(BLKLAB_KCONFIG_FIELDS)
  friend bool operator==(const KernelConfig&, const KernelConfig&) = default;
};

struct KernelSpec {
  int hz = 1000;          // CONFIG_HZ: 100, 250, 300 or 1000
  std::string version;    // optional, informational: "6.8", "5.16-rc5"
  KernelConfig config;
  friend bool operator==(const KernelSpec&, const KernelSpec&) = default;
};

struct Knobs {
  BLKLAB_DECLARE_FIELDS(BLKLAB_KNOB_FIELDS)
  friend bool operator==(const Knobs&, const Knobs&) = default;
};

struct NullBlkSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_NULL_BLK_FIELDS)
  friend bool operator==(const NullBlkSpec&, const NullBlkSpec&) = default;
};

struct NvmeSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_NVME_FIELDS)
  friend bool operator==(const NvmeSpec&, const NvmeSpec&) = default;
};

struct ScsiDebugSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_SCSI_DEBUG_FIELDS)
  friend bool operator==(const ScsiDebugSpec&, const ScsiDebugSpec&) = default;
};

struct HbaSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_HBA_FIELDS)
  friend bool operator==(const HbaSpec&, const HbaSpec&) = default;
};

struct IoschedTunables {
  BLKLAB_DECLARE_FIELDS(BLKLAB_IOSCHED_FIELDS)
  friend bool operator==(const IoschedTunables&, const IoschedTunables&) = default;
};

// /sys/block/X/queue/scheduler: the schedulers this kernel has, in the
// kernel's spelling; X(enumerator, name). The model builds each through its
// elevator registry (engine/model/elevator.h). kDefault stands for "not
// given" and is replaced by ResolveDefaults with the kernel's choice
// (elevator_get_default): none for no_sched devices and for devices with
// several hw queues and no host-wide tags, else mq-deadline.
#define BLKLAB_SCHEDULERS(X) \
  X(kNone, "none")           \
  X(kMqDeadline, "mq-deadline") \
  X(kKyber, "kyber")            \
  X(kBfq, "bfq")

enum class Scheduler {
  kDefault,
#define BLKLAB_SCHEDULER_ENUM(e, name) e,
  BLKLAB_SCHEDULERS(BLKLAB_SCHEDULER_ENUM)
#undef BLKLAB_SCHEDULER_ENUM
};
absl::string_view SchedulerName(Scheduler s);  // "default", "none", "mq-deadline", ...
// The scheduler of that name (not "default"), or nullopt.
std::optional<Scheduler> SchedulerFromName(absl::string_view name);
// Every scheduler's name, comma separated ("none, mq-deadline").
std::string SchedulerNames();
// q->nr_requests when the spec leaves it 0: the tag depth without a
// scheduler; 2 x min(depth, BLKDEV_DEFAULT_RQ = 128) with one
// (blk_mq_init_sched, and elevator_switch resets to it).
int DefaultNrRequests(int tag_depth, Scheduler s);

struct QueueSpec {
  Scheduler scheduler = Scheduler::kDefault;
  BLKLAB_DECLARE_FIELDS(BLKLAB_QUEUE_FIELDS)
  IoschedTunables iosched;
  friend bool operator==(const QueueSpec&, const QueueSpec&) = default;
};

// A device entry's driver block. Each alternative has its DriverType
// (driver_type.h: decoding, validation, queue geometry), found by an
// exhaustive std::visit: an alternative without one does not compile.
using DriverSpec = std::variant<NullBlkSpec, NvmeSpec, ScsiDebugSpec, HbaSpec>;

struct DeviceSpec {
  std::string name;  // [A-Za-z0-9._-]{1,32}, unique within the host
  DriverSpec driver;  // exactly one driver block in a document
  QueueSpec queue;
  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// cgroups.<path>: a cgroup v2 directory under the io controller, as fio's
// cgroup=<path> names it (fio creates a missing one with the defaults).
#define BLKLAB_CGROUP_FIELDS(INT, INT64, BOOL) \
  INT(bfq_weight, 100, 1, 1000, "io.bfq.weight: the cgroup's bfq group weight")

// vm: the memory the page cache may use and the writeback sysctls
// (vm.dirty_*), for buffered I/O (direct=0; model/page_cache.h).
#define BLKLAB_VM_FIELDS(INT, INT64, BOOL)                                                            \
  INT(memory_mib, 16384, 16, 16777216,                                                                \
      "memory the page cache may hold (the kernel's dirtyable memory: free plus file pages), MiB")      \
  INT(dirty_ratio, 20, 1, 100, "vm.dirty_ratio: writers wait while dirty + writeback pages exceed this % of memory") \
  INT(dirty_background_ratio, 10, 0, 100, "vm.dirty_background_ratio: the flusher writes back above this %") \
  INT(dirty_expire_centisecs, 3000, 0, 8640000, "vm.dirty_expire_centisecs: a periodic flush writes dirty data older than this") \
  INT(dirty_writeback_centisecs, 500, 0, 8640000, "vm.dirty_writeback_centisecs: the flusher's period; 0 = no periodic flush")

struct VmSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_VM_FIELDS)
  friend bool operator==(const VmSpec&, const VmSpec&) = default;
};

struct CgroupSpec {
  BLKLAB_DECLARE_FIELDS(BLKLAB_CGROUP_FIELDS)
  friend bool operator==(const CgroupSpec&, const CgroupSpec&) = default;
};

// A cgroup path as the spec and fio's cgroup= take it: [A-Za-z0-9._-] names
// (not "." or "..") joined by '/', at most 200 bytes.
bool ValidCgroupPath(absl::string_view path);

// filesystems[]: a filesystem mounted on a device of the host. A job's
// filename= (or directory= + filename=) under `path` names a file on it: the
// file's extent on the device, its size from the job (see topology.h).
// `type`: ext4 or xfs (the direct-I/O path: iomap mapping and the inode's
// i_rwsem taken shared).
// A file that exists on a filesystem before the jobs start: a job that names
// it without size= or filesize= works on its size, as fio does with an
// existing file.
struct ExistingFileSpec {
  std::string path;  // absolute, under the filesystem's mount point
  int64_t mib = 0;   // its size, 1 .. 2^30 MiB
  friend bool operator==(const ExistingFileSpec&, const ExistingFileSpec&) = default;
};

struct FilesystemSpec {
  std::string path;    // absolute mount point, normalised ("/", "/mnt/data")
  std::string device;  // a block device of the host (after nr_devices / LUN expansion)
  std::string type = "ext4";
  std::vector<ExistingFileSpec> files;  // files already there (at most 1024)
  friend bool operator==(const FilesystemSpec&, const FilesystemSpec&) = default;
};

struct HostSpec {
  std::string name;         // [A-Za-z0-9._-]{1,64}; required in documents
  std::string description;  // optional, one line, <= 200 bytes
  CpuSpec cpus;
  KernelSpec kernel;
  Knobs knobs;
  std::vector<DeviceSpec> devices;      // at least one
  std::map<std::string, int64_t> costs;  // CostTable overrides by entry name, ns
  std::map<std::string, CgroupSpec> cgroups;  // by path; blkcg ids 1.. in path order
  std::vector<FilesystemSpec> filesystems;    // mount points unique; at most 64
  VmSpec vm;
  friend bool operator==(const HostSpec&, const HostSpec&) = default;
};

// What a server accepts; ValidateHostSpec returns ResourceExhausted beyond it.
struct HostLimits {
  int max_cpus = 1024;
  int max_devices = 256;               // block devices after nr_devices / LUN expansion
  int max_hw_queues = 1024;            // per device
  int max_queue_depth = 4096;          // tags per hw queue, and nr_requests
  int64_t max_total_requests = 1 << 21;  // sum over devices of hw queues x (tags + nr_requests)
  size_t max_document_bytes = 256 * 1024;
};

// Number of block devices one entry creates (null_blk nr_devices, scsi_debug
// add_host x num_tgts x max_luns, hba virtual_drives, 1 for nvme).
int DeviceInstances(const DeviceSpec& device);
// Name of instance `index` of an entry: the entry's name when it makes one
// device; for hba entries named sd<letters>, the sd driver's successive
// names (sdb, sdc, ..., sdz, sdaa, ...); else "<name>-<index>".
std::string DeviceInstanceName(const DeviceSpec& device, int index);
// Hardware queues of one instance (all maps: default + read/write + poll).
int HardwareQueues(const DeviceSpec& device, const CpuSpec& cpus);
// Tags per hardware queue of one instance.
int TagDepth(const DeviceSpec& device);

// Replaces Scheduler::kDefault and nr_requests == 0 with the kernel's choice
// (nr_requests: tag depth without a scheduler, 2 x min(depth, 128) with one).
void ResolveDefaults(HostSpec& spec);

// Checks every invariant above. InvalidArgument names the field path, e.g.
// "devices[1].null_blk.irqmode: must be 0, 1 or 2, got 3"; ResourceExhausted
// names the limit. Accepts specs with unresolved defaults.
absl::Status ValidateHostSpec(const HostSpec& spec, const HostLimits& limits = {});

enum class SpecFormat { kAuto, kYaml, kJson };

// Parses (YAML or JSON; kAuto picks JSON when the text starts with '{'),
// decodes (unknown keys and wrong types are errors naming the path and the
// line:column), resolves defaults and validates.
absl::StatusOr<HostSpec> ParseHostSpec(absl::string_view text, SpecFormat format = SpecFormat::kAuto,
                                       const HostLimits& limits = {});
// The document ParseHostSpec decodes (YAML or JSON, within the limits), not
// yet decoded: for edits as written (host_overlay.h).
absl::StatusOr<util::DocNode> ParseHostDoc(absl::string_view text, SpecFormat format = SpecFormat::kAuto,
                                           const HostLimits& limits = {});
// The same from an already parsed document.
absl::StatusOr<HostSpec> HostSpecFromDoc(const util::DocNode& doc, const HostLimits& limits = {});

// Canonical form: every field, in declaration order, defaults resolved.
// ParseHostSpec(HostSpecToJson(s)) == s for any valid, resolved s.
util::DocNode HostSpecToDoc(const HostSpec& spec);
std::string HostSpecToJson(const HostSpec& spec, int indent = 2);

// The calibrated cost table (CalibratedCostTable), its core-work rows scaled
// to cpus.speed_permille (ScaleForCoreSpeed), then spec.costs applied
// (SetCost: a host's own rows are in its own ns and are not scaled).
absl::StatusOr<CostTable> BuildCostTable(const HostSpec& spec);

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_HOST_SPEC_H_
