// blklabd: the blklab gRPC server. Hosts simulated machines and runs
// fio-equivalent jobs against them for remote clients (service.proto).
//
//   blklabd [--listen=127.0.0.1:50051] [--data_dir=DIR] [--workers=N] ...
//
// Shuts down gracefully on SIGTERM / SIGINT: stops accepting calls, ends
// watch streams (UNAVAILABLE), interrupts running jobs (they re-run on the
// next start), waits for in-flight calls and closes the store.
#include <signal.h>

#include <cstdio>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "prometheus/registry.h"
#include "server/grpc_metrics.h"
#include "server/job_manager.h"
#include "server/metrics.h"
#include "server/log.h"
#include "server/host_service.h"
#include "server/comparison_manager.h"
#include "server/comparison_service.h"
#include "server/job_service.h"
#include "server/rpc.h"
#include "server/store.h"
#include "engine/util/file.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051",
          "Address to listen on, host:port. Port 0 picks a free port (printed in the 'listening' log line). "
          "A non-loopback address needs --auth_token_file unless --insecure_allow_remote.");
ABSL_FLAG(std::string, data_dir, "",
          "Directory of the SQLite store (blklab.db). Default: $XDG_DATA_HOME/blklab, else "
          "~/.local/share/blklab.");
ABSL_FLAG(int, workers, 0, "Worker threads running jobs, one simulation each. 0: one per core.");
ABSL_FLAG(int, compare_workers, -1,
          "Comparison cells (ComparisonService) that run here at once as jobs (they queue for --workers as any "
          "job), this server's and other servers' (RunComparisonCell). -1: one per core; 0: cells run only on "
          "the fleet.");
ABSL_FLAG(std::string, fleet, "",
          "Other blklabd servers that run this server's comparison cells as well: ADDR[,ADDR...] (IP:PORT), "
          "or a gRPC target such as dns:///NAME:PORT (round_robin over what it resolves to).");
ABSL_FLAG(int, fleet_cells_per_server, 2, "Comparison cells in flight on each fleet address.");
ABSL_FLAG(std::string, fleet_tls_ca_file, "", "PEM roots for TLS to the fleet (without it: plaintext).");
ABSL_FLAG(int, max_comparisons, 100,
          "Comparisons kept in memory; the oldest finished are forgotten first, and beyond it while all run "
          "CreateComparison is RESOURCE_EXHAUSTED.");
// /metrics exports at most this many finished comparison cells (the newest
// comparisons' first).
constexpr size_t kMaxComparisonCellSeries = 2000;

ABSL_FLAG(int, max_queued_jobs, 1000, "Jobs that may wait for a worker; CreateJob beyond it is RESOURCE_EXHAUSTED.");
ABSL_FLAG(int, max_streams, 256, "Concurrent WatchJob and ReadJobArtifacts streams; more are RESOURCE_EXHAUSTED.");
ABSL_FLAG(std::string, auth_token_file, "",
          "File holding a bearer token (first line). When set, every blklab.v1 call must send "
          "'authorization: Bearer <token>' metadata, else UNAUTHENTICATED.");
ABSL_FLAG(bool, insecure_allow_remote, false,
          "Allow a non-loopback --listen address without --auth_token_file.");
ABSL_FLAG(std::string, tls_cert_file, "", "PEM server certificate chain; with --tls_key_file enables TLS.");
ABSL_FLAG(std::string, tls_key_file, "", "PEM private key of --tls_cert_file.");
ABSL_FLAG(int, max_receive_message_bytes, 16 << 20, "Largest request message accepted, bytes.");
ABSL_FLAG(int, max_send_message_bytes, 64 << 20, "Largest response message sent, bytes.");
ABSL_FLAG(int, max_cpus, 1024, "Topology limit: logical CPUs of a host.");
ABSL_FLAG(int, max_devices, 256, "Topology limit: block devices of a host after expansion.");
ABSL_FLAG(int64_t, max_total_requests, 1 << 21,
          "Topology limit: preallocated requests of a host (hw queues x (tags + nr_requests), summed).");
ABSL_FLAG(int64_t, max_virtual_seconds, 3600, "Per-job limit: virtual time a run may cover, seconds.");
ABSL_FLAG(uint64_t, max_simulated_ios, 10ULL * 1000 * 1000 * 1000, "Per-job limit: simulated IOs completed.");
ABSL_FLAG(int64_t, max_wall_seconds, 86400, "Per-job limit: wall-clock time a run may take, seconds.");
ABSL_FLAG(int64_t, max_log_bytes, int64_t{768} << 20,
          "Per-job limit: bytes of fio log files a result keeps (read with ReadJobArtifacts); above it the job "
          "fails and the logs are dropped.");
ABSL_FLAG(int64_t, max_result_bytes, int64_t{48} << 20,
          "Per-job limit: bytes of a result apart from its logs (GetJob returns it in one message; keep it under "
          "--max_send_message_bytes); above it the job fails without a result.");
ABSL_FLAG(absl::Duration, request_id_ttl, absl::Hours(24),
          "How long a CreateJob request_id returns the job it created; after that the id creates a new job.");
ABSL_FLAG(int, shutdown_grace_seconds, 5, "On SIGTERM, how long in-flight calls may take before they are cancelled.");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9464",
          "Address of the Prometheus exposition (HTTP, path /metrics), host:port; port 0 picks a free port "
          "(printed in the 'listening' log line); empty disables it.");
ABSL_FLAG(absl::Duration, metrics_retention, absl::Minutes(5),
          "How long a finished job's series stay in /metrics before they are dropped.");
ABSL_FLAG(int, metrics_max_finished_jobs, 1000,
          "At most this many finished jobs keep their series in /metrics (the earliest ended are dropped first).");
ABSL_FLAG(int, metrics_top_functions, 10, "Profile functions exported per job (the top ones by self time).");
ABSL_FLAG(int, metrics_top_locks, 10, "Locks exported per job (the top ones by spin time, then acquisitions).");

namespace blklab::server {
namespace {

std::string DefaultDataDir() {
  const char* xdg = std::getenv("XDG_DATA_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/blklab";
  const char* home = std::getenv("HOME");
  return std::string(home != nullptr ? home : ".") + "/.local/share/blklab";
}

// Whether every address `listen` (host:port, [v6]:port or unix:PATH) can
// bind to is a loopback one: the host is resolved and each address checked,
// so a name that merely starts like one (127.0.0.1.nip.io) does not pass.
bool IsLoopback(const std::string& listen) {
  if (absl::StartsWith(listen, "unix:")) return true;
  std::string host = listen;
  if (!host.empty() && host[0] == '[') {
    const size_t close = host.find(']');
    if (close == std::string::npos) return false;
    host = host.substr(1, close - 1);
  } else {
    const size_t colon = host.rfind(':');
    if (colon == std::string::npos) return false;
    host = host.substr(0, colon);
  }
  if (host.empty()) return false;
  struct addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  struct addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || res == nullptr) return false;
  bool all = true;
  for (const struct addrinfo* a = res; a != nullptr; a = a->ai_next) {
    if (a->ai_family == AF_INET) {
      const auto* in = reinterpret_cast<const struct sockaddr_in*>(a->ai_addr);
      all = all && (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    } else if (a->ai_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<const struct sockaddr_in6*>(a->ai_addr);
      all = all && IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
    } else {
      all = false;
    }
  }
  freeaddrinfo(res);
  return all;
}

// A bearer token shorter than this is refused: guessable.
constexpr size_t kMinTokenBytes = 16;

// The PEM file a TLS flag names, or an error logged naming the flag, the
// file and what is wrong with it.
absl::StatusOr<std::string> ReadPem(const std::string& flag, const std::string& kind) {
  const std::string path = flag == "tls_cert_file" ? absl::GetFlag(FLAGS_tls_cert_file) : absl::GetFlag(FLAGS_tls_key_file);
  absl::StatusOr<std::string> text = path.empty() ? absl::InvalidArgumentError("not given (TLS needs both files)")
                                                  : util::ReadFileToString(path);
  if (text.ok() && !(absl::StrContains(*text, "-----BEGIN ") && absl::StrContains(*text, kind + "-----"))) {
    text = absl::InvalidArgumentError(absl::StrCat("not a PEM ", kind, " (no '-----BEGIN ... ", kind, "-----' block)"));
  }
  if (!text.ok()) {
    Log("error", "bad_flag", {{"flag", flag}, {"file", path}, {"error", std::string(text.status().message())}});
  }
  return text;
}

// The bearer token of --auth_token_file ("" without the flag); false, with
// the error logged, when the file cannot be read or the token is too short.
bool ReadAuthToken(std::string& token) {
  if (!absl::GetFlag(FLAGS_auth_token_file).empty()) {
    absl::StatusOr<std::string> t = util::ReadFileToString(absl::GetFlag(FLAGS_auth_token_file));
    if (!t.ok()) {
      Log("error", "bad_flag", {{"flag", "auth_token_file"}, {"error", std::string(t.status().message())}});
      return false;
    }
    token = std::string(absl::StripAsciiWhitespace(t->substr(0, t->find('\n'))));
    if (token.size() < kMinTokenBytes) {
      Log("error", "bad_flag",
          {{"flag", "auth_token_file"},
           {"error", absl::StrCat("the token is ", token.size(), " bytes; at least ", kMinTokenBytes,
                                  " are needed (e.g. openssl rand -hex 32)")}});
      return false;
    }
  }
  return true;
}

// Whether --listen and --metrics_listen are addresses blklabd may listen
// on; false, with the error logged, when one is not.
bool CheckListenFlags(const std::string& listen) {
  for (const auto& [flag, address] : {std::pair<std::string, std::string>{"listen", listen},
                                      {"metrics_listen", absl::GetFlag(FLAGS_metrics_listen)}}) {
    if (flag == "metrics_listen" && address.empty()) continue;
    if (absl::Status s = CheckListenAddress(address, flag); !s.ok()) {
      Log("error", "bad_flag", {{"flag", flag}, {"error", std::string(s.message())}});
      return false;
    }
  }
  return true;
}

// Warns of a token sent in clear to a non-loopback address; false, with the
// error logged, for a non-loopback address without a token (unless
// --insecure_allow_remote).
bool CheckRemoteAccess(const std::string& listen, const std::string& token, bool tls) {
  if (!IsLoopback(listen) && !token.empty() && !tls) {
    Log("warn", "token_in_clear",
        {{"listen", listen},
         {"warning", "WARNING: the bearer token travels unencrypted to and from a non-loopback address: anyone on "
                     "the path can read it and call every method; give --tls_cert_file and --tls_key_file"}});
  }
  if (!IsLoopback(listen) && token.empty() && !absl::GetFlag(FLAGS_insecure_allow_remote)) {
    Log("error", "bad_flag",
        {{"flag", "listen"},
         {"error", "a non-loopback address needs --auth_token_file (or --insecure_allow_remote)"}});
    return false;
  }
  return true;
}

// The job manager's workers, queue and per-job limits from the flags.
JobManagerOptions JobManagerOptionsFromFlags() {
  JobManagerOptions jm;
  jm.workers = absl::GetFlag(FLAGS_workers);
  jm.max_queued_jobs = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_max_queued_jobs)));
  jm.limits.host.max_cpus = absl::GetFlag(FLAGS_max_cpus);
  jm.limits.host.max_devices = absl::GetFlag(FLAGS_max_devices);
  jm.limits.host.max_total_requests = absl::GetFlag(FLAGS_max_total_requests);
  jm.limits.max_virtual_ns = absl::GetFlag(FLAGS_max_virtual_seconds) * 1000000000;
  jm.limits.max_simulated_ios = absl::GetFlag(FLAGS_max_simulated_ios);
  jm.limits.max_wall_ns = absl::GetFlag(FLAGS_max_wall_seconds) * 1000000000;
  jm.limits.request_id_ttl_ms = absl::ToInt64Milliseconds(absl::GetFlag(FLAGS_request_id_ttl));
  jm.limits.max_log_bytes = absl::GetFlag(FLAGS_max_log_bytes);
  jm.limits.max_result_bytes = absl::GetFlag(FLAGS_max_result_bytes);
  return jm;
}

// The store under `data_dir`; a failure to open it is logged, as is a
// write-ahead log the previous server left missing.
absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& data_dir) {
  absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(data_dir);
  if (!store.ok()) {
    Log("error", "store_open_failed", {{"data_dir", data_dir}, {"error", std::string(store.status().message())}});
    return store;
  }
  if ((*store)->opened_after_lost_wal()) {
    Log("warn", "store_wal_lost",
        {{"data_dir", data_dir},
         {"error", absl::StrCat("the previous server did not close blklab.db and its -wal file is missing: "
                                "writes acknowledged in the last ",
                                Store::kCheckpointIntervalMs, " ms before it stopped may be lost")}});
  }
  return store;
}

// The per-job metrics' retention and series limits from the flags.
JobMetricsOptions JobMetricsOptionsFromFlags() {
  JobMetricsOptions mo;
  mo.retention = absl::GetFlag(FLAGS_metrics_retention);
  mo.max_finished_jobs = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_metrics_max_finished_jobs)));
  mo.top_functions = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_metrics_top_functions)));
  mo.top_locks = static_cast<size_t>(std::max(0, absl::GetFlag(FLAGS_metrics_top_locks)));
  return mo;
}

// The comparison manager's configuration from the flags: cells run on
// `jobs` (and the fleet) within the per-job limits `jm`. Nothing, with the
// error logged, when --fleet_tls_ca_file cannot be read.
std::optional<ComparisonConfig> ComparisonConfigFromFlags(JobQueue* jobs, const JobManagerOptions& jm,
                                                          const std::string& token) {
  ComparisonConfig cc;
  cc.jobs = jobs;
  cc.local_workers = absl::GetFlag(FLAGS_compare_workers);
  if (cc.local_workers < 0) cc.local_workers = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cc.fleet = absl::GetFlag(FLAGS_fleet);
  cc.cells_per_server = std::max(1, absl::GetFlag(FLAGS_fleet_cells_per_server));
  cc.token = token;
  if (!absl::GetFlag(FLAGS_fleet_tls_ca_file).empty()) {
    absl::StatusOr<std::string> ca = util::ReadFileToString(absl::GetFlag(FLAGS_fleet_tls_ca_file));
    if (!ca.ok()) {
      Log("error", "bad_flag", {{"flag", "fleet_tls_ca_file"}, {"error", std::string(ca.status().message())}});
      return std::nullopt;
    }
    cc.tls_ca_pem = *std::move(ca);
  }
  cc.max_comparisons = std::max(1, absl::GetFlag(FLAGS_max_comparisons));
  // Each cell that runs here is a job holding the bundle.
  cc.max_bundle_bytes = static_cast<int64_t>(jm.limits.max_bundle_bytes);
  cc.limits.host = jm.limits.host;
  cc.limits.run.max_virtual_ns = jm.limits.max_virtual_ns;
  cc.limits.run.max_ios = jm.limits.max_simulated_ios;
  // A fleet call may last as long as a cell may run, plus an hour to wait
  // for a worker; a silent peer is noticed long before (fleet_silence).
  cc.fleet_call_deadline = absl::Nanoseconds(jm.limits.max_wall_ns) + absl::Hours(1);
  return cc;
}

// TLS credentials from --tls_cert_file and --tls_key_file, else insecure
// ones; an error, logged, when a PEM file is bad.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> ServerCredentialsFromFlags() {
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (!absl::GetFlag(FLAGS_tls_cert_file).empty() || !absl::GetFlag(FLAGS_tls_key_file).empty()) {
    absl::StatusOr<std::string> cert = ReadPem("tls_cert_file", "CERTIFICATE");
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadPem("tls_key_file", "PRIVATE KEY");
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  return creds;
}

// Builds and starts the gRPC server on `listen` with `services` (in
// registration order), health checking, reflection and, unless
// `grpc_metrics` is null, the request-metrics interceptor. Sets `port`;
// nullptr, with the error logged, when it cannot start.
std::unique_ptr<grpc::Server> StartGrpcServer(const std::string& listen,
                                              const std::shared_ptr<grpc::ServerCredentials>& creds, bool tls,
                                              const std::vector<grpc::Service*>& services,
                                              GrpcMetrics* grpc_metrics, int& port) {
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, creds, &port);
  // No SO_REUSEPORT: a second blklabd on a taken port must fail, not share
  // the port (and its clients) with the first.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Fleet servers ping every 30 s during a long cell (ComparisonManager).
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10'000);
  builder.SetMaxReceiveMessageSize(absl::GetFlag(FLAGS_max_receive_message_bytes));
  builder.SetMaxSendMessageSize(absl::GetFlag(FLAGS_max_send_message_bytes));
  for (grpc::Service* service : services) builder.RegisterService(service);
  if (grpc_metrics != nullptr) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(grpc_metrics->NewInterceptorFactory());
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    Log("error", "listen_failed",
        {{"listen", listen},
         {"error", tls ? "cannot start: the port is taken, or gRPC refused the TLS key and certificate (a key "
                         "that is not the certificate's, or a certificate that is not a valid X.509 one)"
                       : "cannot listen there (is the port taken? another blklabd?)"}});
    return nullptr;
  }
  return server;
}

// Takes SIGTERM, SIGINT or SIGHUP (blocked in every thread, see main) on a
// thread of its own and then stops serving: health NOT_SERVING, the job
// manager and the comparisons shut down, the server given
// --shutdown_grace_seconds for in-flight calls.
std::thread StartSignalThread(grpc::HealthCheckServiceInterface* health, JobManager& jobs,
                              ComparisonManager& comparisons, grpc::Server* server) {
  return std::thread([health, &jobs, &comparisons, server] {
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    int sig = 0;
    sigwait(&set, &sig);
    // SIGHUP (the terminal gone, or a supervisor's reload) is a clean stop
    // as SIGTERM is: blklabd has no configuration or log file to reopen.
    Log("info", "shutting_down", {{"signal", sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "SIGINT"}});
    health->SetServingStatus(false);
    jobs.Shutdown();         // ends watch streams, interrupts runs
    comparisons.Shutdown();  // cancels comparisons (their watches end) and waits for workers
    server->Shutdown(std::chrono::system_clock::now() +
                     std::chrono::seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds)));
  });
}

int Run() {
  const std::string listen = absl::GetFlag(FLAGS_listen);
  std::string data_dir = absl::GetFlag(FLAGS_data_dir);
  if (data_dir.empty()) data_dir = DefaultDataDir();

  std::string token;
  if (!ReadAuthToken(token)) return 2;
  if (!CheckListenFlags(listen)) return 2;
  const bool tls = !absl::GetFlag(FLAGS_tls_cert_file).empty() || !absl::GetFlag(FLAGS_tls_key_file).empty();
  if (!CheckRemoteAccess(listen, token, tls)) return 2;

  JobManagerOptions jm = JobManagerOptionsFromFlags();
  absl::StatusOr<std::unique_ptr<Store>> store = OpenStore(data_dir);
  if (!store.ok()) return 1;
  // Metrics: the job observer exists before the manager, the HTTP endpoint
  // after it (its gauges read the manager).
  const std::string metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  JobManager* jobs_ptr = nullptr;
  const ComparisonManager* comparisons_ptr = nullptr;
  Store* store_ptr = store->get();
  const JobMetricsOptions mo = JobMetricsOptionsFromFlags();
  auto job_metrics = std::make_shared<JobMetrics>(mo, [&jobs_ptr, &comparisons_ptr, store_ptr] {
    ServerGauges g;
    if (jobs_ptr != nullptr) {
      g.queued = jobs_ptr->queue().queued();
      g.running = jobs_ptr->queue().running();
      g.workers = jobs_ptr->workers();
    }
    if (absl::StatusOr<std::map<v1::Job::State, int64_t>> c = store_ptr->CountJobsByState(); c.ok()) {
      g.jobs_by_state = *std::move(c);
    }
    g.store_bytes = store_ptr->SizeBytes();
    if (comparisons_ptr != nullptr) g.comparisons = comparisons_ptr->Gauges(kMaxComparisonCellSeries);
    return g;
  });
  auto registry = std::make_shared<prometheus::Registry>();
  GrpcMetrics grpc_metrics(*registry, {"blklab.v1.JobService", "blklab.v1.HostService",
                                       "blklab.v1.ComparisonService", "grpc.health.v1.Health",
                                       "grpc.reflection.v1alpha.ServerReflection"});
  if (!metrics_listen.empty()) jm.observer = job_metrics.get();
  JobManager jobs(store->get(), jm);
  jobs_ptr = &jobs;
  RpcGate gate(token);
  HostServiceImpl host_service(store->get(), &jm.limits, &gate);
  JobServiceImpl job_service(store->get(), &jobs.queue(), &jm.limits, &gate, absl::GetFlag(FLAGS_max_streams));
  std::optional<ComparisonConfig> cc = ComparisonConfigFromFlags(&jobs.queue(), jm, token);
  if (!cc.has_value()) return 2;
  ComparisonManager comparisons(*cc);
  comparisons_ptr = &comparisons;
  ComparisonServiceImpl comparison_service(&comparisons, &gate, absl::GetFlag(FLAGS_max_streams));

  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> creds = ServerCredentialsFromFlags();
  if (!creds.ok()) return 2;

  int port = 0;
  std::unique_ptr<grpc::Server> server =
      StartGrpcServer(listen, *creds, tls, {&host_service, &job_service, &comparison_service},
                      metrics_listen.empty() ? nullptr : &grpc_metrics, port);
  if (server == nullptr) return 1;
  grpc::HealthCheckServiceInterface* health = server->GetHealthCheckService();
  for (const char* name : {"", "blklab.v1.JobService", "blklab.v1.HostService", "blklab.v1.ComparisonService"}) {
    health->SetServingStatus(name, true);
  }
  std::unique_ptr<MetricsServer> metrics_server;
  if (!metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> m = MetricsServer::Start(metrics_listen, job_metrics, registry);
    if (!m.ok()) {
      Log("error", "bad_flag", {{"flag", "metrics_listen"}, {"error", std::string(m.status().message())}});
      server->Shutdown();
      return 1;
    }
    metrics_server = *std::move(m);
  }
  if (absl::Status s = jobs.Start(); !s.ok()) {
    Log("error", "job_manager_start_failed", {{"error", std::string(s.message())}});
    server->Shutdown();
    return 1;
  }
  Log("info", "listening",
      {{"listen", listen},
       {"port", absl::StrCat(port)},
       {"metrics_port", metrics_server != nullptr ? absl::StrCat(metrics_server->port()) : "off"},
       {"data_dir", data_dir},
       {"auth", token.empty() ? "off" : "bearer"},
       {"tls", absl::GetFlag(FLAGS_tls_cert_file).empty() ? "off" : "on"},
       {"queued", absl::StrCat(jobs.queue().queued())}});

  // Signals are blocked in every thread (see main) and taken here.
  std::thread signals = StartSignalThread(health, jobs, comparisons, server.get());
  server->Wait();
  signals.join();
  server.reset();
  metrics_server.reset();
  store->reset();
  Log("info", "stopped");
  return 0;
}

}  // namespace
}  // namespace blklab::server

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "the blklab gRPC server (blklab.v1 HostService, JobService and ComparisonService, grpc.health.v1, "
      "reflection v1alpha).\nUsage: blklabd [--listen=127.0.0.1:50051] [--data_dir=DIR] [flags]");
  absl::ParseCommandLine(argc, argv);
  // Block SIGTERM/SIGINT/SIGHUP before any thread starts; one thread sigwaits.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return blklab::server::Run();
}
