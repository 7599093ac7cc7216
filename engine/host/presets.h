// engine/host/presets.h
//
// Named built-in hosts. Each preset is YAML text compiled into the binary and
// read through the same parser as a user's file, so presets double as
// examples; examples/hosts/<name>.yaml holds the same text (a test checks
// that each file parses to its preset).
//
//   default              4 CPUs, one null_blk at module defaults, scheduler
//                        none: the embedded host of `blklab fio` when no host
//                        is given
//   null-1cpu            1 CPU, null_blk irqmode=0, one hw queue, no
//                        scheduler: the engine's speed benchmark
//   nvme-8cpu            8 CPUs, one NVMe drive with a queue per CPU
//   rc1-mpi3mr-64vd      RC1 (timeout busy-iter over host-shared tags, 64 LUNs)
//   rc2-io_uring-core    docs/reference-cases.md RC2 (BLK_CGROUP cost)
//   rc3-megaraid-1vd     RC3 (128 exposed hw queues run on every completion)
//   rc4-desktop-7950x    RC4 (mq-deadline dd->lock, 32 submitters)
//   rc5-scsi_debug-luns  RC5 (RESTART walk over shared-tag LUNs, 4.14 era)
//
// Thread-safety: stateless; safe to call concurrently.
// Cost: GetPreset parses a few hundred bytes of YAML.
#ifndef BLKLAB_ENGINE_HOST_PRESETS_H_
#define BLKLAB_ENGINE_HOST_PRESETS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"

namespace blklab::host {

// The preset `blklab fio` uses when no host is given.
inline constexpr absl::string_view kDefaultPresetName = "default";

struct PresetInfo {
  std::string name;
  std::string description;  // one line
};

// All presets, in a fixed order.
std::vector<PresetInfo> ListPresets();

// The preset's YAML text; NotFound (listing the names) when unknown.
absl::StatusOr<absl::string_view> PresetYaml(absl::string_view name);

// The parsed, validated preset; NotFound when unknown.
absl::StatusOr<HostSpec> GetPreset(absl::string_view name);

}  // namespace blklab::host

#endif  // BLKLAB_ENGINE_HOST_PRESETS_H_
