// server/convert.h
//
// Conversions between the API protos (proto/blklab/v1) and the engine's
// typed values (engine/engine.h), so handlers stay thin (docs/style.md §3.5):
//
//  - Host specs go through the engine's own document decoder: a proto
//    HostSpec becomes a util::DocNode (field names are the same as in YAML /
//    JSON host documents) and HostSpecFromDoc decodes, resolves defaults and
//    validates it. There is one validator, and its errors name the field path
//    ("devices[0].null_blk.irqmode: ..."). The reverse direction walks
//    HostSpecToDoc's canonical document, so a converted spec has every
//    optional field set (defaults resolved).
//  - A job's fio bundle becomes a RunRequest through ParseFio with a
//    FileReader over the bundle's `files` map only (the server's disk is
//    never read) and ${VAR} from the bundle's `variables` only (never the
//    server's environment).
//  - A finished run becomes a JobResult: fio's json and normal texts plus
//    typed figures, the profile, the lock table and fio's log files.
//  - An engine snapshot's interval view becomes a WatchJob Snapshot's
//    interval figures.
//
// Sources: convert.cc (job limits and preparation), convert_host.cc (host
// specs), convert_result.cc (results, profile and lock rows, snapshots),
// convert_comparison.cc (comparison bundles and cell figures).
//
// Invariants: every function is deterministic in its inputs except
//   BuildJobResult, whose fio texts carry the wall clock passed in.
// Thread-safety: stateless functions; safe from any thread.
// Cost: linear in the size of the spec / bundle / result; BuildJobResult
//   writes the whole fio report twice (json and normal).
#ifndef BLKLAB_SERVER_CONVERT_H_
#define BLKLAB_SERVER_CONVERT_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blklab/v1/host.pb.h"
#include "blklab/v1/job.pb.h"
#include "compare/compare.h"
#include "engine/engine.h"
#include "engine/wall_clock.h"
#include "engine/host/host_spec.h"

namespace blklab::server {

// Server-wide maxima for one job; a job's own JobLimits are clamped to them.
struct JobLimitsConfig {
  host::HostLimits host;                                 // topology size
  int64_t max_virtual_ns = 3600LL * 1000 * 1000 * 1000;  // 1 h
  uint64_t max_simulated_ios = 10ULL * 1000 * 1000 * 1000;
  int64_t max_wall_ns = 24LL * 3600 * 1000 * 1000 * 1000;  // 1 day
  size_t max_bundle_files = 64;
  size_t max_bundle_bytes = 1 << 20;
  // A job's stored result: its log files together (streamed by
  // ReadJobArtifacts, stored in one row), and the rest (fio's outputs and
  // figures, which GetJob returns in one message). A run above either ends
  // FAILED (RESOURCE_EXHAUSTED) saying so, never with a result nobody can
  // read.
  int64_t max_log_bytes = int64_t{768} << 20;
  int64_t max_result_bytes = int64_t{48} << 20;
  // How long a CreateJobRequest.request_id keeps answering with its job; an
  // older one is released and creates a new job.
  int64_t request_id_ttl_ms = 24LL * 3600 * 1000;
};

// proto -> engine. Decodes, resolves defaults and validates against
// `limits`. An empty spec.name takes `default_name`. InvalidArgument names
// the field path; ResourceExhausted names the exceeded limit.
absl::StatusOr<host::HostSpec> HostSpecFromProto(const v1::HostSpec& spec,
                                                 const host::HostLimits& limits,
                                                 const std::string& default_name = "");
// engine -> proto, every field set.
absl::Status HostSpecToProto(const host::HostSpec& spec, v1::HostSpec* out);

// The effective limits of one job: its JobLimits clamped to `server`.
struct EffectiveLimits {
  host::HostLimits host;
  RunLimits run;
  int64_t max_wall_ns = 0;
};
EffectiveLimits EffectiveJobLimits(const v1::JobLimits& job, const JobLimitsConfig& server);

// A job ready to run.
struct PreparedJob {
  RunRequest request;
  EffectiveLimits limits;
  bool realtime = false;  // pace REALTIME: hold virtual time to wall time
  std::optional<int64_t> report_time_ms;  // Job.report_time, when set
  // A comparison's cell (Job.comparison_cell): the result carries the
  // cell's figures, and a stall is the cell's result.
  bool comparison_cell = false;
};

// Parses and validates the job's fio bundle against `host` (already
// resolved) with the job's limits. Errors: InvalidArgument (bad bundle,
// options touching the real machine, bad job file: the engine's message
// names the file and line), ResourceExhausted (a limit), Unimplemented (an
// unmodelled ioengine).
// A structured JobSpec as fio command-line arguments (globals, then
// --name=X and its options per job); InvalidArgument names the field.
absl::StatusOr<std::vector<std::string>> SpecToArgs(const v1::JobSpec& spec);

// A comparison cell's job (Job.comparison_cell) is prepared from its
// comparison bundle as `blklab compare` prepares that cell; `host` is not
// read.
absl::StatusOr<PreparedJob> PrepareJob(const v1::Job& job, const host::HostSpec& host,
                                       const JobLimitsConfig& server);

// Fio's texts and typed figures of a finished run. `clock` fills fio's
// wall-clock header fields.
v1::JobResult BuildJobResult(const RunRequest& request, const RunResult& run,
                             const WallClock& clock);

// A comparison bundle's files and variables as compare::Inputs (they point
// into `bundle`, which must outlive them).
compare::Inputs BundleInputs(const v1::ComparisonBundle* bundle);
// The comparison a bundle describes, as `blklab compare` parses its
// arguments (the default host: the "default" preset), with the bundle's
// collect_stacks. `inputs` reads the bundle (BundleInputs). UNIMPLEMENTED
// for a t/io_uring comparison: cells run as the queue's fio jobs.
absl::StatusOr<compare::Comparison> ParseComparisonBundle(const v1::ComparisonBundle& bundle,
                                                          const compare::Inputs& inputs);
// Bytes of its arguments, files and variables (names included): what the
// bundle limits count.
size_t BundleBytes(const v1::ComparisonBundle& bundle);

// A comparison cell's figures, both ways, exactly (doubles as doubles).
v1::ComparisonCellResult CellResultToProto(const compare::CellResult& r);
absl::StatusOr<compare::CellResult> CellResultFromProto(const v1::ComparisonCellResult& p);

// Profile and lock rows, both ways (a fleet server's cell figures come back
// as these).
void ProfileRowToProto(const stats::ProfileRow& p, v1::ProfileRow* row);
absl::StatusOr<stats::ProfileRow> ProfileRowFromProto(const v1::ProfileRow& row);
void LockRowToProto(const stats::LockRow& l, v1::LockRow* row);
stats::LockRow LockRowFromProto(const v1::LockRow& row);

// WatchJob's interval when the bundle gives no --status-interval: 1 s of
// virtual time.
// A shorter --status-interval is raised to kMinStatusIntervalNs.
inline constexpr int64_t kDefaultStatusIntervalNs = 1'000'000'000;
inline constexpr int64_t kMinStatusIntervalNs = 10'000'000;
// Locks a WatchJob snapshot lists (Snapshot.top_locks).
inline constexpr size_t kSnapshotTopLocks = 10;

// A RUNNING WatchJob snapshot of job `name`: its progress (virtual time
// covered, fraction done, wall time since the run started) and the interval
// figures (interval length, per direction IOs / rates / clat percentiles,
// CPU shares, contention, the most contended locks) of the engine's interval
// view that closes a status interval.
v1::Snapshot IntervalSnapshot(const std::string& name, uint64_t sequence, int64_t virtual_ns,
                              double progress_fraction, int64_t wall_ns, const SnapshotInterval& interval);

// The final snapshot of a stream: the whole job (FULL view) in a final state.
v1::Snapshot FinalSnapshot(const v1::Job& job, uint64_t sequence);

// Empties the contents of `job`'s log files, keeping names and sizes: no Job
// a server returns grows with a run's logs (ReadJobArtifacts streams them).
void OmitLogContents(v1::Job* job);

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_CONVERT_H_
