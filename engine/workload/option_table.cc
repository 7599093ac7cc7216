#include "engine/workload/option_table.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/workload/io_engine_info.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload {
namespace {


bool WordIn(const char* list, const std::string& word) {
  for (absl::string_view w : absl::StrSplit(list, ' ', absl::SkipEmpty())) {
    if (w == word) return true;
  }
  return false;
}

const absl::flat_hash_map<std::string, const OptionDef*>& Index() {
  static const auto* index = [] {
    auto* m = new absl::flat_hash_map<std::string, const OptionDef*>();
    for (const OptionDef& d : AllOptions()) {
      (*m)[d.name] = &d;
      for (absl::string_view a : absl::StrSplit(d.aliases, ' ', absl::SkipEmpty())) {
        (*m)[std::string(a)] = &d;
      }
    }
    return m;
  }();
  return *index;
}

constexpr const char* kFioEngines =
    "sync psync vsync pvsync pvsync2 io_uring io_uring_cmd libaio posixaio solarisaio "
    "windowsaio mmap splice sg libzbc null net netsplice cpuio rdma falloc ftruncate "
    "e4defrag rados rbd http gfapi gfapi_async libhdfs mtd pmemblk dev-dax external "
    "filecreate filestat filedelete dircreate dirstat dirdelete libpmem ime_psync "
    "ime_psyncv ime_aio libiscsi nbd libcufile dfs nfs exec xnvme";

}  // namespace

bool OptionDef::EngineHasIt(const std::string& engine_name) const {
  return WordIn(engines, engine_name);
}


const OptionDef* FindOption(const std::string& name) {
  const auto& idx = Index();
  auto it = idx.find(name);
  return it == idx.end() ? nullptr : it->second;
}

std::string SuggestOption(const std::string& name) {
  if (name.size() > 64) return "";
  std::string best;
  size_t best_d = 3;  // suggest only close names
  for (const auto& [key, def] : Index()) {
    // The distance is at least the length difference: skip hopeless keys
    // (keeps "did you mean" cheap on long garbage names).
    const size_t diff = name.size() > key.size() ? name.size() - key.size() : key.size() - name.size();
    if (diff > best_d) continue;
    const size_t d = EditDistance(name, key);
    if (d < best_d || (d == best_d && !best.empty() && key < best)) {
      if (d < best_d || key < best) {
        best_d = d;
        best = key;
      }
    }
  }
  return best;
}

const char* KnownFioEngines() { return kFioEngines; }

bool IsKnownFioEngine(const std::string& name) {
  return WordIn(kFioEngines, name) || name.rfind("external:", 0) == 0;
}

std::optional<IoEngine> ModelledEngine(const std::string& name) {
  // The modelled engines' names and aliases: io_engine_info.cc.
  if (const IoEngineInfo* info = FindIoEngineInfoByName(name); info != nullptr) return info->id;
  return std::nullopt;
}

absl::Status ApplyOption(const OptionDef& def, const std::optional<std::string>& value_in,
                         JobSpec* spec, const ApplyContext& ctx) {
  if (!value_in.has_value() && !def.bare_allowed()) {
    return absl::InvalidArgumentError(absl::StrCat("Option ", def.name, " requires an argument"));
  }
  const std::string v = value_in.has_value() ? *value_in : "1";
  if (v.empty() && def.id != OptionId::kGeneric && def.kind != OptionKind::kFlagOrString &&
      !def.binding.empty_ok) {
    return option_bind::Failed(def, v, "empty value");
  }
  if (def.kind == OptionKind::kSize && ctx.warnings != nullptr && !v.empty() &&
      (v[0] == ' ' || v[0] == '\t')) {
    ctx.warnings->push_back(absl::StrCat(def.name, "=", v,
                                         ": white space after '=' disables the unit suffix"));
  }
  return option_bind::ApplyBinding(def, v, spec, ctx);
}

}  // namespace blklab::workload
