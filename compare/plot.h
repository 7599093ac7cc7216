// compare/plot.h
//
// The pictures of a comparison (`blklab compare --plot=DIR`, and
// ComparisonService's "charts" output): self-contained SVG charts of a
// comparison's rows (one per point x variant) and one HTML report that
// holds the table and the charts.
//
//   iops.svg        IOPS per row (bars; the samples' min-max as a whisker)
//   contention.svg  the spinlock slowpath's share of busy CPU time per row
//   cpu.svg         fio's usr% and sys% per row (stacked bars)
//   latency.svg     completion-latency percentiles per row (p50 ... p99.99,
//                   on a "nines" axis), one curve per row
//   latency-histogram.svg
//                   the completion-latency distribution per row: the share
//                   of its IOs per bin (four per power of two) on a log
//                   latency axis, one step outline per row
//   iops-vs-AXIS.svg, p99-vs-AXIS.svg
//                   for a matrix whose first numeric axis (iodepth,
//                   numjobs, bs with k/m suffixes...) is AXIS: IOPS and p99
//                   clat against it (log scale when it spans 8x or more),
//                   one line per variant and value of the other axes - the
//                   queue-depth sweep of fio-plot and bench-fio
//   grid.svg        for a matrix of exactly two numeric axes (iodepth x
//                   numjobs): an IOPS heat map per variant
//   log-KIND.svg    for jobs writing fio's averaged logs (write_bw_log,
//                   write_iops_log, write_lat_log with log_avg_msec): each
//                   row's series over the job's time, KIND bw, iops, lat,
//                   slat or clat - fio-plot's time-series view
//   report.html     the text table and every chart, no external files
//                   (it links the flame graphs, which are large)
//   flame-ROW.svg, ROW.folded
//                   per row with stacks: a flame graph of its simulated
//                   kernel profile and the folded stacks
//   flame-diff-ROW.svg
//                   per row of a variant: its flame graph coloured by the
//                   change against the baseline's row of the same point
//
// Invariants: the output depends only on the input (no clock, no locale);
//  every label is XML-escaped; a stalled row has no bar and says so.
// Thread-safety: thread-compatible (pure functions).
// Cost: O(rows x percentiles) text.
#ifndef BLKLAB_COMPARE_PLOT_H_
#define BLKLAB_COMPARE_PLOT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "compare/compare.h"
#include "engine/stats/kernel_report.h"

namespace blklab::compare {

struct PlotRow {
  std::string label;  // "variant, axis=value ..."
  std::string variant;
  std::vector<std::pair<std::string, std::string>> axes;  // (axis name, value), the matrix's order
  double iops = 0, iops_min = 0, iops_max = 0;
  double contention_pct = 0;
  double usr_pct = 0, sys_pct = 0;  // fio's per-job usr / sys
  // (percentile, clat in ns) of the row's first sample, ascending.
  std::vector<std::pair<double, uint64_t>> clat_percentiles;
  // The first sample's clat distribution (CellResult::clat_histogram).
  std::vector<CellResult::HistogramBin> clat_histogram;
  // The first sample's averaged fio logs (CellResult::log_series).
  std::vector<CellResult::LogSeries> log_series;
  bool stalled = false;
  // CPU time by call stack of the row's first sample (flame graphs).
  std::vector<stats::StackRow> stacks;
  bool is_baseline = false;
  int baseline_row = -1;  // the row of the same point in the baseline variant
};

struct PlotInput {
  std::string title;       // e.g. "blklab compare: host rc4-desktop-7950x, 6 cells"
  std::string table_text;  // the comparison's text table (shown in the report)
  std::vector<PlotRow> rows;
};

// The charts as SVG documents.
std::string IopsSvg(const PlotInput& in);
std::string ContentionSvg(const PlotInput& in);
std::string CpuSvg(const PlotInput& in);
std::string LatencySvg(const PlotInput& in);
std::string LatencyHistogramSvg(const PlotInput& in);
// The sweep charts, (file name, SVG); none without a numeric axis.
std::vector<std::pair<std::string, std::string>> SweepSvgs(const PlotInput& in);
// For a matrix of exactly two numeric axes (iodepth x numjobs): IOPS as a
// heat map, one panel per variant; empty otherwise.
std::string GridSvg(const PlotInput& in);
// fio's averaged logs over time, (file name, SVG) per log type present.
std::vector<std::pair<std::string, std::string>> LogSvgs(const PlotInput& in);
// The HTML report embedding the table and every chart.
std::string ReportHtml(const PlotInput& in);
// The file-name stem of a row ("before, iodepth=4" -> "before-iodepth-4").
std::string RowSlug(const PlotRow& row);

// What to draw of a summarised comparison: one row per (point, variant),
// its figures from the row and from its first sample.
PlotInput PlotInputFor(const Comparison& c, const Results& res);

// Every file of the pictures, (file name, content), in a fixed order: the
// five charts, report.html, the sweeps, the grid, the logs, then per row with stacks
// its flame graph, folded stacks and differential flame graph.
std::vector<std::pair<std::string, std::string>> PlotFiles(const PlotInput& in);

}  // namespace blklab::compare

#endif  // BLKLAB_COMPARE_PLOT_H_
