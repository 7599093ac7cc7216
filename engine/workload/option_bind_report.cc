// Option callbacks (option_bind.h) for reporting, CPU placement and the
// options fio accepts whose effect blklab does not model.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload::option_bind {

// str_gtod_reduce_cb: =1 turns off every latency and bandwidth measurement
// (a later disable_*=0 turns one back on); =0 leaves them.
absl::Status ApplyGtodReduce(const OptionDef& def, const std::string& value, JobSpec* spec,
                             const ApplyContext& ctx) {
  bool b = false;
  BLKLAB_RETURN_IF_ERROR(ParseBoolInto(def, value, &b));
  spec->gtod_reduce = b;
  if (b) {
    spec->disable_lat = spec->disable_clat = spec->disable_slat = spec->disable_bw = true;
    spec->clat_percentiles = spec->lat_percentiles = spec->slat_percentiles = false;
  }
  return absl::OkStatus();
}

absl::Status ApplyPercentileList(const OptionDef& def, const std::string& value, JobSpec* spec,
                                 const ApplyContext& ctx) {
  auto r = ParsePercentileList(value, 20);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->percentile_list = std::move(*r);
  return absl::OkStatus();
}

absl::Status ApplyCpusAllowed(const OptionDef& def, const std::string& value, JobSpec* spec,
                              const ApplyContext& ctx) {
  auto r = ParseCpuList(value);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->cpus_allowed = std::move(*r);
  return absl::OkStatus();
}

absl::Status ApplyNumaCpuNodes(const OptionDef& def, const std::string& value, JobSpec* spec,
                               const ApplyContext& ctx) {
  auto r = ParseCpuList(value);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->numa_cpu_nodes = std::move(*r);
  return absl::OkStatus();
}

absl::Status ApplyUnmodelledEffect(const OptionDef& def, const std::string& value, JobSpec* spec,
                                   const ApplyContext& ctx) {
  BLKLAB_RETURN_IF_ERROR(ValidateGeneric(def, value, spec->kb_base));
  // Kept so that a run refuses them by name (a parse still succeeds).
  static const std::pair<const char*, const char*> kEffects[] = {
      {"read_iolog", "replaying an I/O log (fio's iolog replay) is not modelled"},
      {"thp", "the mmap engine's transparent huge pages (MADV_HUGEPAGE on a private mapping) are not modelled"},
      {"steadystate_duration",
       "fio's steady-state detection (ss=, ss_dur=), which ends the job once the criterion holds, is not "
       "modelled"},
  };
  std::string name(def.name);
  for (const auto& [opt, why] : kEffects) {
    if (name != opt) continue;
    const bool off = value.empty() || (name == "steadystate_duration" && (value == "0" || value == "0s")) ||
                     (name == "thp" && value == "0");
    std::erase_if(spec->unmodelled_effects,
                  [&](const std::string& e) { return absl::StartsWith(e, name + "="); });
    if (!off) spec->unmodelled_effects.push_back(absl::StrCat(name, "=", value, ": ", why));
  }
  return absl::OkStatus();
}

}  // namespace blklab::workload::option_bind
