// Option callbacks (option_bind.h) for files, the I/O pattern and block
// sizes: the options whose value does not land in one field as parsed.
#include <cstdint>
#include <string>

#include "absl/strings/numbers.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload::option_bind {

absl::Status ApplyFilename(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  spec->filenames = SplitColonList(value);
  return absl::OkStatus();
}

// rw=PATTERN[:N]: N is the modifier (random: a new offset every N I/Os;
// sequential: a gap of N bytes, negative to go back).
absl::Status ApplyRw(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  std::string param;
  BLKLAB_ASSIGN_OR_RETURN(const OptionPosval* pv, MatchPosval(def, value, &param));
  spec->rw = static_cast<RwPattern>(pv->oval);
  spec->rw_modifier = 0;
  if (!param.empty()) {
    const bool negative = param[0] == '-';
    auto m = ParseSize(negative ? param.substr(1) : param, spec->kb_base);
    if (!m.ok()) return Failed(def, value, m.status());
    if (*m > static_cast<uint64_t>(INT64_MAX)) return Failed(def, value, "modifier too large");
    spec->rw_modifier = negative ? -static_cast<int64_t>(*m) : static_cast<int64_t>(*m);
  }
  return absl::OkStatus();
}

absl::Status ApplyRwmixwrite(const OptionDef& def, const std::string& value, JobSpec* spec,
                             const ApplyContext& ctx) {
  uint32_t w = 0;
  BLKLAB_RETURN_IF_ERROR(ParseU32Into(def, value, spec->kb_base, &w, 0, 100));
  spec->rwmixread = 100 - w;
  return absl::OkStatus();
}

absl::Status ApplyBs(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  const uint32_t kb = spec->kb_base;
  return ApplyPerDir(def, value, &spec->bs, [kb](const std::string& s) -> absl::StatusOr<uint64_t> {
    BLKLAB_ASSIGN_OR_RETURN(uint64_t b, ParseSize(s, kb));
    if (b == 0) return absl::InvalidArgumentError("block size must be >= 1");
    return b;
  });
}

absl::Status ApplyBsrange(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  const uint32_t kb = spec->kb_base;
  return ApplyPerDir(def, value, &spec->bs_range, [kb](const std::string& s) -> absl::StatusOr<SizeRange> {
    BLKLAB_ASSIGN_OR_RETURN(SizeRange r, ParseSizeRange(s, kb));
    if (r.lo == 0) return absl::InvalidArgumentError("block size must be >= 1");
    return r;
  });
}

absl::Status ApplyBssplit(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  const uint32_t kb = spec->kb_base;
  return ApplyPerDir(def, value, &spec->bssplit, [kb](const std::string& s) { return ParseBsSplitList(s, kb); });
}

absl::Status ApplyFilesize(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  auto r = ParseSizeRange(value, spec->kb_base);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->filesize = *r;
  return absl::OkStatus();
}

absl::Status ApplyFileServiceType(const OptionDef& def, const std::string& value, JobSpec* spec,
                                  const ApplyContext& ctx) {
  std::string param;
  BLKLAB_ASSIGN_OR_RETURN(const OptionPosval* pv, MatchPosval(def, value, &param));
  const auto type = static_cast<FileServiceType>(pv->oval);
  spec->file_service_type = type;
  spec->file_service_nr = 1;
  // roundrobin:N, random:N, sequential:N: N I/Os before the next file
  // (fio's str_fst_cb); the skewed kinds take their parameter there.
  if (!param.empty() && type <= FileServiceType::kSequential) {
    uint64_t n = 0;
    if (!absl::SimpleAtoi(param, &n) || n == 0 || n > (1u << 30)) {
      return Failed(def, value,
                    "the number after ':' is how many I/Os go to a file before the next one (1 or more)");
    }
    spec->file_service_nr = static_cast<uint32_t>(n);
  }
  return absl::OkStatus();
}

// buffered=B is direct=!B.
absl::Status ApplyBuffered(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  bool b = false;
  BLKLAB_RETURN_IF_ERROR(ParseBoolInto(def, value, &b));
  spec->direct = !b;
  return absl::OkStatus();
}

// startdelay=T or T1-T2 (a random delay per job in the range).
absl::Status ApplyStartdelay(const OptionDef& def, const std::string& value, JobSpec* spec,
                             const ApplyContext& ctx) {
  auto r = ParseTimeRangeNs(value, TimeUnit::kSeconds);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->startdelay_min_ns = r->lo;
  spec->startdelay_max_ns = r->hi;
  return absl::OkStatus();
}

}  // namespace blklab::workload::option_bind
