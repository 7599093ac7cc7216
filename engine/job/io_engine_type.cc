// engine/job/io_engine_type.cc: the registry of engine types
// (io_engine_type.h), one line per engine.
#include "engine/job/io_engine_type.h"

#include <array>
#include <cstddef>

#include "engine/util/check.h"

namespace blklab::job {
namespace {

// Every engine blklab models, one line each (any order).
const IoEngineType* const kIoEngineRegistry[] = {
    &kPsyncIoEngineType,
    &kSyncIoEngineType,
    &kVsyncIoEngineType,
    &kPvsyncIoEngineType,
    &kPvsync2IoEngineType,
    &kIoUringIoEngineType,
    &kIoUringCmdIoEngineType,
    &kLibaioIoEngineType,
    &kPosixaioIoEngineType,
    &kNullIoEngineType,
    &kFallocIoEngineType,
    &kFtruncateIoEngineType,
    &kSgIoEngineType,
    &kSpliceIoEngineType,
    &kMmapIoEngineType,
};

using IoEngineTypeIndex = std::array<const IoEngineType*, workload::kNumModelledIoEngines>;

// The registry by id; checks that every modelled engine (every row of
// workload::ModelledIoEngines) has exactly one type with a factory.
const IoEngineTypeIndex& IoEngineTypesById() {
  static const IoEngineTypeIndex index = [] {
    IoEngineTypeIndex by_id{};
    for (const IoEngineType* type : kIoEngineRegistry) {
      const size_t i = static_cast<size_t>(type->id);
      BLKLAB_CHECK(i < by_id.size());            // a modelled engine (io_engine_info.h)
      BLKLAB_CHECK(by_id[i] == nullptr);         // registered once
      BLKLAB_CHECK(type->make != nullptr);
      by_id[i] = type;
    }
    for (const IoEngineType* type : by_id) BLKLAB_CHECK(type != nullptr);  // every engine registered
    return by_id;
  }();
  return index;
}

}  // namespace

const IoEngineType* FindIoEngineType(workload::IoEngine id) {
  const IoEngineTypeIndex& index = IoEngineTypesById();
  const size_t i = static_cast<size_t>(id);
  return i < index.size() ? index[i] : nullptr;
}

absl::Status CheckEngineTarget(const workload::JobSpec& spec, const EngineTarget& target) {
  const IoEngineType* type = FindIoEngineType(spec.ioengine);
  if (type == nullptr || type->check_target == nullptr) return absl::OkStatus();
  return type->check_target(spec, target);
}

absl::Status CheckEngineJob(const workload::JobSpec& spec) {
  const IoEngineType* type = FindIoEngineType(spec.ioengine);
  if (type == nullptr || type->check_job == nullptr) return absl::OkStatus();
  return type->check_job(spec);
}

}  // namespace blklab::job
