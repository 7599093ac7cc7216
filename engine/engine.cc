#include "engine/engine.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "engine/host/cpu_topology.h"
#include "engine/host/presets.h"
#include "engine/job/job_thread.h"
#include "engine/model/drivers/null_blk.h"
#include "engine/model/drivers/scsi_hba.h"
#include "engine/model/kernel.h"
#include "engine/sim/machine.h"
#include "engine/sim/spinlock.h"
#include "engine/util/status_macros.h"
#include "engine/workload/io_generator.h"

namespace blklab {
namespace {

using workload::IoEngine;
using workload::JobSpec;

// One simulated block device instance of the host.
struct DeviceInstance {
  std::string name;
  const host::DeviceSpec* spec = nullptr;
  host::Scheduler scheduler = host::Scheduler::kNone;
  uint64_t size_bytes = 0;
  bool has_poll_queues = false;
};

std::vector<DeviceInstance> ListDevices(const host::HostSpec& host) {
  std::vector<DeviceInstance> out;
  for (const host::DeviceSpec& d : host.devices) {
    const int n = host::DeviceInstances(d);
    for (int i = 0; i < n; ++i) {
      DeviceInstance inst;
      inst.name = host::DeviceInstanceName(d, i);
      inst.spec = &d;
      inst.scheduler = d.queue.scheduler;
      if (const auto* nb = std::get_if<host::NullBlkSpec>(&d.driver)) {
        inst.size_bytes = static_cast<uint64_t>(nb->gb) << 30;
        inst.has_poll_queues = nb->poll_queues > 0;
      } else if (const auto* nv = std::get_if<host::NvmeSpec>(&d.driver)) {
        inst.size_bytes = static_cast<uint64_t>(nv->gb) << 30;
      } else if (const auto* sd = std::get_if<host::ScsiDebugSpec>(&d.driver)) {
        inst.size_bytes = static_cast<uint64_t>(sd->dev_size_mb) << 20;
      } else if (const auto* hba = std::get_if<host::HbaSpec>(&d.driver)) {
        inst.size_bytes = static_cast<uint64_t>(hba->gb) << 30;
      }
      out.push_back(inst);
    }
  }
  return out;
}

std::string DeviceNames(const std::vector<DeviceInstance>& devices) {
  std::vector<std::string> names;
  for (const auto& d : devices) names.push_back(d.name);
  return absl::StrJoin(names, ", ");
}

// filename= -> device instance index, or -1 for the null engine.
absl::StatusOr<int> TargetDevice(const JobSpec& spec, const std::vector<DeviceInstance>& devices) {
  if (spec.ioengine == IoEngine::kNull) return -1;
  if (spec.filenames.empty()) return 0;  // no filename: the host's first device
  if (spec.filenames.size() > 1) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': filename lists several targets (",
        absl::StrJoin(spec.filenames, ":"), "); blklab runs a job against one device so far"));
  }
  std::string name = spec.filenames[0];
  if (absl::StartsWith(name, "/dev/")) name = name.substr(5);
  for (size_t i = 0; i < devices.size(); ++i) {
    if (devices[i].name == name) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': filename=",
                                                 spec.filenames[0], " is not a device of this host; ",
                                                 "devices: ", DeviceNames(devices)));
}

absl::StatusOr<host::Scheduler> SchedulerFromName(const std::string& name) {
  if (std::optional<host::Scheduler> s = host::SchedulerFromName(name)) return *s;
  return absl::InvalidArgumentError(absl::StrCat("ioscheduler=", name, ": not a scheduler of this kernel (",
                                                 host::SchedulerNames(), ")"));
}

// The CPUs a clone may run on, and the one the model pins it to.
// numa_cpu_nodes= (what `numactl -N` does for a whole fio run) keeps only the
// CPUs of those NUMA nodes of the host, intersected with cpus_allowed.
absl::StatusOr<int> CloneCpu(const JobSpec& spec, const workload::JobClone& clone,
                             const host::CpuTopology& topo) {
  const int ncpus = topo.num_cpus();
  for (uint32_t node : spec.numa_cpu_nodes) {
    if (static_cast<int>(node) >= topo.num_numa_nodes()) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': numa_cpu_nodes names node ",
                                                     node, " but the host has ", topo.num_numa_nodes(),
                                                     " NUMA node(s)"));
    }
  }
  auto on_nodes = [&spec, &topo](int c) {
    if (spec.numa_cpu_nodes.empty()) return true;
    return std::find(spec.numa_cpu_nodes.begin(), spec.numa_cpu_nodes.end(),
                     static_cast<uint32_t>(topo.cpu(c).numa_node)) != spec.numa_cpu_nodes.end();
  };
  std::vector<int> allowed;
  for (uint32_t c : spec.cpus_allowed) {
    if (static_cast<int>(c) >= ncpus) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': cpus_allowed names CPU ",
                                                     c, " but the host has ", ncpus, " CPUs"));
    }
    if (on_nodes(static_cast<int>(c))) allowed.push_back(static_cast<int>(c));
  }
  if (spec.cpus_allowed.empty()) {
    for (int c = 0; c < ncpus; ++c) {
      if (on_nodes(c)) allowed.push_back(c);
    }
  }
  if (allowed.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", spec.name, "': cpus_allowed and numa_cpu_nodes leave no CPU of the host"));
  }
  // split: clone k gets the k-th CPU (round robin). shared: the scheduler
  // would spread the clones; the model pins them round robin by thread number.
  const uint32_t k = spec.cpus_allowed_policy == workload::CpusAllowedPolicy::kSplit
                         ? clone.clone_index
                         : clone.thread_number - 1;
  return allowed[k % allowed.size()];
}

// /sys/block/X/queue settings of one device instance, with the scheduler
// fio's ioscheduler= chose (elevator_switch resets nr_requests to the
// kernel's default for the new scheduler).
model::QueueConfig QueueConfigFor(const DeviceInstance& d) {
  model::QueueConfig qc;
  qc.sysfs = d.spec->queue;
  if (d.scheduler != qc.sysfs.scheduler) {
    qc.sysfs.scheduler = d.scheduler;
    qc.sysfs.nr_requests = host::DefaultNrRequests(host::TagDepth(*d.spec), d.scheduler);
  }
  qc.timeout_timer = true;
  return qc;
}

// Everything one run owns.
struct Simulation {
  std::unique_ptr<sim::Machine> machine;
  host::CostTable costs;
  std::unique_ptr<model::Kernel> kernel;
  std::vector<DeviceInstance> devices;
  std::vector<std::unique_ptr<model::NullBlk>> null_blks;  // by device index (null if unused)
  std::vector<std::unique_ptr<model::ScsiHba>> hbas;       // by host entry (null if unused)
  std::vector<model::RequestQueue*> queues;                // by device index (null if unused)
  std::vector<std::unique_ptr<job::JobThread>> clones;
  std::vector<int> clone_device;
  std::vector<uint32_t> wave;        // stonewall wave per clone
  std::vector<uint32_t> clone_job;   // per clone: its job's index
  std::vector<int> wait_for_job;     // per clone: the job index its wait_for names, or -1
  std::vector<bool> started;         // per clone
  std::vector<uint32_t> wave_left;   // per wave: clones not done
  std::vector<uint32_t> job_left;    // per job: clones not done
  uint32_t next_wave = 1;
  uint32_t done = 0;
};

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

absl::Status CheckModelled(const host::DeviceSpec& d, const std::string& path) {
  if (const auto* nb = std::get_if<host::NullBlkSpec>(&d.driver)) {
    if (nb->queue_mode != 2) {
      return absl::UnimplementedError(absl::StrCat(path, ".null_blk.queue_mode=", nb->queue_mode,
                                                   ": only blk-mq (2) is modelled"));
    }
    if (nb->shared_tags || nb->shared_tag_bitmap) {
      return absl::UnimplementedError(
          absl::StrCat(path, ".null_blk: shared_tags / shared_tag_bitmap are not modelled yet"));
    }
    if (nb->memory_backed) {
      return absl::UnimplementedError(absl::StrCat(path, ".null_blk.memory_backed is not modelled"));
    }
    if (nb->use_per_node_hctx) {
      return absl::UnimplementedError(absl::StrCat(path, ".null_blk.use_per_node_hctx is not modelled"));
    }
    return absl::OkStatus();
  }
  if (std::holds_alternative<host::NvmeSpec>(d.driver)) {
    return absl::UnimplementedError(absl::StrCat(path, ": the nvme driver is not modelled yet"));
  }
  if (std::holds_alternative<host::HbaSpec>(d.driver)) return absl::OkStatus();
  return absl::UnimplementedError(absl::StrCat(
      path, ": the scsi_debug driver is not modelled yet (the SCSI path is: use an hba device)"));
}

// Resolves every clone's target device and the schedulers fio's ioscheduler=
// asks for; checks what the model cannot run.
absl::Status PlanDevices(const RunRequest& req, std::vector<DeviceInstance>& devices,
                         std::vector<int>& clone_device) {
  const auto& jobs = req.jobs.jobs;
  std::vector<int> job_device(jobs.size(), -1);
  for (size_t j = 0; j < jobs.size(); ++j) {
    BLKLAB_ASSIGN_OR_RETURN(job_device[j], TargetDevice(jobs[j], devices));
    const int dev = job_device[j];
    if (dev < 0) continue;
    if (!jobs[j].ioscheduler.empty()) {
      BLKLAB_ASSIGN_OR_RETURN(devices[dev].scheduler, SchedulerFromName(jobs[j].ioscheduler));
    }
    if (jobs[j].engine_flags.hipri && !devices[dev].has_poll_queues) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job '", jobs[j].name, "': hipri needs poll queues, but device ", devices[dev].name,
          " has none (null_blk poll_queues=0)"));
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    const int dev = job_device[j];
    if (dev < 0) continue;
    size_t spec_index = 0;
    for (size_t k = 0; k < req.host.devices.size(); ++k) {
      if (&req.host.devices[k] == devices[dev].spec) spec_index = k;
    }
    const std::string path = absl::StrCat("devices[", spec_index, "]");
    BLKLAB_RETURN_IF_ERROR(CheckModelled(*devices[dev].spec, path));
    if (devices[dev].scheduler == host::Scheduler::kMqDeadline && req.host.knobs.dd_insert_buckets) {
      return absl::UnimplementedError(absl::StrCat(
          "device ", devices[dev].name,
          ": knobs.dd_insert_buckets (mq-deadline per-CPU insert buckets) is not modelled yet; "
          "use dd_insert_side_lists for the insert fix"));
    }
  }
  clone_device.clear();
  for (const auto& c : req.jobs.clones) clone_device.push_back(job_device[c.job_index]);
  return absl::OkStatus();
}

// Fills result.clones (and virtual_ns, events) at virtual time `end`: the
// final results, or (final=false) each clone's running figures.
void CollectResults(const RunRequest& req, const Simulation& s, sim::SimTime end, bool final,
                    RunResult& result) {
  result.clones.clear();
  for (size_t i = 0; i < s.clones.size(); ++i) {
    const job::JobThread& t = *s.clones[i];
    const workload::JobClone& c = req.jobs.clones[i];
    CloneResult cr;
    cr.job_index = c.job_index;
    cr.clone_index = c.clone_index;
    cr.thread_number = c.thread_number;
    cr.group_id = c.group_id;
    cr.cpu = t.config().cpu;
    cr.device = s.clone_device[i] >= 0 ? s.devices[s.clone_device[i]].name : "";
    cr.start_ns = t.config().start_at;
    cr.end_ns = t.done() ? t.finished_at() : end;
    cr.result = final ? t.result() : t.PeekResult(end);
    result.clones.push_back(std::move(cr));
  }
  result.virtual_ns = end;
  result.events = s.machine->sim().events_delivered();
}

// blklab's kernel report at `end`: CPU modes, profile, locks, counters,
// devices. final=false builds it from a running simulation without changing
// it (CPU idle time is not advanced; disk busy time is added on a copy).
absl::Status BuildKernelReport(const RunRequest& req, Simulation& s, sim::SimTime end, bool final,
                               RunResult& result) {
  sim::Machine& m = *s.machine;
  // blklab's kernel report: CPU modes, profile, locks, counters, devices.
  stats::KernelReport& k = result.kernel;
  k.host_name = req.host.name;
  k.elapsed_ns = end;
  k.events = result.events;
  int64_t sys_ns = 0;
  int used = 0;
  for (int c = 0; c < m.num_cpus(); ++c) {
    sim::Cpu& cpu = m.cpu(c);
    if (final) cpu.AccountIdleUntil(end);
    if (cpu.busy_ns() == 0) continue;
    ++used;
    stats::CpuRow row;
    row.cpu = c;
    for (int mode = 0; mode < sim::kNumModes; ++mode) {
      row.mode_ns[mode] = cpu.mode_ns(static_cast<sim::Mode>(mode));
    }
    k.busy_ns += cpu.busy_ns();
    sys_ns += cpu.mode_ns(sim::Mode::kSys) + cpu.mode_ns(sim::Mode::kIrq) +
              cpu.mode_ns(sim::Mode::kSoftirq);
    k.cpus.push_back(row);
  }
  k.sys_pct = end > 0 && used > 0 ? 100.0 * static_cast<double>(sys_ns) / (static_cast<double>(end) * used) : 0;
  const auto& fns = m.functions();
  int64_t slowpath = 0;
  for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
    for (int mode = 0; mode < 4; ++mode) {
      int64_t ns = 0;
      for (int c = 0; c < m.num_cpus(); ++c) ns += m.cpu(c).fn_ns(fn, static_cast<sim::Mode>(mode));
      if (ns == 0) continue;
      stats::ProfileRow row;
      row.function = fns.name(fn);
      row.mode = static_cast<stats::CpuMode>(mode);
      row.self_ns = ns;
      row.share_pct = k.busy_ns > 0 ? 100.0 * static_cast<double>(ns) / static_cast<double>(k.busy_ns) : 0;
      if (row.function == "native_queued_spin_lock_slowpath") slowpath += ns;
      k.profile.push_back(std::move(row));
    }
  }
  std::stable_sort(k.profile.begin(), k.profile.end(),
                   [](const stats::ProfileRow& a, const stats::ProfileRow& b) {
                     if (a.self_ns != b.self_ns) return a.self_ns > b.self_ns;
                     if (a.function != b.function) return a.function < b.function;
                     return a.mode < b.mode;
                   });
  k.contention_pct = k.busy_ns > 0 ? 100.0 * static_cast<double>(slowpath) / k.busy_ns : 0;
  std::map<std::string, stats::LockRow> locks;  // ordered by name: deterministic
  for (const sim::SpinLock* l : m.locks()) {
    const sim::LockStats& st = l->stats();
    if (st.acquisitions == 0) continue;
    stats::LockRow& row = locks[l->name()];
    row.name = l->name();
    row.acquisitions += st.acquisitions;
    row.contended += st.contended;
    row.wait_ns += st.wait_ns;
    row.hold_ns += st.hold_ns;
    row.max_waiters = std::max<uint64_t>(row.max_waiters, st.max_waiters);
  }
  for (auto& [name, row] : locks) k.locks.push_back(row);
  for (int c = 0; c < static_cast<int>(model::Counter::kNumCounters); ++c) {
    const uint64_t v = s.kernel->counter(static_cast<model::Counter>(c));
    if (v == 0) continue;
    k.counters.push_back(stats::CounterRow{model::CounterName(static_cast<model::Counter>(c)), v});
  }
  k.counters.push_back(stats::CounterRow{"sim_events", result.events});
  std::sort(k.counters.begin(), k.counters.end(),
            [](const stats::CounterRow& a, const stats::CounterRow& b) { return a.name < b.name; });
  for (auto& c : result.clones) k.total_ios += c.result.dirs[0].total_ios + c.result.dirs[1].total_ios +
                                               c.result.dirs[2].total_ios;
  for (size_t dev = 0; dev < s.queues.size(); ++dev) {
    if (s.queues[dev] == nullptr) continue;
    model::RequestQueue& q = *s.queues[dev];
    if (final) q.FinishDiskStats(end);
    model::DiskStats ds = q.disk_stats();
    if (!final && ds.in_flight > 0 && end > ds.busy_since) ds.io_ticks_ns += end - ds.busy_since;
    stats::DeviceRow row;
    row.name = s.devices[dev].name;
    row.read_ios = ds.ios[0];
    row.write_ios = ds.ios[1];
    row.read_merges = ds.merges[0];
    row.write_merges = ds.merges[1];
    row.read_ticks_ms = ds.ticks_ns[0] / 1000000;
    row.write_ticks_ms = ds.ticks_ns[1] / 1000000;
    row.in_queue_ms = ds.in_queue_ns / 1000000;
    row.util_pct = end > 0 ? 100.0 * static_cast<double>(ds.io_ticks_ns) / static_cast<double>(end) : 0;
    k.devices.push_back(row);
    // Invariant: no request is lost.
    if (final && q.requests_outstanding() != 0) {
      return absl::InternalError(absl::StrCat("device ", row.name, ": ", q.requests_outstanding(),
                                              " request(s) never completed"));
    }
  }
  return absl::OkStatus();
}

// Folds fio's log-linear buckets into SnapshotInterval's coarser ones (see
// SnapshotInterval::clat_buckets) and sums their representative values.
void CoarsenClat(const stats::LatencyHistogram& h,
                 std::array<uint64_t, SnapshotInterval::kClatBuckets>& buckets, double& sum_ns) {
  using H = stats::LatencyHistogram;
  using S = SnapshotInterval;
  static_assert(H::kBucketsPerGroup % S::kClatSubBuckets == 0);
  constexpr int kFioPerCoarse = H::kBucketsPerGroup / S::kClatSubBuckets;  // 16
  const absl::Span<const uint64_t> counts = h.counts();
  for (int b = 0; b < H::kNumBuckets; ++b) {
    if (counts[b] == 0) continue;
    // b < 128: single values below 2^7 ns. Above, group g = b / 64 covers
    // [2^(g+5), 2^(g+6)) in 64 equal parts; part k ends at
    // 2^(g+5) x (1 + (k+1)/64), inside coarse part k / 16 + 1 of that power.
    int i = 0;
    if (b >= 2 * H::kBucketsPerGroup) {
      const int log2_low = (b >> H::kPrecisionBits) + 5;
      const int k = b & (H::kBucketsPerGroup - 1);
      i = (log2_low - S::kClatBucketLog2Min) * S::kClatSubBuckets + k / kFioPerCoarse + 1;
    }
    buckets[std::clamp(i, 0, S::kClatBuckets - 1)] += counts[b];
    sum_ns += static_cast<double>(counts[b]) * static_cast<double>(H::BucketValue(b));
  }
}

// Running counters at the end of the previous status interval: each
// interval view is a difference against them, so no clone's statistics are
// copied. Cost per interval: one pass over the buckets of each clone's clat
// histograms that changed, the per-function table of each CPU and the locks.
class IntervalTracker {
 public:
  explicit IntervalTracker(const Simulation& s) {
    const size_t n = s.clones.size();
    ios_.resize(n);
    bytes_.resize(n);
    clat_.resize(n);
    clat_total_.resize(n);
    const int ncpus = s.machine->num_cpus();
    cpu_.assign(ncpus, {});
    slow_.assign(ncpus, 0);
    const sim::FunctionRegistry& fns = s.machine->functions();
    for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
      if (fns.name(fn) == "native_queued_spin_lock_slowpath") slowpath_fn_ = fn;
    }
  }

  void Fill(const Simulation& s, sim::SimTime end, SnapshotInterval& out) {
    out.start_ns = start_;
    out.end_ns = end;
    const int64_t len = end - start_;
    start_ = end;

    // IOs, bytes and clat histograms per clone and direction.
    for (size_t i = 0; i < s.clones.size(); ++i) {
      const job::JobThread& c = *s.clones[i];
      for (int d = 0; d < stats::kNumDirs; ++d) {
        out.ios[d] += c.dir_ios_completed()[d] - ios_[i][d];
        out.bytes[d] += c.dir_bytes_completed()[d] - bytes_[i][d];
        ios_[i][d] = c.dir_ios_completed()[d];
        bytes_[i][d] = c.dir_bytes_completed()[d];
        const stats::LatencyHistogram& h = c.clat_hist(static_cast<stats::Dir>(d));
        if (h.total() == clat_total_[i][d]) continue;
        std::vector<uint64_t>& prev = clat_[i][d];
        if (prev.empty()) prev.assign(stats::LatencyHistogram::kNumBuckets, 0);
        const absl::Span<const uint64_t> counts = h.counts();
        for (int b = 0; b < stats::LatencyHistogram::kNumBuckets; ++b) {
          if (counts[b] == prev[b]) continue;
          scratch_[d].AddToBucket(b, counts[b] - prev[b]);
          prev[b] = counts[b];
        }
        clat_total_[i][d] = h.total();
      }
    }
    for (int d = 0; d < stats::kNumDirs; ++d) {
      if (len > 0) {
        out.iops[d] = static_cast<double>(out.ios[d]) * 1e9 / static_cast<double>(len);
        out.bw_bytes_per_sec[d] = static_cast<uint64_t>(static_cast<long double>(out.bytes[d]) * 1e9L /
                                                        static_cast<long double>(len));
      }
      out.clat_samples[d] = scratch_[d].total();
      if (scratch_[d].total() == 0) continue;
      const std::vector<uint64_t> v = scratch_[d].Percentiles(SnapshotInterval::kPercentiles);
      for (size_t k = 0; k < v.size() && k < out.clat_pct_ns[d].size(); ++k) out.clat_pct_ns[d][k] = v[k];
      CoarsenClat(scratch_[d], out.clat_buckets[d], out.clat_sum_ns[d]);
      scratch_[d].Clear();
    }

    // CPU modes and the spinlock slowpath, summed over the host's CPUs.
    const sim::Machine& m = *s.machine;
    std::array<int64_t, 4> modes{};
    int64_t slow = 0;
    for (int c = 0; c < m.num_cpus(); ++c) {
      const sim::Cpu& cpu = m.cpu(c);
      for (int mode = 0; mode < 4; ++mode) {
        const int64_t ns = cpu.mode_ns(static_cast<sim::Mode>(mode));
        modes[mode] += ns - cpu_[c][mode];
        cpu_[c][mode] = ns;
      }
      if (slowpath_fn_ >= 0) {
        int64_t ns = 0;
        for (int mode = 0; mode < 4; ++mode) {
          ns += cpu.fn_ns(static_cast<sim::FnId>(slowpath_fn_), static_cast<sim::Mode>(mode));
        }
        slow += ns - slow_[c];
        slow_[c] = ns;
      }
    }
    const int64_t busy = modes[0] + modes[1] + modes[2] + modes[3];
    const int64_t total = len * m.num_cpus();
    // A CPU may run a step past the interval's end; the next one makes up.
    const double denom = static_cast<double>(std::max(total, busy));
    if (denom > 0) {
      for (int mode = 0; mode < 4; ++mode) out.cpu_pct[mode] = 100.0 * static_cast<double>(modes[mode]) / denom;
      out.cpu_pct[4] = 100.0 * static_cast<double>(std::max<int64_t>(total - busy, 0)) / denom;
    }
    out.contention_pct = busy > 0 ? 100.0 * static_cast<double>(slow) / static_cast<double>(busy) : 0;
    out.busy_ns = busy;

    // Self time per function, summed over CPUs and modes; the top rows.
    const sim::FunctionRegistry& fns = m.functions();
    if (fn_.size() < fns.size()) fn_.resize(fns.size(), 0);
    out.top_functions.clear();
    for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
      int64_t ns = 0;
      for (int c = 0; c < m.num_cpus(); ++c) {
        for (int mode = 0; mode < 4; ++mode) ns += m.cpu(c).fn_ns(fn, static_cast<sim::Mode>(mode));
      }
      const int64_t delta = ns - fn_[fn];
      fn_[fn] = ns;
      if (delta > 0) out.top_functions.push_back({fns.name(fn), delta});
    }
    const auto by_time = [](const SnapshotInterval::FunctionTime& a, const SnapshotInterval::FunctionTime& b) {
      return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.function < b.function;
    };
    if (out.top_functions.size() > SnapshotInterval::kTopFunctions) {
      std::partial_sort(out.top_functions.begin(),
                        out.top_functions.begin() + SnapshotInterval::kTopFunctions, out.top_functions.end(),
                        by_time);
      out.top_functions.resize(SnapshotInterval::kTopFunctions);
    } else {
      std::sort(out.top_functions.begin(), out.top_functions.end(), by_time);
    }

    // Requests in flight per device.
    out.inflight.clear();
    for (size_t dev = 0; dev < s.queues.size(); ++dev) {
      if (s.queues[dev] == nullptr) continue;
      out.inflight.push_back({s.devices[dev].name, s.queues[dev]->requests_outstanding()});
    }

    // Locks, summed by name.
    const std::vector<sim::SpinLock*>& locks = m.locks();
    if (locks_.size() < locks.size()) locks_.resize(locks.size());
    std::map<std::string, stats::LockRow> rows;  // ordered by name: deterministic
    for (size_t i = 0; i < locks.size(); ++i) {
      const sim::LockStats& st = locks[i]->stats();
      sim::LockStats& prev = locks_[i];
      if (st.acquisitions != prev.acquisitions) {
        stats::LockRow& row = rows[locks[i]->name()];
        row.name = locks[i]->name();
        row.acquisitions += st.acquisitions - prev.acquisitions;
        row.contended += st.contended - prev.contended;
        row.wait_ns += st.wait_ns - prev.wait_ns;
        row.hold_ns += st.hold_ns - prev.hold_ns;
      }
      prev = st;
    }
    out.locks.clear();
    for (auto& [name, row] : rows) out.locks.push_back(std::move(row));
  }

 private:
  sim::SimTime start_ = 0;
  std::vector<std::array<uint64_t, stats::kNumDirs>> ios_, bytes_, clat_total_;
  // Per clone and direction: bucket counts at the last interval (allocated
  // at the direction's first sample).
  std::vector<std::array<std::vector<uint64_t>, stats::kNumDirs>> clat_;
  std::vector<std::array<int64_t, 4>> cpu_;  // per CPU: usr, sys, irq, softirq ns
  std::vector<int64_t> slow_;                // per CPU: slowpath ns
  std::vector<sim::LockStats> locks_;        // by index in Machine::locks()
  std::vector<int64_t> fn_;                  // per function: self ns, all CPUs and modes
  int64_t slowpath_fn_ = -1;
  stats::LatencyHistogram scratch_[stats::kNumDirs];
};

}  // namespace

workload::ParseOptions ParseOptionsFor(const workload::FioInvocation& invocation,
                                       const host::HostSpec& host, workload::FileReader read_file,
                                       workload::VarLookup lookup_var) {
  workload::ParseOptions opts;
  opts.read_file = std::move(read_file);
  opts.lookup_var = std::move(lookup_var);
  opts.host.ncpus = static_cast<uint32_t>(host.cpus.count);
  opts.sections = invocation.sections;
  // --parse-only accepts what fio accepts, as fio --parse-only does.
  if (invocation.parse_only) opts.accept_unmodelled_engines = true;
  return opts;
}

absl::StatusOr<ParsedFio> ParseFio(const std::vector<std::string>& args, const host::HostSpec& host,
                                   workload::FileReader read_file, workload::VarLookup lookup_var) {
  ParsedFio out;
  BLKLAB_ASSIGN_OR_RETURN(out.invocation, workload::ParseFioArgs(args));
  const workload::ParseOptions opts =
      ParseOptionsFor(out.invocation, host, std::move(read_file), std::move(lookup_var));
  BLKLAB_ASSIGN_OR_RETURN(out.jobs, workload::BuildJobs(out.invocation, opts));
  return out;
}

absl::StatusOr<host::HostSpec> ResolveHost(const std::string& preset_or_text) {
  if (preset_or_text.find_first_of(":{\n") == std::string::npos) {
    return host::GetPreset(preset_or_text);
  }
  return host::ParseHostSpec(preset_or_text);
}

absl::Status ValidateRun(const RunRequest& req) {
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host));
  BLKLAB_ASSIGN_OR_RETURN(host::CpuTopology topo, host::CpuTopology::Create(req.host.cpus));
  if (req.jobs.clones.empty()) return absl::InvalidArgumentError("no jobs to run");
  std::vector<DeviceInstance> devices = ListDevices(req.host);
  std::vector<int> clone_device;
  BLKLAB_RETURN_IF_ERROR(PlanDevices(req, devices, clone_device));
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const auto& c = req.jobs.clones[i];
    const JobSpec& spec = req.jobs.jobs[c.job_index];
    BLKLAB_RETURN_IF_ERROR(CloneCpu(spec, c, topo).status());
    if (spec.ioengine == IoEngine::kUnmodelled) {
      return absl::UnimplementedError(
          absl::StrCat("ioengine=", spec.ioengine_name, " is not modelled by blklab"));
    }
    const bool bounded = spec.runtime_ns > 0 || (!spec.time_based);
    if (!bounded) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job '", spec.name, "': time_based needs runtime= (the run would never end)"));
    }
    if (spec.runtime_ns + spec.ramp_time_ns > req.limits.max_virtual_ns) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "job '", spec.name, "': runtime+ramp_time exceeds the virtual-time limit of ",
          req.limits.max_virtual_ns / 1000000000, " s"));
    }
    const uint64_t dev_bytes =
        clone_device[i] >= 0 ? devices[clone_device[i]].size_bytes
                             : std::max<uint64_t>(spec.size.bytes, uint64_t{1} << 30);
    BLKLAB_RETURN_IF_ERROR(workload::ResolveClone(spec, c.clone_index, dev_bytes).status());
  }
  return absl::OkStatus();
}

absl::StatusOr<RunResult> RunFio(const RunRequest& req, const SnapshotFn& on_snapshot,
                                 const std::atomic<bool>* cancel) {
  BLKLAB_RETURN_IF_ERROR(ValidateRun(req));
  Simulation s;
  RunResult result;
  result.warnings = req.jobs.warnings;

  // Machine: CPUs with their topology and the machine-level prices.
  BLKLAB_ASSIGN_OR_RETURN(host::CpuTopology topo, host::CpuTopology::Create(req.host.cpus));
  BLKLAB_ASSIGN_OR_RETURN(s.costs, host::BuildCostTable(req.host));
  std::vector<sim::CpuPlacement> placement(topo.num_cpus());
  for (int c = 0; c < topo.num_cpus(); ++c) {
    const host::CpuInfo& info = topo.cpu(c);
    placement[c] = sim::CpuPlacement{info.core, info.llc, info.die, info.socket, info.numa_node};
  }
  sim::MachineCosts mc;
  mc.same_core_ns = s.costs.line_read_hit;
  mc.llc_ns = s.costs.line_transfer_llc;
  mc.die_ns = s.costs.line_transfer_die;
  mc.socket_ns = s.costs.line_transfer_socket;
  mc.context_switch_ns = s.costs.context_switch;
  s.machine = std::make_unique<sim::Machine>(std::move(placement), mc);
  s.kernel = std::make_unique<model::Kernel>(*s.machine, s.costs, req.host.knobs, req.host.kernel.hz);

  // Devices the jobs use.
  s.devices = ListDevices(req.host);
  BLKLAB_RETURN_IF_ERROR(PlanDevices(req, s.devices, s.clone_device));
  s.null_blks.resize(s.devices.size());
  s.queues.assign(s.devices.size(), nullptr);
  s.hbas.resize(req.host.devices.size());
  for (int dev : s.clone_device) {
    if (dev < 0 || s.queues[dev] != nullptr) continue;
    const DeviceInstance& d = s.devices[dev];
    if (const auto* hba = std::get_if<host::HbaSpec>(&d.spec->driver)) {
      // One SCSI host per entry with all its LUNs (they share its tags).
      size_t entry = 0;
      int scsi_host = 0;
      for (size_t k = 0; k < req.host.devices.size(); ++k) {
        if (&req.host.devices[k] == d.spec) {
          entry = k;
          break;
        }
        if (std::holds_alternative<host::HbaSpec>(req.host.devices[k].driver)) ++scsi_host;
      }
      std::vector<int> lun_devs;
      for (size_t i = 0; i < s.devices.size(); ++i) {
        if (s.devices[i].spec == d.spec) lun_devs.push_back(static_cast<int>(i));
      }
      std::vector<std::string> names;
      for (int i : lun_devs) names.push_back(s.devices[i].name);
      model::ScsiHbaConfig hc;
      hc.lld = hba->lld;
      hc.can_queue = static_cast<uint32_t>(hba->can_queue);
      hc.nr_hw_queues = static_cast<uint32_t>(hba->nr_hw_queues);
      hc.host_tagset = hba->host_tagset;
      hc.cmd_per_lun = static_cast<uint32_t>(hba->cmd_per_lun);
      hc.firmware_nsec = hba->firmware_nsec;
      hc.max_iops = hba->max_iops;
      hc.drives = static_cast<uint32_t>(hba->drives);
      hc.drive_iops = hba->drive_iops;
      hc.drive_latency_nsec = hba->drive_latency_nsec;
      hc.stripe_bytes = static_cast<uint64_t>(hba->stripe_kb) << 10;
      // fio's ioscheduler= applies per LUN; the host's LUNs share one config
      // here, taken from the first LUN a job uses.
      s.hbas[entry] = std::make_unique<model::ScsiHba>(*s.kernel, absl::StrCat("host", scsi_host), names, hc,
                                                       QueueConfigFor(d));
      for (size_t i = 0; i < lun_devs.size(); ++i) s.queues[lun_devs[i]] = &s.hbas[entry]->queue(static_cast<int>(i));
      continue;
    }
    const auto& nb = std::get<host::NullBlkSpec>(d.spec->driver);
    model::NullBlkConfig cfg;
    cfg.submit_queues = static_cast<uint32_t>(nb.submit_queues);
    cfg.poll_queues = static_cast<uint32_t>(nb.poll_queues);
    cfg.hw_queue_depth = static_cast<uint32_t>(nb.hw_queue_depth);
    cfg.irqmode = nb.irqmode;
    cfg.completion_nsec = nb.completion_nsec;
    cfg.home_node = nb.home_node;
    cfg.blocking = nb.blocking;
    cfg.size_bytes = d.size_bytes;
    cfg.block_size = static_cast<uint32_t>(nb.bs);
    cfg.mbps = static_cast<uint64_t>(nb.mbps);
    const model::QueueConfig qc = QueueConfigFor(d);
    s.null_blks[dev] = std::make_unique<model::NullBlk>(*s.kernel, d.name, cfg, qc);
    s.queues[dev] = &s.null_blks[dev]->queue();
  }

  // Clones: one simulated fio thread each; stonewall opens a new wave.
  uint32_t wave = 0;
  const auto& jobs = req.jobs.jobs;
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const workload::JobClone& c = req.jobs.clones[i];
    const JobSpec& spec = jobs[c.job_index];
    if (i > 0 && c.clone_index == 0 && spec.stonewall) ++wave;
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
    const int dev = s.clone_device[i];
    const uint64_t dev_bytes = dev >= 0 ? s.devices[dev].size_bytes
                                        : std::max<uint64_t>(spec.size.bytes, uint64_t{1} << 30);
    BLKLAB_ASSIGN_OR_RETURN(workload::ClonePlan plan,
                            workload::ResolveClone(spec, c.clone_index, dev_bytes));
    BLKLAB_ASSIGN_OR_RETURN(workload::IoGenerator gen,
                            workload::IoGenerator::Create(spec, plan, c.thread_number, req.seed));
    BLKLAB_ASSIGN_OR_RETURN(int cpu, CloneCpu(spec, c, topo));
    job::JobThreadConfig jc;
    jc.spec = &spec;
    jc.plan = plan;
    jc.thread_number = c.thread_number;
    jc.cpu = cpu;
    jc.queue = dev >= 0 ? s.queues[dev] : nullptr;
    jc.start_at = spec.startdelay_min_ns;
    jc.ramp_end = jc.start_at + spec.ramp_time_ns;
    jc.end_at = spec.runtime_ns > 0 ? jc.ramp_end + spec.runtime_ns : sim::kSimTimeNever;
    s.clones.push_back(std::make_unique<job::JobThread>(*s.kernel, jc, std::move(gen)));
  }
  Simulation* sp = &s;
  s.wave_left.assign(wave + 1, 0);
  s.job_left.assign(jobs.size(), 0);
  for (size_t i = 0; i < s.clones.size(); ++i) {
    ++s.wave_left[s.wave[i]];
    ++s.job_left[s.clone_job[i]];
    s.clones[i]->set_on_done([sp, i](job::JobThread* t) {
      ++sp->done;
      --sp->wave_left[sp->wave[i]];
      --sp->job_left[sp->clone_job[i]];
      StartReadyClones(*sp, t->finished_at());
    });
  }
  StartReadyClones(s, 0);

  // Run virtual time in slices: between slices the caller may cancel, and
  // progress and stalls are checked.
  sim::Machine& m = *s.machine;
  const int64_t slice_ns = req.snapshot_interval_ns > 0 ? req.snapshot_interval_ns : 100 * sim::kNsPerMs;
  sim::SimTime horizon = 0;
  uint64_t last_ios = 0;
  sim::SimTime last_progress = 0;
  std::optional<IntervalTracker> intervals;
  sim::SimTime next_interval_end = req.status_interval_ns;
  if (on_snapshot && req.status_interval_ns > 0) intervals.emplace(s);
  while (s.done < s.clones.size()) {
    horizon += slice_ns;
    m.set_horizon(horizon);
    m.sim().Run(horizon);
    if (cancel != nullptr && cancel->load(std::memory_order_relaxed)) {
      return absl::CancelledError("the run was cancelled");
    }
    uint64_t ios = 0;
    uint32_t running = 0;
    for (const auto& c : s.clones) {
      ios += c->ios_completed();
      if (!c->done()) ++running;
    }
    if (on_snapshot) {
      Snapshot snap;
      bool eta_known = true;
      snap.virtual_ns = horizon;
      snap.events = m.sim().events_delivered();
      for (const auto& c : s.clones) {
        for (int d = 0; d < stats::kNumDirs; ++d) {
          snap.dir_ios[d] += c->dir_ios_completed()[d];
          snap.dir_bytes[d] += c->dir_bytes_completed()[d];
        }
        const char state = c->RunStateChar(horizon);
        snap.run_states.push_back(state);
        if (state == '_') {
          ++snap.clones_done;
        } else if (state != 'P') {
          ++snap.clones_running;
        }
        const int64_t remaining = c->EstimateRemainingNs(horizon);
        if (remaining < 0) eta_known = false;
        snap.eta_ns = std::max(snap.eta_ns, remaining);
      }
      if (!eta_known) snap.eta_ns = -1;
      for (int d = 0; d < stats::kNumDirs; ++d) {
        snap.ios_completed += snap.dir_ios[d];
        snap.bytes_completed += snap.dir_bytes[d];
      }
      snap.virtual_total_ns = snap.eta_ns >= 0 ? horizon + snap.eta_ns : 0;
      if (intervals && (horizon >= next_interval_end || s.done >= s.clones.size())) {
        snap.has_interval = true;
        intervals->Fill(s, horizon, snap.interval);
        next_interval_end = (horizon / req.status_interval_ns + 1) * req.status_interval_ns;
      }
      snap.interim = [&req, &s, horizon]() {
        RunResult r;
        r.warnings = req.jobs.warnings;
        CollectResults(req, s, horizon, /*final=*/false, r);
        BuildKernelReport(req, s, horizon, /*final=*/false, r).IgnoreError();
        return r;
      };
      on_snapshot(snap);
    }
    if (s.done >= s.clones.size()) break;
    if (ios != last_ios) {
      last_ios = ios;
      last_progress = horizon;
    }
    const bool idle = m.sim().pending_events() == 0;
    if (idle || horizon - last_progress > req.limits.stall_ns) {
      // Nothing can ever happen again (or nothing has for too long): stalled.
      std::vector<std::string> stuck;
      for (size_t dev = 0; dev < s.queues.size(); ++dev) {
        if (s.queues[dev] == nullptr) continue;
        for (const model::Request* rq : s.queues[dev]->StuckRequests(horizon, 0)) {
          stuck.push_back(absl::StrCat(s.devices[dev].name, " tag ", rq->tag, " sector ", rq->sector,
                                       " (allocated at ", rq->alloc_time_ns, " ns, hctx ",
                                       rq->mq_hctx->queue_num()));
          if (stuck.size() >= 16) break;
        }
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "simulated I/O stalled at ", horizon / 1000, " us of virtual time: ", running,
          " job(s) still waiting, no I/O completed for ", (horizon - last_progress) / 1000000,
          " ms; stuck requests: ", stuck.empty() ? "none allocated" : absl::StrJoin(stuck, "; ")));
    }
    if (horizon > req.limits.max_virtual_ns + slice_ns) {
      return absl::ResourceExhaustedError(absl::StrCat("virtual-time limit of ",
                                                       req.limits.max_virtual_ns / 1000000000,
                                                       " s reached"));
    }
    if (ios > req.limits.max_ios) {
      return absl::ResourceExhaustedError(
          absl::StrCat("simulated-IO limit of ", req.limits.max_ios, " reached"));
    }
  }

  // Results per clone, logs, and blklab's kernel report.
  sim::SimTime end = 0;
  for (const auto& c : s.clones) end = std::max(end, c->finished_at());
  CollectResults(req, s, end, /*final=*/true, result);
  for (size_t i = 0; i < s.clones.size(); ++i) {
    for (stats::LogFile& f : s.clones[i]->TakeLogFiles()) {
      // per_job_logs=0: jobs with the same prefix share one file, appended
      // to in thread-number order.
      auto same = std::find_if(result.logs.begin(), result.logs.end(),
                               [&f](const stats::LogFile& l) { return l.name == f.name; });
      if (same != result.logs.end()) {
        same->contents += f.contents;
      } else {
        result.logs.push_back(std::move(f));
      }
    }
  }
  BLKLAB_RETURN_IF_ERROR(BuildKernelReport(req, s, end, /*final=*/true, result));
  return result;
}

}  // namespace blklab
