// engine/kernel_report_builder.h
//
// Builds a run's results from its simulation: each clone's fio statistics
// (CollectResults) and blklab's kernel report (BuildKernelReport): CPU time
// by mode per CPU, sys%, the perf-top profile (self time per function and
// mode), contention (share of busy time in native_queued_spin_lock_slowpath),
// lockstat rows per lock name, event counters and per-device disk
// statistics (fio's "Disk stats"). final=false builds them from a running
// simulation without changing it (interim --status-interval reports).
//
// Thread-safety: reads (and, when final, closes) one simulation.
// Cost: O(functions x CPUs + locks + disks) per report.
#ifndef BLKLAB_ENGINE_KERNEL_REPORT_BUILDER_H_
#define BLKLAB_ENGINE_KERNEL_REPORT_BUILDER_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "engine/run_types.h"
#include "engine/topology.h"

namespace blklab {

// Fills result.clones (and virtual_ns, events) at virtual time `end`: the
// final results, or (final=false) each clone's running figures.
void CollectResults(const RunRequest& req, const Simulation& s, sim::SimTime end, bool final,
                    RunResult& result);

// Fills result.kernel at `end`. When final, closes every CPU's idle time
// and every disk's busy time (DrainInFlight, topology.h, then checks that no
// request was lost).
absl::Status BuildKernelReport(const RunRequest& req, Simulation& s, sim::SimTime end, bool final,
                               RunResult& result);
// The same for any workload: `total_ios` completed IOs, on host `host_name`.
absl::Status BuildKernelReportFor(const std::string& host_name, Simulation& s, sim::SimTime end, bool final,
                                  uint64_t total_ios, stats::KernelReport& k);

}  // namespace blklab

#endif  // BLKLAB_ENGINE_KERNEL_REPORT_BUILDER_H_
