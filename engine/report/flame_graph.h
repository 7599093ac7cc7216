// engine/report/flame_graph.h
//
// Flame graphs of a run's simulated kernel profile (KernelReport::stacks):
// the folded text that flamegraph.pl, inferno and speedscope read, and a
// self-contained SVG drawn the way flamegraph.pl draws one (frames sorted
// by name at each level, width proportional to CPU time, a tooltip per
// frame with its time and share). The differential graph has the variant's
// widths and colours each frame by how its time changed against the
// baseline scaled to the same total (red grew, blue shrank; white
// unchanged), as difffolded.pl -n with flamegraph.pl does.
//
// Invariants: output depends only on the rows (no clock, no hash order).
// Thread-safety: pure functions.
// Cost: linear in the rows and their depth.
#ifndef BLKLAB_ENGINE_REPORT_FLAME_GRAPH_H_
#define BLKLAB_ENGINE_REPORT_FLAME_GRAPH_H_

#include <string>
#include <string_view>
#include <vector>

#include "engine/stats/kernel_report.h"

namespace blklab::report {

// `s` with &, <, > and " escaped for XML text and attributes (the SVG
// writers' one escaper).
std::string XmlEscape(std::string_view s);

// "stack ns\n" per row: the folded format.
std::string FoldedStacks(const std::vector<stats::StackRow>& stacks);

// An SVG flame graph of `stacks` titled `title`. Frames narrower than
// min_share of the whole are left out (their time stays in the parent).
std::string FlameGraphSvg(const std::vector<stats::StackRow>& stacks, const std::string& title,
                          double min_share = 0.0005);

// The differential flame graph of `variant` against `baseline`.
std::string DiffFlameGraphSvg(const std::vector<stats::StackRow>& baseline,
                              const std::vector<stats::StackRow>& variant, const std::string& title,
                              double min_share = 0.0005);

}  // namespace blklab::report

#endif  // BLKLAB_ENGINE_REPORT_FLAME_GRAPH_H_
