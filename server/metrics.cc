#include "server/metrics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "prometheus/exposer.h"
#include "prometheus/registry.h"
#include "server/resource_name.h"

#ifndef BLKLAB_VERSION_STRING
#define BLKLAB_VERSION_STRING "unknown"
#endif

namespace blklab::server {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::vector<ClientMetric::Label>;

constexpr std::array<const char*, stats::kNumDirs> kDirNames = {"read", "write", "trim"};
// SnapshotInterval::kPercentiles as fractions, written so that they print
// as the labels users type (99.9 / 100 would print 0.9990000000000001).
constexpr std::array<double, SnapshotInterval::kPercentiles.size()> kQuantiles = {0.5, 0.9, 0.99, 0.999, 0.9999};
static_assert(SnapshotInterval::kPercentiles[3] == 99.9 && SnapshotInterval::kPercentiles[4] == 99.99);
constexpr std::array<const char*, stats::kNumCpuModes> kModeNames = {"usr", "sys", "irq", "softirq", "idle"};

MetricFamily NewFamily(const char* name, const char* help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

void AddGauge(MetricFamily& f, Labels labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.gauge.value = value;
  f.metric.push_back(std::move(m));
}

void AddCounter(MetricFamily& f, Labels labels, double value) {
  ClientMetric m;
  m.label = std::move(labels);
  m.counter.value = value;
  f.metric.push_back(std::move(m));
}

// "nullb0:dd->lock" -> {"nullb0", "dd->lock"}; a name without a device
// prefix has device "".
std::pair<std::string, std::string> SplitLockName(const std::string& name) {
  const size_t colon = name.find(':');
  if (colon == std::string::npos) return {"", name};
  return {name.substr(0, colon), name.substr(colon + 1)};
}

}  // namespace

JobMetrics::JobMetrics(const JobMetricsOptions& options, std::function<ServerGauges()> server_gauges)
    : options_(options), server_gauges_(std::move(server_gauges)) {}

std::string JobMetrics::HostLabel(const JobRecord& job) {
  const v1::Job& definition = *job.definition;
  switch (definition.target_case()) {
    case v1::Job::kPreset:
      return definition.preset();
    case v1::Job::kHost: {
      absl::StatusOr<std::string> id = ParseResourceName(definition.host(), "hosts");
      return id.ok() ? *id : definition.host();
    }
    default:
      return definition.resolved_host().name();
  }
}

void JobMetrics::JobStarted(const JobRecord& job, const std::string& display_name) {
  const std::string& id = job.id;
  absl::MutexLock lock(&mu_);
  ExpireLocked(options_.now());  // bounded also when nothing scrapes
  auto it = jobs_.find(id);
  if (it != jobs_.end() && it->second.running) --hosts_[it->second.host].active_jobs;
  JobSeries& s = jobs_[id];
  s = JobSeries{};
  s.id = id;
  s.host = HostLabel(job);
  s.name = display_name;
  if (job.definition->has_comparison_cell()) {
    s.comparison = job.definition->comparison_cell().comparison();
    s.cell = job.definition->comparison_cell().label();
  }
  s.started = options_.now();
  ++hosts_[s.host].active_jobs;
}

void JobMetrics::JobProgress(const std::string& id, const Snapshot& snap, int64_t wall_ns) {
  absl::MutexLock lock(&mu_);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return;
  JobSeries& s = it->second;
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (snap.dir_ios[d] > s.ios[d]) ios_total_ += snap.dir_ios[d] - s.ios[d];
    s.ios[d] = std::max(s.ios[d], snap.dir_ios[d]);
    s.bytes[d] = std::max(s.bytes[d], snap.dir_bytes[d]);
  }
  if (snap.events > s.events) {
    events_total_ += snap.events - s.events;
    s.events = snap.events;
  }
  s.progress_virtual_s = static_cast<double>(snap.virtual_ns) / 1e9;
  s.progress_ratio = snap.virtual_total_ns > 0 ? std::min(1.0, static_cast<double>(snap.virtual_ns) /
                                                                   static_cast<double>(snap.virtual_total_ns))
                                               : 0.0;
  if (!snap.has_interval) return;

  const SnapshotInterval& iv = snap.interval;
  // The run's last interval ends with the run and mostly holds the drain of
  // the IOs in flight: its counts go into the totals, but the gauges keep
  // showing the last interval of steady work.
  const bool keep_gauges = snap.clones_running == 0 && s.has_interval;
  const int64_t wall_len = wall_ns - s.interval_wall_ns;
  if (!keep_gauges) {
    s.speed_ratio = wall_len > 0 ? static_cast<double>(iv.end_ns - iv.start_ns) / static_cast<double>(wall_len) : 0;
    s.interval = iv;
    s.has_interval = true;
    for (auto& [name, l] : s.locks) l.iv_acquisitions = l.iv_contended = l.iv_wait_ns = 0;
  }
  s.interval_wall_ns = wall_ns;
  for (const stats::LockRow& row : iv.locks) {
    LockTotals& l = s.locks[row.name];
    l.acquisitions += row.acquisitions;
    l.contended += row.contended;
    l.wait_ns += row.wait_ns;
    if (keep_gauges) continue;
    l.iv_acquisitions = row.acquisitions;
    l.iv_contended = row.contended;
    l.iv_wait_ns = row.wait_ns;
  }
  // Fill the exported lock set up to top_locks with the highest-ranked
  // locks not yet in it.
  if (s.exported_locks.size() < options_.top_locks && s.exported_locks.size() < s.locks.size()) {
    std::vector<const std::pair<const std::string, LockTotals>*> ranked;
    for (const auto& entry : s.locks) {
      if (std::find(s.exported_locks.begin(), s.exported_locks.end(), entry.first) == s.exported_locks.end()) {
        ranked.push_back(&entry);
      }
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto* a, const auto* b) {
      if (a->second.wait_ns != b->second.wait_ns) return a->second.wait_ns > b->second.wait_ns;
      if (a->second.acquisitions != b->second.acquisitions) return a->second.acquisitions > b->second.acquisitions;
      return a->first < b->first;
    });
    for (const auto* entry : ranked) {
      if (s.exported_locks.size() >= options_.top_locks) break;
      s.exported_locks.push_back(entry->first);
    }
  }
  HostHistogram& h = hosts_[s.host];
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (iv.clat_samples[d] == 0) continue;
    s.clat_count[d] += iv.clat_samples[d];
    s.clat_sum_s[d] += iv.clat_sum_ns[d] / 1e9;
    for (int b = 0; b < SnapshotInterval::kClatBuckets; ++b) h.buckets[d][b] += iv.clat_buckets[d][b];
    h.count[d] += iv.clat_samples[d];
    h.sum_s[d] += iv.clat_sum_ns[d] / 1e9;
  }
}

void JobMetrics::JobEnded(const JobRecord& job) {
  const std::string& id = job.id;
  const absl::Time now = options_.now();
  absl::MutexLock lock(&mu_);
  ExpireLocked(now);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second.running) return;
  it->second.running = false;
  it->second.ended = now;
  it->second.state = job.state == JobState::kSucceeded   ? "succeeded"
                     : job.state == JobState::kCancelled ? "cancelled"
                                                         : "failed";
  HostHistogram& h = hosts_[it->second.host];
  if (--h.active_jobs == 0) h.idle_since = now;
}

void JobMetrics::ExpireLocked(absl::Time now) const {
  size_t finished = 0;
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    if (!it->second.running && now - it->second.ended >= options_.retention) {
      it = jobs_.erase(it);
    } else {
      finished += it->second.running ? 0 : 1;
      ++it;
    }
  }
  if (finished > options_.max_finished_jobs) {
    // Drop the earliest ended (ties by id) beyond the cap.
    std::vector<std::pair<absl::Time, std::string>> ended;
    ended.reserve(finished);
    for (const auto& [id, series] : jobs_) {
      if (!series.running) ended.emplace_back(series.ended, id);
    }
    const size_t drop = finished - options_.max_finished_jobs;
    std::nth_element(ended.begin(), ended.begin() + static_cast<std::ptrdiff_t>(drop - 1), ended.end());
    for (size_t i = 0; i < drop; ++i) jobs_.erase(ended[i].second);
  }
  for (auto it = hosts_.begin(); it != hosts_.end();) {
    if (it->second.active_jobs == 0 && now - it->second.idle_since >= options_.retention) {
      it = hosts_.erase(it);
    } else {
      ++it;
    }
  }
}

size_t JobMetrics::jobs_exported() const {
  absl::MutexLock lock(&mu_);
  ExpireLocked(options_.now());
  return jobs_.size();
}

namespace {

// The server's own families (built outside the job lock), in the
// exposition's order: build, jobs, comparisons, cells, cell IOPS, queue,
// workers, busy workers, store.
std::vector<MetricFamily> ServerFamilies(const ServerGauges& server) {
  MetricFamily build = NewFamily("blklab_build_info", "blklabd's version; the value is 1.", MetricType::Gauge);
  AddGauge(build, {{"version", BLKLAB_VERSION_STRING}}, 1);
  MetricFamily jobs = NewFamily("blklab_jobs", "Jobs in the store by state.", MetricType::Gauge);
  for (const auto& [state, name] : std::initializer_list<std::pair<v1::Job::State, const char*>>{
           {v1::Job::QUEUED, "queued"},
           {v1::Job::RUNNING, "running"},
           {v1::Job::SUCCEEDED, "succeeded"},
           {v1::Job::FAILED, "failed"},
           {v1::Job::CANCELLED, "cancelled"}}) {
    auto it = server.jobs_by_state.find(state);
    AddGauge(jobs, {{"state", name}}, it == server.jobs_by_state.end() ? 0 : static_cast<double>(it->second));
  }
  MetricFamily queue = NewFamily("blklab_job_queue_length", "Jobs waiting for a worker.", MetricType::Gauge);
  AddGauge(queue, {}, static_cast<double>(server.queued));
  MetricFamily workers = NewFamily("blklab_workers", "Worker threads.", MetricType::Gauge);
  AddGauge(workers, {}, static_cast<double>(server.workers));
  MetricFamily busy = NewFamily("blklab_workers_busy", "Workers running a job.", MetricType::Gauge);
  AddGauge(busy, {}, static_cast<double>(server.running));
  MetricFamily store = NewFamily("blklab_store_size_bytes", "Size of the SQLite store (database and WAL).",
                                 MetricType::Gauge);
  AddGauge(store, {}, static_cast<double>(server.store_bytes));

  MetricFamily cmps = NewFamily("blklab_comparisons", "Comparisons kept in memory, by state.", MetricType::Gauge);
  for (const auto& [st, n] : server.comparisons.by_state) AddGauge(cmps, {{"state", st}}, n);
  MetricFamily cmp_cells =
      NewFamily("blklab_comparison_cells", "Cells of a comparison, by state.", MetricType::Gauge);
  MetricFamily cell_iops = NewFamily("blklab_comparison_cell_iops",
                                     "A finished cell's IOPS (read + write + trim; 0 when it stalled).",
                                     MetricType::Gauge);
  for (const ComparisonGauges::One& c : server.comparisons.comparisons) {
    for (const auto& [st, n] : c.cells_by_state) {
      AddGauge(cmp_cells, {{"comparison", c.name}, {"host", c.host}, {"state", st}}, n);
    }
    for (const ComparisonGauges::Cell& cell : c.done) {
      AddGauge(cell_iops, {{"comparison", c.name}, {"cell", cell.label}, {"server", cell.server}}, cell.iops);
    }
  }

  std::vector<MetricFamily> out;
  for (MetricFamily* f : {&build, &jobs, &cmps, &cmp_cells, &cell_iops, &queue, &workers, &busy, &store}) {
    out.push_back(std::move(*f));
  }
  return out;
}

}  // namespace

// The per-job and per-run families, in the order of the exposition.
struct JobMetrics::Families {
  MetricFamily info = NewFamily("blklab_job_info", "A job known to the exporter; the value is 1.", MetricType::Gauge);
  MetricFamily running =
      NewFamily("blklab_job_running", "1 while the job runs, 0 once it has ended.", MetricType::Gauge);
  MetricFamily state = NewFamily("blklab_job_state",
                                 "1 for the job's state: running, succeeded, failed or cancelled.", MetricType::Gauge);
  MetricFamily start_time = NewFamily("blklab_job_start_time_seconds",
                                      "Wall-clock time the job started running, seconds since the Unix epoch.",
                                      MetricType::Gauge);
  MetricFamily end_time = NewFamily("blklab_job_end_time_seconds",
                                    "Wall-clock time the job ended, seconds since the Unix epoch (ended jobs only).",
                                    MetricType::Gauge);
  MetricFamily iops = NewFamily(
      "blklab_job_iops", "IOs completed per second of virtual time in the last status interval.", MetricType::Gauge);
  MetricFamily bw = NewFamily("blklab_job_bandwidth_bytes_per_second",
                              "Bytes completed per second of virtual time in the last status interval.",
                              MetricType::Gauge);
  MetricFamily clat = NewFamily("blklab_job_clat_seconds",
                                "Completion latency (fio's clat): quantiles of the last status interval; count and "
                                "sum of every measured IO.",
                                MetricType::Summary);
  MetricFamily cpu = NewFamily("blklab_job_cpu_ratio",
                               "Share of all simulated CPUs' time spent in each mode in the last status interval.",
                               MetricType::Gauge);
  MetricFamily contention =
      NewFamily("blklab_job_contention_ratio",
                "native_queued_spin_lock_slowpath time over busy CPU time in the last status interval.",
                MetricType::Gauge);
  MetricFamily lock_spin = NewFamily("blklab_job_lock_spin_ratio",
                                     "Time spun waiting for the lock over busy CPU time in the last status interval.",
                                     MetricType::Gauge);
  MetricFamily lock_contended_ratio =
      NewFamily("blklab_job_lock_contended_ratio",
                "Contended acquisitions over acquisitions of the lock in the last status interval.", MetricType::Gauge);
  MetricFamily profile = NewFamily(
      "blklab_job_profile_ratio",
      "A function's self time over busy CPU time in the last status interval (perf top's Overhead); top functions only.",
      MetricType::Gauge);
  MetricFamily inflight =
      NewFamily("blklab_job_inflight_requests",
                "Requests allocated and not yet freed on the device at the end of the last status interval.",
                MetricType::Gauge);
  MetricFamily progress_s = NewFamily("blklab_job_progress_virtual_seconds", "Virtual time simulated so far.",
                                      MetricType::Gauge);
  MetricFamily progress_ratio =
      NewFamily("blklab_job_progress_ratio", "Share of the planned run done (0 when unknown).", MetricType::Gauge);
  MetricFamily speed = NewFamily("blklab_job_speed_ratio",
                                 "Virtual seconds simulated per wall second over the last status interval.",
                                 MetricType::Gauge);
  MetricFamily ios = NewFamily("blklab_job_ios_total", "Simulated IOs completed (ramp_time included).",
                               MetricType::Counter);
  MetricFamily io_bytes =
      NewFamily("blklab_job_io_bytes_total", "Bytes of the simulated IOs completed.", MetricType::Counter);
  MetricFamily lock_acq =
      NewFamily("blklab_job_lock_acquisitions_total", "Acquisitions of the lock.", MetricType::Counter);
  MetricFamily lock_contended =
      NewFamily("blklab_job_lock_contended_total", "Acquisitions of the lock that had to wait.", MetricType::Counter);
  MetricFamily lock_spin_s = NewFamily("blklab_job_lock_spin_seconds_total",
                                       "CPU time spun waiting for the lock.", MetricType::Counter);
  MetricFamily hist = NewFamily("blklab_clat_seconds",
                                "Completion latency of every measured IO of every job; bucket bounds are fio's "
                                "bucket boundaries, four per power of two of nanoseconds.",
                                MetricType::Histogram);
  MetricFamily events = NewFamily("blklab_simulated_events_total",
                                  "Discrete events processed by all runs.", MetricType::Counter);
  MetricFamily sim_ios =
      NewFamily("blklab_simulated_ios_total", "Simulated IOs completed by all runs.", MetricType::Counter);

};

// One job's series.
void JobMetrics::AddJobSeries(const JobSeries& s, size_t top_functions, Families& f) {
  Labels base = {{"job_id", s.id}, {"host", s.host}};
  if (!s.comparison.empty()) base.push_back({"comparison", s.comparison});
  auto with = [&base](std::initializer_list<ClientMetric::Label> more) {
    Labels l = base;
    l.insert(l.end(), more);
    return l;
  };
  AddGauge(f.info, s.cell.empty() ? with({{"name", s.name}}) : with({{"name", s.name}, {"cell", s.cell}}), 1);
  AddGauge(f.running, base, s.running ? 1 : 0);
  AddGauge(f.state, with({{"state", s.state}}), 1);
  AddGauge(f.start_time, base, absl::ToDoubleSeconds(s.started - absl::UnixEpoch()));
  if (!s.running) AddGauge(f.end_time, base, absl::ToDoubleSeconds(s.ended - absl::UnixEpoch()));
  AddGauge(f.progress_s, base, s.progress_virtual_s);
  AddGauge(f.progress_ratio, base, s.progress_ratio);
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (s.ios[d] == 0) continue;
    AddCounter(f.ios, with({{"direction", kDirNames[d]}}), static_cast<double>(s.ios[d]));
    AddCounter(f.io_bytes, with({{"direction", kDirNames[d]}}), static_cast<double>(s.bytes[d]));
  }
  if (!s.has_interval) return;
  const SnapshotInterval& iv = s.interval;
  AddGauge(f.speed, base, s.speed_ratio);
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (s.ios[d] == 0) continue;
    AddGauge(f.iops, with({{"direction", kDirNames[d]}}), iv.iops[d]);
    AddGauge(f.bw, with({{"direction", kDirNames[d]}}), static_cast<double>(iv.bw_bytes_per_sec[d]));
    if (s.clat_count[d] == 0) continue;
    ClientMetric q;
    q.label = with({{"direction", kDirNames[d]}});
    q.summary.sample_count = s.clat_count[d];
    q.summary.sample_sum = s.clat_sum_s[d];
    if (iv.clat_samples[d] > 0) {
      for (size_t k = 0; k < SnapshotInterval::kPercentiles.size(); ++k) {
        q.summary.quantile.push_back({kQuantiles[k], static_cast<double>(iv.clat_pct_ns[d][k]) / 1e9});
      }
    }
    f.clat.metric.push_back(std::move(q));
  }
  for (int m = 0; m < stats::kNumCpuModes; ++m) {
    AddGauge(f.cpu, with({{"mode", kModeNames[m]}}), iv.cpu_pct[m] / 100.0);
  }
  AddGauge(f.contention, base, iv.contention_pct / 100.0);
  const double busy = static_cast<double>(iv.busy_ns);
  for (size_t i = 0; i < iv.top_functions.size() && i < top_functions; ++i) {
    AddGauge(f.profile, with({{"function", iv.top_functions[i].function}}),
             busy > 0 ? static_cast<double>(iv.top_functions[i].self_ns) / busy : 0);
  }
  for (const SnapshotInterval::DeviceInflight& dev : iv.inflight) {
    AddGauge(f.inflight, with({{"device", dev.device}}), static_cast<double>(dev.requests));
  }
  for (const std::string& lock_name : s.exported_locks) {
    const auto [device, name] = SplitLockName(lock_name);
    const LockTotals& l = s.locks.at(lock_name);
    const Labels ll = with({{"device", device}, {"lock", name}});
    AddGauge(f.lock_spin, ll, busy > 0 ? static_cast<double>(l.iv_wait_ns) / busy : 0);
    AddGauge(f.lock_contended_ratio, ll,
             l.iv_acquisitions > 0 ? static_cast<double>(l.iv_contended) / static_cast<double>(l.iv_acquisitions)
                                   : 0);
    AddCounter(f.lock_acq, ll, static_cast<double>(l.acquisitions));
    AddCounter(f.lock_contended, ll, static_cast<double>(l.contended));
    AddCounter(f.lock_spin_s, ll, static_cast<double>(l.wait_ns) / 1e9);
  }
}

// One host's clat histogram, cumulative buckets as Prometheus has them.
void JobMetrics::AddHostHistogram(const std::string& host, const HostHistogram& h, Families& f) {
  for (int d = 0; d < stats::kNumDirs; ++d) {
    if (h.count[d] == 0) continue;
    ClientMetric m;
    m.label = {{"host", host}, {"direction", kDirNames[d]}};
    uint64_t cumulative = 0;
    for (int b = 0; b < SnapshotInterval::kClatBuckets; ++b) {
      cumulative += h.buckets[d][b];
      m.histogram.bucket.push_back({cumulative, SnapshotInterval::ClatBucketUpperNs(b) / 1e9});
    }
    m.histogram.bucket.push_back({h.count[d], std::numeric_limits<double>::infinity()});
    m.histogram.sample_count = h.count[d];
    m.histogram.sample_sum = h.sum_s[d];
    f.hist.metric.push_back(std::move(m));
  }
}

std::vector<MetricFamily> JobMetrics::Collect() const {
  // Server figures first, outside the lock (one store query).
  const ServerGauges server = server_gauges_ ? server_gauges_() : ServerGauges{};
  Families f;
  {
    absl::MutexLock lock(&mu_);
    ExpireLocked(options_.now());
    for (const auto& [id, s] : jobs_) AddJobSeries(s, options_.top_functions, f);
    for (const auto& [host, h] : hosts_) AddHostHistogram(host, h, f);
    AddCounter(f.events, {}, static_cast<double>(events_total_));
    AddCounter(f.sim_ios, {}, static_cast<double>(ios_total_));
  }
  std::vector<MetricFamily> out = ServerFamilies(server);
  for (MetricFamily* m : {&f.events, &f.sim_ios, &f.hist, &f.info, &f.running, &f.state, &f.start_time, &f.end_time,
                          &f.iops, &f.bw, &f.clat, &f.cpu, &f.contention, &f.lock_spin, &f.lock_contended_ratio,
                          &f.profile, &f.inflight, &f.progress_s, &f.progress_ratio, &f.speed, &f.ios, &f.io_bytes,
                          &f.lock_acq, &f.lock_contended, &f.lock_spin_s}) {
    out.push_back(std::move(*m));
  }
  return out;
}

namespace {
constexpr int kMetricsThreads = 8;            // connections served at once
constexpr int kMetricsReadTimeoutMs = 2000;   // an idle connection is closed after this
}  // namespace

absl::StatusOr<std::unique_ptr<MetricsServer>> MetricsServer::Start(const std::string& listen,
                                                                    std::shared_ptr<JobMetrics> jobs,
                                                                    std::shared_ptr<prometheus::Registry> registry) {
  std::unique_ptr<MetricsServer> server(new MetricsServer());
  try {
    // CivetWeb serves each connection on a thread of its own while it waits
    // for the request: an idle client holds a thread until the read times
    // out (30 s by default). Enough threads, a 2 s read timeout and no
    // keep-alive keep a few idle or slow connections from blinding the
    // scrapes.
    server->exposer_ = std::make_unique<prometheus::Exposer>(std::vector<std::string>{
        "listening_ports", listen, "num_threads", absl::StrCat(kMetricsThreads), "request_timeout_ms",
        absl::StrCat(kMetricsReadTimeoutMs), "enable_keep_alive", "no"});
  } catch (const std::exception& e) {
    return absl::FailedPreconditionError(absl::StrCat("metrics_listen ", listen,
                                                      ": cannot listen (is the port taken? another blklabd?): ",
                                                      e.what()));
  }
  server->jobs_ = std::move(jobs);
  server->registry_ = std::move(registry);
  server->exposer_->RegisterCollectable(server->jobs_);
  if (server->registry_ != nullptr) server->exposer_->RegisterCollectable(server->registry_);
  const std::vector<int> ports = server->exposer_->GetListeningPorts();
  server->port_ = ports.empty() ? 0 : ports.front();
  return server;
}

MetricsServer::~MetricsServer() = default;

}  // namespace blklab::server
