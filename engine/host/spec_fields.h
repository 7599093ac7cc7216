// engine/host/spec_fields.h
//
// Internal to the host library (host_spec.cc, host_spec_validate.cc and the
// driver types under drivers/): the field tables the BLKLAB_*_FIELDS lists of
// host_spec.h expand to, and the helpers every section decoder and validator
// shares: field paths ("devices[1].null_blk.bs"), range messages and
// InvalidArgument errors that name a path. Nothing outside engine/host
// includes it; the error texts are part of the spec's pinned interface.
//
// Invariants: FieldsOf<S>() lists S's fields in declaration order (the order
//   of decoding, validation and JSON output); a kInt entry's `i`, a kInt64
//   entry's `l` and a kBool entry's `b` is set, the others null.
// Thread-safety: the tables are immutable function-local statics (thread-safe
//   initialisation); the helpers are pure functions.
// Cost: each helper is O(fields) or O(path length); none is on the
//   simulation hot path.
#ifndef BLKLAB_ENGINE_HOST_SPEC_FIELDS_H_
#define BLKLAB_ENGINE_HOST_SPEC_FIELDS_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"

namespace blklab::host::spec_internal {

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
  inline std::span<const FieldDesc<TYPE>> FieldsOf<TYPE>() {                                   \
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

inline std::string Join(const std::string& path, absl::string_view key) {
  return path.empty() ? std::string(key) : absl::StrCat(path, ".", key);
}

inline std::string RangeMessage(int64_t lo, int64_t hi, int64_t got) {
  if (hi - lo == 1) return absl::StrCat("must be ", lo, " or ", hi, ", got ", got);
  if (hi - lo == 2) return absl::StrCat("must be ", lo, ", ", lo + 1, " or ", hi, ", got ", got);
  return absl::StrCat("must be in [", lo, ", ", hi, "], got ", got);
}

inline absl::Status FieldError(const std::string& path, absl::string_view message) {
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
util::DocNode EncodeFields(const S& s, util::DocNode map = util::DocNode::Map()) {
  for (const FieldDesc<S>& f : FieldsOf<S>()) {
    switch (f.type) {
      case FieldType::kInt:
        map.AddEntry(f.name, {}, util::DocNode::Int(s.*(f.i)));
        break;
      case FieldType::kInt64:
        map.AddEntry(f.name, {}, util::DocNode::Int(s.*(f.l)));
        break;
      case FieldType::kBool:
        map.AddEntry(f.name, {}, util::DocNode::Bool(s.*(f.b)));
        break;
    }
  }
  return map;
}

inline bool IsPowerOfTwo(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

// Kconfig options that depend on BLK_CGROUP, and their document keys.
inline bool KernelConfig::*const kCgroupDependents[] = {&KernelConfig::BLK_DEV_THROTTLING,
                                                        &KernelConfig::BLK_CGROUP_IOCOST};
inline const char* const kCgroupDependentNames[] = {"BLK_DEV_THROTTLING", "BLK_CGROUP_IOCOST"};

}  // namespace blklab::host::spec_internal

#endif  // BLKLAB_ENGINE_HOST_SPEC_FIELDS_H_
