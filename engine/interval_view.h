// engine/interval_view.h
//
// IntervalTracker builds the interval view of a running simulation
// (SnapshotInterval in engine.h, what WatchJob streams and the metrics
// exporter exports): figures of the virtual time since its previous call,
// as differences of running counters, so no clone's statistics are copied:
// IOs, bytes and rates per direction, completion-latency percentiles and
// coarse buckets of the IOs measured in the interval, CPU time by mode,
// contention, the top functions, requests in flight per disk, and lock
// counters by name.
//
// Thread-safety: reads one simulation; used by the thread that runs it.
// Cost per interval: one pass over the clat buckets that changed, each
// CPU's per-function table and the locks.
#ifndef BLKLAB_ENGINE_INTERVAL_VIEW_H_
#define BLKLAB_ENGINE_INTERVAL_VIEW_H_

#include <array>
#include <cstdint>
#include <vector>

#include "engine/run_types.h"
#include "engine/sim/spinlock.h"
#include "engine/stats/histogram.h"
#include "engine/topology.h"

namespace blklab {

// Running counters at the end of the previous status interval: each
// interval view is a difference against them, so no clone's statistics are
// copied. Cost per interval: one pass over the buckets of each clone's clat
// histograms that changed, the per-function table of each CPU and the locks.
class IntervalTracker {
 public:
  explicit IntervalTracker(const Simulation& s) {
    const size_t n = s.clones.size();
    ios_.resize(n);
    bytes_.resize(n);
    clat_.resize(n);
    clat_total_.resize(n);
    const int ncpus = s.machine->num_cpus();
    cpu_.assign(ncpus, {});
    slow_.assign(ncpus, 0);
    const sim::FunctionRegistry& fns = s.machine->functions();
    for (sim::FnId fn = 0; fn < fns.size(); ++fn) {
      if (fns.name(fn) == "native_queued_spin_lock_slowpath") slowpath_fn_ = fn;
    }
  }

  // Fills `out` with the interval from the previous call (or time 0) to `end`.
  void Fill(const Simulation& s, sim::SimTime end, SnapshotInterval& out);

 private:
  // The steps of Fill, each over what changed since the last call.
  void FillIos(const Simulation& s, int64_t len, SnapshotInterval& out);
  void FillCpu(const sim::Machine& m, int64_t len, SnapshotInterval& out);
  void FillFunctions(const sim::Machine& m, SnapshotInterval& out);
  void FillLocks(const sim::Machine& m, SnapshotInterval& out);

  sim::SimTime start_ = 0;
  std::vector<std::array<uint64_t, stats::kNumDirs>> ios_, bytes_, clat_total_;
  // Per clone and direction: bucket counts at the last interval (allocated
  // at the direction's first sample).
  std::vector<std::array<std::vector<uint64_t>, stats::kNumDirs>> clat_;
  std::vector<std::array<int64_t, 4>> cpu_;  // per CPU: usr, sys, irq, softirq ns
  std::vector<int64_t> slow_;                // per CPU: slowpath ns
  std::vector<sim::LockStats> locks_;        // by index in Machine::locks()
  std::vector<int64_t> fn_;                  // per function: self ns, all CPUs and modes
  int64_t slowpath_fn_ = -1;
  stats::LatencyHistogram scratch_[stats::kNumDirs];
};


}  // namespace blklab

#endif  // BLKLAB_ENGINE_INTERVAL_VIEW_H_
