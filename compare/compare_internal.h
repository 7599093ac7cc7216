// compare/compare_internal.h
//
// What the files of the comparison core (compare_spec.cc, compare_cells.cc,
// compare_render_text.cc, compare_render_data.cc) share beyond the public
// API of compare/compare.h: t/io_uring's command line as a comparison takes
// it (checked when the comparison is parsed, used when a cell is prepared),
// and the CSV and JSON writers Render dispatches to. Not part of the public
// API.
//
// Invariants: the writers render a summarised Results (one result per cell,
//   rows and changes from Summarize) and print the bytes the public Render
//   promises; ParseIoUringToolArgs accepts exactly what a comparison's
//   io_uring arguments may be (-r2 or more, a device, no usage request).
// Thread-safety: stateless functions; safe to call from any thread.
// Cost: ParseIoUringToolArgs is linear in the arguments; the writers are
//   linear in the cells, rows and changes.
#ifndef BLKLAB_COMPARE_COMPARE_INTERNAL_H_
#define BLKLAB_COMPARE_COMPARE_INTERNAL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "compare/compare.h"
#include "engine/workload/t_io_uring.h"

namespace blklab::compare::internal {

// t/io_uring's command line of an io_uring comparison: `--cpus=LIST` (the
// submitters' CPUs, as `blklab io_uring` takes it), then the tool's own.
struct IoUringToolArgs {
  workload::TioUringSpec spec;
  std::vector<uint32_t> cpus;
};
absl::StatusOr<IoUringToolArgs> ParseIoUringToolArgs(const std::vector<std::string>& args);

// Render's CSV (one line per cell) and JSON (the comparison, its cells,
// rows and changes) forms.
std::string WriteCsv(const Comparison& c, const Results& res);
std::string WriteJsonOut(const Comparison& c, const Results& res);

}  // namespace blklab::compare::internal

#endif  // BLKLAB_COMPARE_COMPARE_INTERNAL_H_
