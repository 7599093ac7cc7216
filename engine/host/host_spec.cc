#include "engine/host/host_spec.h"

#include <algorithm>
#include <limits>
#include <set>
#include <span>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/str_join.h"
#include "engine/host/cpu_topology.h"
#include "engine/util/json_reader.h"
#include "engine/util/status_macros.h"
#include "engine/util/yaml_reader.h"

namespace blklab::host {
namespace {

using util::DocNode;
using util::SourcePos;

// ---- Field tables -------------------------------------------------------------

enum class FieldType { kInt, kInt64, kBool };

template <typename S>
struct FieldDesc {
  const char* name;
  FieldType type;
  int S::*i;
  int64_t S::*l;
  bool S::*b;
  int64_t lo;
  int64_t hi;
};

template <typename S>
std::span<const FieldDesc<S>> FieldsOf();

#define BLKLAB_DESC_INT(name, def, lo, hi, doc) FieldDesc<S>{#name, FieldType::kInt, &S::name, nullptr, nullptr, lo, hi},
#define BLKLAB_DESC_INT64(name, def, lo, hi, doc) \
  FieldDesc<S>{#name, FieldType::kInt64, nullptr, &S::name, nullptr, lo, hi},
#define BLKLAB_DESC_BOOL(name, def, lo, hi, doc) FieldDesc<S>{#name, FieldType::kBool, nullptr, nullptr, &S::name, 0, 1},
#define BLKLAB_FIELD_TABLE(TYPE, LIST)                                                  \
  template <>                                                                           \
  std::span<const FieldDesc<TYPE>> FieldsOf<TYPE>() {                                   \
    using S = TYPE;                                                                     \
    static const FieldDesc<S> kFields[] = {LIST(BLKLAB_DESC_INT, BLKLAB_DESC_INT64, BLKLAB_DESC_BOOL)}; \
    return kFields;                                                                     \
  }

BLKLAB_FIELD_TABLE(CpuSpec, BLKLAB_CPU_FIELDS)
BLKLAB_FIELD_TABLE(KernelConfig, BLKLAB_KCONFIG_FIELDS)
BLKLAB_FIELD_TABLE(Knobs, BLKLAB_KNOB_FIELDS)
BLKLAB_FIELD_TABLE(NullBlkSpec, BLKLAB_NULL_BLK_FIELDS)
BLKLAB_FIELD_TABLE(NvmeSpec, BLKLAB_NVME_FIELDS)
BLKLAB_FIELD_TABLE(ScsiDebugSpec, BLKLAB_SCSI_DEBUG_FIELDS)
BLKLAB_FIELD_TABLE(HbaSpec, BLKLAB_HBA_FIELDS)
BLKLAB_FIELD_TABLE(IoschedTunables, BLKLAB_IOSCHED_FIELDS)
BLKLAB_FIELD_TABLE(QueueSpec, BLKLAB_QUEUE_FIELDS)
BLKLAB_FIELD_TABLE(CgroupSpec, BLKLAB_CGROUP_FIELDS)
BLKLAB_FIELD_TABLE(VmSpec, BLKLAB_VM_FIELDS)

#undef BLKLAB_FIELD_TABLE
#undef BLKLAB_DESC_INT
#undef BLKLAB_DESC_INT64
#undef BLKLAB_DESC_BOOL

std::string Join(const std::string& path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

std::string RangeMessage(int64_t lo, int64_t hi, int64_t got) {
  if (hi - lo == 1) return absl::StrCat("must be ", lo, " or ", hi, ", got ", got);
  if (hi - lo == 2) return absl::StrCat("must be ", lo, ", ", lo + 1, " or ", hi, ", got ", got);
  return absl::StrCat("must be in [", lo, ", ", hi, "], got ", got);
}

absl::Status FieldError(const std::string& path, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", message));
}

template <typename S>
absl::Status ValidateRanges(const S& s, const std::string& path) {
  for (const FieldDesc<S>& f : FieldsOf<S>()) {
    int64_t v = 0;
    if (f.type == FieldType::kInt) {
      v = s.*(f.i);
    } else if (f.type == FieldType::kInt64) {
      v = s.*(f.l);
    } else {
      continue;
    }
    if (v < f.lo || v > f.hi) return FieldError(Join(path, f.name), RangeMessage(f.lo, f.hi, v));
  }
  return absl::OkStatus();
}

template <typename S>
DocNode EncodeFields(const S& s, DocNode map = DocNode::Map()) {
  for (const FieldDesc<S>& f : FieldsOf<S>()) {
    switch (f.type) {
      case FieldType::kInt:
        map.AddEntry(f.name, {}, DocNode::Int(s.*(f.i)));
        break;
      case FieldType::kInt64:
        map.AddEntry(f.name, {}, DocNode::Int(s.*(f.l)));
        break;
      case FieldType::kBool:
        map.AddEntry(f.name, {}, DocNode::Bool(s.*(f.b)));
        break;
    }
  }
  return map;
}

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

  std::map<std::string, SourcePos> positions_;
};

const std::string kHostKeys[] = {"name", "description", "cpus", "kernel", "knobs", "devices", "costs", "cgroups",
                                 "filesystems", "vm"};
const std::string kFilesystemKeys[] = {"path", "device", "type", "files"};
const std::string kExistingFileKeys[] = {"path", "mib"};
const std::string kKernelKeys[] = {"hz", "version", "config"};
const std::string kDeviceKeys[] = {"name", "null_blk", "nvme", "scsi_debug", "hba", "queue"};
const std::string kQueueExtraKeys[] = {"scheduler", "iosched"};
const char* const kDriverKeys[] = {"null_blk", "nvme", "scsi_debug", "hba"};

// Kconfig options that depend on BLK_CGROUP.
bool KernelConfig::*const kCgroupDependents[] = {&KernelConfig::BLK_DEV_THROTTLING,
                                                 &KernelConfig::BLK_CGROUP_IOCOST};
const char* const kCgroupDependentNames[] = {"BLK_DEV_THROTTLING", "BLK_CGROUP_IOCOST"};

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
  BLKLAB_RETURN_IF_ERROR(ExpectMap(node, path, kDeviceKeys));
  const DocNode* name = node.Find("name");
  if (name == nullptr) return Error(Join(path, "name"), node.pos(), "required");
  BLKLAB_ASSIGN_OR_RETURN(dev.name, ReadString(*name, Join(path, "name")));
  int drivers = 0;
  for (const char* d : kDriverKeys) drivers += node.Find(d) != nullptr ? 1 : 0;
  if (drivers != 1) {
    return Error(path, node.pos(),
                 absl::StrCat("exactly one driver block (null_blk, nvme, scsi_debug or hba) is required, got ", drivers));
  }
  if (const DocNode* d = node.Find("null_blk")) {
    NullBlkSpec s;
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*d, Join(path, "null_blk"), s));
    dev.driver = s;
  } else if (const DocNode* d = node.Find("nvme")) {
    NvmeSpec s;
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*d, Join(path, "nvme"), s));
    dev.driver = s;
  } else if (const DocNode* d = node.Find("scsi_debug")) {
    ScsiDebugSpec s;
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*d, Join(path, "scsi_debug"), s));
    dev.driver = s;
  } else if (const DocNode* d = node.Find("hba")) {
    HbaSpec s;
    BLKLAB_RETURN_IF_ERROR(DecodeFields(*d, Join(path, "hba"), s));
    dev.driver = s;
  }
  if (const DocNode* q = node.Find("queue")) {
    BLKLAB_RETURN_IF_ERROR(DecodeQueue(*q, Join(path, "queue"), dev.queue));
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
  if (const DocNode* fss = root.Find("filesystems")) {
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
  }
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

// ---- Validation helpers -----------------------------------------------------

bool ValidName(const std::string& s, size_t max_len, bool allow_upper_dot) {
  if (s.empty() || s.size() > max_len) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
                    (allow_upper_dot && ((c >= 'A' && c <= 'Z') || c == '.'));
    if (!ok) return false;
  }
  return true;
}

bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

bool HostSharedTags(const DeviceSpec& d) {
  if (const auto* n = std::get_if<NullBlkSpec>(&d.driver)) return n->shared_tag_bitmap;
  if (const auto* s = std::get_if<ScsiDebugSpec>(&d.driver)) return s->host_max_queue > 0;
  if (const auto* h = std::get_if<HbaSpec>(&d.driver)) return h->host_tagset;
  return false;
}

int PollQueues(const DeviceSpec& d, const CpuSpec& cpus) {
  if (const auto* n = std::get_if<NullBlkSpec>(&d.driver)) return n->poll_queues;
  if (const auto* s = std::get_if<ScsiDebugSpec>(&d.driver)) return s->poll_queues;
  if (std::holds_alternative<HbaSpec>(d.driver)) return 0;
  const auto& nv = std::get<NvmeSpec>(d.driver);
  return std::min(nv.poll_queues, HardwareQueues(d, cpus));
}

const char* DriverKey(const DriverSpec& driver) { return kDriverKeys[driver.index()]; }

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

int DeviceInstances(const DeviceSpec& device) {
  if (const auto* n = std::get_if<NullBlkSpec>(&device.driver)) return n->nr_devices;
  if (const auto* s = std::get_if<ScsiDebugSpec>(&device.driver)) {
    return s->add_host * s->num_tgts * s->max_luns;
  }
  if (const auto* h = std::get_if<HbaSpec>(&device.driver)) return h->virtual_drives;
  return 1;
}

std::string DeviceInstanceName(const DeviceSpec& device, int index) {
  const int count = DeviceInstances(device);
  if (count == 1) return device.name;
  const std::string& n = device.name;
  const bool scsi = std::holds_alternative<HbaSpec>(device.driver) || std::holds_alternative<ScsiDebugSpec>(device.driver);
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
  if (const auto* n = std::get_if<NullBlkSpec>(&device.driver)) {
    const int nodes = cpus.sockets * cpus.numa_nodes_per_socket;
    return (n->use_per_node_hctx ? nodes : n->submit_queues) + n->poll_queues;
  }
  if (const auto* s = std::get_if<ScsiDebugSpec>(&device.driver)) return s->submit_queues + s->poll_queues;
  if (const auto* h = std::get_if<HbaSpec>(&device.driver)) return h->nr_hw_queues;
  const auto& nv = std::get<NvmeSpec>(device.driver);
  const int64_t wanted = int64_t{nv.nr_io_queues > 0 ? nv.nr_io_queues : cpus.count} + nv.write_queues + nv.poll_queues;
  return static_cast<int>(std::min<int64_t>(wanted, nv.max_queues));
}

int TagDepth(const DeviceSpec& device) {
  if (const auto* n = std::get_if<NullBlkSpec>(&device.driver)) return n->hw_queue_depth;
  if (const auto* s = std::get_if<ScsiDebugSpec>(&device.driver)) {
    return s->host_max_queue > 0 ? s->host_max_queue : s->max_queue;
  }
  if (const auto* h = std::get_if<HbaSpec>(&device.driver)) return h->can_queue;
  return std::get<NvmeSpec>(device.driver).io_queue_depth - 1;
}

void ResolveDefaults(HostSpec& spec) {
  for (DeviceSpec& d : spec.devices) {
    if (d.queue.scheduler == Scheduler::kDefault) {
      // elevator_get_default(): none with BLK_MQ_F_NO_SCHED_BY_DEFAULT, or
      // with several hw queues unless tags are host-wide; else mq-deadline.
      const auto* n = std::get_if<NullBlkSpec>(&d.driver);
      const bool no_sched = n != nullptr && n->no_sched;
      const bool single = HardwareQueues(d, spec.cpus) == 1 || HostSharedTags(d);
      d.queue.scheduler = (!no_sched && single) ? Scheduler::kMqDeadline : Scheduler::kNone;
    }
    if (d.queue.nr_requests == 0) {
      // blk_mq_init_sched: 2 * min(set depth, BLKDEV_DEFAULT_RQ); else the set depth.
      d.queue.nr_requests = DefaultNrRequests(TagDepth(d), d.queue.scheduler);
    }
  }
}

absl::Status ValidateHostSpec(const HostSpec& spec, const HostLimits& limits) {
  if (!ValidName(spec.name, 64, true)) {
    return FieldError("name", absl::StrCat("must be 1-64 characters of [A-Za-z0-9._-], got \"", spec.name, "\""));
  }
  if (spec.description.size() > 200) return FieldError("description", "must be at most 200 bytes");
  for (char c : spec.description) {
    if (static_cast<unsigned char>(c) < 0x20) return FieldError("description", "must be one line of text");
  }

  // cpus
  if (spec.cpus.count > limits.max_cpus) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cpus.count: ", spec.cpus.count, " CPUs exceed the limit of ", limits.max_cpus));
  }
  BLKLAB_RETURN_IF_ERROR(ValidateRanges(spec.cpus, "cpus"));
  BLKLAB_RETURN_IF_ERROR(ValidateRanges(spec.vm, "vm"));
  BLKLAB_RETURN_IF_ERROR(CpuTopology::Create(spec.cpus).status());
  {
    const CpuSpec& c = spec.cpus;
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
  }
  const int numa_nodes = spec.cpus.sockets * spec.cpus.numa_nodes_per_socket;

  // kernel
  const int hz = spec.kernel.hz;
  if (hz != 100 && hz != 250 && hz != 300 && hz != 1000) {
    return FieldError("kernel.hz", absl::StrCat("must be 100, 250, 300 or 1000, got ", hz));
  }
  if (spec.kernel.version.size() > 32 ||
      !std::all_of(spec.kernel.version.begin(), spec.kernel.version.end(), [](char c) {
        return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '-' || c == '+';
      })) {
    return FieldError("kernel.version", "must be at most 32 characters of [0-9a-z.+-], like \"6.8\" or \"5.16-rc5\"");
  }
  const KernelConfig& kc = spec.kernel.config;
  if (!kc.BLK_CGROUP) {
    for (size_t i = 0; i < std::size(kCgroupDependents); ++i) {
      if (kc.*kCgroupDependents[i]) {
        return FieldError(absl::StrCat("kernel.config.", kCgroupDependentNames[i]), "requires BLK_CGROUP");
      }
    }
  }

  // knobs
  if (spec.knobs.config_blk_cgroup != kc.BLK_CGROUP) {
    return FieldError("knobs.config_blk_cgroup", "contradicts kernel.config.BLK_CGROUP");
  }
  if (spec.knobs.dd_insert_buckets && spec.knobs.dd_insert_side_lists) {
    return FieldError("knobs.dd_insert_buckets",
                      "cannot be combined with dd_insert_side_lists (two alternative insert schemes)");
  }

  // devices
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
    if (!ValidName(d.name, 32, true)) {
      return FieldError(Join(path, "name"),
                        absl::StrCat("must be 1-32 characters of [A-Za-z0-9._-], got \"", d.name, "\""));
    }
    for (size_t j = 0; j < i; ++j) {
      if (spec.devices[j].name == d.name) {
        return FieldError(Join(path, "name"), absl::StrCat("duplicate device name \"", d.name, "\""));
      }
    }
    const std::string dpath = Join(path, DriverKey(d.driver));
    if (const auto* n = std::get_if<NullBlkSpec>(&d.driver)) {
      BLKLAB_RETURN_IF_ERROR(ValidateRanges(*n, dpath));
      if (!IsPowerOfTwo(n->bs)) return FieldError(Join(dpath, "bs"), absl::StrCat("must be a power of two, got ", n->bs));
      if (n->home_node >= numa_nodes) {
        return FieldError(Join(dpath, "home_node"),
                          absl::StrCat("must be -1 or a NUMA node below ", numa_nodes, ", got ", n->home_node));
      }
      if (n->hw_queue_depth > limits.max_queue_depth) {
        return absl::ResourceExhaustedError(absl::StrCat(Join(dpath, "hw_queue_depth"), ": ", n->hw_queue_depth,
                                                         " exceeds the limit of ", limits.max_queue_depth));
      }
    } else if (const auto* nv = std::get_if<NvmeSpec>(&d.driver)) {
      BLKLAB_RETURN_IF_ERROR(ValidateRanges(*nv, dpath));
      if (!IsPowerOfTwo(nv->bs)) return FieldError(Join(dpath, "bs"), absl::StrCat("must be a power of two, got ", nv->bs));
      if (nv->write_queues + nv->poll_queues >= nv->max_queues) {
        return FieldError(Join(dpath, "poll_queues"),
                          "write_queues + poll_queues must leave at least one default queue under max_queues");
      }
      if (nv->io_queue_depth - 1 > limits.max_queue_depth) {
        return absl::ResourceExhaustedError(absl::StrCat(Join(dpath, "io_queue_depth"), ": ", nv->io_queue_depth,
                                                         " exceeds the limit of ", limits.max_queue_depth));
      }
    } else if (const auto* h = std::get_if<HbaSpec>(&d.driver)) {
      BLKLAB_RETURN_IF_ERROR(ValidateRanges(*h, dpath));
      if (!IsPowerOfTwo(h->sector_size)) {
        return FieldError(Join(dpath, "sector_size"), absl::StrCat("must be a power of two, got ", h->sector_size));
      }
      if (!IsPowerOfTwo(h->stripe_kb)) {
        return FieldError(Join(dpath, "stripe_kb"), absl::StrCat("must be a power of two, got ", h->stripe_kb));
      }
      if (h->irq_poll_sleep_max_us < h->irq_poll_sleep_min_us) {
        return FieldError(Join(dpath, "irq_poll_sleep_max_us"),
                          absl::StrCat("must be at least irq_poll_sleep_min_us (", h->irq_poll_sleep_min_us, "), got ",
                                       h->irq_poll_sleep_max_us));
      }
    } else {
      const auto& s = std::get<ScsiDebugSpec>(d.driver);
      BLKLAB_RETURN_IF_ERROR(ValidateRanges(s, dpath));
      if (!IsPowerOfTwo(s.sector_size)) {
        return FieldError(Join(dpath, "sector_size"), absl::StrCat("must be a power of two, got ", s.sector_size));
      }
    }
    const int hwq = HardwareQueues(d, spec.cpus);
    if (hwq > limits.max_hw_queues) {
      return absl::ResourceExhaustedError(
          absl::StrCat(dpath, ": ", hwq, " hardware queues exceed the limit of ", limits.max_hw_queues));
    }

    // queue
    const std::string qpath = Join(path, "queue");
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
    const auto* nb = std::get_if<NullBlkSpec>(&d.driver);
    if (q.scheduler != Scheduler::kDefault && q.scheduler != Scheduler::kNone && nb != nullptr && nb->no_sched) {
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
    if (q.io_poll && PollQueues(d, spec.cpus) == 0) {
      return FieldError(Join(qpath, "io_poll"), absl::StrCat("needs poll queues (", DriverKey(d.driver), ".poll_queues)"));
    }

    const int64_t instances = DeviceInstances(d);
    total_devices += instances;
    // Scheduler tags are counted whatever the spec's scheduler: a job's
    // ioscheduler= may switch the device to mq-deadline.
    const bool no_sched = nb != nullptr && nb->no_sched;
    const int64_t sched_depth = no_sched ? 0 : (q.nr_requests == 0 ? 256 : q.nr_requests);
    if (const auto* h = std::get_if<HbaSpec>(&d.driver)) {
      // One tag set for the host (per hw queue without host_tagset); with
      // host-wide tags the scheduler tags are one set per queue too.
      const int64_t sets = h->host_tagset ? 1 : hwq;
      total_requests += sets * h->can_queue + instances * sets * sched_depth;
    } else {
      total_requests += instances * hwq * (int64_t{TagDepth(d)} + sched_depth);
    }
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

  // costs
  CostTable scratch;
  for (const auto& [name, value] : spec.costs) {
    BLKLAB_RETURN_IF_ERROR(SetCost(scratch, name, value));
    if (value > 1000000000) {
      return FieldError(Join("costs", name), absl::StrCat("must be <= 1000000000 ns, got ", value));
    }
  }
  // cgroups: paths as fio's cgroup= gives them (relative to the cgroup2
  // mount), at most 256.
  if (spec.cgroups.size() > 256) {
    return absl::ResourceExhaustedError(absl::StrCat("cgroups: ", spec.cgroups.size(), " cgroups exceed the limit of 256"));
  }
  // filesystems: absolute, normalised mount points, each once; the device
  // is checked against the expanded device names when a run is planned.
  if (spec.filesystems.size() > 64) {
    return absl::ResourceExhaustedError(
        absl::StrCat("filesystems: ", spec.filesystems.size(), " filesystems exceed the limit of 64"));
  }
  std::set<std::string> mounts;
  for (size_t i = 0; i < spec.filesystems.size(); ++i) {
    const FilesystemSpec& fs = spec.filesystems[i];
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
  for (const auto& [path, cg] : spec.cgroups) {
    const bool ok = ValidCgroupPath(path);
    if (!ok) {
      return FieldError("cgroups", absl::StrCat("\"", path, "\": a cgroup path is [A-Za-z0-9._-] names joined by /, "
                                                "relative to the cgroup2 mount (as fio's cgroup= takes it)"));
    }
  }
  return absl::OkStatus();
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
    dev.AddEntry(DriverKey(d.driver), {}, std::move(driver));
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
