#include "engine/host/host_spec.h"

#include <algorithm>
#include <limits>
#include <set>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "engine/host/driver_type.h"
#include "engine/host/spec_fields.h"
#include "engine/util/json_reader.h"
#include "engine/util/status_macros.h"
#include "engine/util/yaml_reader.h"

namespace blklab::host {
namespace {

using util::DocNode;
using util::SourcePos;

using spec_internal::EncodeFields;
using spec_internal::FieldDesc;
using spec_internal::FieldsOf;
using spec_internal::FieldType;
using spec_internal::Join;
using spec_internal::kCgroupDependentNames;
using spec_internal::kCgroupDependents;
using spec_internal::RangeMessage;

// ---- Decoding -----------------------------------------------------------------

// Decodes a document, remembering where each field path was written so that
// validation errors (which name paths only) can point at the text too.
class Decoder {
 public:
  absl::Status Error(const std::string& path, SourcePos pos, absl::string_view message) {
    std::string where = util::FormatPos(pos);
    return absl::InvalidArgumentError(
        where.empty() ? absl::StrCat(path, ": ", message) : absl::StrCat(path, ": ", message, " (", where, ")"));
  }

  void Remember(const std::string& path, SourcePos pos) { positions_.emplace(path, pos); }

  // Appends " (line L, column C)" to a validation error whose message starts
  // with a remembered path.
  absl::Status Locate(const absl::Status& status) const {
    if (status.ok()) return status;
    absl::string_view msg = status.message();
    size_t colon = msg.find(": ");
    if (colon == absl::string_view::npos) return status;
    std::string path(msg.substr(0, colon));
    // Walk up the path until a remembered prefix is found.
    while (!path.empty()) {
      auto it = positions_.find(path);
      if (it != positions_.end() && it->second.known()) {
        return absl::Status(status.code(), absl::StrCat(msg, " (", util::FormatPos(it->second), ")"));
      }
      size_t cut = path.find_last_of(".[");
      if (cut == std::string::npos) break;
      path.resize(cut);
    }
    return status;
  }

  // A map (or null, meaning empty) whose keys must be in `known`.
  absl::Status ExpectMap(const DocNode& node, const std::string& path, std::span<const std::string> known) {
    if (node.is_null()) return absl::OkStatus();
    if (!node.is_map()) {
      return Error(path, node.pos(), absl::StrCat("expected a map, got a ", DocNode::KindName(node.kind())));
    }
    for (const util::DocMapEntry& e : node.entries()) {
      if (std::find(known.begin(), known.end(), e.key) == known.end()) {
        return Error(Join(path, e.key), e.key_pos,
                     absl::StrCat("unknown field; expected one of: ", absl::StrJoin(known, ", ")));
      }
      Remember(Join(path, e.key), e.value.pos());
    }
    return absl::OkStatus();
  }

  absl::StatusOr<int64_t> ReadInt(const DocNode& node, const std::string& path, int64_t lo, int64_t hi) {
    if (!node.is_number()) {
      return Error(path, node.pos(), absl::StrCat("expected an integer, got a ", DocNode::KindName(node.kind())));
    }
    absl::StatusOr<int64_t> v = node.AsInt64();
    if (!v.ok()) return Error(path, node.pos(), v.status().message());
    if (*v < lo || *v > hi) return Error(path, node.pos(), RangeMessage(lo, hi, *v));
    return *v;
  }

  absl::StatusOr<bool> ReadBool(const DocNode& node, const std::string& path) {
    if (!node.is_bool()) {
      std::string got = node.is_string() ? absl::StrCat("string \"", node.text(), "\"")
                                         : absl::StrCat("a ", DocNode::KindName(node.kind()));
      return Error(path, node.pos(), absl::StrCat("expected true or false, got ", got));
    }
    return node.bool_value();
  }

  absl::StatusOr<std::string> ReadString(const DocNode& node, const std::string& path) {
    if (!node.is_string()) {
      return Error(path, node.pos(), absl::StrCat("expected a string, got a ", DocNode::KindName(node.kind())));
    }
    return node.text();
  }

  // Decodes the table fields of S from `node`; `extra` keys are allowed and
  // left to the caller.
  template <typename S>
  absl::Status DecodeFields(const DocNode& node, const std::string& path, S& out,
                            std::span<const std::string> extra = {}) {
    std::vector<std::string> known(extra.begin(), extra.end());
    for (const FieldDesc<S>& f : FieldsOf<S>()) known.push_back(f.name);
    BLKLAB_RETURN_IF_ERROR(ExpectMap(node, path, known));
    if (node.is_null()) return absl::OkStatus();
    for (const FieldDesc<S>& f : FieldsOf<S>()) {
      const DocNode* v = node.Find(f.name);
      if (v == nullptr) continue;
      const std::string field_path = Join(path, f.name);
      switch (f.type) {
        case FieldType::kInt: {
          BLKLAB_ASSIGN_OR_RETURN(int64_t x, ReadInt(*v, field_path, f.lo, f.hi));
          out.*(f.i) = static_cast<int>(x);
          break;
        }
        case FieldType::kInt64: {
          BLKLAB_ASSIGN_OR_RETURN(out.*(f.l), ReadInt(*v, field_path, f.lo, f.hi));
          break;
        }
        case FieldType::kBool: {
          BLKLAB_ASSIGN_OR_RETURN(out.*(f.b), ReadBool(*v, field_path));
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<HostSpec> DecodeHost(const DocNode& root);

 private:
  absl::Status DecodeKernel(const DocNode& node, HostSpec& spec);
  absl::Status DecodeDevice(const DocNode& node, const std::string& path, DeviceSpec& dev);
  absl::Status DecodeQueue(const DocNode& node, const std::string& path, QueueSpec& queue);
  absl::Status DecodeFilesystems(const DocNode& node, HostSpec& spec);

  std::map<std::string, SourcePos> positions_;
};

const std::string kHostKeys[] = {"name", "description", "cpus", "kernel", "knobs", "devices", "costs", "cgroups",
                                 "filesystems", "vm"};
const std::string kFilesystemKeys[] = {"path", "device", "type", "files"};
const std::string kExistingFileKeys[] = {"path", "mib"};
const std::string kKernelKeys[] = {"hz", "version", "config"};
const std::string kQueueExtraKeys[] = {"scheduler", "iosched"};

// A device entry's keys: its name, one block per driver type, its queue.
std::vector<std::string> DeviceKeys() {
  std::vector<std::string> keys = {"name"};
  for (const DriverType* type : DriverTypes()) keys.emplace_back(type->key());
  keys.emplace_back("queue");
  return keys;
}

absl::Status Decoder::DecodeKernel(const DocNode& node, HostSpec& spec) {
  BLKLAB_RETURN_IF_ERROR(ExpectMap(node, "kernel", kKernelKeys));
  if (node.is_null()) return absl::OkStatus();
  if (const DocNode* hz = node.Find("hz")) {
    BLKLAB_ASSIGN_OR_RETURN(int64_t v, ReadInt(*hz, "kernel.hz", 1, 10000));
    spec.kernel.hz = static_cast<int>(v);
  }
  if (const DocNode* version = node.Find("version")) {
    if (version->is_number()) {  // "version: 6.8" reads as a number in YAML
      spec.kernel.version = version->text();
    } else {
      BLKLAB_ASSIGN_OR_RETURN(spec.kernel.version, ReadString(*version, "kernel.version"));
    }
  }
  if (const DocNode* config = node.Find("config")) {
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*config, "kernel.config", spec.kernel.config));
    // Kconfig dependencies: BLK_CGROUP=n turns its dependents off unless the
    // document asks for them (which validation then rejects).
    if (config->is_map() && !spec.kernel.config.BLK_CGROUP) {
      for (size_t i = 0; i < std::size(kCgroupDependents); ++i) {
        if (config->Find(kCgroupDependentNames[i]) == nullptr) spec.kernel.config.*kCgroupDependents[i] = false;
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeQueue(const DocNode& node, const std::string& path, QueueSpec& queue) {
  BLKLAB_RETURN_IF_ERROR(DecodeFields(node, path, queue, kQueueExtraKeys));
  if (node.is_null()) return absl::OkStatus();
  if (const DocNode* s = node.Find("scheduler")) {
    const std::string spath = Join(path, "scheduler");
    BLKLAB_ASSIGN_OR_RETURN(std::string name, ReadString(*s, spath));
    const std::optional<Scheduler> sched = SchedulerFromName(name);
    if (!sched.has_value()) {
      return Error(spath, s->pos(), absl::StrCat("must be one of ", SchedulerNames(), ", got \"", name, "\""));
    }
    queue.scheduler = *sched;
  }
  if (const DocNode* io = node.Find("iosched")) {
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*io, Join(path, "iosched"), queue.iosched));
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeDevice(const DocNode& node, const std::string& path, DeviceSpec& dev) {
  if (!node.is_map()) {
    return Error(path, node.pos(), absl::StrCat("expected a map, got a ", DocNode::KindName(node.kind())));
  }
  BLKLAB_RETURN_IF_ERROR(ExpectMap(node, path, DeviceKeys()));
  const DocNode* name = node.Find("name");
  if (name == nullptr) return Error(Join(path, "name"), node.pos(), "required");
  BLKLAB_ASSIGN_OR_RETURN(dev.name, ReadString(*name, Join(path, "name")));
  int drivers = 0;
  for (const DriverType* type : DriverTypes()) drivers += node.Find(type->key()) != nullptr ? 1 : 0;
  if (drivers != 1) {
    return Error(path, node.pos(),
                 absl::StrCat("exactly one driver block (", DriverKeyList(), ") is required, got ", drivers));
  }
  for (const DriverType* type : DriverTypes()) {
    const DocNode* d = node.Find(type->key());
    if (d == nullptr) continue;
    DriverSpec driver = type->Default();
    BLKLAB_RETURN_IF_ERROR(std::visit(
        [&](auto& s) { return DecodeFields(*d, Join(path, type->key()), s); }, driver));
    dev.driver = std::move(driver);
    break;
  }
  if (const DocNode* q = node.Find("queue")) {
    BLKLAB_RETURN_IF_ERROR(DecodeQueue(*q, Join(path, "queue"), dev.queue));
  }
  return absl::OkStatus();
}

absl::Status Decoder::DecodeFilesystems(const DocNode& node, HostSpec& spec) {
  const DocNode* fss = &node;
  if (!fss->is_null() && !fss->is_list()) {
    return Error("filesystems", fss->pos(), absl::StrCat("expected a list, got a ", DocNode::KindName(fss->kind())));
  }
  if (fss->is_list()) {
    for (size_t i = 0; i < fss->items().size(); ++i) {
      const DocNode& item = fss->items()[i];
      const std::string path = absl::StrCat("filesystems[", i, "]");
      Remember(path, item.pos());
      if (!item.is_map()) {
        return Error(path, item.pos(), absl::StrCat("expected a map, got a ", DocNode::KindName(item.kind())));
      }
      BLKLAB_RETURN_IF_ERROR(ExpectMap(item, path, kFilesystemKeys));
      FilesystemSpec fs;
      for (const char* key : {"path", "device"}) {
        const DocNode* v = item.Find(key);
        if (v == nullptr) return Error(Join(path, key), item.pos(), "required");
        BLKLAB_ASSIGN_OR_RETURN(std::string text, ReadString(*v, Join(path, key)));
        (std::string_view(key) == "path" ? fs.path : fs.device) = std::move(text);
      }
      if (const DocNode* t = item.Find("type")) {
        BLKLAB_ASSIGN_OR_RETURN(fs.type, ReadString(*t, Join(path, "type")));
      }
      if (const DocNode* files = item.Find("files")) {
        const std::string fpath = Join(path, "files");
        if (!files->is_list()) {
          return Error(fpath, files->pos(), absl::StrCat("expected a list, got a ", DocNode::KindName(files->kind())));
        }
        if (files->items().size() > 1024) {
          return Error(fpath, files->pos(), absl::StrCat(files->items().size(), " files exceed the limit of 1024"));
        }
        for (size_t k = 0; k < files->items().size(); ++k) {
          const DocNode& f = files->items()[k];
          const std::string at = absl::StrCat(fpath, "[", k, "]");
          if (!f.is_map()) return Error(at, f.pos(), absl::StrCat("expected a map, got a ", DocNode::KindName(f.kind())));
          BLKLAB_RETURN_IF_ERROR(ExpectMap(f, at, kExistingFileKeys));
          ExistingFileSpec e;
          const DocNode* p = f.Find("path");
          if (p == nullptr) return Error(Join(at, "path"), f.pos(), "required");
          BLKLAB_ASSIGN_OR_RETURN(e.path, ReadString(*p, Join(at, "path")));
          const DocNode* m = f.Find("mib");
          if (m == nullptr) return Error(Join(at, "mib"), f.pos(), "required");
          BLKLAB_ASSIGN_OR_RETURN(e.mib, ReadInt(*m, Join(at, "mib"), 1, int64_t{1} << 30));
          fs.files.push_back(std::move(e));
        }
      }
      spec.filesystems.push_back(std::move(fs));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<HostSpec> Decoder::DecodeHost(const DocNode& root) {
  HostSpec spec;
  if (!root.is_map()) {
    return Error("host spec", root.pos(),
                 absl::StrCat("expected a map at the top level, got a ", DocNode::KindName(root.kind())));
  }
  BLKLAB_RETURN_IF_ERROR(ExpectMap(root, "", kHostKeys));
  const DocNode* name = root.Find("name");
  if (name == nullptr) return Error("name", root.pos(), "required");
  BLKLAB_ASSIGN_OR_RETURN(spec.name, ReadString(*name, "name"));
  if (const DocNode* d = root.Find("description")) {
    BLKLAB_ASSIGN_OR_RETURN(spec.description, ReadString(*d, "description"));
  }
  if (const DocNode* c = root.Find("cpus")) BLKLAB_RETURN_IF_ERROR(DecodeFields(*c, "cpus", spec.cpus));
  if (const DocNode* vm = root.Find("vm")) BLKLAB_RETURN_IF_ERROR(DecodeFields(*vm, "vm", spec.vm));
  if (const DocNode* k = root.Find("kernel")) BLKLAB_RETURN_IF_ERROR(DecodeKernel(*k, spec));
  const DocNode* knobs = root.Find("knobs");
  if (knobs != nullptr) BLKLAB_RETURN_IF_ERROR(DecodeFields(*knobs, "knobs", spec.knobs));

  // knobs.config_blk_cgroup mirrors kernel.config.BLK_CGROUP: either may be
  // given; both given must agree.
  const DocNode* kernel = root.Find("kernel");
  const DocNode* config = kernel != nullptr && kernel->is_map() ? kernel->Find("config") : nullptr;
  const bool config_set = config != nullptr && config->is_map() && config->Find("BLK_CGROUP") != nullptr;
  const DocNode* knob_node = knobs != nullptr && knobs->is_map() ? knobs->Find("config_blk_cgroup") : nullptr;
  if (knob_node != nullptr && !config_set) {
    spec.kernel.config.BLK_CGROUP = spec.knobs.config_blk_cgroup;
    if (!spec.kernel.config.BLK_CGROUP) {
      for (auto field : kCgroupDependents) spec.kernel.config.*field = false;
    }
  } else if (knob_node == nullptr) {
    spec.knobs.config_blk_cgroup = spec.kernel.config.BLK_CGROUP;
  } else if (spec.knobs.config_blk_cgroup != spec.kernel.config.BLK_CGROUP) {
    return Error("knobs.config_blk_cgroup", knob_node->pos(), "contradicts kernel.config.BLK_CGROUP");
  }

  if (const DocNode* devices = root.Find("devices")) {
    if (!devices->is_list()) {
      return Error("devices", devices->pos(), absl::StrCat("expected a list, got a ", DocNode::KindName(devices->kind())));
    }
    for (size_t i = 0; i < devices->items().size(); ++i) {
      const std::string path = absl::StrCat("devices[", i, "]");
      Remember(path, devices->items()[i].pos());
      DeviceSpec dev;
      BLKLAB_RETURN_IF_ERROR(DecodeDevice(devices->items()[i], path, dev));
      spec.devices.push_back(std::move(dev));
    }
  }
  if (const DocNode* costs = root.Find("costs")) {
    if (!costs->is_null() && !costs->is_map()) {
      return Error("costs", costs->pos(), absl::StrCat("expected a map, got a ", DocNode::KindName(costs->kind())));
    }
    if (costs->is_map()) {
      for (const util::DocMapEntry& e : costs->entries()) {
        const std::string path = Join("costs", e.key);
        Remember(path, e.value.pos());
        BLKLAB_ASSIGN_OR_RETURN(int64_t v, ReadInt(e.value, path, 0, std::numeric_limits<int64_t>::max()));
        spec.costs[e.key] = v;
      }
    }
  }
  if (const DocNode* fss = root.Find("filesystems")) BLKLAB_RETURN_IF_ERROR(DecodeFilesystems(*fss, spec));
  if (const DocNode* cgroups = root.Find("cgroups")) {
    if (!cgroups->is_null() && !cgroups->is_map()) {
      return Error("cgroups", cgroups->pos(), absl::StrCat("expected a map of cgroup paths, got a ",
                                                           DocNode::KindName(cgroups->kind())));
    }
    if (cgroups->is_map()) {
      for (const util::DocMapEntry& e : cgroups->entries()) {
        const std::string path = Join("cgroups", e.key);
        Remember(path, e.value.pos());
        CgroupSpec cg;
        BLKLAB_RETURN_IF_ERROR(DecodeFields(e.value, path, cg));
        spec.cgroups[e.key] = cg;
      }
    }
  }
  return spec;
}

}  // namespace

absl::string_view SchedulerName(Scheduler s) {
  switch (s) {
    case Scheduler::kDefault:
      return "default";
#define BLKLAB_SCHEDULER_NAME(e, name) \
  case Scheduler::e:                   \
    return name;
      BLKLAB_SCHEDULERS(BLKLAB_SCHEDULER_NAME)
#undef BLKLAB_SCHEDULER_NAME
  }
  return "default";
}

std::optional<Scheduler> SchedulerFromName(absl::string_view name) {
#define BLKLAB_SCHEDULER_FIND(e, n) \
  if (name == n) return Scheduler::e;
  BLKLAB_SCHEDULERS(BLKLAB_SCHEDULER_FIND)
#undef BLKLAB_SCHEDULER_FIND
  return std::nullopt;
}

std::string SchedulerNames() {
  std::vector<absl::string_view> names;
#define BLKLAB_SCHEDULER_LIST(e, n) names.push_back(n);
  BLKLAB_SCHEDULERS(BLKLAB_SCHEDULER_LIST)
#undef BLKLAB_SCHEDULER_LIST
  return absl::StrJoin(names, ", ");
}

int DefaultNrRequests(int tag_depth, Scheduler s) {
  return s == Scheduler::kNone || s == Scheduler::kDefault ? tag_depth : 2 * std::min(tag_depth, 128);
}

int DeviceInstances(const DeviceSpec& device) { return DriverTypeOf(device.driver).Instances(device.driver); }

std::string DeviceInstanceName(const DeviceSpec& device, int index) {
  const int count = DeviceInstances(device);
  if (count == 1) return device.name;
  const std::string& n = device.name;
  const bool scsi = DriverTypeOf(device.driver).scsi();
  const bool sd_name = scsi && n.size() >= 3 && n.size() <= 6 &&
                       n.compare(0, 2, "sd") == 0 &&
                       std::all_of(n.begin() + 2, n.end(), [](char c) { return c >= 'a' && c <= 'z'; });
  if (!sd_name) return absl::StrCat(n, "-", index);
  // sd_format_disk_name: bijective base 26 (a..z, aa..az, ba..).
  int64_t k = 0;
  for (size_t i = 2; i < n.size(); ++i) k = k * 26 + (n[i] - 'a' + 1);
  k += index;
  std::string letters;
  while (k > 0) {
    --k;
    letters.insert(letters.begin(), static_cast<char>('a' + k % 26));
    k /= 26;
  }
  return "sd" + letters;
}

int HardwareQueues(const DeviceSpec& device, const CpuSpec& cpus) {
  return DriverTypeOf(device.driver).HardwareQueues(device.driver, cpus);
}

int TagDepth(const DeviceSpec& device) { return DriverTypeOf(device.driver).TagDepth(device.driver); }

void ResolveDefaults(HostSpec& spec) {
  for (DeviceSpec& d : spec.devices) {
    if (d.queue.scheduler == Scheduler::kDefault) {
      // elevator_get_default(): none with BLK_MQ_F_NO_SCHED_BY_DEFAULT, or
      // with several hw queues unless tags are host-wide; else mq-deadline.
      const DriverType& driver = DriverTypeOf(d.driver);
      const bool no_sched = driver.NoSched(d.driver);
      const bool single = HardwareQueues(d, spec.cpus) == 1 || driver.HostSharedTags(d.driver);
      d.queue.scheduler = (!no_sched && single) ? Scheduler::kMqDeadline : Scheduler::kNone;
    }
    if (d.queue.nr_requests == 0) {
      // blk_mq_init_sched: 2 * min(set depth, BLKDEV_DEFAULT_RQ); else the set depth.
      d.queue.nr_requests = DefaultNrRequests(TagDepth(d), d.queue.scheduler);
    }
  }
}

absl::StatusOr<HostSpec> HostSpecFromDoc(const DocNode& doc, const HostLimits& limits) {
  Decoder decoder;
  BLKLAB_ASSIGN_OR_RETURN(HostSpec spec, decoder.DecodeHost(doc));
  ResolveDefaults(spec);
  BLKLAB_RETURN_IF_ERROR(decoder.Locate(ValidateHostSpec(spec, limits)));
  return spec;
}

absl::StatusOr<DocNode> ParseHostDoc(absl::string_view text, SpecFormat format, const HostLimits& limits) {
  util::ParseLimits parse_limits;
  parse_limits.max_bytes = limits.max_document_bytes;
  parse_limits.max_depth = 16;
  parse_limits.max_nodes = 100000;
  if (format == SpecFormat::kAuto) {
    size_t i = 0;
    while (i < text.size() && (text[i] == ' ' || text[i] == '\t' || text[i] == '\n' || text[i] == '\r')) ++i;
    format = (i < text.size() && text[i] == '{') ? SpecFormat::kJson : SpecFormat::kYaml;
  }
  return format == SpecFormat::kJson ? util::ParseJson(text, parse_limits) : util::ParseYaml(text, parse_limits);
}

absl::StatusOr<HostSpec> ParseHostSpec(absl::string_view text, SpecFormat format, const HostLimits& limits) {
  BLKLAB_ASSIGN_OR_RETURN(DocNode doc, ParseHostDoc(text, format, limits));
  return HostSpecFromDoc(doc, limits);
}

DocNode HostSpecToDoc(const HostSpec& in) {
  HostSpec spec = in;
  ResolveDefaults(spec);
  DocNode root = DocNode::Map();
  root.AddEntry("name", {}, DocNode::String(spec.name));
  if (!spec.description.empty()) root.AddEntry("description", {}, DocNode::String(spec.description));
  root.AddEntry("cpus", {}, EncodeFields(spec.cpus));
  DocNode kernel = DocNode::Map();
  kernel.AddEntry("hz", {}, DocNode::Int(spec.kernel.hz));
  if (!spec.kernel.version.empty()) kernel.AddEntry("version", {}, DocNode::String(spec.kernel.version));
  kernel.AddEntry("config", {}, EncodeFields(spec.kernel.config));
  root.AddEntry("kernel", {}, std::move(kernel));
  root.AddEntry("knobs", {}, EncodeFields(spec.knobs));
  DocNode devices = DocNode::List();
  for (const DeviceSpec& d : spec.devices) {
    DocNode dev = DocNode::Map();
    dev.AddEntry("name", {}, DocNode::String(d.name));
    DocNode driver = std::visit([](const auto& s) { return EncodeFields(s); }, d.driver);
    dev.AddEntry(std::string(DriverTypeOf(d.driver).key()), {}, std::move(driver));
    DocNode queue = DocNode::Map();
    queue.AddEntry("scheduler", {}, DocNode::String(std::string(SchedulerName(d.queue.scheduler))));
    queue = EncodeFields(d.queue, std::move(queue));
    queue.AddEntry("iosched", {}, EncodeFields(d.queue.iosched));
    dev.AddEntry("queue", {}, std::move(queue));
    devices.Append(std::move(dev));
  }
  root.AddEntry("devices", {}, std::move(devices));
  DocNode costs = DocNode::Map();
  for (const auto& [name, value] : spec.costs) costs.AddEntry(name, {}, DocNode::Int(value));
  root.AddEntry("costs", {}, std::move(costs));
  if (!spec.cgroups.empty()) {
    DocNode cgroups = DocNode::Map();
    for (const auto& [path, cg] : spec.cgroups) cgroups.AddEntry(path, {}, EncodeFields(cg));
    root.AddEntry("cgroups", {}, std::move(cgroups));
  }
  if (!spec.filesystems.empty()) {
    DocNode fss = DocNode::List();
    for (const FilesystemSpec& fs : spec.filesystems) {
      DocNode f = DocNode::Map();
      f.AddEntry("path", {}, DocNode::String(fs.path));
      f.AddEntry("device", {}, DocNode::String(fs.device));
      f.AddEntry("type", {}, DocNode::String(fs.type));
      if (!fs.files.empty()) {
        DocNode files = DocNode::List();
        for (const ExistingFileSpec& e : fs.files) {
          DocNode ef = DocNode::Map();
          ef.AddEntry("path", {}, DocNode::String(e.path));
          ef.AddEntry("mib", {}, DocNode::Int(e.mib));
          files.Append(std::move(ef));
        }
        f.AddEntry("files", {}, std::move(files));
      }
      fss.Append(std::move(f));
    }
    root.AddEntry("filesystems", {}, std::move(fss));
  }
  if (spec.vm != VmSpec{}) root.AddEntry("vm", {}, EncodeFields(spec.vm));
  return root;
}

std::string HostSpecToJson(const HostSpec& spec, int indent) { return util::WriteJson(HostSpecToDoc(spec), indent); }

absl::StatusOr<CostTable> BuildCostTable(const HostSpec& spec) {
  CostTable table = CalibratedCostTable();
  ScaleForCoreSpeed(table, spec.cpus.speed_permille);
  for (const auto& [name, value] : spec.costs) BLKLAB_RETURN_IF_ERROR(SetCost(table, name, value));
  return table;
}

bool ValidCgroupPath(absl::string_view path) {
  bool ok = !path.empty() && path.size() <= 200;
  for (absl::string_view part : absl::StrSplit(path, '/')) {
    ok = ok && !part.empty() && part != "." && part != "..";
    for (char c : part) {
      ok = ok && ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                  c == '.');
    }
  }
  return ok;
}

}  // namespace blklab::host
