// engine/report/report_internal.h
//
// Helpers shared by the normal, terse and JSON writers (not a public API).
#ifndef BLKLAB_ENGINE_REPORT_REPORT_INTERNAL_H_
#define BLKLAB_ENGINE_REPORT_REPORT_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "engine/report/report.h"

namespace blklab::report::internal {

// A direction block as it is reported: "read", "write", "trim" or "mixed".
struct DirBlock {
  std::string label;       // "read", "write", "trim", "mixed"
  int dir_index = 0;       // 0..2, or -1 for mixed
  stats::DirResult result;
  uint64_t group_agg_bw = 0;  // B/s of this direction in the entry's group
};

// Blocks in report order for `entry`, following its unified_rw_reporting:
// kNone: read, write, trim; kMixed: mixed; kBoth: read, write, trim, mixed.
std::vector<DirBlock> DirBlocks(const ReportInput& input, const ReportEntry& entry);

// The requested percentiles, ascending, at most 20.
std::vector<double> SortedPercentiles(const JobDisplay& display);
// Decimals needed to print every percentile of `list` (fio's precision).
int PercentilePrecision(const std::vector<double>& list);

// Share of the group's aggregate bandwidth: mean (KiB/s) * 100 /
// (agg B/s / 1024), capped at 100; `if_no_agg` when agg is 0.
double BwShare(double mean_kib, uint64_t agg_bw, double if_no_agg);

uint64_t IopsInt(const stats::DirResult& d);  // 1000 * ios / runtime, integer

}  // namespace blklab::report::internal

#endif  // BLKLAB_ENGINE_REPORT_REPORT_INTERNAL_H_
