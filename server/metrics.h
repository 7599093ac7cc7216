// server/metrics.h
//
// Prometheus exposition of blklabd (deploy/METRICS.md is the catalogue):
// per-job series built from the engine's snapshots, an aggregate completion
// latency histogram per host and direction, server gauges and counters, and
// the gRPC request families of grpc_metrics.h, served by prometheus-cpp's
// Exposer on their own HTTP port.
//
// Batching: the job manager hands over one engine snapshot per slice of
// virtual time (JobObserver); JobMetrics copies the slice's counters and,
// at a status interval, the interval view, under one mutex. Nothing is
// recorded per simulated IO. A scrape (Collect) builds the families from
// that state under the same mutex.
//
// Bounded cardinality: a job's series exist from its start until
// `retention` after it ended (expired at each scrape and each job start or
// end); a host's latency histogram until `retention` after its last job
// ended. Per job, at most `top_functions` profile rows and `top_locks`
// locks are exported: the first locks to rank by spin time, then
// acquisitions, kept for the job's life so their counters never vanish; a
// direction appears once the job has completed an IO in it.
//
// Thread-safety: thread-safe. Collect may run on the exposer's threads
//   concurrently with observer calls from workers.
// Cost: JobProgress is O(1) per slice and O(interval rows) per status
//   interval; Collect is O(series) plus one store query (jobs by state).
#ifndef BLKLAB_SERVER_METRICS_H_
#define BLKLAB_SERVER_METRICS_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "engine/engine.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "server/comparison_manager.h"
#include "server/job_queue.h"
#include "server/job_record.h"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace blklab::server {

struct JobMetricsOptions {
  absl::Duration retention = absl::Minutes(5);  // how long a finished job's series stay
  // At most this many finished jobs keep their series (the earliest ended
  // go first), so a burst of short jobs cannot grow /metrics without bound.
  size_t max_finished_jobs = 1000;
  size_t top_functions = 10;
  size_t top_locks = 10;
  // Wall clock (tests replace it to age series without sleeping).
  std::function<absl::Time()> now = [] { return absl::Now(); };
};

// Server-wide figures read at each scrape.
struct ServerGauges {
  size_t queued = 0;
  size_t running = 0;
  size_t workers = 0;
  std::map<v1::Job::State, int64_t> jobs_by_state;
  int64_t store_bytes = 0;
  ComparisonGauges comparisons;
};

class JobMetrics : public JobObserver, public prometheus::Collectable {
 public:
  JobMetrics(const JobMetricsOptions& options, std::function<ServerGauges()> server_gauges);

  // JobObserver.
  void JobStarted(const JobRecord& job, const std::string& display_name) override;
  void JobProgress(const std::string& id, const Snapshot& snapshot, int64_t wall_ns) override;
  void JobEnded(const JobRecord& job) override;

  // prometheus::Collectable: every family of the catalogue except the gRPC
  // ones. Drops expired series first.
  std::vector<prometheus::MetricFamily> Collect() const override;

  // Jobs whose series are exported (running or within retention).
  size_t jobs_exported() const;

  // The label value of a job's host: the preset, the stored host's id, or
  // the inline spec's name.
  static std::string HostLabel(const JobRecord& job);

 private:
  struct LockTotals {
    uint64_t acquisitions = 0;
    uint64_t contended = 0;
    int64_t wait_ns = 0;
    // Last interval (zero when the lock was not taken in it).
    uint64_t iv_acquisitions = 0;
    uint64_t iv_contended = 0;
    int64_t iv_wait_ns = 0;
  };
  struct JobSeries {
    std::string id;
    std::string host;
    std::string name;
    // A comparison's cell: "comparisons/{comparison}" (a label of every
    // series of the job) and the cell's label (on blklab_job_info).
    std::string comparison;
    std::string cell;
    bool running = true;
    const char* state = "running";  // "succeeded", "failed", "cancelled" once ended
    absl::Time started;
    absl::Time ended;
    // Cumulative, from the latest slice.
    std::array<uint64_t, stats::kNumDirs> ios{};
    std::array<uint64_t, stats::kNumDirs> bytes{};
    std::array<uint64_t, stats::kNumDirs> clat_count{};  // measured IOs
    std::array<double, stats::kNumDirs> clat_sum_s{};
    uint64_t events = 0;
    double progress_virtual_s = 0;
    double progress_ratio = 0;
    // The last completed interval.
    bool has_interval = false;
    SnapshotInterval interval;
    double speed_ratio = 0;
    int64_t interval_wall_ns = 0;  // wall time at the end of the last interval
    std::map<std::string, LockTotals> locks;  // by full lock name ("nullb0:dd->lock")
    // The locks whose series are exported: the first top_locks to rank
    // (by spin time, then acquisitions); never dropped, so their counters
    // stay continuous.
    std::vector<std::string> exported_locks;
  };
  struct HostHistogram {
    std::array<std::array<uint64_t, SnapshotInterval::kClatBuckets>, stats::kNumDirs> buckets{};
    std::array<uint64_t, stats::kNumDirs> count{};
    std::array<double, stats::kNumDirs> sum_s{};
    int active_jobs = 0;
    absl::Time idle_since;
  };

  void ExpireLocked(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobMetricsOptions options_;
  const std::function<ServerGauges()> server_gauges_;
  mutable absl::Mutex mu_;
  // Mutable: a scrape drops expired series.
  // Collect's families and its steps.
  struct Families;
  static void AddJobSeries(const JobSeries& s, size_t top_functions, Families& f);
  static void AddHostHistogram(const std::string& host, const HostHistogram& h, Families& f);

  mutable std::map<std::string, JobSeries> jobs_ ABSL_GUARDED_BY(mu_);        // by id
  mutable std::map<std::string, HostHistogram> hosts_ ABSL_GUARDED_BY(mu_);  // by host label
  uint64_t events_total_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t ios_total_ ABSL_GUARDED_BY(mu_) = 0;
};

// The HTTP endpoint: serves JobMetrics and `registry` on /metrics.
class MetricsServer {
 public:
  // Binds `listen` ("host:port"; port 0 picks a free one). FailedPrecondition
  // naming the address when it cannot bind.
  static absl::StatusOr<std::unique_ptr<MetricsServer>> Start(const std::string& listen,
                                                              std::shared_ptr<JobMetrics> jobs,
                                                              std::shared_ptr<prometheus::Registry> registry);
  ~MetricsServer();
  int port() const { return port_; }

 private:
  MetricsServer() = default;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::shared_ptr<JobMetrics> jobs_;
  std::shared_ptr<prometheus::Registry> registry_;
  int port_ = 0;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_METRICS_H_
