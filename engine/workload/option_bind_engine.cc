// Option callbacks (option_bind.h) for the I/O engine: ioengine= itself
// (the name-to-engine mapping is ModelledEngine, option_table.h) and the
// engine-private options that need more than a field binding.
#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload::option_bind {

absl::Status ApplyIoengine(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  spec->ioengine_name = value;
  if (auto e = ModelledEngine(value); e.has_value()) {
    spec->ioengine = *e;
    return absl::OkStatus();
  }
  if (!ctx.accept_unmodelled_engines) {
    return absl::InvalidArgumentError(absl::StrCat("ioengine=", value, " is not modelled by blklab"));
  }
  spec->ioengine = IoEngine::kUnmodelled;
  return absl::OkStatus();
}

// cmdprio_percentage=R[,W]: only the read field is kept.
absl::Status ApplyCmdprioPercentage(const OptionDef& def, const std::string& value, JobSpec* spec,
                                    const ApplyContext& ctx) {
  auto f = SplitPerDirection(value);
  if (!f.ok()) return Failed(def, value, f.status());
  if ((*f)[0].has_value()) {
    auto p = ParseUint(*(*f)[0]);
    if (!p.ok() || *p > 100) return Failed(def, value, "expected 0..100");
    spec->engine_flags.cmdprio_percentage = static_cast<uint32_t>(*p);
  }
  return absl::OkStatus();
}

absl::Status ApplySqthreadPollCpu(const OptionDef& def, const std::string& value, JobSpec* spec,
                                  const ApplyContext& ctx) {
  auto r = ParseInt(value);
  if (!r.ok() || *r < -1 || *r > kMaxCpuId) return Failed(def, value, "bad CPU number");
  spec->engine_flags.sqthread_poll_cpu = static_cast<int32_t>(*r);
  return absl::OkStatus();
}

absl::Status ApplyNonvectored(const OptionDef& def, const std::string& value, JobSpec* spec,
                              const ApplyContext& ctx) {
  auto r = ParseInt(value);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->engine_flags.nonvectored = *r > 0;
  return absl::OkStatus();
}

absl::Status ApplyUncached(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  uint32_t u = 0;
  BLKLAB_RETURN_IF_ERROR(ParseU32Into(def, value, spec->kb_base, &u, 0, UINT32_MAX));
  spec->engine_flags.uncached = u != 0;
  return absl::OkStatus();
}

}  // namespace blklab::workload::option_bind
