// server/comparison_fleet_internal.h
//
// What ComparisonManager's two files share (not a public API):
// comparison_manager.cc (the table of comparisons, their workers, the cells
// run here as jobs) and comparison_fleet.cc (the fleet client: a cell as one
// RunComparisonCell call, the silence watch, the checks of the figures
// another process sent). It defines the manager's per-comparison state
// (ComparisonManager::Entry) and declares the fleet helpers both use.
//
// Invariants: an Entry's cells, results.results and fleet_attempts have one
//   element per cell of results.cells, at the cell's index; `running`
//   counts the cells taken and not yet back; fleet_calls holds the fleet
//   calls in flight (so that Cancel and Shutdown can cancel them).
// Thread-safety: an Entry's fields other than `cancel` are guarded by the
//   manager's mu_ (`threads` is written once, at Create, under it); the
//   functions are stateless and thread-safe.
// Cost: FleetTarget may resolve a DNS name (a blocking getaddrinfo);
//   CheckedCellResult is linear in the size of the result.
#ifndef BLKLAB_SERVER_COMPARISON_FLEET_INTERNAL_H_
#define BLKLAB_SERVER_COMPARISON_FLEET_INTERNAL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "blklab/v1/job.pb.h"
#include "blklab/v1/service.pb.h"
#include "compare/compare.h"
#include "grpcpp/grpcpp.h"
#include "server/comparison_manager.h"

namespace blklab::server {

struct ComparisonManager::Entry {
  std::string name;
  int64_t seq = 0;
  v1::ComparisonBundle bundle;  // the inputs read from it
  compare::Inputs inputs;
  compare::Comparison comparison;
  compare::Results results;               // cells, and results at their index
  std::vector<v1::ComparisonCell> cells;  // states, at the same index
  std::vector<int> fleet_attempts;
  std::deque<int> pending;
  int running = 0;
  int done = 0;
  v1::Comparison::State state = v1::Comparison::RUNNING;
  std::string error;
  absl::Time create_time;
  absl::Time end_time;
  int64_t version = 0;
  std::atomic<bool> cancel{false};
  std::vector<grpc::ClientContext*> fleet_calls;  // in flight, for Cancel
  std::vector<std::thread> threads;
};

namespace comparison_internal {

// --fleet as a gRPC target and the number of addresses it names now.
std::pair<std::string, int> FleetTarget(const std::string& fleet);

// A cell's figures from another process (a fleet server's reply, a job's
// stored result), checked (no NaN, infinite, negative or out-of-range
// figure, the error naming the field), as the comparison keeps them.
absl::StatusOr<compare::CellResult> CheckedCellResult(const v1::ComparisonCellResult& p);

}  // namespace comparison_internal
}  // namespace blklab::server

#endif  // BLKLAB_SERVER_COMPARISON_FLEET_INTERNAL_H_
