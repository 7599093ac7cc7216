// engine/workload/io_engine_info.cc: the modelled engines' names and flags
// (io_engine_info.h), one row per engine.
#include "engine/workload/io_engine_info.h"

#include <array>
#include <cstddef>
#include <span>
#include <string_view>

namespace blklab::workload {
namespace {

// One row per engine, in IoEngine order. An engine's model and its own checks
// are registered under the same id in engine/job/io_engine_type.cc.
constexpr std::array<IoEngineInfo, kNumModelledIoEngines> kIoEngineInfos = {{
    {IoEngine::kPsync, "psync", "", IoEngineFlag::kSync},
    {IoEngine::kSync, "sync", "", IoEngineFlag::kSync},
    {IoEngine::kVsync, "vsync", "", IoEngineFlag::kSync},
    {IoEngine::kPvsync, "pvsync", "", IoEngineFlag::kSync},
    {IoEngine::kPvsync2, "pvsync2", "", IoEngineFlag::kSync},
    {IoEngine::kIoUring, "io_uring", "", IoEngineFlag::kNone},
    {IoEngine::kIoUringCmd, "io_uring_cmd", "", IoEngineFlag::kNvmePassthrough | IoEngineFlag::kNoPageCache},
    {IoEngine::kLibaio, "libaio", "", IoEngineFlag::kNone},
    {IoEngine::kPosixaio, "posixaio", "", IoEngineFlag::kNone},
    {IoEngine::kNull, "null", "", IoEngineFlag::kDiskless | IoEngineFlag::kFakeIo | IoEngineFlag::kNoPageCache},
    {IoEngine::kFalloc, "falloc", "",
     IoEngineFlag::kSync | IoEngineFlag::kFileOperation | IoEngineFlag::kNoPageCache},
    {IoEngine::kFtruncate, "ftruncate", "",
     IoEngineFlag::kSync | IoEngineFlag::kFileOperation | IoEngineFlag::kNoPageCache},
    {IoEngine::kSg, "sg", "", IoEngineFlag::kSync | IoEngineFlag::kScsiPassthrough | IoEngineFlag::kNoPageCache},
    {IoEngine::kSplice, "splice", "", IoEngineFlag::kSync},
    {IoEngine::kMmap, "mmap", "", IoEngineFlag::kSync | IoEngineFlag::kAlwaysPageCache},
}};

constexpr bool IoEngineRowsInOrder() {
  for (size_t i = 0; i < kIoEngineInfos.size(); ++i) {
    if (static_cast<size_t>(kIoEngineInfos[i].id) != i) return false;
  }
  return true;
}
static_assert(IoEngineRowsInOrder(), "kIoEngineInfos: one row per IoEngine, in IoEngine order");

constexpr bool IoEngineNamesUnique() {
  for (size_t i = 0; i < kIoEngineInfos.size(); ++i) {
    for (size_t k = i + 1; k < kIoEngineInfos.size(); ++k) {
      if (std::string_view(kIoEngineInfos[i].name) == std::string_view(kIoEngineInfos[k].name)) return false;
    }
  }
  return true;
}
static_assert(IoEngineNamesUnique(), "kIoEngineInfos: an engine name appears twice");

// Whether `word` is one of the space-separated words of `list`.
bool IoEngineAliasIn(std::string_view list, std::string_view word) {
  while (!list.empty()) {
    const size_t space = list.find(' ');
    const std::string_view w = list.substr(0, space);
    if (!w.empty() && w == word) return true;
    if (space == std::string_view::npos) break;
    list.remove_prefix(space + 1);
  }
  return false;
}

}  // namespace

std::span<const IoEngineInfo> ModelledIoEngines() { return kIoEngineInfos; }

const IoEngineInfo* FindIoEngineInfo(IoEngine e) {
  const size_t i = static_cast<size_t>(e);
  return i < kIoEngineInfos.size() ? &kIoEngineInfos[i] : nullptr;
}

const IoEngineInfo* FindIoEngineInfoByName(std::string_view name) {
  for (const IoEngineInfo& info : kIoEngineInfos) {
    if (name == info.name || IoEngineAliasIn(info.aliases, name)) return &info;
  }
  return nullptr;
}

bool IoEngineHas(IoEngine e, IoEngineFlag flag) {
  const IoEngineInfo* info = FindIoEngineInfo(e);
  return info != nullptr && info->Has(flag);
}

bool IsSynchronous(IoEngine e) {
  const IoEngineInfo* info = FindIoEngineInfo(e);
  return info == nullptr || info->Has(IoEngineFlag::kSync);
}

}  // namespace blklab::workload
