// server/comparison_manager.h
//
// The comparisons of blklabd ("comparisons/{comparison}",
// proto/blklab/v1/service.proto): a bundle is parsed with the comparison
// core (compare/compare.h) exactly as `blklab compare` parses its arguments,
// its cells run here and on a fleet of other blklabd servers, and the
// summary is rendered with the same code, so the outputs are the in-process
// command's bytes.
//
// Where cells run:
//  - here, as ordinary jobs of this server's JobQueue (stored, listed,
//    watched and exported like any job, Job.comparison_cell naming the
//    comparison and the cell; the job's result carries the cell's exact
//    figures), at most `local_workers` at once over every comparison and
//    RunComparisonCell call from other servers (a counting semaphore: a cell
//    waits for a free slot, then for a job worker as any job does);
//  - on the fleet: one gRPC channel over --fleet's addresses ("a:p,b:p",
//    an ipv4:/ipv6: list, or dns:///NAME:PORT) with gRPC's own name
//    resolution and round_robin balancing, the server's token and TLS roots.
//    Each cell is one RunComparisonCell call, so a cell stays on the one
//    server that took it; `cells_per_server` calls per resolved address are
//    in flight at most (the addresses counted again at each Create). A call that fails because the server went away,
//    drained or was overloaded (UNAVAILABLE, CANCELLED, DEADLINE_EXCEEDED,
//    RESOURCE_EXHAUSTED, ABORTED, UNKNOWN, INTERNAL, UNAUTHENTICATED, and
//    not marked kCellErrorTrailer), that stopped answering, or that answered
//    with figures no blklabd sends (CheckFigures: NaN, infinite, negative or
//    out of range, named by field) puts the cell back to
//    be taken by whoever is free next (another fleet server, or a local
//    worker); after kMaxFleetAttempts such failures a cell runs only here
//    (without local workers, it fails with the last server's error).
//    A cell's own error (a limit reached, a job that cannot run), which the
//    server running it marks, fails the comparison.
//    Every call has a deadline (fleet_call_deadline), and a server that
//    takes a cell sends a message at least every kCellHeartbeat while it
//    waits for a worker or runs it: a call silent for fleet_silence is
//    cancelled and the server taken for gone.
// Results land at the cell's index, so neither placement nor order changes
// a byte of the output.
//
// Comparisons are kept in memory (at most `max_comparisons`; the oldest
// finished ones are forgotten first; when all are running, Create is
// RESOURCE_EXHAUSTED), and so are lost at a restart.
//
// Thread-safety: thread-safe. One mutex guards the table of comparisons and
//   their cells' states; runs happen outside it on the comparison's threads.
// Create refuses what would fail cell by cell (compare::CheckSettings: a
// variant or matrix value naming an unknown fio option, a value its field
// refuses, a device the host lacks, a host beyond this server's limits) with
// INVALID_ARGUMENT (RESOURCE_EXHAUSTED for a limit) naming the variant or
// the axis and value.
//
// Cost: Create parses the bundle (linear in its size), prepares one cell
// per host type for each variant and each axis value (at most
// compare::kMaxCells), and starts
//   local_workers + fleet slots threads for the comparison's life; each
//   cell is one engine run, here or on a fleet server, and here one stored
//   job (holding the bundle).
#ifndef BLKLAB_SERVER_COMPARISON_MANAGER_H_
#define BLKLAB_SERVER_COMPARISON_MANAGER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "blklab/v1/service.grpc.pb.h"
#include "compare/compare.h"
#include "grpcpp/grpcpp.h"
#include "server/job_queue.h"

namespace blklab::server {

struct ComparisonConfig {
  // This server's job queue: a cell that runs here is an ordinary job of it
  // (required when local_workers > 0; not owned, outlives the manager).
  JobQueue* jobs = nullptr;
  int local_workers = 1;        // cells here at once (0: cells run only on the fleet)
  std::string fleet;            // --fleet: "" (none), "a:p,b:p", "ipv4:...", "dns:///name:port"
  int cells_per_server = 2;     // in-flight cells per fleet address
  std::string token;            // bearer token for calls to the fleet ("" = none)
  std::string tls_ca_pem;       // PEM roots for the fleet's TLS ("" = plaintext)
  compare::CellLimits limits;   // each cell's host size, checked before its job is made (the per-job limits)
  int max_comparisons = 100;    // kept in memory
  int64_t max_bundle_bytes = 1 << 20;  // a job's bundle limit (each cell here is a job)
  int max_bundle_files = 256;
  // A RunComparisonCell call's whole length: a cell's wall-time limit (a
  // job's max_wall_time, 24 h by default) and an hour to wait for a worker.
  absl::Duration fleet_call_deadline = absl::Hours(25);
  // The longest a fleet call may go without a message (the server sends one
  // every ComparisonManager::kCellHeartbeat) before the server is taken for
  // gone and the cell runs elsewhere.
  absl::Duration fleet_silence = absl::Seconds(30);
};

// The cell's own failure (its bundle, a limit it reached), as opposed to
// this server's (no worker free, shutting down): RunCellHere marks it.
inline constexpr char kCellErrorPayload[] = "blklab.dev/cell-error";
absl::Status CellError(absl::Status s);
bool IsCellError(const absl::Status& s);

// What /metrics shows of the comparisons (server/metrics.h).
struct ComparisonGauges {
  struct Cell {
    std::string label;   // "cell after (iodepth=4) sample 1"
    std::string server;  // where it ran
    double iops = 0;
  };
  struct One {
    std::string name;  // "comparisons/x"
    std::string host;
    std::string state;                       // "running", "succeeded", ...
    std::map<std::string, int> cells_by_state;  // "pending", "running", "done", "failed"
    std::vector<Cell> done;                  // finished cells (capped over all comparisons)
  };
  std::map<std::string, int> by_state;  // comparisons kept, by state
  std::vector<One> comparisons;         // newest first
};

class ComparisonManager {
 public:
  // Kept at most this many times on the fleet before a cell runs only here.
  static constexpr int kMaxFleetAttempts = 4;
  // RunComparisonCell calls that may wait for a worker; more are
  // RESOURCE_EXHAUSTED (the caller takes the cell elsewhere or later).
  static constexpr int kMaxWaitingCells = 64;
  static constexpr int kFleetKeepaliveMs = 30'000;
  // How often RunComparisonCell sends a message while its cell waits or
  // runs (the caller's fleet_silence is several of these).
  static constexpr absl::Duration kCellHeartbeat = absl::Seconds(5);
  // Trailing metadata of a RunComparisonCell that failed because of the
  // cell itself (not retried elsewhere).
  static constexpr char kCellErrorTrailer[] = "blklab-cell-error";

  explicit ComparisonManager(ComparisonConfig config);
  ~ComparisonManager();  // cancels and joins every comparison

  // Cancels every comparison and every wait for a worker (a server going
  // down); the comparisons stay readable.
  void Shutdown();
  ComparisonManager(const ComparisonManager&) = delete;
  ComparisonManager& operator=(const ComparisonManager&) = delete;

  absl::StatusOr<v1::Comparison> Create(const v1::ComparisonBundle& bundle, const std::string& id);
  absl::StatusOr<v1::Comparison> Get(const std::string& name, bool full) const;
  // Newest first; `page_token` is the last name of the previous page.
  absl::StatusOr<v1::ListComparisonsResponse> List(int page_size, const std::string& page_token) const;
  absl::StatusOr<v1::Comparison> Cancel(const std::string& name);
  absl::Status Delete(const std::string& name);
  // The comparison once its version differs from *version (or at
  // `deadline`, or at once the first time: *version < 0), with *version
  // updated. NOT_FOUND once deleted.
  absl::StatusOr<v1::Comparison> WaitChange(const std::string& name, int64_t* version, absl::Time deadline) const;
  // The summary as text ("table", "markdown", "csv", "json") or every
  // picture ("charts"), as the in-process command writes them.
  absl::StatusOr<v1::ComparisonOutput> Output(const std::string& name, const std::string& format) const;

  // RunComparisonCell: cell `index` of `bundle` (of the caller's
  // `comparison`) as a job here, once one of the local_workers slots is free;
  // `on_job` is told the job's name ("jobs/{job}") once it is queued.
  // `cancel` cancels the job.
  absl::StatusOr<compare::CellResult> RunCellHere(const v1::ComparisonBundle& bundle, int index,
                                                  const std::string& comparison, const std::atomic<bool>* cancel,
                                                  const std::function<void(const std::string&)>& on_job = nullptr);

  // The figures of every kept comparison; finished cells of the newest
  // comparisons first, at most `max_cells` in all.
  ComparisonGauges Gauges(size_t max_cells) const;

 private:
  struct Entry;

  // Runs on the comparison's threads: takes pending cells until none is
  // left, here (`fleet` false) or on the fleet.
  void Worker(Entry* e, bool fleet);
  // Runs cell `i` of `e` with one RunComparisonCell call on the fleet
  // (comparison_fleet.cc).
  // *server: the server that took it (the fleet's target if none answered);
  // *server_fault: the failure is that server's (it went away, stopped
  // answering, or sent figures no blklabd sends), not the cell's.
  absl::StatusOr<compare::CellResult> RunCellOnFleet(Entry* e, int i, std::string* server, bool* server_fault);
  // The next cell to run (its index); kNoMoreCells when the comparison has
  // ended or every cell is done; kNoCellNow (only without `wait`) when
  // cells still run that may come back. A fleet worker skips cells that
  // have used up their fleet attempts.
  static constexpr int kNoMoreCells = -1;
  static constexpr int kNoCellNow = -2;
  // (*version: the comparison's version when kNoCellNow was decided.)
  int TakeCell(Entry* e, bool fleet, bool wait, int* attempt, int64_t* version);
  // Returns once `e` has changed since `version` (or is cancelled).
  void AwaitChange(Entry* e, int64_t version);
  void CellDone(Entry* e, int index, absl::StatusOr<compare::CellResult> r, bool retry);
  void Finish(Entry* e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  v1::Comparison ToProto(const Entry& e, bool with_cells, bool full) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Runs cell `index` of `c` (parsed from `bundle`) as a job of
  // config_.jobs and waits for its end, cancelling it when `cancel` is set;
  // `on_job` is told the job's name once it is queued. The cell's own
  // failures are marked (CellError).
  absl::StatusOr<compare::CellResult> RunCellJob(const v1::ComparisonBundle& bundle, const compare::Comparison& c,
                                                 int index, const std::string& comparison,
                                                 const std::atomic<bool>* cancel,
                                                 const std::function<void(const std::string&)>& on_job);
  // Waits for a free local worker; false when `cancel` (or Shutdown) came
  // first.
  bool AcquireLocal(const std::atomic<bool>* cancel);
  void ReleaseLocal();

  const ComparisonConfig config_;
  const int local_workers_;  // config_.local_workers, 0 without a job queue
  std::shared_ptr<grpc::Channel> fleet_channel_;
  std::unique_ptr<v1::ComparisonService::Stub> fleet_stub_;

  mutable absl::Mutex mu_;
  mutable absl::CondVar changed_;
  std::map<std::string, std::unique_ptr<Entry>> comparisons_ ABSL_GUARDED_BY(mu_);
  int64_t next_seq_ ABSL_GUARDED_BY(mu_) = 0;

  std::atomic<bool> shutdown_{false};
  absl::Mutex local_mu_;
  int local_free_ ABSL_GUARDED_BY(local_mu_) = 0;
  int local_waiting_ ABSL_GUARDED_BY(local_mu_) = 0;  // RunCellHere calls waiting for a worker
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_COMPARISON_MANAGER_H_
