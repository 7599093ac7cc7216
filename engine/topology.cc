// engine/topology.cc: BuildSimulation, the simulation a plan describes
// (topology.h); PlanRun is in topology_plan.cc.
#include "engine/topology.h"

#include <algorithm>
#include <map>
#include <optional>
#include <variant>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/host/cpu_topology.h"
#include "engine/host/driver_type.h"
#include "engine/model/device_factory.h"
#include "engine/util/status_macros.h"
#include "engine/workload/io_engine_info.h"
#include "engine/workload/io_generator.h"
#include "engine/workload/value_syntax.h"


namespace blklab {
namespace {

using workload::JobSpec;

// Starts every clone whose stonewall wave has begun and whose wait_for job
// has no clone left running, at `now` plus its own startdelay; opens the
// next wave once every clone of the earlier ones is done (fio's a.7 rules).
// Cost: O(clones) per call.
void StartReadyClones(Simulation& s, sim::SimTime now) {
  while (s.next_wave < s.wave_left.size() && s.wave_left[s.next_wave - 1] == 0) ++s.next_wave;
  for (size_t k = 0; k < s.clones.size(); ++k) {
    if (s.started[k] || s.wave[k] >= s.next_wave) continue;
    if (const int w = s.wait_for_job[k]; w >= 0 && s.job_left[w] > 0) continue;
    s.started[k] = true;
    if (now == 0) {
      s.clones[k]->Start();
    } else {
      s.clones[k]->StartAt(now + s.clones[k]->config().start_at);
    }
  }
}

// /sys/block/X/queue settings of one disk, with the scheduler fio's
// ioscheduler= chose (elevator_switch resets nr_requests to the kernel's
// default for the new scheduler, whose iosched tunables start at their
// defaults).
model::QueueConfig QueueConfigFor(const Disk& d, const host::KernelConfig& kconfig) {
  model::QueueConfig qc;
  qc.sysfs = d.spec->queue;
  if (d.scheduler != qc.sysfs.scheduler) {
    qc.sysfs.scheduler = d.scheduler;
    qc.sysfs.nr_requests = host::DefaultNrRequests(host::TagDepth(*d.spec), d.scheduler);
    qc.sysfs.iosched = host::IoschedTunables{};
  }
  // The driver's queue limits: null_blk leaves blk_set_default_limits'
  // BLK_SAFE_MAX_SECTORS (255 sectors, max_sectors_kb 127); scsi_debug's
  // optimal transfer length and NVMe's MDTS (QEMU's 7: 512 KiB) give 1024;
  // the HBA presets keep 1024 (the common max_sectors_kb of 512).
  const host::DriverType& driver = host::DriverTypeOf(d.spec->driver);
  qc.max_sectors = driver.MaxSectors();
  qc.logical_block_bytes = driver.LogicalBlockBytes(d.spec->driver);
  qc.timeout_timer = true;
  // QUEUE_FLAG_STATS while a blk-stat consumer is registered: wbt's callback
  // (wbt_enable_default -> wbt_init, on every mq queue unless wbt is off)
  // or kyber's blk_stat_enable_accounting.
  qc.queue_stats = (kconfig.BLK_WBT && qc.sysfs.wbt_lat_usec != 0) || d.scheduler == host::Scheduler::kKyber;
  return qc;
}

}  // namespace

absl::Status DrainInFlight(Simulation& s, sim::SimTime horizon, const RunLimits& limits) {
  if (s.page_cache != nullptr) s.page_cache->Quiesce();
  auto outstanding = [&s] {
    uint64_t n = 0;
    for (model::RequestQueue* q : s.queues) {
      if (q != nullptr) n += q->requests_outstanding();
    }
    return n;
  };
  constexpr int64_t kSliceNs = 10 * sim::kNsPerMs;
  sim::Machine& m = *s.machine;
  uint64_t left = outstanding();
  sim::SimTime last_progress = horizon;
  while (left > 0 && m.sim().pending_events() > 0 && horizon - last_progress <= limits.stall_ns) {
    horizon += kSliceNs;
    m.set_horizon(horizon);
    m.sim().Run(horizon);
    const uint64_t now_left = outstanding();
    if (now_left < left) last_progress = horizon;
    left = now_left;
  }
  for (size_t dev = 0; dev < s.queues.size(); ++dev) {
    if (s.queues[dev] == nullptr || s.queues[dev]->requests_outstanding() == 0) continue;
    return absl::InternalError(absl::StrCat("device ", s.plan.disks[dev].name, ": ",
                                            s.queues[dev]->requests_outstanding(), " request(s) never completed"));
  }
  return absl::OkStatus();
}

bool TimeoutAhead(const Simulation& s, sim::SimTime horizon) {
  // 5.9+ rounding adds up to 1.024 s, the SCSI abort HZ/100: 2 s covers both.
  constexpr int64_t kSlackNs = 2 * sim::kNsPerSec;
  for (const model::RequestQueue* q : s.queues) {
    if (q == nullptr) continue;
    const sim::SimTime next = q->NextTimeout();
    if (next != 0 && next + kSlackNs > horizon) return true;
  }
  return false;
}

absl::Status BuildPlatform(const host::HostSpec& host, const std::vector<int>& used, Simulation& s) {
  // Machine: CPUs with their topology and the machine-level prices.
  BLKLAB_ASSIGN_OR_RETURN(host::CpuTopology topo, host::CpuTopology::Create(host.cpus));
  BLKLAB_ASSIGN_OR_RETURN(s.costs, host::BuildCostTable(host));
  std::vector<sim::CpuPlacement> placement(topo.num_cpus());
  for (int c = 0; c < topo.num_cpus(); ++c) {
    const host::CpuInfo& info = topo.cpu(c);
    placement[c] = sim::CpuPlacement{info.core, info.llc, info.die, info.socket, info.numa_node};
  }
  sim::MachineCosts mc;
  mc.same_core_ns = s.costs.line_transfer_smt;
  mc.llc_ns = s.costs.line_transfer_llc;
  mc.die_ns = s.costs.line_transfer_die;
  mc.socket_ns = s.costs.line_transfer_socket;
  mc.context_switch_ns = s.costs.context_switch;
  mc.context_switch_idle_ns = s.costs.context_switch_idle;
  mc.tick_period_ns = host.kernel.hz > 0 ? sim::kNsPerSec / host.kernel.hz : 0;
  mc.tick_ns = s.costs.sched_tick;
  mc.smt_busy_permille = s.costs.smt_busy_permille;
  mc.smt_spin_permille = s.costs.smt_spin_permille;
  mc.full_preemption = host.kernel.config.PREEMPT;
  mc.eevdf = host.knobs.sched_eevdf;
  mc.irq_time_in_task = !host.kernel.config.IRQ_TIME_ACCOUNTING;
  if (host.cpus.cpuidle_state1_exit_latency_ns > 0) {
    mc.cpuidle_states.push_back({host.cpus.cpuidle_state1_exit_latency_ns, host::CpuidleTargetResidencyNs(host.cpus, 1)});
    if (host.cpus.cpuidle_state2_exit_latency_ns > 0) {
      mc.cpuidle_states.push_back(
          {host.cpus.cpuidle_state2_exit_latency_ns, host::CpuidleTargetResidencyNs(host.cpus, 2)});
    }
  }
  mc.menu_iowait_latency_limit = host.knobs.menu_iowait_latency_limit;
  s.machine = std::make_unique<sim::Machine>(std::move(placement), mc);
  s.kernel = std::make_unique<model::Kernel>(*s.machine, s.costs, host.knobs, host.kernel.hz);

  // Devices the jobs use: one driver instance per host entry with a used disk.
  const std::vector<Disk>& disks = s.plan.disks;
  s.devices.resize(host.devices.size());
  s.queues.assign(disks.size(), nullptr);
  int scsi_hosts = 0;
  for (size_t e = 0; e < host.devices.size(); ++e) {
    const host::DeviceSpec& spec = host.devices[e];
    model::DeviceBuild build;
    std::vector<int> entry_disks;
    for (size_t i = 0; i < disks.size(); ++i) {
      if (disks[i].entry != e) continue;
      entry_disks.push_back(static_cast<int>(i));
      build.disk_names.push_back(disks[i].name);
      build.used.push_back(false);
      build.queues.push_back(QueueConfigFor(disks[i], host.kernel.config));
      build.queues.back().cgroup_bfq_weights = s.plan.cgroup_bfq_weights;
    }
    bool any = false;
    for (int d : used) {
      if (d < 0 || disks[d].entry != e) continue;
      if (!any) build.first_used = static_cast<size_t>(disks[d].index);
      any = true;
      build.used[disks[d].index] = true;
    }
    build.scsi_host_no = scsi_hosts;
    scsi_hosts += model::DescribeDisks(spec).scsi_hosts;
    if (!any) continue;
    s.devices[e] = model::CreateBlockDevice(*s.kernel, spec, build);
    for (size_t k = 0; k < entry_disks.size(); ++k) {
      s.queues[entry_disks[k]] = s.devices[e]->disk(static_cast<int>(k));
    }
  }

  return absl::OkStatus();
}

namespace {

// Verify headers on each disk some job verifies on, the content SCSI VERIFY
// compares, the files' inodes and the page cache.
void SetUpContents(const RunRequest& req, Simulation& s) {
  // Verify headers on each disk some job verifies on (verify.c): every
  // clone on that disk then updates them.
  s.contents.resize(s.queues.size());
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const JobSpec& spec = req.jobs.jobs[req.jobs.clones[i].job_index];
    for (const CloneTarget& t : s.plan.clone_targets[i]) {
      if (t.disk >= 0 && !spec.verify.empty() && spec.verify != "0" && s.contents[t.disk] == nullptr) {
        s.contents[t.disk] = std::make_unique<job::DeviceContent>();
      }
    }
  }

  // The content SCSI VERIFY compares, on each disk an sg job verifies
  // (every writer there then records what it writes).
  std::vector<std::unique_ptr<job::MediumContent>> medium(s.queues.size());
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const JobSpec& spec = req.jobs.jobs[req.jobs.clones[i].job_index];
    if (!workload::IoEngineHas(spec.ioengine, workload::IoEngineFlag::kScsiPassthrough)) continue;
    if (!job::IsSgVerify(spec.sg_write_mode)) continue;
    for (const CloneTarget& t : s.plan.clone_targets[i]) {
      if (t.disk >= 0 && medium[t.disk] == nullptr) medium[t.disk] = std::make_unique<job::MediumContent>();
    }
  }
  for (auto& m : medium) s.media.push_back(std::move(m));

  for (size_t f = 0; f < s.plan.files.size(); ++f) {
    s.inodes.push_back(std::make_unique<job::FileInode>());
    s.inodes.back()->base_bytes = s.plan.files[f].base;
    s.inodes.back()->size_bytes = s.plan.files[f].bytes;
  }

  // The page cache, when some job reads or writes through it (a job's
  // files share its direct= and its disks: the first decides).
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    if (!Buffered(req.jobs.jobs[req.jobs.clones[i].job_index], s.plan.clone_disk[i])) continue;
    s.page_cache = std::make_unique<model::PageCache>(*s.kernel, req.host.vm);
    s.file_mappings.assign(s.plan.files.size(), nullptr);
    s.disk_mappings.assign(s.queues.size(), nullptr);
    break;
  }
}

// Clone i: one simulated fio thread, in stonewall wave `wave`.
absl::Status AddClone(const RunRequest& req, size_t i, uint32_t wave, Simulation& s) {
  const workload::JobClone& c = req.jobs.clones[i];
  const auto& jobs = req.jobs.jobs;
  const JobSpec& spec = jobs[c.job_index];
  s.wave.push_back(wave);
  int wait_job = -1;
  if (!spec.wait_for.empty()) {
    // The parser checked that exactly one earlier job has this name.
    for (size_t j = 0; j < c.job_index; ++j) {
      if (jobs[j].name == spec.wait_for) wait_job = static_cast<int>(j);
    }
  }
  s.wait_for_job.push_back(wait_job);
  s.clone_job.push_back(c.job_index);
  s.started.push_back(false);
  const std::vector<CloneTarget>& targets = s.plan.clone_targets[i];
  const uint32_t nfiles = static_cast<uint32_t>(targets.size());
  job::JobThreadConfig jc;
  std::vector<workload::ClonePlan> plans;
  for (const CloneTarget& t : targets) {
    const int d = t.disk;
    const int file = t.file;
    BLKLAB_ASSIGN_OR_RETURN(workload::ClonePlan cplan,
                            workload::ResolveClone(spec, c.clone_index, RegionBytes(s.plan, t, spec), nfiles));
    // No filename: fio lays out a file of the job's size, which ends where
    // the region does (its real_file_size bounds the last I/O); the model
    // puts it on the host's first device.
    if (spec.filenames.empty()) cplan.device_bytes = cplan.region_start + cplan.region_bytes;
    job::JobFile jf;
    // A file: the region within the file, moved to the file's extent.
    if (file >= 0) {
      cplan.region_start += s.plan.files[file].base;
      cplan.device_bytes += s.plan.files[file].base;
      jf.base_bytes = s.plan.files[file].base;
    }
    jf.plan = cplan;
    plans.push_back(cplan);
    jf.queue = d >= 0 ? s.queues[d] : nullptr;
    if (d >= 0) {
      jf.content = s.contents[d].get();
      jf.medium = s.media[d].get();
      jf.name = "/dev/" + s.plan.disks[d].name;
    }
    if (file >= 0) {
      jf.name = s.plan.files[file].path;
      jf.inode = s.inodes[file].get();
    }
    if (Buffered(spec, d)) {
      const uint32_t ra_kb = static_cast<uint32_t>(s.plan.disks[d].spec->queue.read_ahead_kb);
      model::AddressSpace*& m = file >= 0 ? s.file_mappings[file] : s.disk_mappings[d];
      if (m == nullptr) {
        m = file >= 0 ? s.page_cache->AddMapping(s.plan.files[file].path, s.queues[d], s.plan.files[file].base,
                                                 s.plan.files[file].bytes, ra_kb)
                      : s.page_cache->AddMapping("/dev/" + s.plan.disks[d].name, s.queues[d], 0,
                                                 s.plan.disks[d].size_bytes, ra_kb);
        if (file >= 0) {
          // fallocate / ftruncate on the file drop its pages.
          s.inodes[file]->page_cache = s.page_cache.get();
          s.inodes[file]->mapping = m;
        }
      }
      jc.page_cache = s.page_cache.get();
      jf.mapping = m;
    }
    jc.files.push_back(std::move(jf));
  }
  // The clone as a whole: the first file's plan, its region the bytes of
  // every file together.
  jc.plan = plans.front();
  jc.plan.region_bytes = 0;
  for (const workload::ClonePlan& p : plans) jc.plan.region_bytes += p.region_bytes;
  if (plans.size() > 1 && spec.size.bytes == 0 && !spec.size.is_percent() && spec.io_size.bytes == 0 &&
      !spec.io_size.is_percent() && spec.filesize.hi == 0) {
    // No size=: each file is as large as it is, and the job's total is
    // their sum (setup_files: o->size = total_size), not nfiles times the
    // first one.
    jc.plan.io_limit_bytes = jc.plan.region_bytes;
    jc.plan.pass_end_ends_loop = !spec.time_based;
    for (workload::ClonePlan& p : plans) p.pass_end_ends_loop = jc.plan.pass_end_ends_loop;
    for (size_t k = 0; k < plans.size(); ++k) jc.files[k].plan = plans[k];
  }
  BLKLAB_ASSIGN_OR_RETURN(job::FileService gen, job::FileService::Create(spec, plans, c.thread_number, req.seed));
  if (!spec.buffer_pattern.empty()) {
    absl::StatusOr<std::string> bytes = workload::ParseFioPattern(spec.buffer_pattern);
    const bool compared = std::any_of(jc.files.begin(), jc.files.end(),
                                      [](const job::JobFile& f) { return f.medium != nullptr; });
    if (!bytes.ok() && compared) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': buffer_pattern=", spec.buffer_pattern,
                                                     ": ", bytes.status().message(),
                                                     " (SCSI VERIFY compares the data it describes)"));
    }
    if (bytes.ok()) jc.data_id = job::MediumContent::PatternId(*bytes);
  }
  jc.spec = &spec;
  jc.thread_number = c.thread_number;
  jc.blkcg = s.plan.clone_blkcg[i];
  jc.cpu = s.plan.clone_cpu[i];
  jc.cpus_allowed = s.plan.clone_cpus_allowed[i];
  if (spec.flow != 0) {
    // flow_init_job, when fio adds the job: every clone's weight counts
    // from the start, also in a later stonewall wave.
    job::FioFlow& flow = s.flows[spec.flow_id];
    flow.total_weight += spec.flow;
    jc.flow = &flow;
  }
  jc.seed = req.seed;
  jc.start_at = spec.startdelay_min_ns;
  jc.ramp_end = jc.start_at + spec.ramp_time_ns;
  jc.end_at = spec.runtime_ns > 0 ? jc.ramp_end + spec.runtime_ns : sim::kSimTimeNever;
  s.clones.push_back(std::make_unique<job::JobThread>(*s.kernel, jc, std::move(gen)));
  return absl::OkStatus();
}

// Counts of clones left per wave and per job, and each clone's completion:
// the next ready clones start, and the last one stops fio's threads.
void WireCompletions(Simulation& s, uint32_t waves, size_t jobs_count) {
  s.wave_left.assign(waves, 0);
  s.job_left.assign(jobs_count, 0);
  Simulation* self = &s;
  for (size_t i = 0; i < s.clones.size(); ++i) {
    ++s.wave_left[s.wave[i]];
    ++s.job_left[s.clone_job[i]];
    s.clones[i]->set_on_done([self, i](job::JobThread* t) {
      ++self->done;
      --self->wave_left[self->wave[i]];
      --self->job_left[self->clone_job[i]];
      StartReadyClones(*self, t->finished_at());
      // fio's threads notice at their next wake-up and exit; the run ends
      // here, so they are not woken again.
      if (self->done == self->clones.size() && self->backend != nullptr) self->backend->Stop();
    });
  }
}

// fio's main and helper threads, and the page cache's flusher.
void StartFioBackend(const RunRequest& req, Simulation& s) {
  const auto& jobs = req.jobs.jobs;
  // fio's main and helper threads, on the CPU with the fewest job threads
  // (the lowest-numbered among equals) of those the fio process may use:
  // numa_cpu_nodes named alike by every job stands for `numactl -N` on the
  // whole run, as the seed lines use it.
  job::FioBackendConfig bc;
  std::vector<int> per_cpu(static_cast<size_t>(s.machine->num_cpus()), 0);
  for (int cpu : s.plan.clone_cpu) ++per_cpu[static_cast<size_t>(cpu)];
  const std::vector<uint32_t> nodes = jobs.empty() ? std::vector<uint32_t>{} : jobs.front().numa_cpu_nodes;
  const bool process_nodes = !nodes.empty() && std::all_of(jobs.begin(), jobs.end(), [&nodes](const JobSpec& j) {
    return j.numa_cpu_nodes == nodes;
  });
  int best = -1;
  for (int c = 0; c < s.machine->num_cpus(); ++c) {
    const auto node = static_cast<uint32_t>(s.machine->placement(c).node);
    if (process_nodes && std::find(nodes.begin(), nodes.end(), node) == nodes.end()) continue;
    if (best < 0 || per_cpu[static_cast<size_t>(c)] < per_cpu[static_cast<size_t>(best)]) best = c;
  }
  bc.cpu = std::max(best, 0);
  std::vector<bool> measured(s.queues.size(), false);
  for (size_t i = 0; i < s.clones.size(); ++i) {
    const int d = s.plan.clone_disk[i];
    if (d >= 0 && jobs[s.clone_job[i]].disk_util && !measured[static_cast<size_t>(d)]) {
      measured[static_cast<size_t>(d)] = true;
      ++bc.disk_util_disks;
    }
  }
  if (s.page_cache != nullptr) s.page_cache->Start(0);
  s.backend = std::make_unique<job::FioBackend>(*s.kernel, bc, s.clones);
  s.backend->Start();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Simulation>> BuildSimulation(const RunRequest& req, RunPlan plan) {
  auto sp = std::make_unique<Simulation>();
  Simulation& s = *sp;
  s.plan = std::move(plan);

  // Every disk a clone uses, in clone and file order.
  std::vector<int> used = s.plan.clone_disk;
  for (const std::vector<CloneTarget>& targets : s.plan.clone_targets) {
    for (size_t k = 1; k < targets.size(); ++k) used.push_back(targets[k].disk);
  }
  BLKLAB_RETURN_IF_ERROR(BuildPlatform(req.host, used, s));
  if (req.collect_stacks) s.machine->EnableStacks();
  SetUpContents(req, s);

  // Clones: one simulated fio thread each; stonewall opens a new wave.
  uint32_t wave = 0;
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const workload::JobClone& c = req.jobs.clones[i];
    if (i > 0 && c.clone_index == 0 && req.jobs.jobs[c.job_index].stonewall) ++wave;
    BLKLAB_RETURN_IF_ERROR(AddClone(req, i, wave, s));
  }
  WireCompletions(s, wave + 1, req.jobs.jobs.size());
  StartReadyClones(s, 0);
  StartFioBackend(req, s);
  return sp;
}

}  // namespace blklab
