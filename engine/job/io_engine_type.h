// engine/job/io_engine_type.h
//
// IoEngineType is blklab's counterpart of fio's registered `struct
// ioengine_ops` (register_ioengine): for one engine, by its workload::IoEngine
// id, how its model is made and what the engine itself refuses of a job. The
// engine's fio name, aliases and flags are the row of the same id in
// engine/workload/io_engine_info.h (that layer parses `ioengine=` and may
// not include this one).
//
// Each engine defines its IoEngineType beside its model
// (engines/<name>_engine.cc), declares it below, and io_engine_type.cc lists
// it once in the registry. MakeIoEngine (io_engine.h) and the run plan
// (topology_plan.cc) look engines up here; nothing else names engines.
// Adding an engine: its IoEngine value and its row (names, flags) in
// workload/io_engine_info.cc, its file engines/<name>_engine.cc with its
// IoEngineType, the declaration below and one line in the registry.
//
// The run plan calls an engine's checks for each (job, disk target), in this
// order: check_target, then its own device-kind check (only an
// IoEngineFlag::kNvmePassthrough engine on an NVMe generic character device,
// and back), then check_job; the first error is the job's.
//
// Invariants: exactly one IoEngineType per modelled IoEngine (BLKLAB_CHECKed
// when the registry is first used); `make` is never null; the checks may be.
// Thread-safety: the registry is immutable constant data, indexed once in a
// function-local static (thread-safe initialisation); checks are pure.
// Cost: a lookup is an array index after a one-time O(engines) index build;
// MakeIoEngine once per job clone, the checks once per job target in the plan.
#ifndef BLKLAB_ENGINE_JOB_IO_ENGINE_TYPE_H_
#define BLKLAB_ENGINE_JOB_IO_ENGINE_TYPE_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"
#include "engine/job/io_engine.h"
#include "engine/workload/job_spec.h"

namespace blklab::job {

// What a job's engine is pointed at, for the engine's own checks: one disk
// target of the run plan (a file on a filesystem of the disk, or the disk).
struct EngineTarget {
  bool raw_device = false;                   // the disk itself (/dev/sdX, /dev/ngXnY), not a file on it
  const host::DeviceSpec* device = nullptr;  // the disk's entry in the host spec
  absl::string_view disk_name;               // "sdb", "nvme0n1"
};

struct IoEngineType {
  workload::IoEngine id;
  // The engine's model for one job clone (fio's ->init and the ops).
  std::unique_ptr<IoEngineModel> (*make)(IoContext& ctx) = nullptr;
  // What the engine requires of one target (and of the job there), before
  // the plan's device-kind check; null: nothing.
  absl::Status (*check_target)(const workload::JobSpec& spec, const EngineTarget& target) = nullptr;
  // What the engine refuses of the job's options, after the device-kind
  // check; null: nothing.
  absl::Status (*check_job)(const workload::JobSpec& spec) = nullptr;
};

// The registered type of `id`; null for an engine blklab does not model
// (workload::IoEngine::kUnmodelled).
const IoEngineType* FindIoEngineType(workload::IoEngine id);

// The job's engine's check_target / check_job (OK when it has none, or the
// engine is not modelled).
absl::Status CheckEngineTarget(const workload::JobSpec& spec, const EngineTarget& target);
absl::Status CheckEngineJob(const workload::JobSpec& spec);

// The engines, one line each (defined in engines/*_engine.cc).
extern const IoEngineType kPsyncIoEngineType;      // engines/sync_engine.cc
extern const IoEngineType kSyncIoEngineType;       // engines/sync_engine.cc
extern const IoEngineType kVsyncIoEngineType;      // engines/sync_engine.cc
extern const IoEngineType kPvsyncIoEngineType;     // engines/sync_engine.cc
extern const IoEngineType kPvsync2IoEngineType;    // engines/sync_engine.cc
extern const IoEngineType kIoUringIoEngineType;    // engines/io_uring_engine.cc
extern const IoEngineType kIoUringCmdIoEngineType; // engines/io_uring_engine.cc
extern const IoEngineType kLibaioIoEngineType;     // engines/libaio_engine.cc
extern const IoEngineType kPosixaioIoEngineType;   // engines/libaio_engine.cc
extern const IoEngineType kNullIoEngineType;       // engines/null_engine.cc
extern const IoEngineType kFallocIoEngineType;     // engines/file_operation_engine.cc
extern const IoEngineType kFtruncateIoEngineType;  // engines/file_operation_engine.cc
extern const IoEngineType kSgIoEngineType;         // engines/sg_engine.cc
extern const IoEngineType kSpliceIoEngineType;     // engines/splice_engine.cc
extern const IoEngineType kMmapIoEngineType;       // engines/mmap_engine.cc

}  // namespace blklab::job

#endif  // BLKLAB_ENGINE_JOB_IO_ENGINE_TYPE_H_
