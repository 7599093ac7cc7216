#include "engine/host/cost_table.h"

#include <array>
#include <string>

#include "absl/strings/str_cat.h"

namespace blklab::host {
namespace {

constexpr CostEntryInfo kEntries[] = {
#define BLKLAB_COST_INFO(name, def, src, desc) \
  CostEntryInfo{#name, &CostTable::name, def, CostSource::src, desc},
    BLKLAB_COST_TABLE(BLKLAB_COST_INFO)
#undef BLKLAB_COST_INFO
};

}  // namespace

std::span<const CostEntryInfo> CostEntries() { return kEntries; }

absl::Status SetCost(CostTable& table, std::string_view name, int64_t value_ns) {
  for (const CostEntryInfo& e : kEntries) {
    if (e.name == name) {
      if (value_ns < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("costs.", std::string(name), ": must be >= 0 ns, got ", value_ns));
      }
      table.*(e.field) = value_ns;
      return absl::OkStatus();
    }
  }
  return absl::InvalidArgumentError(absl::StrCat("costs.", std::string(name), ": unknown cost table entry"));
}

std::string_view CostSourceTag(CostSource source) {
  switch (source) {
    case CostSource::kSrc:
      return "src";
    case CostSource::kDerived:
      return "derived";
    case CostSource::kGuess:
      return "guess";
  }
  return "guess";
}

}  // namespace blklab::host
