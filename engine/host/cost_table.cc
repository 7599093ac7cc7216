#include "engine/host/cost_table.h"

#include <algorithm>
#include <array>
#include <cstdlib>
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

constexpr CostGroupInfo kGroups[] = {
#define BLKLAB_COST_GROUP(name, permille, step, rows) CostGroupInfo{#name, permille, step, rows},
#include "engine/host/cost_calibration.inc"
#undef BLKLAB_COST_GROUP
};

CostTable BuildCalibrated() {
  CostTable table;
  for (const CostGroupInfo& g : kGroups) {
    for (std::string_view rows = g.rows; !rows.empty();) {
      const size_t end = rows.find(' ');
      const std::string_view row = rows.substr(0, end);
      rows = end == std::string_view::npos ? std::string_view() : rows.substr(end + 1);
      if (row.empty()) continue;
      const CostEntryInfo* entry = nullptr;
      for (const CostEntryInfo& e : kEntries) {
        if (e.name == row) entry = &e;
      }
      // cost_table_test checks every name; a stale name here is a build error
      // in spirit, so refuse to run with it.
      if (entry == nullptr) std::abort();
      table.*(entry->field) = (entry->default_ns * g.multiplier_permille + 500) / 1000;
    }
  }
  return table;
}

}  // namespace

std::span<const CostEntryInfo> CostEntries() { return kEntries; }

std::span<const CostGroupInfo> CostGroups() { return kGroups; }

const CostTable& CalibratedCostTable() {
  static const CostTable table = BuildCalibrated();
  return table;
}

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

bool CostScalesWithCoreSpeed(std::string_view name) {
  static constexpr std::string_view kMachineRows[] = {
      "line_transfer_smt", "line_transfer_llc", "line_transfer_die",     "line_transfer_socket",
      "ipi_delivery_latency", "smt_busy_permille", "smt_spin_permille", "lock_handoff_permille",
  };
  for (std::string_view row : kMachineRows) {
    if (row == name) return false;
  }
  return true;
}

void ScaleForCoreSpeed(CostTable& table, int64_t speed_permille) {
  if (speed_permille == 1000 || speed_permille <= 0) return;
  for (const CostEntryInfo& e : kEntries) {
    if (!CostScalesWithCoreSpeed(e.name)) continue;
    int64_t& v = table.*(e.field);
    if (v == 0) continue;
    v = std::max<int64_t>(1, (v * 1000 + speed_permille / 2) / speed_permille);
  }
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
