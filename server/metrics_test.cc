// JobMetrics and GrpcMetrics against real engine runs and prometheus-cpp's
// own text serializer: values agree with the run's result, labels stay
// bounded, finished jobs' series expire after the retention time.
#include "server/metrics.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/engine.h"
#include "engine/host/presets.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"
#include "server/grpc_metrics.h"
#include "blklab/v1/service.grpc.pb.h"
#include "server/job_record.h"

namespace blklab::server {
namespace {

// A clock the test moves.
struct FakeClock {
  absl::Time now = absl::FromUnixSeconds(1000000);
};

JobMetricsOptions Options(FakeClock* clock) {
  JobMetricsOptions o;
  o.retention = absl::Seconds(30);
  o.now = [clock] { return clock->now; };
  return o;
}

JobRecord MakeJob(const std::string& id, const std::string& preset) {
  auto definition = std::make_shared<v1::Job>();
  definition->set_preset(preset);
  JobRecord j;
  j.id = id;
  j.definition = std::move(definition);
  j.state = JobState::kRunning;
  return j;
}

std::string Text(const prometheus::Collectable& c) {
  return prometheus::TextSerializer().Serialize(c.Collect());
}

// Sample lines by "name{labels}" -> value.
std::map<std::string, double> Samples(const std::string& text) {
  std::map<std::string, double> out;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (line.empty() || line[0] == '#') continue;
    const size_t sp = line.rfind(' ');
    double v = 0;
    if (sp == absl::string_view::npos || !absl::SimpleAtod(line.substr(sp + 1), &v)) continue;
    out[std::string(line.substr(0, sp))] = v;
  }
  return out;
}

size_t CountPrefix(const std::map<std::string, double>& samples, const std::string& prefix) {
  size_t n = 0;
  for (const auto& [k, v] : samples) n += absl::StartsWith(k, prefix) ? 1 : 0;
  return n;
}

// Runs a small fio job through the engine, feeding every snapshot to `m`.
RunResult RunInto(JobMetrics& m, const std::string& id, const std::vector<std::string>& args) {
  const host::HostSpec host = *host::GetPreset("null-1cpu");
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, nullptr, nullptr);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  RunRequest req;
  req.host = host;
  req.jobs = parsed->jobs;
  req.snapshot_interval_ns = 10'000'000;
  req.status_interval_ns = 50'000'000;
  m.JobStarted(MakeJob(id, "null-1cpu"), parsed->jobs.jobs.front().name);
  int64_t wall = 0;
  absl::StatusOr<RunResult> r = RunFio(req, [&](const Snapshot& s) { m.JobProgress(id, s, wall += 1000000); });
  EXPECT_TRUE(r.ok()) << r.status();
  return *std::move(r);
}

TEST(JobMetrics, SeriesAgreeWithTheRun) {
  FakeClock clock;
  JobMetrics m(Options(&clock), nullptr);
  const RunResult r = RunInto(m, "j1",
                              {"--name=qd8", "--ioengine=io_uring", "--direct=1", "--rw=randrw", "--bs=4k", "--iodepth=8",
                               "--runtime=200ms", "--time_based=1"});
  const std::string text = Text(m);
  const std::map<std::string, double> s = Samples(text);

  uint64_t reads = 0, writes = 0;
  for (const CloneResult& c : r.clones) {
    reads += c.result.dirs[0].total_ios;
    writes += c.result.dirs[1].total_ios;
  }
  ASSERT_GT(reads, 0u);
  // Cumulative counters: no ramp_time, so every completed IO was measured.
  EXPECT_EQ(s.at(R"(blklab_job_ios_total{job_id="j1",host="null-1cpu",direction="read"})"), reads);
  EXPECT_EQ(s.at(R"(blklab_job_ios_total{job_id="j1",host="null-1cpu",direction="write"})"), writes);
  EXPECT_EQ(s.at("blklab_simulated_ios_total"), reads + writes);
  EXPECT_EQ(s.at("blklab_simulated_events_total"), r.events);
  EXPECT_EQ(s.at(R"(blklab_job_info{job_id="j1",host="null-1cpu",name="qd8"})"), 1);
  EXPECT_EQ(s.at(R"(blklab_job_running{job_id="j1",host="null-1cpu"})"), 1);
  // The last snapshot closes the slice that holds the run's end.
  EXPECT_NEAR(s.at(R"(blklab_job_progress_virtual_seconds{job_id="j1",host="null-1cpu"})"), r.virtual_ns / 1e9, 0.0101);
  // The last interval (150-200 ms): IOPS and quantiles present and sane.
  const double iops = s.at(R"(blklab_job_iops{job_id="j1",host="null-1cpu",direction="read"})");
  // The gauges show the last interval of steady work, not the run's final
  // drain: about the run's average rate.
  EXPECT_NEAR(iops, static_cast<double>(reads) / 0.2, 0.1 * static_cast<double>(reads) / 0.2);
  const double p50 = s.at(R"(blklab_job_clat_seconds{job_id="j1",host="null-1cpu",direction="read",quantile="0.5"})");
  const double p99 = s.at(R"(blklab_job_clat_seconds{job_id="j1",host="null-1cpu",direction="read",quantile="0.99"})");
  EXPECT_GT(p50, 0);
  EXPECT_LE(p50, p99);
  EXPECT_LE(p99, s.at(R"(blklab_job_clat_seconds{job_id="j1",host="null-1cpu",direction="read",quantile="0.999"})"));
  EXPECT_EQ(s.at(R"(blklab_job_clat_seconds_count{job_id="j1",host="null-1cpu",direction="read"})"), reads);
  double mean_s = 0;
  for (const CloneResult& c : r.clones) mean_s += c.result.dirs[0].clat.mean() / 1e9 / r.clones.size();
  EXPECT_NEAR(s.at(R"(blklab_job_clat_seconds_sum{job_id="j1",host="null-1cpu",direction="read"})") / reads, mean_s,
              0.01 * mean_s);
  double cpu = 0;
  for (const char* mode : {"usr", "sys", "irq", "softirq", "idle"}) {
    cpu += s.at(absl::StrCat(R"(blklab_job_cpu_ratio{job_id="j1",host="null-1cpu",mode=")", mode, "\"}"));
  }
  EXPECT_NEAR(cpu, 1.0, 1e-9);
  EXPECT_EQ(CountPrefix(s, "blklab_job_profile_ratio{"), 10u);  // the default top 10
  EXPECT_EQ(CountPrefix(s, R"(blklab_job_inflight_requests{job_id="j1",host="null-1cpu",device="nullb0"})"), 1u);
  // The aggregate histogram counts every measured IO once.
  EXPECT_EQ(s.at(R"(blklab_clat_seconds_count{host="null-1cpu",direction="read"})"), reads);
  EXPECT_EQ(s.at(R"(blklab_clat_seconds_bucket{host="null-1cpu",direction="read",le="+Inf"})"), reads);
  // Exposition rules: every family has help text and a type.
  for (const char* family : {"blklab_job_iops", "blklab_clat_seconds", "blklab_jobs", "blklab_job_ios_total"}) {
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("# HELP ", family, " "))) << family;
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("# TYPE ", family, " "))) << family;
  }

  // Ended: running drops to 0, the series stay for the retention time.
  JobRecord done = MakeJob("j1", "null-1cpu");
  done.state = JobState::kSucceeded;
  m.JobEnded(done);
  clock.now += absl::Seconds(29);
  EXPECT_EQ(Samples(Text(m)).at(R"(blklab_job_running{job_id="j1",host="null-1cpu"})"), 0);
  clock.now += absl::Seconds(1);
  const std::map<std::string, double> after = Samples(Text(m));
  size_t job_series = 0;
  for (const auto& [k, v] : after) job_series += absl::StrContains(k, "job_id=\"") ? 1 : 0;
  EXPECT_EQ(job_series, 0u);
  EXPECT_EQ(CountPrefix(after, "blklab_clat_seconds"), 0u);
  // Server totals are counters: they keep the run.
  EXPECT_EQ(after.at("blklab_simulated_ios_total"), reads + writes);
}

// Lock series: the contended two-CPU case of the engine's tests, with the
// device split from the lock's name and counters that add up to the run.
TEST(JobMetrics, LockSeriesAddUpToTheKernelReport) {
  FakeClock clock;
  JobMetrics m(Options(&clock), nullptr);
  absl::StatusOr<host::HostSpec> host = host::ParseHostSpec(
      "name: two\ncpus: {count: 2}\ndevices:\n  - name: nullb0\n"
      "    null_blk: {poll_queues: 0, submit_queues: 1, irqmode: 1, hw_queue_depth: 4, mbps: 400}\n"
      "    queue: {scheduler: none}\n");
  ASSERT_TRUE(host.ok()) << host.status();
  absl::StatusOr<ParsedFio> parsed =
      ParseFio({"--name=t", "--ioengine=libaio", "--direct=1", "--rw=randread", "--bs=4k", "--iodepth=32", "--numjobs=2",
                "--runtime=150ms", "--time_based=1"},
               *host, nullptr, nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  RunRequest req;
  req.host = *host;
  req.jobs = parsed->jobs;
  req.snapshot_interval_ns = 50'000'000;
  req.status_interval_ns = 50'000'000;
  auto definition = std::make_shared<v1::Job>();
  definition->mutable_resolved_host()->set_name("two");
  JobRecord job;
  job.id = "lk";
  job.definition = std::move(definition);
  m.JobStarted(job, "t");
  absl::StatusOr<RunResult> r = RunFio(req, [&](const Snapshot& s) { m.JobProgress("lk", s, 1); });
  ASSERT_TRUE(r.ok()) << r.status();
  const std::map<std::string, double> s = Samples(Text(m));
  ASSERT_FALSE(r->kernel.locks.empty());
  for (const stats::LockRow& l : r->kernel.locks) {
    const size_t colon = l.name.find(':');
    ASSERT_NE(colon, std::string::npos) << l.name;
    const std::string labels = absl::StrCat(R"({job_id="lk",host="two",device=")", l.name.substr(0, colon),
                                            R"(",lock=")", l.name.substr(colon + 1), "\"}");
    EXPECT_EQ(s.at("blklab_job_lock_acquisitions_total" + labels), l.acquisitions) << labels;
    EXPECT_EQ(s.at("blklab_job_lock_contended_total" + labels), l.contended) << labels;
    EXPECT_NEAR(s.at("blklab_job_lock_spin_seconds_total" + labels), l.wait_ns / 1e9, 1e-9) << labels;
  }
}

// 500 finished jobs: the series count returns to the server-only bound once
// the retention time has passed, and a running job keeps its series.
TEST(JobMetrics, CardinalityIsBoundedByRetention) {
  FakeClock clock;
  JobMetrics m(Options(&clock), nullptr);
  const size_t base = Samples(Text(m)).size();
  Snapshot snap;
  snap.has_interval = true;
  snap.virtual_ns = 1'000'000'000;
  snap.dir_ios = {100, 0, 0};
  snap.interval.end_ns = 1'000'000'000;
  snap.interval.ios = {100, 0, 0};
  snap.interval.iops = {100, 0, 0};
  snap.interval.clat_samples = {100, 0, 0};
  snap.interval.clat_buckets[0][5] = 100;
  snap.interval.busy_ns = 1000;
  snap.interval.locks.push_back({"nullb0:ctx->lock", 10, 1, 5, 5, 0});
  m.JobStarted(MakeJob("keep", "default"), "keep");
  m.JobProgress("keep", snap, 1);
  for (int i = 0; i < 500; ++i) {
    const std::string id = absl::StrCat("j", i);
    JobRecord j = MakeJob(id, absl::StrCat("host", i % 7));
    m.JobStarted(j, "x");
    m.JobProgress(j.id, snap, 1);
    j.state = JobState::kSucceeded;
    m.JobEnded(j);
    clock.now += absl::Milliseconds(10);
  }
  const size_t peak = Samples(Text(m)).size();
  EXPECT_EQ(m.jobs_exported(), 501u);
  clock.now += absl::Seconds(31);
  const size_t after = Samples(Text(m)).size();
  EXPECT_EQ(m.jobs_exported(), 1u);
  EXPECT_GT(peak, base + 500 * 10);
  // Only the running job's series (and its host's histogram) remain: as
  // many as an exporter that only ever saw that job.
  JobMetrics alone(Options(&clock), nullptr);
  alone.JobStarted(MakeJob("keep", "default"), "keep");
  alone.JobProgress("keep", snap, 1);
  EXPECT_EQ(after, Samples(Text(alone)).size()) << "peak " << peak;
  EXPECT_GT(after, base);
}

// Within the retention time, at most max_finished_jobs finished jobs keep
// their series: the earliest ended go first; running jobs are never dropped.
TEST(JobMetrics, FinishedSeriesAreCapped) {
  FakeClock clock;
  JobMetricsOptions o = Options(&clock);
  o.max_finished_jobs = 50;
  JobMetrics m(o, nullptr);
  m.JobStarted(MakeJob("keep", "default"), "keep");
  for (int i = 0; i < 200; ++i) {
    JobRecord j = MakeJob(absl::StrCat("j", i), "default");
    m.JobStarted(j, "x");
    j.state = JobState::kSucceeded;
    m.JobEnded(j);
    clock.now += absl::Milliseconds(10);
  }
  EXPECT_LE(m.jobs_exported(), 51u);
  const std::string text = Text(m);
  EXPECT_TRUE(absl::StrContains(text, "job_id=\"keep\""));
  EXPECT_TRUE(absl::StrContains(text, "job_id=\"j199\""));
  EXPECT_FALSE(absl::StrContains(text, "job_id=\"j100\""));
}

// The exported lock set is chosen once per job: a lock that later outranks
// it does not push an exported lock's counters out of the exposition.
TEST(JobMetrics, ExportedLocksStayExported) {
  FakeClock clock;
  JobMetricsOptions o = Options(&clock);
  o.top_locks = 1;
  JobMetrics m(o, nullptr);
  m.JobStarted(MakeJob("j", "default"), "j");
  Snapshot snap;
  snap.has_interval = true;
  snap.clones_running = 1;
  snap.interval.busy_ns = 1000;
  snap.interval.locks = {{"nullb0:a->lock", 10, 1, 50, 0, 0}, {"nullb0:b->lock", 10, 1, 5, 0, 0}};
  m.JobProgress("j", snap, 1);
  snap.interval.locks = {{"nullb0:a->lock", 1, 0, 0, 0, 0}, {"nullb0:b->lock", 10, 5, 500, 0, 0}};
  m.JobProgress("j", snap, 2);
  const std::map<std::string, double> s = Samples(Text(m));
  EXPECT_EQ(s.at(R"(blklab_job_lock_acquisitions_total{job_id="j",host="default",device="nullb0",lock="a->lock"})"), 11);
  EXPECT_EQ(CountPrefix(s, "blklab_job_lock_acquisitions_total{"), 1u);
}

TEST(GrpcMetrics, LabelsAreBoundedToKnownServices) {
  prometheus::Registry registry;
  // The service's methods come from its descriptor (linked in here).
  ASSERT_NE(v1::JobService::service_full_name(), nullptr);
  ASSERT_NE(v1::CreateJobRequest::descriptor(), nullptr);
  GrpcMetrics g(registry, {"blklab.v1.JobService"});
  g.Started("/blklab.v1.JobService/CreateJob", grpc::experimental::ServerRpcInfo::Type::UNARY);
  g.Handled("/blklab.v1.JobService/CreateJob", grpc::experimental::ServerRpcInfo::Type::UNARY, grpc::StatusCode::INVALID_ARGUMENT,
            0.002);
  for (int i = 0; i < 100; ++i) {
    g.Started(absl::StrCat("/evil.Service", i, "/M"), grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING);
    // A method the service does not have: one shared label, not one each.
    g.Started(absl::StrCat("/blklab.v1.JobService/Nope", i), grpc::experimental::ServerRpcInfo::Type::UNARY);
  }
  const std::map<std::string, double> s = Samples(prometheus::TextSerializer().Serialize(registry.Collect()));
  EXPECT_EQ(s.at(R"(grpc_server_handled_total{grpc_code="InvalidArgument",grpc_method="CreateJob",grpc_service="blklab.v1.JobService",grpc_type="unary"})"),
            1);
  EXPECT_EQ(s.at(R"(grpc_server_started_total{grpc_method="unknown",grpc_service="unknown",grpc_type="bidi_stream"})"),
            100);
  EXPECT_EQ(s.at(R"(grpc_server_handling_seconds_bucket{grpc_method="CreateJob",grpc_service="blklab.v1.JobService",grpc_type="unary",le="0.0025"})"),
            1);
  EXPECT_EQ(s.at(R"(grpc_server_started_total{grpc_method="unknown",grpc_service="blklab.v1.JobService",grpc_type="unary"})"),
            100);
  EXPECT_EQ(CountPrefix(s, "grpc_server_started_total{"), 3u);
}

}  // namespace
}  // namespace blklab::server
