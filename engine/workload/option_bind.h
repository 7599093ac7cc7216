// engine/workload/option_bind.h
//
// How an option table row's binding (option_table.h, OptionBinding) is
// applied to a JobSpec: the generic appliers for each binding kind (fio's
// parse.c handle_option for FIO_OPT_BOOL, FIO_OPT_INT, FIO_OPT_STR with a
// posval list, ...), the shared parse-and-report helpers, and the callbacks
// (fio's `o->cb`) of the options that need custom handling, one per option,
// grouped by file: option_bind_io.cc (files, pattern, block sizes),
// option_bind_random.cc (seed, distribution), option_bind_engine.cc
// (ioengine and engine-private options), option_bind_report.cc (reporting,
// placement, accepted but unmodelled options).
//
// Every error is InvalidArgument "failed parsing NAME=VALUE: WHY" (Failed),
// except the few texts fio itself prints (e.g. "ioengine=X is not modelled
// by blklab"); the texts and the order of the checks are pinned by tests.
//
// Invariants: an applier writes only the fields its option owns (a failing
//   per-direction list may have written the directions before the bad one,
//   as fio does); `value` is the text after '=' ("1" for a bare option).
// Thread-safety: stateless functions; safe from any thread on distinct specs.
// Cost: linear in the value's length (kChoice: times the posval count).
#ifndef BLKLAB_ENGINE_WORKLOAD_OPTION_BIND_H_
#define BLKLAB_ENGINE_WORKLOAD_OPTION_BIND_H_

#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/workload/job_spec.h"
#include "engine/workload/option_table.h"
#include "engine/workload/value_syntax.h"

namespace blklab::workload::option_bind {

// "failed parsing NAME=VALUE: WHY" (the value quoted for the message).
absl::Status Failed(const OptionDef& def, const std::string& value, const absl::Status& why);
absl::Status Failed(const OptionDef& def, const std::string& value, const std::string& why);

// Matches a word of the space-separated `choices` against `value` up to its
// first ':' or ','. Returns the word's index, or -1. `param` (if not null)
// receives the text after a ':' ("" if none).
int MatchChoice(const char* choices, const std::string& value, std::string* param);

// The same over the row's posval list: the matched entry, else
// "failed parsing NAME=VALUE: valid values: W1 W2 ...".
absl::StatusOr<const OptionPosval*> MatchPosval(const OptionDef& def, const std::string& value,
                                                std::string* param);

// Typed parses into one field, with the option's error text.
absl::Status ParseBoolInto(const OptionDef& def, const std::string& value, bool* out);
absl::Status ParseU64Into(const OptionDef& def, const std::string& value, uint32_t kb_base, uint64_t* out);
// As ParseU64Into, then "out of range [lo,hi]" outside [lo,hi].
absl::Status ParseU32Into(const OptionDef& def, const std::string& value, uint32_t kb_base, uint32_t* out,
                          uint64_t lo, uint64_t hi);

// Applies a per-direction list: `parse` is called for the fields that are set.
template <typename T, typename Fn>
absl::Status ApplyPerDir(const OptionDef& def, const std::string& value, PerDir<T>* out, Fn parse) {
  auto fields = SplitPerDirection(value);
  if (!fields.ok()) return Failed(def, value, fields.status());
  for (int d = 0; d < kNumDirections; ++d) {
    if (!(*fields)[d].has_value()) continue;
    auto v = parse(*(*fields)[d]);
    if (!v.ok()) return Failed(def, value, v.status());
    (*out)[d] = std::move(*v);
  }
  return absl::OkStatus();
}

// Validation by OptionKind for rows that set no typed field (kGeneric).
absl::Status ValidateGeneric(const OptionDef& def, const std::string& value, uint32_t kb_base);

// Applies `def.binding` to `spec`: the generic appliers, or the callback.
// A row with no binding is validated (kGeneric) or is an internal error.
absl::Status ApplyBinding(const OptionDef& def, const std::string& value, JobSpec* spec,
                          const ApplyContext& ctx);

// --- callbacks (OptionCallback), option_bind_io.cc ---
absl::Status ApplyFilename(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyRw(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyRwmixwrite(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyBs(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyBsrange(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyBssplit(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyFilesize(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyFileServiceType(const OptionDef& def, const std::string& value, JobSpec* spec,
                                  const ApplyContext& ctx);
absl::Status ApplyBuffered(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyStartdelay(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);

// --- option_bind_random.cc ---
absl::Status ApplyRandseed(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyRandomDistribution(const OptionDef& def, const std::string& value, JobSpec* spec,
                                     const ApplyContext& ctx);
absl::Status ApplyPercentageRandom(const OptionDef& def, const std::string& value, JobSpec* spec,
                                   const ApplyContext& ctx);

// --- option_bind_engine.cc ---
absl::Status ApplyIoengine(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyCmdprioPercentage(const OptionDef& def, const std::string& value, JobSpec* spec,
                                    const ApplyContext& ctx);
absl::Status ApplySqthreadPollCpu(const OptionDef& def, const std::string& value, JobSpec* spec,
                                  const ApplyContext& ctx);
absl::Status ApplyNonvectored(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyUncached(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);

// --- option_bind_report.cc ---
absl::Status ApplyGtodReduce(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyPercentileList(const OptionDef& def, const std::string& value, JobSpec* spec,
                                 const ApplyContext& ctx);
absl::Status ApplyCpusAllowed(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx);
absl::Status ApplyNumaCpuNodes(const OptionDef& def, const std::string& value, JobSpec* spec,
                               const ApplyContext& ctx);
// Options fio accepts whose effect on the run is not modelled (read_iolog,
// thp, steadystate_duration): validated as kGeneric, then recorded in
// spec->unmodelled_effects so that a run refuses them by name.
absl::Status ApplyUnmodelledEffect(const OptionDef& def, const std::string& value, JobSpec* spec,
                                   const ApplyContext& ctx);

}  // namespace blklab::workload::option_bind

#endif  // BLKLAB_ENGINE_WORKLOAD_OPTION_BIND_H_
