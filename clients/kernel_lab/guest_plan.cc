#include "clients/kernel_lab/guest_plan.h"

#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "clients/kernel_lab/doc_path.h"
#include "engine/host/presets.h"
#include "engine/util/check.h"
#include "engine/util/status_macros.h"

namespace blklab::kernel_lab {
namespace {

using host::HostSpec;
using util::DocNode;

absl::Status Refuse(absl::string_view field, absl::string_view why) {
  return absl::UnimplementedError(absl::StrCat(field, ": the kernel lab cannot express this: ", why));
}


std::string Bool01(bool b) { return b ? "1" : "0"; }

// Every field of a list as name=value, for modprobe, configfs or sysfs.
#define BLKLAB_LIST_INT(name, def, lo, hi, doc) fields.emplace_back(#name, absl::StrCat(spec.name));
#define BLKLAB_LIST_BOOL(name, def, lo, hi, doc) fields.emplace_back(#name, Bool01(spec.name));

std::vector<std::pair<std::string, std::string>> NullBlkFields(const host::NullBlkSpec& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  BLKLAB_NULL_BLK_FIELDS(BLKLAB_LIST_INT, BLKLAB_LIST_INT, BLKLAB_LIST_BOOL)
  return fields;
}
std::vector<std::pair<std::string, std::string>> ScsiDebugFields(const host::ScsiDebugSpec& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  BLKLAB_SCSI_DEBUG_FIELDS(BLKLAB_LIST_INT, BLKLAB_LIST_INT, BLKLAB_LIST_BOOL)
  return fields;
}
std::vector<std::pair<std::string, std::string>> IoschedFields(const host::IoschedTunables& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  BLKLAB_IOSCHED_FIELDS(BLKLAB_LIST_INT, BLKLAB_LIST_INT, BLKLAB_LIST_BOOL)
  return fields;
}
std::vector<std::pair<std::string, std::string>> KnobFields(const host::Knobs& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  BLKLAB_KNOB_FIELDS(BLKLAB_LIST_INT, BLKLAB_LIST_INT, BLKLAB_LIST_BOOL)
  return fields;
}
std::vector<std::pair<std::string, std::string>> KconfigFields(const host::KernelConfig& spec) {
  std::vector<std::pair<std::string, std::string>> fields;
  BLKLAB_KCONFIG_FIELDS(BLKLAB_LIST_INT, BLKLAB_LIST_INT, BLKLAB_LIST_BOOL)
  return fields;
}
#undef BLKLAB_LIST_INT
#undef BLKLAB_LIST_BOOL

std::string ModprobeArgs(const std::vector<std::pair<std::string, std::string>>& fields,
                         const std::set<std::string>& skip = {}) {
  std::string s;
  for (const auto& [name, value] : fields) {
    if (!skip.contains(name)) absl::StrAppend(&s, " ", name, "=", value);
  }
  return s;
}

// The kernel, kernel config, knobs and costs as written must be the lab's.
absl::Status CheckKernel(const DocNode& doc, const HostSpec& spec) {
  const LabKernel& lab = Lab61();
  if (const DocNode* c = DocPath(doc, {"costs"}); c != nullptr && c->is_map() && c->size() > 0) {
    return Refuse(absl::StrCat("costs.", c->entries().front().key),
                  "cost rows price the model's code; the guest's code costs what it costs");
  }
  if (DocPath(doc, {"kernel", "hz"}) != nullptr && spec.kernel.hz != lab.kernel.hz) {
    return Refuse("kernel.hz", absl::StrCat("the lab kernel has HZ=", lab.kernel.hz, ", the spec ", spec.kernel.hz));
  }
  if (DocPath(doc, {"kernel", "version"}) != nullptr && !absl::StartsWith(spec.kernel.version, "6.1") &&
      !spec.kernel.version.empty()) {
    return Refuse("kernel.version", absl::StrCat("the lab boots Debian's 6.1 kernel, the spec names ",
                                                 spec.kernel.version));
  }
  const auto lab_config = KconfigFields(lab.kernel.config);
  const auto config = KconfigFields(spec.kernel.config);
  for (size_t i = 0; i < config.size(); ++i) {
    if (DocPath(doc, {"kernel", "config", config[i].first}) != nullptr && config[i].second != lab_config[i].second) {
      return Refuse(absl::StrCat("kernel.config.", config[i].first),
                    absl::StrCat("Debian's 6.1 kernel has it ", lab_config[i].second == "1" ? "on" : "off"));
    }
  }
  const auto lab_knobs = KnobFields(lab.knobs);
  const auto knobs = KnobFields(spec.knobs);
  for (size_t i = 0; i < knobs.size(); ++i) {
    if (DocPath(doc, {"knobs", knobs[i].first}) != nullptr && knobs[i].second != lab_knobs[i].second) {
      return Refuse(absl::StrCat("knobs.", knobs[i].first),
                    absl::StrCat("the lab kernel (6.1) has it ", lab_knobs[i].second == "1" ? "true" : "false",
                                 "; another kernel era cannot be booted"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckCpus(const host::CpuSpec& c) {
  const host::CpuSpec d;
  struct Field {
    const char* name;
    int64_t value, def;
  };
  const Field fields[] = {
      {"threads_per_core", c.threads_per_core, d.threads_per_core},
      {"cores_per_ccx", c.cores_per_ccx, d.cores_per_ccx},
      {"ccx_per_die", c.ccx_per_die, d.ccx_per_die},
      {"sockets", c.sockets, d.sockets},
      {"numa_nodes_per_socket", c.numa_nodes_per_socket, d.numa_nodes_per_socket},
      {"speed_permille", c.speed_permille, d.speed_permille},
      {"cpuidle_state1_exit_latency_ns", c.cpuidle_state1_exit_latency_ns, 0},
      {"cpuidle_state2_exit_latency_ns", c.cpuidle_state2_exit_latency_ns, 0},
  };
  for (const Field& f : fields) {
    if (f.value != f.def) {
      return Refuse(absl::StrCat("cpus.", f.name), "the VM has vCPUs only (cpus.count), no topology, speed or idle states");
    }
  }
  if (c.count > 64) return Refuse("cpus.count", absl::StrCat(c.count, " vCPUs; the lab boots at most 64"));
  return absl::OkStatus();
}

struct Script {
  // On the machine's own kernel (--real): modules must not be loaded before,
  // devices keep the kernel's names, mounts and cgroups already there are
  // used, and every change has its undo in `restore`.
  bool real = false;
  std::string sys = "/sys";    // "$sys" on a real kernel (the script sets it)
  std::string proc = "/proc";  // "$proc"
  std::string tmp = "/tmp";    // "$work": the run's own directory
  std::vector<std::string> lines;
  // Undo lines in the order the changes were made; they run reversed, after
  // the modules' undo in `restore_modules` (a scheduler module can go only
  // once the queues that use it are gone).
  std::vector<std::string> restore;
  std::vector<std::string> restore_modules;
  // guest kernel name -> spec instance name, in device order
  std::vector<std::pair<std::string, std::string>> renames;
  void Add(std::string line) { lines.push_back(std::move(line)); }
  // Loads a module; on a real kernel only when it is not loaded, and undone.
  // `mine`: a module whose devices the run creates, which must not exist
  // before (its parameters would not be the spec's).
  void Modprobe(const std::string& module, const std::string& args, bool mine) {
    if (!real) {
      Add(absl::StrCat("modprobe ", module, args));
      return;
    }
    const std::string loaded = absl::StrCat(sys, "/module/", absl::StrReplaceAll(module, {{"-", "_"}}));
    const std::string var = absl::StrCat("loaded_", absl::StrReplaceAll(module, {{"-", "_"}}));
    if (mine) {
      Add(absl::StrCat("[ ! -d ", loaded, " ] || { echo 'blklab: ", module,
                       " is already loaded, with devices and parameters the spec did not ask for; "
                       "unload it first (modprobe -r ", module, ")'; exit 1; }"));
    }
    Add(absl::StrCat("[ -d ", loaded, " ] || { modprobe ", module, args, " && ", var, "=1; }"));
    restore_modules.push_back(absl::StrCat("[ -z \"$", var, "\" ] || modprobe -r ", module));
  }
};

// One null_blk entry: module parameters; several: configfs devices sharing
// the module's global tag set when they ask for shared_tags.
absl::Status PlanNullBlk(const HostSpec& spec, Script& s) {
  std::vector<const host::DeviceSpec*> entries;
  for (const host::DeviceSpec& d : spec.devices) {
    if (std::holds_alternative<host::NullBlkSpec>(d.driver)) entries.push_back(&d);
  }
  if (entries.empty()) return absl::OkStatus();
  for (const host::DeviceSpec* d : entries) {
    const auto& n = std::get<host::NullBlkSpec>(d->driver);
    if (n.queue_mode == 1) {
      return Refuse(absl::StrCat("devices.", d->name, ".null_blk.queue_mode"),
                    "queue_mode=1 is the legacy request path, gone since 5.0");
    }
  }
  s.Modprobe("configfs", "", /*mine=*/false);
  if (entries.size() == 1) {
    const auto& n = std::get<host::NullBlkSpec>(entries[0]->driver);
    s.Modprobe("null_blk", ModprobeArgs(NullBlkFields(n)), /*mine=*/true);
    for (int i = 0; i < n.nr_devices; ++i) {
      s.renames.emplace_back(absl::StrCat("nullb", i), host::DeviceInstanceName(*entries[0], i));
    }
    return absl::OkStatus();
  }
  // configfs: the global tag set (shared_tags) is sized by the module's
  // parameters, so entries that share it must agree on it.
  const host::NullBlkSpec* shared = nullptr;
  for (const host::DeviceSpec* d : entries) {
    const auto& n = std::get<host::NullBlkSpec>(d->driver);
    if (!n.shared_tags) continue;
    if (shared != nullptr && (shared->hw_queue_depth != n.hw_queue_depth || shared->submit_queues != n.submit_queues ||
                              shared->poll_queues != n.poll_queues)) {
      return Refuse(absl::StrCat("devices.", d->name, ".null_blk.shared_tags"),
                    "null_blk's shared tag set has one depth and queue count for every device that shares it");
    }
    shared = &n;
  }
  std::string module = " nr_devices=0";
  if (shared != nullptr) {
    absl::StrAppend(&module, " hw_queue_depth=", shared->hw_queue_depth, " submit_queues=", shared->submit_queues,
                    " poll_queues=", shared->poll_queues);
  }
  s.Modprobe("null_blk", module, /*mine=*/true);
  const std::string config = s.sys + "/kernel/config";
  s.Add(absl::StrCat("grep -q \" ", config, " configfs\" ", s.proc, "/mounts || { mount -t configfs none ", config,
                     " && mounted_configfs=1; }"));
  s.restore.push_back(absl::StrCat("[ -z \"$mounted_configfs\" ] || umount ", config));
  int index = 0;
  for (const host::DeviceSpec* d : entries) {
    const auto& n = std::get<host::NullBlkSpec>(d->driver);
    for (int i = 0; i < n.nr_devices; ++i, ++index) {
      const std::string dir = absl::StrCat(config, "/nullb/dev", index);
      s.Add("mkdir " + dir);
      s.restore.push_back(absl::StrCat("[ ! -d ", dir, " ] || { echo 0 > ", dir, "/power; rmdir ", dir, "; }"));
      for (const auto& [name, value] : NullBlkFields(n)) {
        if (name == "nr_devices") continue;
        std::string attr = name;
        std::string v = value;
        if (name == "gb") {
          attr = "size";
          v = absl::StrCat(n.gb * 1024);  // MiB
        } else if (name == "bs") {
          attr = "blocksize";
        }
        s.Add(absl::StrCat("echo ", v, " > ", dir, "/", attr));
      }
      s.Add(absl::StrCat("echo ", index, " > ", dir, "/index"));
      s.Add(absl::StrCat("echo 1 > ", dir, "/power"));
      s.renames.emplace_back(absl::StrCat("nullb", index), host::DeviceInstanceName(*d, i));
    }
  }
  return absl::OkStatus();
}

absl::Status PlanScsiDebug(const HostSpec& spec, Script& s) {
  const host::DeviceSpec* entry = nullptr;
  for (const host::DeviceSpec& d : spec.devices) {
    if (!std::holds_alternative<host::ScsiDebugSpec>(d.driver)) continue;
    if (entry != nullptr) {
      return Refuse(absl::StrCat("devices.", d.name, ".scsi_debug"),
                    "scsi_debug is one module with one set of parameters; a second entry cannot differ");
    }
    entry = &d;
  }
  if (entry == nullptr) return absl::OkStatus();
  const auto& sd = std::get<host::ScsiDebugSpec>(entry->driver);
  s.Modprobe("sd_mod", "", /*mine=*/false);
  s.Modprobe("scsi_debug", ModprobeArgs(ScsiDebugFields(sd), {"queue_depth"}), /*mine=*/true);
  // scsi_debug's LUNs as the sd driver names them, in host:channel:target:lun
  // order (on a real machine, only the disks whose host is scsi_debug's).
  s.Add("for d in " + s.sys + "/block/sd*; do [ -e \"$d/device/model\" ] && grep -q scsi_debug \"$d/device/model\" || continue; echo \"$(basename \"$(readlink -f \"$d/device\")\") ${d##*/}\"; done | "
        "sort -t: -n -k1,1 -k2,2 -k3,3 -k4,4 | awk '{print $2}' > " + s.tmp + "/sd-order");
  const int n = host::DeviceInstances(*entry);
  for (int i = 0; i < n; ++i) {
    s.renames.emplace_back(absl::StrCat("$(sed -n ", i + 1, "p ", s.tmp, "/sd-order)"), host::DeviceInstanceName(*entry, i));
  }
  if (sd.queue_depth > 0) {
    for (int i = 0; i < n; ++i) {
      s.Add(absl::StrCat("echo ", sd.queue_depth, " > ", s.sys, "/block/$(sed -n ", i + 1, "p ", s.tmp, "/sd-order)/device/queue_depth"));
    }
  }
  return absl::OkStatus();
}

absl::Status PlanNvme(const DocNode& doc, const HostSpec& spec, Script& s, GuestPlan& plan) {
  int controller = 0;
  std::optional<host::NvmeSpec> first;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const host::DeviceSpec& d = spec.devices[i];
    const auto* n = std::get_if<host::NvmeSpec>(&d.driver);
    if (n == nullptr) continue;
    const std::string field = absl::StrCat("devices[", i, "].nvme.");
    if (s.real) {
      return absl::UnimplementedError(absl::StrCat(
          "devices[", i, "].nvme: --real touches no NVMe drive of this machine (only the lab emulates a controller)"));
    }
    for (const char* timing : {"latency_nsec", "write_latency_nsec", "max_iops", "max_mbps", "parallelism",
                               "irq_coalesce_threshold", "irq_coalesce_time_us"}) {
      const DocNode* devs = DocPath(doc, {"devices"});
      if (devs != nullptr && devs->is_list() && i < devs->size() &&
          DocPath(devs->items()[i], {"nvme", timing}) != nullptr) {
        return Refuse(field + timing, "QEMU's emulated controller has its own timing, not a drive's");
      }
    }
    if (n->nr_io_queues != 0) return Refuse(field + "nr_io_queues", "nvme-pci asks for one queue per CPU");
    if (first && (first->poll_queues != n->poll_queues || first->write_queues != n->write_queues ||
                  first->io_queue_depth != n->io_queue_depth)) {
      return Refuse(field + "poll_queues", "nvme-pci's module parameters are one set for every controller");
    }
    if (!first) first = *n;
    const std::string id = absl::StrCat("nv", controller);
    plan.qemu_args.push_back("-blockdev");
    plan.qemu_args.push_back(absl::StrCat("driver=null-co,node-name=", id, ",size=", n->gb, "G,read-zeroes=on"));
    plan.qemu_args.push_back("-device");
    plan.qemu_args.push_back(absl::StrCat("nvme,serial=blklab", controller, ",drive=", id, ",max_ioqpairs=",
                                          n->max_queues, ",logical_block_size=", n->bs,
                                          ",physical_block_size=", n->bs));
    s.renames.emplace_back(
        absl::StrCat("$(for c in /sys/class/nvme/nvme*; do [ \"$(cat $c/serial)\" = blklab", controller,
                     " ] && ls $c | grep -m1 '^nvme[0-9]*n1$'; done)"),
        host::DeviceInstanceName(d, 0));
    ++controller;
  }
  if (first) {
    s.Add(absl::StrCat("modprobe nvme poll_queues=", first->poll_queues, " write_queues=", first->write_queues,
                       " io_queue_depth=", first->io_queue_depth));
    s.Add("for i in $(seq 50); do [ $(ls /sys/class/nvme 2>/dev/null | wc -l) -ge " + absl::StrCat(controller) +
          " ] && ls /sys/block | grep -q nvme && break; sleep 0.1; done");
  }
  return absl::OkStatus();
}

// The devices under the spec's names: every kernel name read first, then
// the nodes made under the new names (a rename may take a name another
// device has in the guest).
void RenameDevices(Script& s, GuestPlan& plan) {
  for (size_t i = 0; i < s.renames.size(); ++i) {
    s.Add(absl::StrCat("k", i, "=", s.renames[i].first));
    s.Add(absl::StrCat("[ -n \"$k", i, "\" ] && [ -e ", s.sys, "/block/$k", i, "/dev ] || { echo \"blklab: device ", i,
                       " (", s.renames[i].second, ") did not appear\"; exit 1; }"));
  }
  if (s.real) {
    // A real machine's device nodes stay as the kernel named them: the
    // spec must name them so, and the jobs use those names.
    s.Add("echo '@@blklab-begin devices@@'");
    for (size_t i = 0; i < s.renames.size(); ++i) {
      const std::string& name = s.renames[i].second;
      s.Add(absl::StrCat("[ \"$k", i, "\" = ", name, " ] || { echo \"blklab: device ", i, " came up as $k", i,
                         ", the spec names it ", name, ": name it so in the spec\"; exit 1; }"));
      s.Add(absl::StrCat("echo \"", name, " $k", i, "\""));
      s.Add(absl::StrCat("eval dev_", i, "=$k", i));
      plan.devices.push_back(name);
    }
    s.Add("echo '@@blklab-end devices@@'");
    return;
  }
  for (size_t i = 0; i < s.renames.size(); ++i) {
    s.Add(absl::StrCat("m", i, "=$(cat ", s.sys, "/block/$k", i, "/dev)"));
  }
  for (size_t i = 0; i < s.renames.size(); ++i) s.Add(absl::StrCat("rm -f /dev/$k", i));
  s.Add("echo '@@blklab-begin devices@@'");
  for (size_t i = 0; i < s.renames.size(); ++i) {
    const std::string& name = s.renames[i].second;
    s.Add(absl::StrCat("mknod /dev/", name, " b ${m", i, "%:*} ${m", i, "#*:}"));
    s.Add(absl::StrCat("echo \"", name, " $k", i, "\""));
    s.Add(absl::StrCat("eval dev_", i, "=$k", i));
    plan.devices.push_back(name);
  }
  s.Add("echo '@@blklab-end devices@@'");
}

// Queue attributes: the scheduler always (the resolved one is the kernel's
// own default when the spec names none), the rest when written.
void PlanQueues(const DocNode& doc, const HostSpec& spec, Script& s) {
  const DocNode* devs = DocPath(doc, {"devices"});
  size_t instance = 0;
  std::set<std::string> modules;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const host::DeviceSpec& d = spec.devices[i];
    const DocNode* queue = devs != nullptr && devs->is_list() && i < devs->size() ? devs->items()[i].Find("queue")
                                                                                  : nullptr;
    const host::QueueSpec& q = d.queue;
    if (q.scheduler == host::Scheduler::kKyber) modules.insert("kyber-iosched");
    if (q.scheduler == host::Scheduler::kBfq) modules.insert("bfq");
    std::vector<std::pair<std::string, std::string>> attrs;
    attrs.emplace_back("scheduler", std::string(host::SchedulerName(q.scheduler)));
    auto written = [&](const char* key) { return queue != nullptr && queue->is_map() && queue->Find(key) != nullptr; };
    if (written("nr_requests")) attrs.emplace_back("nr_requests", absl::StrCat(q.nr_requests));
    if (written("iostats")) attrs.emplace_back("iostats", Bool01(q.iostats));
    if (written("rq_affinity")) attrs.emplace_back("rq_affinity", absl::StrCat(q.rq_affinity));
    if (written("nomerges")) attrs.emplace_back("nomerges", absl::StrCat(q.nomerges));
    if (written("io_poll")) attrs.emplace_back("io_poll", Bool01(q.io_poll));
    if (written("wbt_lat_usec") && q.wbt_lat_usec >= 0) attrs.emplace_back("wbt_lat_usec", absl::StrCat(q.wbt_lat_usec));
    if (written("io_timeout")) attrs.emplace_back("io_timeout", absl::StrCat(q.io_timeout));
    if (written("read_ahead_kb")) attrs.emplace_back("read_ahead_kb", absl::StrCat(q.read_ahead_kb));
    const DocNode* iosched = queue != nullptr && queue->is_map() ? queue->Find("iosched") : nullptr;
    if (iosched != nullptr && iosched->is_map()) {
      for (const auto& [name, value] : IoschedFields(q.iosched)) {
        if (iosched->Find(name) != nullptr) attrs.emplace_back("iosched/" + name, value);
      }
    }
    for (int k = 0; k < host::DeviceInstances(d); ++k, ++instance) {
      for (const auto& [attr, value] : attrs) {
        s.Add(absl::StrCat("echo ", value, " > ", s.sys, "/block/$dev_", instance, "/queue/", attr,
                           " || { echo 'blklab: cannot write ", value, " to queue/", attr, " of ",
                           host::DeviceInstanceName(d, k), "'; exit 1; }"));
      }
    }
  }
  // The scheduler modules go first: insert them at the start.
  Script loads = s;
  loads.lines.clear();
  loads.restore_modules.clear();
  for (const std::string& m : modules) loads.Modprobe(m, "", /*mine=*/false);
  s.lines.insert(s.lines.begin(), loads.lines.begin(), loads.lines.end());
  s.restore_modules.insert(s.restore_modules.begin(), loads.restore_modules.begin(), loads.restore_modules.end());
}

void PlanCgroups(const HostSpec& spec, Script& s) {
  const std::string root = s.sys + "/fs/cgroup";
  if (!s.real) {
    s.Add(absl::StrCat("mount -t cgroup2 none ", root, " && echo +io > ", root, "/cgroup.subtree_control"));
  } else if (!spec.cgroups.empty()) {
    // The machine's own cgroup v2 hierarchy: io enabled at the root if it
    // was not, and the spec's groups made new (never one that exists).
    s.Add(absl::StrCat("[ -f ", root, "/cgroup.controllers ] || { echo \"blklab: no cgroup v2 hierarchy at ", root,
                       "\"; exit 1; }"));
    s.Add(absl::StrCat("grep -qw io ", root, "/cgroup.subtree_control || { echo +io > ", root,
                       "/cgroup.subtree_control && enabled_io=1; }"));
    s.restore.push_back(absl::StrCat("[ -z \"$enabled_io\" ] || echo -io > ", root, "/cgroup.subtree_control"));
  }
  std::set<std::string> made;
  for (const auto& [path, cg] : spec.cgroups) {
    std::string parent = root;
    for (absl::string_view part : absl::StrSplit(path, '/')) {
      const std::string dir = absl::StrCat(parent, "/", part);
      if (s.real && made.insert(dir).second) {
        s.Add(absl::StrCat("[ ! -e ", dir, " ] || { echo \"blklab: cgroup ", dir,
                           " exists already; --real makes its own\"; exit 1; }"));
        s.restore.push_back(absl::StrCat("[ ! -d ", dir, " ] || rmdir ", dir));
      }
      s.Add(absl::StrCat("mkdir -p ", dir, " && echo +io > ", dir, "/cgroup.subtree_control 2>/dev/null; true"));
      parent = dir;
    }
    s.Add(absl::StrCat("echo ", cg.bfq_weight, " > ", parent, "/io.bfq.weight || { echo 'blklab: cannot write ",
                       "io.bfq.weight of ", path, " (bfq not loaded?)'; exit 1; }"));
  }
}

void PlanVm(const DocNode& doc, const HostSpec& spec, Script& s, GuestPlan& plan) {
  if (DocPath(doc, {"vm", "memory_mib"}) != nullptr) plan.memory_mib = spec.vm.memory_mib + 512;
  const std::pair<const char*, int> sysctls[] = {
      {"dirty_ratio", spec.vm.dirty_ratio},
      {"dirty_background_ratio", spec.vm.dirty_background_ratio},
      {"dirty_expire_centisecs", spec.vm.dirty_expire_centisecs},
      {"dirty_writeback_centisecs", spec.vm.dirty_writeback_centisecs},
  };
  for (const auto& [name, value] : sysctls) {
    if (DocPath(doc, {"vm", name}) == nullptr) continue;
    const std::string file = absl::StrCat(s.proc, "/sys/vm/", name);
    if (s.real) {
      s.Add(absl::StrCat("old_", name, "=$(cat ", file, ")"));
      s.restore.push_back(absl::StrCat("[ -z \"$old_", name, "\" ] || echo \"$old_", name, "\" > ", file));
    }
    s.Add(absl::StrCat("echo ", value, " > ", file));
  }
}

}  // namespace

const LabKernel& Lab61() {
  static const LabKernel* const lab = [] {
    absl::StatusOr<HostSpec> preset = host::GetPreset("lab-6.1");
    BLKLAB_CHECK(preset.ok());  // presets are tested to parse
    return new LabKernel{preset->kernel, preset->knobs};
  }();
  return *lab;
}

HostSpec WithLabKernel(HostSpec spec) {
  spec.kernel = Lab61().kernel;
  spec.knobs = Lab61().knobs;
  return spec;
}

namespace {

absl::StatusOr<GuestPlan> Plan(const DocNode& doc, const HostSpec& spec, bool real) {
  if (!spec.filesystems.empty()) {
    return real ? absl::UnimplementedError("filesystems: --real makes no filesystems; jobs run on the raw devices")
                : Refuse("filesystems", "the lab image has no mkfs; jobs run on the raw devices");
  }
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    if (std::holds_alternative<host::HbaSpec>(spec.devices[i].driver)) {
      return real ? absl::UnimplementedError(absl::StrCat("devices[", i, "].hba: --real drives null_blk and ",
                                                          "scsi_debug only, never a machine's controller"))
                  : Refuse(absl::StrCat("devices[", i, "].hba"), "no RAID/HBA controller or its firmware can be emulated");
    }
  }
  GuestPlan plan;
  plan.vcpus = spec.cpus.count;
  Script s;
  if (real) {
    plan.real = true;
    s.real = true;
    s.sys = "$sys";
    s.proc = "$proc";
    s.tmp = "$work";
  }
  BLKLAB_RETURN_IF_ERROR(PlanNullBlk(spec, s));
  BLKLAB_RETURN_IF_ERROR(PlanScsiDebug(spec, s));
  BLKLAB_RETURN_IF_ERROR(PlanNvme(doc, spec, s, plan));
  RenameDevices(s, plan);
  PlanQueues(doc, spec, s);
  PlanCgroups(spec, s);
  PlanVm(doc, spec, s, plan);
  plan.kernel_cmdline.push_back("scsi_mod.scan=sync");
  plan.setup_script = absl::StrJoin(s.lines, "\n") + "\n";
  std::vector<std::string> undo(s.restore.rbegin(), s.restore.rend());
  undo.insert(undo.end(), s.restore_modules.rbegin(), s.restore_modules.rend());
  plan.restore_script = undo.empty() ? "" : absl::StrJoin(undo, "\n") + "\n";
  return plan;
}

}  // namespace

absl::StatusOr<GuestPlan> PlanGuest(const DocNode& doc, const HostSpec& spec) {
  BLKLAB_RETURN_IF_ERROR(CheckKernel(doc, spec));
  BLKLAB_RETURN_IF_ERROR(CheckCpus(spec.cpus));
  return Plan(doc, spec, /*real=*/false);
}

absl::StatusOr<GuestPlan> PlanReal(const DocNode& doc, const HostSpec& spec) {
  return Plan(doc, spec, /*real=*/true);
}

}  // namespace blklab::kernel_lab
