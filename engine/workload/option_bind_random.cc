// Option callbacks (option_bind.h) for randomness: the seed, the offset
// distribution and the random share per direction.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload::option_bind {
namespace {

// random_distribution=KIND[:PARAM[:CENTER]] or zoned[_abs]:P/R:P/R,...
absl::StatusOr<RandomDistribution> ParseDistribution(const std::string& value, uint32_t kb_base) {
  RandomDistribution rd;
  const size_t colon = value.find(':');
  const std::string head = value.substr(0, std::min(colon, value.find(',')));
  const std::string rest = colon == std::string::npos ? "" : value.substr(colon + 1);
  if (head == "random") return rd;
  if (head == "zipf" || head == "pareto" || head == "normal") {
    rd.kind = head == "zipf" ? DistributionKind::kZipf
              : head == "pareto" ? DistributionKind::kPareto
                                 : DistributionKind::kNormal;
    if (rest.empty()) return absl::InvalidArgumentError("missing distribution parameter");
    std::vector<std::string> parts = absl::StrSplit(rest, ':');
    if (parts.size() > 2) return absl::InvalidArgumentError("too many parameters");
    BLKLAB_ASSIGN_OR_RETURN(rd.param, ParseDouble(parts[0]));
    if (parts.size() == 2) {
      BLKLAB_ASSIGN_OR_RETURN(rd.center, ParseDouble(parts[1]));
      if (rd.center < 0 || rd.center > 1) return absl::InvalidArgumentError("center outside [0,1]");
    }
    if (rd.kind == DistributionKind::kZipf && (rd.param <= 0 || rd.param == 1.0)) {
      return absl::InvalidArgumentError("zipf theta must be > 0 and != 1");
    }
    if (rd.kind == DistributionKind::kPareto && (rd.param <= 0 || rd.param >= 1)) {
      return absl::InvalidArgumentError("pareto h must be in (0,1)");
    }
    if (rd.kind == DistributionKind::kNormal && (rd.param <= 0 || rd.param > 100)) {
      return absl::InvalidArgumentError("normal sigma must be in (0,100]");
    }
    return rd;
  }
  if (head == "zoned" || head == "zoned_abs") {
    rd.kind = head == "zoned" ? DistributionKind::kZoned : DistributionKind::kZonedAbs;
    auto fields = SplitPerDirection(rest);
    if (!fields.ok()) return fields.status();
    for (int d = 0; d < kNumDirections; ++d) {
      if (!(*fields)[d].has_value()) continue;
      std::vector<DistributionZone> zones;
      uint32_t access_total = 0;
      double range_total = 0;
      for (absl::string_view z : absl::StrSplit(*(*fields)[d], ':', absl::SkipEmpty())) {
        if (zones.size() >= 256) return absl::InvalidArgumentError("more than 256 zones");
        std::vector<std::string> pr = absl::StrSplit(z, '/');
        if (pr.size() != 2) return absl::InvalidArgumentError("zone must be P/R");
        // An empty range takes what is left of the region (zoned only).
        if (pr[1].empty() && rd.kind == DistributionKind::kZoned) {
          pr[1] = std::to_string(std::max(100.0 - range_total, 0.0));
        }
        DistributionZone zone;
        BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(pr[0]));
        if (p > 100) return absl::InvalidArgumentError("zone access above 100%");
        zone.access_percent = static_cast<uint32_t>(p);
        if (rd.kind == DistributionKind::kZoned) {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_percent, ParseDouble(pr[1]));
          if (zone.range_percent <= 0 || zone.range_percent > 100) {
            return absl::InvalidArgumentError("zone range outside (0,100]");
          }
          range_total += zone.range_percent;
        } else {
          BLKLAB_ASSIGN_OR_RETURN(zone.range_bytes, ParseSize(pr[1], kb_base));
          if (zone.range_bytes == 0) return absl::InvalidArgumentError("empty zone");
        }
        access_total += zone.access_percent;
        zones.push_back(zone);
      }
      if (access_total != 100) return absl::InvalidArgumentError("zone access must add up to 100%");
      if (range_total > 100.0 + 1e-9) return absl::InvalidArgumentError("zone ranges above 100%");
      rd.zones[d] = std::move(zones);
    }
    return rd;
  }
  return absl::InvalidArgumentError("valid values: random zipf pareto normal zoned zoned_abs");
}

}  // namespace

absl::Status ApplyRandseed(const OptionDef& def, const std::string& value, JobSpec* spec, const ApplyContext& ctx) {
  BLKLAB_RETURN_IF_ERROR(ParseU64Into(def, value, spec->kb_base, &spec->randseed));
  spec->randseed_set = true;
  return absl::OkStatus();
}

absl::Status ApplyRandomDistribution(const OptionDef& def, const std::string& value, JobSpec* spec,
                                     const ApplyContext& ctx) {
  auto r = ParseDistribution(value, spec->kb_base);
  if (!r.ok()) return Failed(def, value, r.status());
  spec->random_distribution = std::move(*r);
  return absl::OkStatus();
}

absl::Status ApplyPercentageRandom(const OptionDef& def, const std::string& value, JobSpec* spec,
                                   const ApplyContext& ctx) {
  return ApplyPerDir(def, value, &spec->percentage_random, [](const std::string& s) -> absl::StatusOr<uint32_t> {
    BLKLAB_ASSIGN_OR_RETURN(uint64_t p, ParseUint(s));
    if (p > 100) return absl::InvalidArgumentError("above 100");
    return static_cast<uint32_t>(p);
  });
}

}  // namespace blklab::workload::option_bind
