// ValidateHostSpec, one validator per section of the document, in the order
// the sections are checked (the first error found is the one reported).

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/host/cpu_topology.h"
#include "engine/host/driver_type.h"
#include "engine/host/host_spec.h"
#include "engine/host/spec_fields.h"
#include "engine/util/status_macros.h"

namespace blklab::host {
namespace {

using spec_internal::FieldError;
using spec_internal::Join;
using spec_internal::kCgroupDependentNames;
using spec_internal::kCgroupDependents;
using spec_internal::ValidateRanges;

bool ValidName(const std::string& s, size_t max_len, bool allow_upper_dot) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    (allow_upper_dot && ((c >= 'A' && c <= 'Z') || c == '.'));
    if (!ok) return false;
  }
  return true;
}

// name, description
absl::Status ValidateIdentity(const HostSpec& spec) {
  if (!ValidName(spec.name, 64, true)) {
    return FieldError("name", absl::StrCat("must be 1-64 characters of [A-Za-z0-9._-], got \"", spec.name, "\""));
  }
  if (spec.description.size() > 200) return FieldError("description", "must be at most 200 bytes");
  for (char c : spec.description) {
    if (static_cast<unsigned char>(c) < 0x20) return FieldError("description", "must be one line of text");
  }
  return absl::OkStatus();
}

// cpus: the limit and the fields' ranges (before vm's ranges).
absl::Status ValidateCpuRanges(const CpuSpec& cpus, const HostLimits& limits) {
  if (cpus.count > limits.max_cpus) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cpus.count: ", cpus.count, " CPUs exceed the limit of ", limits.max_cpus));
  }
  return ValidateRanges(cpus, "cpus");
}

// cpus: the topology and the cpuidle states (after vm's ranges).
absl::Status ValidateCpuTopology(const CpuSpec& c) {
  BLKLAB_RETURN_IF_ERROR(CpuTopology::Create(c).status());
  if (c.cpuidle_state1_exit_latency_ns == 0 &&
      (c.cpuidle_state1_target_residency_ns != 0 || c.cpuidle_state2_exit_latency_ns != 0 ||
       c.cpuidle_state2_target_residency_ns != 0)) {
    return FieldError("cpus.cpuidle_state1_exit_latency_ns",
                      "must be > 0 when another cpuidle_state field is set (0 means no idle states)");
  }
  if (c.cpuidle_state2_exit_latency_ns == 0 && c.cpuidle_state2_target_residency_ns != 0) {
    return FieldError("cpus.cpuidle_state2_exit_latency_ns", "must be > 0 when its target residency is set");
  }
  if (c.cpuidle_state2_exit_latency_ns != 0) {
    if (c.cpuidle_state2_exit_latency_ns < c.cpuidle_state1_exit_latency_ns) {
      return FieldError("cpus.cpuidle_state2_exit_latency_ns",
                        absl::StrCat("must be >= cpuidle_state1_exit_latency_ns (", c.cpuidle_state1_exit_latency_ns,
                                     "), got ", c.cpuidle_state2_exit_latency_ns));
    }
    if (CpuidleTargetResidencyNs(c, 2) < CpuidleTargetResidencyNs(c, 1)) {
      return FieldError("cpus.cpuidle_state2_target_residency_ns",
                        absl::StrCat("must be >= state1's target residency (", CpuidleTargetResidencyNs(c, 1),
                                     " ns), got ", CpuidleTargetResidencyNs(c, 2)));
    }
  }
  return absl::OkStatus();
}

// kernel
absl::Status ValidateKernel(const KernelSpec& kernel) {
  const int hz = kernel.hz;
  if (hz != 100 && hz != 250 && hz != 300 && hz != 1000) {
    return FieldError("kernel.hz", absl::StrCat("must be 100, 250, 300 or 1000, got ", hz));
  }
  if (kernel.version.size() > 32 ||
      !std::all_of(kernel.version.begin(), kernel.version.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-' || c == '+';
      })) {
    return FieldError("kernel.version", "must be at most 32 characters of [0-9a-z.+-], like \"6.8\" or \"5.16-rc5\"");
  }
  const KernelConfig& kc = kernel.config;
  if (!kc.BLK_CGROUP) {
    for (size_t i = 0; i < std::size(kCgroupDependents); ++i) {
      if (kc.*kCgroupDependents[i]) {
        return FieldError(absl::StrCat("kernel.config.", kCgroupDependentNames[i]), "requires BLK_CGROUP");
      }
    }
  }
  return absl::OkStatus();
}

// knobs
absl::Status ValidateKnobs(const Knobs& knobs, const KernelConfig& kc) {
  if (knobs.config_blk_cgroup != kc.BLK_CGROUP) {
    return FieldError("knobs.config_blk_cgroup", "contradicts kernel.config.BLK_CGROUP");
  }
  if (knobs.dd_insert_buckets && knobs.dd_insert_side_lists) {
    return FieldError("knobs.dd_insert_buckets",
                      "cannot be combined with dd_insert_side_lists (two alternative insert schemes)");
  }
  return absl::OkStatus();
}

// devices[i].name: valid, and unlike every earlier entry's.
absl::Status ValidateDeviceName(const HostSpec& spec, size_t i, const std::string& path) {
  const DeviceSpec& d = spec.devices[i];
  if (!ValidName(d.name, 32, true)) {
    return FieldError(Join(path, "name"),
                      absl::StrCat("must be 1-32 characters of [A-Za-z0-9._-], got \"", d.name, "\""));
  }
  for (size_t j = 0; j < i; ++j) {
    if (spec.devices[j].name == d.name) {
      return FieldError(Join(path, "name"), absl::StrCat("duplicate device name \"", d.name, "\""));
    }
  }
  return absl::OkStatus();
}

// devices[i].<driver>: the fields' ranges, then the driver's own checks and
// its hardware queues against the limit.
absl::Status ValidateDriver(const DeviceSpec& d, const std::string& path, const CpuSpec& cpus,
                            const HostLimits& limits) {
  const DriverType& driver = DriverTypeOf(d.driver);
  const std::string dpath = Join(path, driver.key());
  BLKLAB_RETURN_IF_ERROR(std::visit([&](const auto& s) { return ValidateRanges(s, dpath); }, d.driver));
  const int numa_nodes = cpus.sockets * cpus.numa_nodes_per_socket;
  BLKLAB_RETURN_IF_ERROR(driver.Validate(d.driver, DriverCheck{dpath, numa_nodes, limits}));
  const int hwq = HardwareQueues(d, cpus);
  if (hwq > limits.max_hw_queues) {
    return absl::ResourceExhaustedError(
        absl::StrCat(dpath, ": ", hwq, " hardware queues exceed the limit of ", limits.max_hw_queues));
  }
  return absl::OkStatus();
}

// devices[i].queue, iosched tunables included.
absl::Status ValidateQueue(const DeviceSpec& d, const std::string& qpath, const CpuSpec& cpus,
                           const HostLimits& limits) {
  const DriverType& driver = DriverTypeOf(d.driver);
  const QueueSpec& q = d.queue;
  BLKLAB_RETURN_IF_ERROR(ValidateRanges(q, qpath));
  BLKLAB_RETURN_IF_ERROR(ValidateRanges(q.iosched, Join(qpath, "iosched")));
  if (q.nr_requests != 0 && q.nr_requests < 4) {
    return FieldError(Join(qpath, "nr_requests"), absl::StrCat("must be 0 (default) or >= 4, got ", q.nr_requests));
  }
  if (q.nr_requests > limits.max_queue_depth) {
    return absl::ResourceExhaustedError(absl::StrCat(Join(qpath, "nr_requests"), ": ", q.nr_requests,
                                                     " exceeds the limit of ", limits.max_queue_depth));
  }
  if (q.scheduler != Scheduler::kDefault && q.scheduler != Scheduler::kNone && driver.NoSched(d.driver)) {
    return FieldError(Join(qpath, "scheduler"),
                      absl::StrCat(SchedulerName(q.scheduler), " conflicts with null_blk.no_sched"));
  }
  // The iosched directory holds the tunables of the queue's scheduler only
  // (the kernel's choice, when not given, may be mq-deadline).
  const IoschedTunables iosched_defaults;
  const bool may_be_deadline = q.scheduler == Scheduler::kMqDeadline || q.scheduler == Scheduler::kDefault;
  const auto foreign = [&](absl::string_view field, absl::string_view owner) {
    return FieldError(Join(Join(qpath, "iosched"), std::string(field)),
                      absl::StrCat("a ", owner, " tunable, but the queue's scheduler is ",
                                   q.scheduler == Scheduler::kDefault ? "the kernel's default"
                                                                      : SchedulerName(q.scheduler)));
  };
#define BLKLAB_FOREIGN_TUNABLE(name, ...) \
  if (q.iosched.name != iosched_defaults.name) return foreign(#name, owner);
  if (!may_be_deadline) {
    const absl::string_view owner = "mq-deadline";
    BLKLAB_DEADLINE_TUNABLES(BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE)
  }
  if (q.scheduler != Scheduler::kKyber) {
    const absl::string_view owner = "kyber";
    BLKLAB_KYBER_TUNABLES(BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE)
  }
  if (q.scheduler != Scheduler::kBfq) {
    const absl::string_view owner = "bfq";
    BLKLAB_BFQ_TUNABLES(BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE, BLKLAB_FOREIGN_TUNABLE)
  }
#undef BLKLAB_FOREIGN_TUNABLE
  if (q.io_poll && driver.PollQueues(d.driver, cpus) == 0) {
    return FieldError(Join(qpath, "io_poll"), absl::StrCat("needs poll queues (", driver.key(), ".poll_queues)"));
  }
  return absl::OkStatus();
}

// devices
absl::Status ValidateDevices(const HostSpec& spec, const HostLimits& limits) {
  if (spec.devices.empty()) return FieldError("devices", "at least one device is required");
  if (spec.devices.size() > static_cast<size_t>(limits.max_devices)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("devices: ", spec.devices.size(), " devices exceed the limit of ", limits.max_devices));
  }
  int64_t total_devices = 0;
  int64_t total_requests = 0;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const DeviceSpec& d = spec.devices[i];
    const std::string path = absl::StrCat("devices[", i, "]");
    BLKLAB_RETURN_IF_ERROR(ValidateDeviceName(spec, i, path));
    BLKLAB_RETURN_IF_ERROR(ValidateDriver(d, path, spec.cpus, limits));
    BLKLAB_RETURN_IF_ERROR(ValidateQueue(d, Join(path, "queue"), spec.cpus, limits));

    const DriverType& driver = DriverTypeOf(d.driver);
    const int hwq = HardwareQueues(d, spec.cpus);
    const int64_t instances = DeviceInstances(d);
    total_devices += instances;
    // Scheduler tags are counted whatever the spec's scheduler: a job's
    // ioscheduler= may switch the device to mq-deadline.
    const bool no_sched = driver.NoSched(d.driver);
    const int64_t sched_depth = no_sched ? 0 : (d.queue.nr_requests == 0 ? 256 : d.queue.nr_requests);
    total_requests += driver.PreallocatedRequests(d.driver, hwq, instances, sched_depth);
  }
  if (total_devices > limits.max_devices) {
    return absl::ResourceExhaustedError(absl::StrCat("devices: ", total_devices,
                                                     " block devices (after nr_devices and LUNs) exceed the limit of ",
                                                     limits.max_devices));
  }
  if (total_requests > limits.max_total_requests) {
    return absl::ResourceExhaustedError(absl::StrCat("devices: ", total_requests,
                                                     " preallocated requests (hw queues x depth) exceed the limit of ",
                                                     limits.max_total_requests));
  }
  return absl::OkStatus();
}

// costs
absl::Status ValidateCosts(const std::map<std::string, int64_t>& costs) {
  CostTable scratch;
  for (const auto& [name, value] : costs) {
    BLKLAB_RETURN_IF_ERROR(SetCost(scratch, name, value));
    if (value > 1000000000) {
      return FieldError(Join("costs", name), absl::StrCat("must be <= 1000000000 ns, got ", value));
    }
  }
  return absl::OkStatus();
}

// cgroups: the count (checked before the filesystems).
absl::Status ValidateCgroupCount(const std::map<std::string, CgroupSpec>& cgroups) {
  // cgroups: paths as fio's cgroup= gives them (relative to the cgroup2
  // mount), at most 256.
  if (cgroups.size() > 256) {
    return absl::ResourceExhaustedError(absl::StrCat("cgroups: ", cgroups.size(), " cgroups exceed the limit of 256"));
  }
  return absl::OkStatus();
}

// filesystems
absl::Status ValidateFilesystems(const std::vector<FilesystemSpec>& filesystems) {
  // filesystems: absolute, normalised mount points, each once; the device
  // is checked against the expanded device names when a run is planned.
  if (filesystems.size() > 64) {
    return absl::ResourceExhaustedError(
        absl::StrCat("filesystems: ", filesystems.size(), " filesystems exceed the limit of 64"));
  }
  std::set<std::string> mounts;
  for (size_t i = 0; i < filesystems.size(); ++i) {
    const FilesystemSpec& fs = filesystems[i];
    const std::string path = absl::StrCat("filesystems[", i, "]");
    bool ok = !fs.path.empty() && fs.path[0] == '/' && fs.path.size() <= 200 &&
              (fs.path == "/" || fs.path.back() != '/');
    for (absl::string_view part : absl::StrSplit(absl::string_view(fs.path).substr(1), '/')) {
      ok = ok && (fs.path == "/" || (!part.empty() && part != "." && part != ".."));
    }
    if (!ok) {
      return FieldError(Join(path, "path"), absl::StrCat("\"", fs.path.substr(0, 64),
                                                         "\": a mount point is an absolute path without . or .. "
                                                         "parts, empty parts or a trailing /"));
    }
    if (!mounts.insert(fs.path).second) {
      return FieldError(Join(path, "path"), absl::StrCat("\"", fs.path, "\" is mounted twice"));
    }
    if (fs.type != "ext4" && fs.type != "xfs") {
      return FieldError(Join(path, "type"), absl::StrCat("\"", fs.type.substr(0, 32), "\": ext4 or xfs"));
    }
    if (fs.device.empty() || fs.device.size() > 32) {
      return FieldError(Join(path, "device"), "a device name of the host");
    }
    std::set<std::string> names;
    for (size_t k = 0; k < fs.files.size(); ++k) {
      const ExistingFileSpec& f = fs.files[k];
      const std::string at = absl::StrCat(path, ".files[", k, "]");
      const std::string prefix = fs.path == "/" ? "/" : fs.path + "/";
      if (f.path.size() <= prefix.size() || !absl::StartsWith(f.path, prefix) || f.path.size() > 400 ||
          absl::StrContains(f.path, "/./") || absl::StrContains(f.path, "/../") || absl::EndsWith(f.path, "/")) {
        return FieldError(Join(at, "path"), absl::StrCat("\"", f.path.substr(0, 64), "\": an absolute file path under ",
                                                         fs.path, " without . or .. parts"));
      }
      if (!names.insert(f.path).second) {
        return FieldError(Join(at, "path"), absl::StrCat("\"", f.path.substr(0, 64), "\" is listed twice"));
      }
      if (f.mib < 1 || f.mib > (int64_t{1} << 30)) {
        return FieldError(Join(at, "mib"), absl::StrCat(f.mib, ": 1 .. 1073741824 MiB"));
      }
    }
  }
  return absl::OkStatus();
}

// cgroups: the paths (checked after the filesystems).
absl::Status ValidateCgroupPaths(const std::map<std::string, CgroupSpec>& cgroups) {
  for (const auto& [path, cg] : cgroups) {
    const bool ok = ValidCgroupPath(path);
    if (!ok) {
      return FieldError("cgroups", absl::StrCat("\"", path, "\": a cgroup path is [A-Za-z0-9._-] names joined by /, "
                                                "relative to the cgroup2 mount (as fio's cgroup= takes it)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateHostSpec(const HostSpec& spec, const HostLimits& limits) {
  BLKLAB_RETURN_IF_ERROR(ValidateIdentity(spec));
  BLKLAB_RETURN_IF_ERROR(ValidateCpuRanges(spec.cpus, limits));
  BLKLAB_RETURN_IF_ERROR(ValidateRanges(spec.vm, "vm"));
  BLKLAB_RETURN_IF_ERROR(ValidateCpuTopology(spec.cpus));
  BLKLAB_RETURN_IF_ERROR(ValidateKernel(spec.kernel));
  BLKLAB_RETURN_IF_ERROR(ValidateKnobs(spec.knobs, spec.kernel.config));
  BLKLAB_RETURN_IF_ERROR(ValidateDevices(spec, limits));
  BLKLAB_RETURN_IF_ERROR(ValidateCosts(spec.costs));
  BLKLAB_RETURN_IF_ERROR(ValidateCgroupCount(spec.cgroups));
  BLKLAB_RETURN_IF_ERROR(ValidateFilesystems(spec.filesystems));
  return ValidateCgroupPaths(spec.cgroups);
}

}  // namespace blklab::host
