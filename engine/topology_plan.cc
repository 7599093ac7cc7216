// engine/topology_plan.cc: PlanRun, the plan of a run (topology.h): the
// disks and files, the jobs' checks against the host, the cgroups.
#include "engine/topology.h"

#include <algorithm>
#include <map>
#include <optional>
#include <variant>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/host/cpu_topology.h"
#include "engine/host/driver_type.h"
#include "engine/job/io_engine_type.h"
#include "engine/model/device_factory.h"
#include "engine/util/status_macros.h"
#include "engine/workload/io_engine_info.h"
#include "engine/workload/io_generator.h"
#include "engine/workload/value_syntax.h"

namespace blklab {
namespace {

using workload::JobSpec;

}  // namespace

std::vector<Disk> ListDisks(const host::HostSpec& host) {
  std::vector<Disk> out;
  for (size_t e = 0; e < host.devices.size(); ++e) {
    const host::DeviceSpec& d = host.devices[e];
    const model::DiskInfo info = model::DescribeDisks(d);
    const int n = host::DeviceInstances(d);
    for (int i = 0; i < n; ++i) {
      Disk disk;
      disk.name = host::DeviceInstanceName(d, i);
      disk.entry = e;
      disk.index = i;
      disk.spec = &d;
      disk.scheduler = d.queue.scheduler;
      disk.size_bytes = info.size_bytes;
      disk.has_poll_queues = info.has_poll_queues;
      out.push_back(disk);
    }
  }
  return out;
}

namespace {

std::string DiskNames(const std::vector<Disk>& disks) {
  std::vector<std::string> names;
  for (const auto& d : disks) names.push_back(d.name);
  return absl::StrJoin(names, ", ");
}

// A job's target: a disk, and the file on it (-1: the raw device;
// kPerCloneFile: fio's own files per clone, jobname.N.K, on a filesystem).
constexpr int kPerCloneFile = -2;
using JobTarget = CloneTarget;

// The absolute path fio would open for `name`: as given when absolute, else
// under directory= or, without it, under the first filesystem's mount point
// (the directory the jobs run in). "" when relative with nowhere to resolve.
std::string AbsolutePath(const JobSpec& spec, const std::string& name, const host::HostSpec& host) {
  if (absl::StartsWith(name, "/")) return name;
  std::string dir = spec.directory;
  if (dir.empty() && !host.filesystems.empty()) dir = host.filesystems[0].path;
  if (dir.empty() || !absl::StartsWith(dir, "/")) return "";
  return absl::StrCat(dir, absl::EndsWith(dir, "/") ? "" : "/", name);
}

// The filesystem whose mount point is the longest prefix of `path`, or -1.
int MountOf(const host::HostSpec& host, const std::string& path) {
  int best = -1;
  size_t best_len = 0;
  for (size_t i = 0; i < host.filesystems.size(); ++i) {
    const std::string& m = host.filesystems[i].path;
    const bool under = m == "/" || path == m || absl::StartsWith(path, m + "/");
    if (under && (best < 0 || m.size() > best_len)) {
      best = static_cast<int>(i);
      best_len = m.size();
    }
  }
  return best;
}

// The size of the file at `path` when the host spec says it exists on
// filesystem `fs` (filesystems[].files), else 0.
uint64_t ExistingBytes(const host::HostSpec& host, int fs, const std::string& path) {
  for (const host::ExistingFileSpec& f : host.filesystems[static_cast<size_t>(fs)].files) {
    if (f.path == path) return static_cast<uint64_t>(f.mib) << 20;
  }
  return 0;
}

// Adds the file at `path` on filesystem `fs` (its device `disk`) to
// `files`, or grows the one there to this job's size; returns its index.
// `per_clone`: the clone whose own file it is (-1: every clone's).
// `existing`: its size when it exists before the run (0: fio creates it).
// `nfiles`: how many files the job works on (size= is shared among them).
absl::StatusOr<int> AddFile(const JobSpec& spec, const std::string& path, int fs, int disk, int per_clone,
                            uint64_t existing, uint32_t nfiles, std::vector<FileTarget>& files) {
  // fio lays a new file out to cover the job's region: its share of size=
  // past the (last clone's) offset=, unless filesize= says how large it is.
  uint64_t bytes = spec.filesize.hi;
  if (bytes == 0 && !spec.size.is_percent() && spec.size.bytes > 0) {
    const uint64_t last = per_clone >= 0 ? static_cast<uint64_t>(per_clone)
                                         : (spec.numjobs > 0 ? spec.numjobs - 1 : 0);
    bytes = spec.size.bytes / std::max<uint32_t>(nfiles, 1) + (spec.offset.is_percent() ? 0 : spec.offset.bytes) +
            (spec.offset_increment.is_percent() ? 0 : last * spec.offset_increment.bytes);
  }
  // An existing file keeps its size when that is larger (fio extends a
  // smaller one to the job's region).
  bytes = std::max(bytes, existing);
  if (bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", spec.name, "': file ", path, " needs a size: give size= or filesize=, or list it as an existing "
        "file of its filesystem in the host spec (filesystems[].files) (fio: you need to specify size=)"));
  }
  for (size_t f = 0; f < files.size(); ++f) {
    if (files[f].path == path) {
      files[f].bytes = std::max(files[f].bytes, bytes);
      return static_cast<int>(f);
    }
  }
  FileTarget t;
  t.path = path;
  t.disk = disk;
  t.filesystem = static_cast<size_t>(fs);
  t.bytes = bytes;
  files.push_back(std::move(t));
  return static_cast<int>(files.size()) - 1;
}

// How many files a job works on: its filename= list, else nrfiles= of its
// own per-clone files.
uint32_t JobFileCount(const JobSpec& spec) {
  if (!spec.filenames.empty()) return static_cast<uint32_t>(spec.filenames.size());
  return std::max<uint32_t>(spec.nrfiles, 1);
}

// /dev/ngXnY (or ngXnY): the namespace nvmeXnY whose NVMe generic character
// device it is; none for other names.
std::optional<std::string> GenericNamespace(std::string name) {
  if (absl::StartsWith(name, "/dev/")) name = name.substr(5);
  if (!absl::StartsWith(name, "ng")) return std::nullopt;
  size_t i = 2;
  auto digits = [&name, &i] {
    const size_t from = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9') ++i;
    return i > from;
  };
  if (!digits() || i >= name.size() || name[i++] != 'n' || !digits() || i != name.size()) return std::nullopt;
  return "nvme" + name.substr(2);
}

// One name of filename= -> a disk, or a file on a filesystem of the host
// (added to `files`, its size grown to this job's).
absl::StatusOr<JobTarget> ResolveName(const JobSpec& spec, const std::string& name, const host::HostSpec& host,
                                      const std::vector<Disk>& disks, std::vector<FileTarget>& files) {
  const std::string what = absl::StrCat("job '", spec.name, "': filename=");
  if (absl::StatusOr<int> d = DiskByName(disks, name, what); d.ok()) return JobTarget{*d, -1};
  if (std::optional<std::string> ns = GenericNamespace(name); ns.has_value()) {
    BLKLAB_ASSIGN_OR_RETURN(int d, DiskByName(disks, *ns, absl::StrCat(what, name, " (the generic device of) ")));
    if (!host::DriverTypeOf(disks[d].spec->driver).nvme_namespace()) {
      return absl::InvalidArgumentError(absl::StrCat(what, name, ": ", disks[d].name, " is not an NVMe namespace"));
    }
    return JobTarget{d, -1, /*generic=*/true};
  }
  if (absl::StartsWith(name, "/dev/")) return DiskByName(disks, name, what).status();
  const std::string path = AbsolutePath(spec, name, host);
  const int fs = path.empty() ? -1 : MountOf(host, path);
  if (fs < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, name, " is neither a device of this host (", DiskNames(disks), ") nor a file on one of its filesystems (",
        host.filesystems.empty() ? std::string("none is mounted: add filesystems: to the host spec, or use --host=auto")
                                 : absl::StrCat("mounted: ", absl::StrJoin(host.filesystems, ", ",
                                                                          [](std::string* out, const auto& f) {
                                                                            absl::StrAppend(out, f.path);
                                                                          })),
        ")"));
  }
  const std::string& device = host.filesystems[fs].device;
  BLKLAB_ASSIGN_OR_RETURN(int disk, DiskByName(disks, device, absl::StrCat("filesystems[", fs, "].device=")));
  BLKLAB_ASSIGN_OR_RETURN(
      int file, AddFile(spec, path, fs, disk, -1, ExistingBytes(host, fs, path), JobFileCount(spec), files));
  return JobTarget{disk, file};
}

// filename= (each name of its list) -> disks and files of the host; no
// filename: one kPerCloneFile target (the clones' own files, made later).
absl::StatusOr<std::vector<JobTarget>> ResolveTargets(const JobSpec& spec, const host::HostSpec& host,
                                                      const std::vector<Disk>& disks, std::vector<FileTarget>& files) {
  if (workload::IoEngineHas(spec.ioengine, workload::IoEngineFlag::kDiskless)) {
    return std::vector<JobTarget>{JobTarget{}};
  }
  if (JobFileCount(spec) > 1 && spec.file_service_type != workload::FileServiceType::kRoundRobin &&
      spec.file_service_type != workload::FileServiceType::kRandom &&
      spec.file_service_type != workload::FileServiceType::kSequential) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': file_service_type=", workload::FileServiceTypeName(spec.file_service_type),
        ": a skewed choice among the job's files is not modelled (roundrobin, random and sequential are)"));
  }
  if (spec.openfiles != 0 && spec.openfiles < JobFileCount(spec)) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': openfiles=", spec.openfiles, " of ", JobFileCount(spec), " files: fio closing and "
        "opening files as it moves between them is not modelled (leave openfiles at the number of files)"));
  }
  if (JobFileCount(spec) > kMaxFilesPerJob) {
    return absl::ResourceExhaustedError(absl::StrCat("job '", spec.name, "': ", JobFileCount(spec),
                                                     " files; blklab runs at most ", kMaxFilesPerJob, " per job"));
  }
  if (spec.filenames.empty()) {
    // No filename: fio makes files per clone, jobname.N.K, in directory=
    // (else the working directory). With a filesystem there, the model
    // does too; without one, the file is a region of the host's first
    // device from its start.
    const std::string dir = AbsolutePath(spec, "x", host);
    const int fs = dir.empty() ? -1 : MountOf(host, dir);
    if (fs < 0) {
      if (spec.nrfiles > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job '", spec.name, "': nrfiles=", spec.nrfiles, " needs a filesystem for the files (directory= under a "
            "mount point of the host spec's filesystems:, or --host=auto)"));
      }
      return std::vector<JobTarget>{JobTarget{0, -1}};
    }
    BLKLAB_ASSIGN_OR_RETURN(int disk, DiskByName(disks, host.filesystems[fs].device,
                                                 absl::StrCat("filesystems[", fs, "].device=")));
    return std::vector<JobTarget>{JobTarget{disk, kPerCloneFile}};
  }
  std::vector<JobTarget> out;
  for (const std::string& name : spec.filenames) {
    BLKLAB_ASSIGN_OR_RETURN(JobTarget t, ResolveName(spec, name, host, disks, files));
    out.push_back(t);
  }
  return out;
}

// Lays the files out on their devices: from 1 MiB on, in order, each
// rounded up to 1 MiB. Errors when a device is too small.
absl::Status LayOutFiles(std::vector<FileTarget>& files, const std::vector<Disk>& disks) {
  constexpr uint64_t kMiB = uint64_t{1} << 20;
  std::map<int, uint64_t> next;  // by disk
  for (FileTarget& f : files) {
    uint64_t& at = next.try_emplace(f.disk, kMiB).first->second;
    f.base = at;
    at += (f.bytes + kMiB - 1) / kMiB * kMiB;
    if (at > disks[f.disk].size_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("file ", f.path, ": the files on ", disks[f.disk].name, " need ",
                                                     at, " bytes, but the device has ", disks[f.disk].size_bytes));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<host::Scheduler> SchedulerFromName(const std::string& name) {
  if (std::optional<host::Scheduler> s = host::SchedulerFromName(name)) return *s;
  return absl::InvalidArgumentError(absl::StrCat("ioscheduler=", name, ": not a scheduler of this kernel (",
                                                 host::SchedulerNames(), ")"));
}

// The CPU a clone starts on and the CPUs it may run on (empty: pinned).
// numa_cpu_nodes= (what `numactl -N` does for a whole fio run) keeps only the
// CPUs of those NUMA nodes of the host, intersected with cpus_allowed.
struct ClonePlacement {
  int cpu = 0;
  std::vector<int> allowed;
};
absl::StatusOr<ClonePlacement> CloneCpu(const JobSpec& spec, const workload::JobClone& clone,
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
  // split with cpus_allowed: clone k is pinned to the k-th CPU (round
  // robin), as fio's fio_cpus_split does. Otherwise (shared, or no
  // cpus_allowed: fio sets no affinity then, whatever the policy) the clone
  // may run on every allowed CPU: it starts on one spread round robin by
  // thread number (fork balancing) and moves at wake-ups (sim::Thread).
  const bool split = spec.cpus_allowed_policy == workload::CpusAllowedPolicy::kSplit;
  const uint32_t k = split ? clone.clone_index : clone.thread_number - 1;
  ClonePlacement p;
  p.cpu = allowed[k % allowed.size()];
  if (!(split && !spec.cpus_allowed.empty()) && allowed.size() > 1) p.allowed = std::move(allowed);
  return p;
}

// fio options that change what a job does but are not modelled yet: refused
// by name rather than run without them.
absl::Status CheckUnmodelledOptions(const JobSpec& spec) {
  if (!spec.unmodelled_effects.empty()) {
    return absl::UnimplementedError(absl::StrCat("job '", spec.name, "': ", spec.unmodelled_effects.front()));
  }
  // rw_verify_area caps one read or write at MAX_RW_COUNT (INT_MAX &
  // PAGE_MASK) and returns a short count; fio then retries the rest. Neither
  // is modelled, so a larger block is refused by name.
  constexpr uint64_t kMaxRwCount = 0x7ffff000;
  if (!workload::IoEngineHas(spec.ioengine, workload::IoEngineFlag::kDiskless)) {
    for (workload::Direction d : {workload::Direction::kRead, workload::Direction::kWrite, workload::Direction::kTrim}) {
      if (workload::DirectionActive(spec.rw, d) && workload::MaxBlockSize(spec, d) > kMaxRwCount) {
        return absl::UnimplementedError(absl::StrCat(
            "job '", spec.name, "': bs=", workload::MaxBlockSize(spec, d), ": one I/O above MAX_RW_COUNT (",
            kMaxRwCount, " bytes), which Linux cuts short and fio resubmits in parts, is not modelled"));
      }
    }
  }

  const bool verify = !spec.verify.empty() && spec.verify != "0";
  if (spec.verify_only) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': verify_only: fio's dry run (the write phase replayed without writing, then "
        "verified) is not modelled; run the writing job with verify= and do_verify=1 instead"));
  }
  if (spec.verify_state_load) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': verify_state_load: fio loads the verify state an earlier fio run saved "
        "(local-", spec.name, "-N-verify.state) and checks the data that run wrote; a blklab run starts from fresh "
        "simulated devices and keeps no state between runs: put the writing and the verifying job in one job file"));
  }
  if (spec.zonemode == workload::ZoneMode::kZbd) {
    return absl::UnimplementedError(absl::StrCat("job '", spec.name, "': zonemode=zbd: zoned block devices (zone "
                                                 "write pointers, zone resets, open-zone limits) are not modelled"));
  }
  if (spec.zonemode == workload::ZoneMode::kStrided) {
    if (spec.zonesize.bytes == 0 && !spec.zonesize.is_percent()) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': zonemode=strided needs zonesize= ",
                                                     "(fio: --zonesize must be specified when using "
                                                     "--zonemode=strided)"));
    }
    if (spec.zonesize.is_percent() || spec.zonerange.is_percent() || spec.zoneskip.is_percent()) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': zonesize, zonerange and zoneskip are ",
                                                     "sizes, not percentages, with zonemode=strided"));
    }
    if (workload::IsRandom(spec.rw)) {
      return absl::UnimplementedError(absl::StrCat("job '", spec.name, "': zonemode=strided with random I/O: ",
                                                   "random offsets within each zone are not modelled (sequential ",
                                                   "zones are)"));
    }
  }
  if (spec.trim_percentage > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': trim_percentage=", spec.trim_percentage,
        ": fio's trim-and-verify of written blocks is not modelled"));
  }
  if (!verify) return absl::OkStatus();
  if (spec.verify_async > 0 && !workload::IoEngineHas(spec.ioengine, workload::IoEngineFlag::kFakeIo)) {
    return absl::UnimplementedError(absl::StrCat(
        "job '", spec.name, "': verify_async=", spec.verify_async,
        ": fio's verify threads are not modelled (the checks would leave the job's CPU); without it the job "
        "checks its reads itself"));
  }
  if (spec.verify == "pattern" && spec.verify_pattern.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("job '", spec.name,
                                                   "': verify=pattern needs verify_pattern= (fio: "
                                                   "\"verify=pattern requires verify_pattern\")"));
  }
  return absl::OkStatus();
}

// fio's cgroup=: blkcg ids 1.. for the host spec's cgroups in path order,
// then for the paths jobs name that the spec lacks (fio creates those with
// the defaults). Without BLK_CGROUP there is no io controller: every bio
// stays in the root.
absl::Status PlanCgroups(const RunRequest& req, RunPlan& plan) {
  std::map<std::string, int> ids;
  plan.cgroup_bfq_weights = {host::CgroupSpec{}.bfq_weight};
  for (const auto& [path, cg] : req.host.cgroups) {
    ids[path] = static_cast<int>(plan.cgroup_bfq_weights.size());
    plan.cgroup_bfq_weights.push_back(cg.bfq_weight);
  }
  const auto& jobs = req.jobs.jobs;
  std::string thread_cgroup;
  bool thread_cgroup_set = false;
  for (const JobSpec& spec : jobs) {
    if (spec.cgroup_weight != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job '", spec.name, "': cgroup_weight: fio writes blkio.weight, which a cgroup2 hierarchy (and a 6.x "
          "kernel's cgroup v1 blkio) does not have (fio 3.33: \"cgroup weit doesn't work with cgroup2\"); set "
          "the cgroup's bfq weight in the host spec instead: cgroups: {", spec.cgroup.empty() ? "NAME" : spec.cgroup,
          ": {bfq_weight: ", spec.cgroup_weight, "}} with cgroup=", spec.cgroup.empty() ? "NAME" : spec.cgroup));
    }
    if (spec.cgroup.empty()) continue;
    if (!host::ValidCgroupPath(spec.cgroup)) {
      return absl::InvalidArgumentError(absl::StrCat("job '", spec.name, "': cgroup=", spec.cgroup,
                                                     ": a cgroup path is [A-Za-z0-9._-] names joined by / "
                                                     "(relative to the cgroup2 mount)"));
    }
    // With thread, fio writes the thread's id to cgroup.procs, which on
    // cgroup2 moves the whole fio process: jobs cannot sit in different
    // cgroups.
    if (spec.thread) {
      if (thread_cgroup_set && thread_cgroup != spec.cgroup) {
        return absl::InvalidArgumentError(absl::StrCat(
            "job '", spec.name, "': cgroup=", spec.cgroup, " with thread: fio moves its whole process into each job's "
            "cgroup (cgroup.procs on cgroup2), so threads cannot be in different cgroups (", thread_cgroup,
            " and ", spec.cgroup, "); run the jobs as processes (no thread)"));
      }
      thread_cgroup = spec.cgroup;
      thread_cgroup_set = true;
    }
    if (!ids.contains(spec.cgroup)) {
      if (plan.cgroup_bfq_weights.size() > 256) {
        return absl::ResourceExhaustedError("cgroup=: more than 256 cgroups");
      }
      ids[spec.cgroup] = static_cast<int>(plan.cgroup_bfq_weights.size());
      plan.cgroup_bfq_weights.push_back(host::CgroupSpec{}.bfq_weight);
    }
  }
  for (const auto& c : req.jobs.clones) {
    const JobSpec& spec = jobs[c.job_index];
    const int id = spec.cgroup.empty() || !req.host.kernel.config.BLK_CGROUP ? 0 : ids[spec.cgroup];
    plan.clone_blkcg.push_back(static_cast<uint16_t>(id));
  }
  return absl::OkStatus();
}

}  // namespace

// Whether a clone of `spec` on disk `disk` reads and writes through the
// page cache (direct=0 on a device or file; fio's null engine has none).
bool Buffered(const JobSpec& spec, int disk) {
  // Some engines always go through the page cache (mmap: direct=1 only
  // makes it msync each I/O), some never (io_uring_cmd, sg, falloc, ...).
  using workload::IoEngineFlag;
  return (!spec.direct || workload::IoEngineHas(spec.ioengine, IoEngineFlag::kAlwaysPageCache)) && disk >= 0 &&
         !workload::IoEngineHas(spec.ioengine, IoEngineFlag::kNoPageCache);
}

std::string VirtualLimitText(int64_t max_virtual_ns) {
  return absl::StrFormat("%g s", static_cast<double>(max_virtual_ns) / 1e9);
}

absl::StatusOr<int> DiskByName(const std::vector<Disk>& disks, const std::string& file, const std::string& what) {
  std::string name = file;
  if (absl::StartsWith(name, "/dev/")) name = name.substr(5);
  for (size_t i = 0; i < disks.size(); ++i) {
    if (disks[i].name == name) return static_cast<int>(i);
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, file, " is not a device of this host; devices: ", DiskNames(disks)));
}

// The size of a clone's target: its file's, else its device's (fio's null
// engine: size=, at least 1 GiB).
uint64_t RegionBytes(const RunPlan& plan, const CloneTarget& t, const JobSpec& spec) {
  if (t.file >= 0) return plan.files[t.file].bytes;
  return t.disk >= 0 ? plan.disks[t.disk].size_bytes : std::max<uint64_t>(spec.size.bytes, uint64_t{1} << 30);
}


namespace {

// fio's ioscheduler= on the job's disk, then the engine's own checks of the
// target (io_engine_type.h), the device kind, and the engine's checks of
// the job's options.
absl::Status CheckJobTarget(const JobSpec& job, const JobTarget& target, Disk& disk_info) {
  const int d = target.disk;
  if (!job.ioscheduler.empty()) {
    BLKLAB_ASSIGN_OR_RETURN(disk_info.scheduler, SchedulerFromName(job.ioscheduler));
  }
  const job::EngineTarget engine_target{target.file == -1, disk_info.spec, disk_info.name};
  BLKLAB_RETURN_IF_ERROR(job::CheckEngineTarget(job, engine_target));
  if (workload::IoEngineHas(job.ioengine, workload::IoEngineFlag::kNvmePassthrough) != target.generic) {
    const std::string& disk = disk_info.name;
    const bool nvme = host::DriverTypeOf(disk_info.spec->driver).nvme_namespace() &&
                      absl::StartsWith(disk, "nvme");
    const std::string generic = nvme ? absl::StrCat("/dev/ng", disk.substr(4)) : std::string();
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", job.name, "': ",
        target.generic ? absl::StrCat(generic, " is an NVMe generic character device: only ioengine=io_uring_cmd "
                                      "sends it commands")
                       : absl::StrCat("ioengine=io_uring_cmd only works with NVMe generic character devices "
                                      "(fio: /dev/ngXnY)",
                                      nvme ? absl::StrCat("; name ", generic, " for ", disk)
                                           : absl::StrCat("; ", disk, " is not an NVMe namespace"))));
  }
  BLKLAB_RETURN_IF_ERROR(job::CheckEngineJob(job));
  if (job.engine_flags.hipri && Buffered(job, d)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "job '", job.name, "': hipri needs direct=1 (polled I/O bypasses the page cache; the kernel fails "
        "a buffered IOPOLL read with EOPNOTSUPP)"));
  }
  if (job.engine_flags.hipri && !disk_info.has_poll_queues) {
    return absl::InvalidArgumentError(absl::StrCat("job '", job.name, "': hipri needs poll queues, but ",
                                                   "device ", disk_info.name,
                                                   " has none (null_blk poll_queues=0)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<RunPlan> PlanRun(const RunRequest& req) {
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host));
  BLKLAB_ASSIGN_OR_RETURN(host::CpuTopology topo, host::CpuTopology::Create(req.host.cpus));
  if (req.jobs.clones.empty()) return absl::InvalidArgumentError("no jobs to run");
  RunPlan plan;
  plan.disks = ListDisks(req.host);

  // Each job's disks and files, and fio's ioscheduler=.
  const auto& jobs = req.jobs.jobs;
  std::vector<std::vector<JobTarget>> job_targets(jobs.size());
  for (size_t j = 0; j < jobs.size(); ++j) {
    BLKLAB_ASSIGN_OR_RETURN(job_targets[j], ResolveTargets(jobs[j], req.host, plan.disks, plan.files));
    for (const JobTarget& target : job_targets[j]) {
      const int d = target.disk;
      if (d < 0) continue;
      BLKLAB_RETURN_IF_ERROR(CheckJobTarget(jobs[j], target, plan.disks[d]));
    }
  }
  for (size_t j = 0; j < jobs.size(); ++j) {
    for (const JobTarget& target : job_targets[j]) {
      const int d = target.disk;
      if (d < 0) continue;
      BLKLAB_RETURN_IF_ERROR(model::CheckModelled(*plan.disks[d].spec, req.host.knobs,
                                                  absl::StrCat("devices[", plan.disks[d].entry, "]")));
    }
  }
  // null_blk's shared_tags is one module-wide set: the model shares it among
  // one entry's nr_devices, so a second entry asking for it is refused.
  int shared_entries = 0;
  for (size_t e = 0; e < req.host.devices.size(); ++e) {
    if (model::DescribeDisks(req.host.devices[e]).module_tag_set && ++shared_entries > 1) {
      return absl::UnimplementedError(absl::StrCat(
          "devices[", e, "].null_blk.shared_tags: the module's one tag set across several null_blk entries is not "
          "modelled (one entry's nr_devices share it)"));
    }
  }
  for (size_t i = 0; i < req.host.filesystems.size(); ++i) {
    BLKLAB_RETURN_IF_ERROR(
        DiskByName(plan.disks, req.host.filesystems[i].device, absl::StrCat("filesystems[", i, "].device=")).status());
  }
  for (const auto& c : req.jobs.clones) {
    const JobSpec& spec = jobs[c.job_index];
    std::vector<JobTarget> targets = job_targets[c.job_index];
    if (targets.size() == 1 && targets[0].file == kPerCloneFile) {
      // fio's filename_format (default $jobname.$jobnum.$filenum).
      const int disk = targets[0].disk;
      const uint32_t n = JobFileCount(spec);
      targets.clear();
      for (uint32_t k = 0; k < n; ++k) {
        const std::string path = AbsolutePath(spec, workload::FioFileName(spec, c.clone_index, k), req.host);
        const int fs = MountOf(req.host, path);
        BLKLAB_ASSIGN_OR_RETURN(int file, AddFile(spec, path, fs, disk, static_cast<int>(c.clone_index),
                                                  ExistingBytes(req.host, fs, path), n, plan.files));
        targets.push_back(JobTarget{disk, file});
      }
    }
    plan.clone_disk.push_back(targets[0].disk);
    plan.clone_file.push_back(targets[0].file);
    plan.clone_targets.push_back(std::move(targets));
  }
  BLKLAB_RETURN_IF_ERROR(LayOutFiles(plan.files, plan.disks));
  BLKLAB_RETURN_IF_ERROR(PlanCgroups(req, plan));
  for (const JobSpec& spec : req.jobs.jobs) BLKLAB_RETURN_IF_ERROR(CheckUnmodelledOptions(spec));

  // Each clone's CPU, engine, bounds and region.
  for (size_t i = 0; i < req.jobs.clones.size(); ++i) {
    const auto& c = req.jobs.clones[i];
    const JobSpec& spec = jobs[c.job_index];
    BLKLAB_ASSIGN_OR_RETURN(ClonePlacement placement, CloneCpu(spec, c, topo));
    plan.clone_cpu.push_back(placement.cpu);
    plan.clone_cpus_allowed.push_back(std::move(placement.allowed));
    if (job::FindIoEngineType(spec.ioengine) == nullptr) {
      return absl::UnimplementedError(absl::StrCat("ioengine=", spec.ioengine_name, " is not modelled by blklab"));
    }
    const bool bounded = spec.runtime_ns > 0 || (!spec.time_based);
    if (!bounded) {
      return absl::InvalidArgumentError(
          absl::StrCat("job '", spec.name, "': time_based needs runtime= (the run would never end)"));
    }
    if (spec.runtime_ns + spec.ramp_time_ns > req.limits.max_virtual_ns) {
      return absl::ResourceExhaustedError(absl::StrCat("job '", spec.name,
                                                       "': runtime+ramp_time (",
                                                       VirtualLimitText(spec.runtime_ns + spec.ramp_time_ns),
                                                       ") exceeds the virtual-time limit of ",
                                                       VirtualLimitText(req.limits.max_virtual_ns),
                                                       " (blklab fio --max-virtual-time=TIME raises it; "
                                                       "blklabd's own is --max_virtual_seconds)"));
    }
    for (const CloneTarget& t : plan.clone_targets[i]) {
      BLKLAB_RETURN_IF_ERROR(workload::ResolveClone(spec, c.clone_index, RegionBytes(plan, t, spec),
                                                    static_cast<uint32_t>(plan.clone_targets[i].size()))
                                 .status());
    }
  }
  return plan;
}

}  // namespace blklab
