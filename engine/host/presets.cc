#include "engine/host/presets.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/util/check.h"

namespace blklab::host {
namespace {

struct Preset {
  absl::string_view name;
  absl::string_view yaml;
};

// Keep in sync with examples/hosts/<name>.yaml (presets_test checks it).
constexpr Preset kPresets[] = {
    {"default", R"preset(# The embedded default host: what `blklab fio job.fio` runs against when no
# host is given. A small 4-CPU machine after a plain `modprobe null_blk`:
# every null_blk parameter at its module default (one submit queue plus one
# poll queue, 64 tags, irqmode=1 softirq completion). With two hardware
# queues the kernel picks no scheduler (elevator_get_default), written out
# here so the choice is visible.
name: default
description: 4 CPUs, one null_blk (module defaults), scheduler none
cpus: {count: 4, threads_per_core: 1}
kernel: {hz: 1000}
devices:
  - name: nullb0
    null_blk: {}
    queue: {scheduler: none}
)preset"},
    {"null-1cpu", R"preset(# The benchmark scenario: one CPU submitting to null_blk with completion
# inline in queue_rq (irqmode=0), one hardware queue, no scheduler. Every
# nanosecond of the IO path is CPU time on that one CPU, so IOPS measure the
# cost of the block layer itself.
name: null-1cpu
description: 1 CPU, null_blk irqmode=0, one hw queue, scheduler none
cpus: {count: 1}
kernel: {hz: 1000}
devices:
  - name: nullb0
    null_blk:
      submit_queues: 1
      poll_queues: 0
      irqmode: 0
    queue: {scheduler: none}
)preset"},
    {"nvme-8cpu", R"preset(# A modern small server: 8 CPUs (4 cores, SMT), one NVMe drive with one IO
# queue per CPU and no scheduler (the kernel default for multi-queue
# devices). Media: 80 us reads, 800K IOPS ceiling [guess, TLC NAND class].
name: nvme-8cpu
description: 8 CPUs, one NVMe drive (one queue per CPU), scheduler none
cpus: {count: 8, threads_per_core: 2}
kernel: {hz: 1000}
devices:
  - name: nvme0n1
    nvme: {latency_nsec: 80000, max_iops: 800000}
    queue: {scheduler: none}
)preset"},
    {"rc2-io_uring-core", R"preset(# RC2 "Reduce overhead of CONFIG_BLK_CGROUP" (Oct 2021): t/io_uring on one
# core of a Ryzen 9 5950X (16 cores / 32 threads, two CCDs) against two
# Optane P5800X drives, polled (poll queues), batch 32, scheduler none, the
# drives far from saturated.
#
# This preset is the middle state of the case: BLK_CGROUP=y with neither
# patch (published ~3.6M IOPS). The comparison flips:
#   shaved config:  kernel.config.BLK_CGROUP: false           (~5.1M)
#   both patches:   knobs.throttle_fast_path_inline: true,
#                   knobs.cgroup_inherit_bio_start_time: true  (~3.9M)
# The drives are modelled with no IOPS ceiling and a 5 us read latency
# [guess]; 512 B vs 4 KiB is open (KERNEL_MODEL.md §6.3).
name: rc2-io_uring-core
description: "RC2: 5950X, 2x Optane, polled io_uring on one core; BLK_CGROUP on, no patches"
cpus: {count: 32, threads_per_core: 2, cores_per_ccx: 8}
kernel:
  hz: 1000
  version: "5.15"
  config: {BLK_CGROUP: true, BLK_DEV_THROTTLING: true}
knobs:
  throttle_fast_path_inline: false
  cgroup_inherit_bio_start_time: false
  plug_cache_time: false     # 6.9
  dd_serialize_dispatch: false
  dd_insert_side_lists: false
  dd_skip_merge_if_contended: false
devices:
  - name: nvme0n1
    nvme: {poll_queues: 4, latency_nsec: 5000, max_iops: 0}
    queue: {scheduler: none, iostats: true}
  - name: nvme1n1
    nvme: {poll_queues: 4, latency_nsec: 5000, max_iops: 0}
    queue: {scheduler: none, iostats: true}
)preset"},
    {"rc4-desktop-7950x", R"preset(# RC4 "mq-deadline's dd->lock under many submitters" (Jan 2024): a 16-core /
# 32-thread Ryzen 9 7950X (two CCDs of 8 cores), 32 fio threads, io_uring,
# small batched queue depth, random reads. Kernel 6.8 before the fixes: every
# IO takes dd->lock to merge, insert and dispatch.
#
# The comparison flips, on both devices:
#   after (merged, 6.9): dd_serialize_dispatch, dd_insert_side_lists,
#                        dd_skip_merge_if_contended all true
#   buckets variant:     dd_serialize_dispatch, dd_insert_buckets,
#                        dd_skip_merge_if_contended all true
# null_blk keeps its module defaults except one hardware queue and no poll
# queue (irqmode=1; see KERNEL_MODEL.md §6.4 and §6.9 for what is unknown).
name: rc4-desktop-7950x
description: "RC4: 7950X, 32 threads, null_blk (1 hw queue) + NVMe, mq-deadline, 6.8 before fixes"
cpus: {count: 32, threads_per_core: 2, cores_per_ccx: 8, ccx_per_die: 1, sockets: 1}
kernel: {hz: 1000, version: "6.8"}
knobs:
  dd_serialize_dispatch: false
  dd_insert_buckets: false
  dd_insert_side_lists: false
  dd_skip_merge_if_contended: false
  plug_cache_time: false     # landed in 6.9 too
devices:
  - name: nullb0
    null_blk: {submit_queues: 1, poll_queues: 0, hw_queue_depth: 64, irqmode: 1}
    queue: {scheduler: mq-deadline}
  - name: nvme0n1
    nvme: {io_queue_depth: 1024, latency_nsec: 10000}
    queue: {scheduler: mq-deadline}
)preset"},
    {"rc5-scsi_debug-luns", R"preset(# RC5 "two RESTART patches for SCSI" (Oct 2017, 4.14): scsi_debug with one
# host and 8 LUNs sharing one tag set (TAG_SHARED), random reads on all LUNs.
# Before both patches: the restart walk over every queue on the shared set,
# and no delayed re-run of a budget-starved idle LUN. 4.14 era switches:
# atomic device_busy/host_busy, no deferred sbitmap clear, no plug request
# cache, no batched completion, SCSI re-runs all hw queues on completion.
# scsi_debug timing is unknown (KERNEL_MODEL.md §6.6): ndelay 10 us [guess].
#
# The comparison flips restart_walks_shared_tag_queues (patch 2) and
# scsi_budget_idle_delay_run (patch 1), for several max_luns.
name: rc5-scsi_debug-luns
description: "RC5: scsi_debug, 8 LUNs on one shared tag set, 4.14 era, before both patches"
cpus: {count: 8, threads_per_core: 2}
kernel:
  hz: 250
  version: "4.14"
  config: {BLK_CGROUP: true}
knobs:
  restart_walks_shared_tag_queues: true
  scsi_budget_idle_delay_run: false
  scsi_atomic_device_busy: true
  scsi_atomic_host_busy: true
  run_all_hw_queues_on_completion: true
  sbitmap_deferred_clear: false
  plug_request_cache: false
  batched_completion: false
  plug_cache_time: false
  bio_alloc_cache: false
  busy_iter_takes_tags_lock: false
  tag_busy_iter_shared_once: false
  throttle_fast_path_inline: false
  cgroup_inherit_bio_start_time: false
  dd_serialize_dispatch: false
  dd_insert_side_lists: false
  dd_skip_merge_if_contended: false
devices:
  - name: sdb
    scsi_debug: {ndelay: 10000, max_queue: 192, max_luns: 8, num_tgts: 1, add_host: 1, submit_queues: 1}
    queue: {scheduler: mq-deadline}
)preset"},
    {"rc1-mpi3mr-64vd", R"preset(# RC1 "blk-mq: optimize queue tag busy iter for shared_tags" (Dec 2021,
# 5.16-rc5): an AMD64 PCIe Gen-4 server with one mpi3mr SAS/NVMe HBA in
# shared host-tag mode; 16 NVMe drives behind it presented as 64 virtual
# drives, i.e. 64 request queues on one host-wide tag set
# (BLK_MQ_F_TAG_HCTX_SHARED + TAG_QUEUE_SHARED). Seed line (from
# examples/jobs/): blklab fio --host=rc1-mpi3mr-64vd 64.fio --rw=randread
# --bs=4K --iodepth=32 --numjobs=2 --ioscheduler=mq-deadline --disk_util=0
#
# This preset is "before": every hctx of a queue walks the whole shared
# bitmap in the timeout work (tag_busy_iter_shared_once: false). "After"
# flips it to true. Published: 4.0M before, 5.8M after, ceiling ~6.0M.
#
# Choices [guess] (KERNEL_MODEL.md §6.1): 64 CPUs = 2 sockets x 16 cores x
# SMT2, 8 cores per CCX; mpi3mr exposes one operational reply queue per CPU
# (nr_hw_queues 64); can_queue 4096; cmd_per_lun 128; firmware 1 us per
# command; the controller ceiling max_iops 6000000 [derived: the published
# ~6.0M ceiling]; drives 80 us reads, no per-drive ceiling below the
# controller's. Virtual drives are 64 GiB (memory for fio's random map).
# The LUNs are sdb..sdbm (sdb, ..., sdz, sdaa, ..., sdbm). 5.16 era: no
# mq-deadline 6.9 fixes, no plug time cache.
name: rc1-mpi3mr-64vd
description: "RC1: 64 CPUs, mpi3mr host-wide tags, 64 virtual drives, mq-deadline, 5.16-rc5 before the fix"
cpus: {count: 64, threads_per_core: 2, cores_per_ccx: 8, sockets: 2}
kernel: {hz: 1000, version: "5.16-rc5"}
knobs:
  tag_busy_iter_shared_once: false
  busy_iter_takes_tags_lock: true
  dd_serialize_dispatch: false
  dd_insert_side_lists: false
  dd_skip_merge_if_contended: false
  plug_cache_time: false     # 6.9
devices:
  - name: sdb
    hba:
      lld: 1
      can_queue: 4096
      nr_hw_queues: 64
      host_tagset: true
      virtual_drives: 64
      cmd_per_lun: 128
      firmware_nsec: 1000
      max_iops: 6000000
      drives: 16
      drive_latency_nsec: 80000
      gb: 64
    queue: {scheduler: mq-deadline}
)preset"},
    {"rc3-megaraid-1vd", R"preset(# RC3 "megaraid_sas: switch fusion adapters to MQ" (Jul 2020, 5.8): one
# MegaRAID controller with an 8-drive RAID-0 logical volume (one SCSI
# device, sdb). Seed line (from examples/jobs/): blklab fio
# --host=rc3-megaraid-1vd 1vd.fio --iodepth=128 --bs=4k --rw=randread
# --cpus_allowed_policy=split --ioscheduler=none --group_reporting
# --runtime=200 --numjobs=1 (the original ran under numactl -N 1; 1vd.fio
# says numa_cpu_nodes=1 instead).
#
# This preset is the RFC state: the HBA exposes 128 hardware queues with
# host-wide shared tags (nr_hw_queues: 128) on a 5.8 kernel whose
# scsi_end_request runs every hw queue on each completion
# (run_all_hw_queues_on_completion: true). "Before" the RFC the HBA exposed
# one hardware queue (nr_hw_queues: 1); the later fix (~5.10, sdev->restarts)
# is run_all_hw_queues_on_completion: false.
#
# Choices [guess]: 32 CPUs = 2 sockets (2 NUMA nodes) x 8 cores x SMT2;
# can_queue 4096; cmd_per_lun 256; firmware 2 us per command; 8 SAS SSDs of
# 100 us reads and 100K IOPS each, 64 KiB stripes.
name: rc3-megaraid-1vd
description: "RC3: 2-node 32-CPU host, MegaRAID RAID-0 of 8 drives exposing 128 hw queues, 5.8"
cpus: {count: 32, threads_per_core: 2, sockets: 2}
kernel: {hz: 250, version: "5.8"}
knobs:
  run_all_hw_queues_on_completion: true
  tag_busy_iter_shared_once: false
  busy_iter_takes_tags_lock: false   # 5.14
  plug_request_cache: false          # 5.16
  batched_completion: false          # 5.16
  plug_cache_time: false             # 6.9
  bio_alloc_cache: false             # 5.16
  dd_serialize_dispatch: false
  dd_insert_side_lists: false
  dd_skip_merge_if_contended: false
devices:
  - name: sdb
    hba:
      lld: 0
      can_queue: 4096
      nr_hw_queues: 128
      host_tagset: true
      virtual_drives: 1
      cmd_per_lun: 256
      firmware_nsec: 2000
      drives: 8
      drive_iops: 100000
      drive_latency_nsec: 100000
      stripe_kb: 64
    queue: {scheduler: none}
)preset"},
};

const Preset* FindPreset(absl::string_view name) {
  for (const Preset& p : kPresets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

absl::Status NotFound(absl::string_view name) {
  std::vector<std::string> names;
  for (const Preset& p : kPresets) names.emplace_back(p.name);
  return absl::NotFoundError(
      absl::StrCat("unknown host preset \"", name, "\"; presets: ", absl::StrJoin(names, ", ")));
}

}  // namespace

std::vector<PresetInfo> ListPresets() {
  std::vector<PresetInfo> out;
  for (const Preset& p : kPresets) {
    absl::StatusOr<HostSpec> spec = ParseHostSpec(p.yaml, SpecFormat::kYaml);
    BLKLAB_CHECK(spec.ok());  // presets are tested to parse
    out.push_back(PresetInfo{std::string(p.name), spec->description});
  }
  return out;
}

absl::StatusOr<absl::string_view> PresetYaml(absl::string_view name) {
  const Preset* p = FindPreset(name);
  if (p == nullptr) return NotFound(name);
  return p->yaml;
}

absl::StatusOr<HostSpec> GetPreset(absl::string_view name) {
  const Preset* p = FindPreset(name);
  if (p == nullptr) return NotFound(name);
  return ParseHostSpec(p->yaml, SpecFormat::kYaml);
}

}  // namespace blklab::host
