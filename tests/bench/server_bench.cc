// server_bench: load on blklabd over loopback gRPC.
//
// Starts a blklabd on 127.0.0.1 (a free port, a temporary data directory),
// or uses the one given by --server, then:
//
//  1. Creation load: --threads client threads (sync stubs, spread over 8
//     connections) for --seconds each do CreateJob of a tiny job (fio's null
//     engine, one 4 KiB IO) then GetJob (BASIC view) of the job just made:
//     first back to back (closed loop: the throughput ceiling; latency is
//     then threads / throughput by Little's law), then paced so that all
//     threads together start --rate creations per second (latency at that
//     load, counted from each call's scheduled start). Reported: successful
//     creations per second, p50 / p99 latency of both calls in ms, failures
//     by status code, and how fast the workers ran the jobs (the queue is
//     drained before the next phase).
//  2. Watch streams: --watch_jobs long REALTIME-paced jobs (rate-limited
//     null engine, 1 s status intervals), then up to --streams WatchJob
//     streams on them through the callback API (no thread per stream).
//     After --hold_seconds it counts the streams still open and those that
//     received a snapshot: the streams held concurrently. The jobs are
//     then cancelled, which ends every stream with its final snapshot.
//
// The targets are printed with MET / NOT MET: >= 500 creations/s
// with CreateJob p99 < 20 ms (judged on the paced run), and >= 1000
// concurrent watch streams.
//
// Bounded: every RPC has a deadline, each phase a time limit; loopback only
// (--server must be a 127.* / localhost / [::1] address). A server it started
// is stopped with SIGTERM (SIGKILL after 20 s) and its data directory removed.
//
// Usage: server_bench [--server=127.0.0.1:PORT] [--blklabd=PATH] [--threads=100]
//                     [--seconds=10] [--rate=500] [--streams=1200] [--watch_jobs=2]
//                     [--hold_seconds=5] [--workers=2]
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "blklab/v1/service.grpc.pb.h"

#ifndef BLKLAB_BLKLABD_PATH
#define BLKLAB_BLKLABD_PATH ""
#endif

ABSL_FLAG(std::string, server, "", "Address of a running blklabd (loopback only); empty: start one.");
ABSL_FLAG(std::string, blklabd, BLKLAB_BLKLABD_PATH, "The blklabd binary to start.");
ABSL_FLAG(int, threads, 100, "Client threads of the creation phase.");
ABSL_FLAG(double, seconds, 10, "Length of the creation phase, wall seconds.");
ABSL_FLAG(double, rate, 500, "Creations per second of the paced run (all threads together); <= 0: none.");
ABSL_FLAG(int, streams, 1200, "WatchJob streams to open.");
ABSL_FLAG(int, watch_jobs, 2, "Long running jobs the streams watch (at most the server's workers, so all run).");
ABSL_FLAG(double, hold_seconds, 5, "How long the streams are held before they are counted.");
ABSL_FLAG(int, workers, 2, "--workers of a blklabd the bench starts.");

namespace {

namespace v1 = blklab::v1;
using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(p / 100.0 * static_cast<double>(v.size()));
  return v[std::min(i, v.size() - 1)];
}

bool IsLoopback(const std::string& addr) {
  return absl::StartsWith(addr, "127.") || absl::StartsWith(addr, "localhost:") ||
         absl::StartsWith(addr, "[::1]:");
}

// A blklabd child process on a free loopback port.
class ServerProcess {
 public:
  ~ServerProcess() { Stop(); }

  bool Start(const std::string& binary, int workers, int max_streams) {
    char tmpl[] = "/tmp/server_bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return false;
    dir_ = tmpl;
    const std::string log = dir_ + "/blklabd.log";
    std::vector<std::string> args = {binary,
                                     "--listen=127.0.0.1:0",
                                     "--data_dir=" + dir_ + "/data",
                                     absl::StrCat("--workers=", workers),
                                     absl::StrCat("--max_streams=", max_streams),
                                     "--max_queued_jobs=100000"};
    pid_ = fork();
    if (pid_ < 0) return false;
    if (pid_ == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      if (fd >= 0) {
        dup2(fd, 2);
        dup2(fd, 1);
      }
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    const std::regex re("event=listening .* port=([0-9]+)");
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      std::ifstream in(log);
      std::stringstream ss;
      ss << in.rdbuf();
      const std::string text = ss.str();
      std::smatch m;
      if (std::regex_search(text, m, re)) {
        address_ = "127.0.0.1:" + m[1].str();
        return true;
      }
      int status;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        std::fprintf(stderr, "server_bench: blklabd exited: %s\n", text.c_str());
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  void Stop() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      const Clock::time_point deadline = Clock::now() + std::chrono::seconds(20);
      int status;
      while (waitpid(pid_, &status, WNOHANG) == 0) {
        if (Clock::now() > deadline) {
          kill(pid_, SIGKILL);
          waitpid(pid_, &status, 0);
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      pid_ = -1;
    }
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
      dir_.clear();
    }
  }

  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::string address_;
};

std::vector<std::shared_ptr<grpc::Channel>> Channels(const std::string& addr, int n) {
  std::vector<std::shared_ptr<grpc::Channel>> out;
  for (int i = 0; i < n; ++i) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection each
    out.push_back(grpc::CreateCustomChannel(addr, grpc::InsecureChannelCredentials(), args));
  }
  return out;
}

void SetDeadline(grpc::ClientContext* ctx, double seconds) {
  ctx->set_deadline(std::chrono::system_clock::now() +
                    std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6)));
}

// ---------------------------------------------------------------------------
// Phase 1: creations.

struct CreateStats {
  std::vector<double> create_ms, get_ms;
  uint64_t create_ok = 0, get_ok = 0;
  std::map<std::string, uint64_t> failures;  // "CreateJob RESOURCE_EXHAUSTED" -> n
  std::string last_job;                      // the newest job this thread made
  Clock::time_point last_at{};
  void Add(const CreateStats& o) {
    create_ms.insert(create_ms.end(), o.create_ms.begin(), o.create_ms.end());
    get_ms.insert(get_ms.end(), o.get_ms.begin(), o.get_ms.end());
    create_ok += o.create_ok;
    get_ok += o.get_ok;
    for (const auto& [k, n] : o.failures) failures[k] += n;
  }
};

const char* CodeName(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::OK: return "OK";
    case grpc::StatusCode::CANCELLED: return "CANCELLED";
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED: return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::INTERNAL: return "INTERNAL";
    case grpc::StatusCode::UNIMPLEMENTED: return "UNIMPLEMENTED";
    default: return "OTHER";
  }
}

v1::CreateJobRequest TinyJob() {
  v1::CreateJobRequest req;
  v1::Job* job = req.mutable_job();
  job->set_preset("default");
  for (const char* a : {"--name=tiny", "--ioengine=null", "--rw=read", "--bs=4k", "--size=4k",
                        "--number_ios=1"}) {
    job->mutable_fio()->add_args(a);
  }
  return req;
}

// rate <= 0: each thread calls back to back (closed loop, the throughput
// ceiling). rate > 0: the threads together start `rate` creations per second
// on a fixed schedule, and latency counts from the scheduled start (a late
// call's wait is included: no coordinated omission).
CreateStats RunCreations(const std::vector<std::shared_ptr<grpc::Channel>>& channels, int threads,
                         double seconds, double rate, double* elapsed_s, std::string* last_job) {
  const v1::CreateJobRequest tiny = TinyJob();
  std::vector<CreateStats> per_thread(threads);
  std::vector<std::thread> pool;
  const Clock::time_point start = Clock::now();
  const Clock::time_point end = start + std::chrono::microseconds(static_cast<int64_t>(seconds * 1e6));
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      std::unique_ptr<v1::JobService::Stub> stub = v1::JobService::NewStub(channels[t % channels.size()]);
      CreateStats& st = per_thread[t];
      const double period_s = rate > 0 ? threads / rate : 0;
      Clock::time_point next =
          start + std::chrono::microseconds(static_cast<int64_t>(period_s * 1e6 * t / threads));
      while (Clock::now() < end) {
        v1::Job job;
        Clock::time_point t0 = Clock::now();
        if (rate > 0) {
          if (next >= end) break;
          std::this_thread::sleep_until(next);
          t0 = next;
          next += std::chrono::microseconds(static_cast<int64_t>(period_s * 1e6));
        }
        {
          grpc::ClientContext ctx;
          SetDeadline(&ctx, 5);
          const grpc::Status s = stub->CreateJob(&ctx, tiny, &job);
          if (!s.ok()) {
            ++st.failures[absl::StrCat("CreateJob ", CodeName(s.error_code()))];
            if (s.error_code() == grpc::StatusCode::UNAVAILABLE) {
              std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
            continue;
          }
          st.create_ms.push_back(MsSince(t0));
          ++st.create_ok;
          st.last_job = job.name();
          st.last_at = Clock::now();
        }
        grpc::ClientContext ctx;
        SetDeadline(&ctx, 5);
        v1::GetJobRequest get;
        get.set_name(job.name());
        get.set_view(v1::JOB_VIEW_BASIC);
        v1::Job got;
        const Clock::time_point g0 = Clock::now();
        const grpc::Status s = stub->GetJob(&ctx, get, &got);
        if (!s.ok()) {
          ++st.failures[absl::StrCat("GetJob ", CodeName(s.error_code()))];
          continue;
        }
        st.get_ms.push_back(MsSince(g0));
        ++st.get_ok;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  *elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  CreateStats all;
  Clock::time_point last_at{};
  for (const CreateStats& s : per_thread) {
    all.Add(s);
    if (!s.last_job.empty() && s.last_at > last_at) {
      last_at = s.last_at;
      *last_job = s.last_job;
    }
  }
  return all;
}

// Waits (at most `timeout_s`) until job `name` is in one of `states`;
// returns the seconds waited, or -1 on timeout.
double WaitForState(v1::JobService::Stub* stub, const std::string& name,
                    std::initializer_list<v1::Job::State> states, double timeout_s) {
  const Clock::time_point t0 = Clock::now();
  const Clock::time_point deadline = t0 + std::chrono::microseconds(static_cast<int64_t>(timeout_s * 1e6));
  while (Clock::now() < deadline) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, 5);
    v1::GetJobRequest req;
    req.set_name(name);
    req.set_view(v1::JOB_VIEW_BASIC);
    v1::Job job;
    if (stub->GetJob(&ctx, req, &job).ok() &&
        std::find(states.begin(), states.end(), job.state()) != states.end()) {
      return std::chrono::duration<double>(Clock::now() - t0).count();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

// ---------------------------------------------------------------------------
// Phase 2: watch streams.

struct StreamCounters {
  std::atomic<int> open{0};          // started, OnDone not yet called
  std::atomic<int> got_snapshot{0};  // received at least one snapshot
  std::atomic<uint64_t> messages{0};
  std::mutex mu;
  std::map<std::string, int> ended;  // status code -> streams
};

class WatchStream final : public grpc::ClientReadReactor<v1::Snapshot> {
 public:
  WatchStream(v1::JobService::Stub* stub, const std::string& job, double deadline_s, StreamCounters* c)
      : c_(c) {
    req_.set_name(job);
    SetDeadline(&ctx_, deadline_s);
    c_->open.fetch_add(1);
    stub->async()->WatchJob(&ctx_, &req_, this);
    StartRead(&snap_);
    StartCall();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;  // OnDone follows
    if (!got_) {
      got_ = true;
      c_->got_snapshot.fetch_add(1);
    }
    c_->messages.fetch_add(1);
    StartRead(&snap_);
  }
  void OnDone(const grpc::Status& s) override {
    {
      std::lock_guard<std::mutex> lock(c_->mu);
      ++c_->ended[CodeName(s.error_code())];
    }
    if (got_) c_->got_snapshot.fetch_sub(1);
    c_->open.fetch_sub(1);
    done_.store(true);
  }
  void Cancel() { ctx_.TryCancel(); }
  bool done() const { return done_.load(); }

 private:
  StreamCounters* const c_;
  grpc::ClientContext ctx_;
  v1::WatchJobRequest req_;
  v1::Snapshot snap_;
  bool got_ = false;  // touched by the reactor's callbacks only (serialised)
  std::atomic<bool> done_{false};
};

struct StreamResult {
  int opened = 0;
  int held = 0;         // open and fed with snapshots at the count
  int open_at_count = 0;
  double open_s = 0;    // wall time to start them all
  std::map<std::string, int> ended;
  uint64_t messages = 0;
  std::string note;
};

StreamResult RunStreams(const std::vector<std::shared_ptr<grpc::Channel>>& channels, int streams,
                        int watch_jobs, double hold_s) {
  StreamResult r;
  std::unique_ptr<v1::JobService::Stub> control = v1::JobService::NewStub(channels[0]);
  // Long jobs, paced at one virtual second per wall second, cheap to
  // simulate (a rate-limited null engine), one snapshot per second.
  std::vector<std::string> jobs;
  for (int i = 0; i < watch_jobs; ++i) {
    v1::CreateJobRequest req;
    v1::Job* job = req.mutable_job();
    job->set_preset("default");
    job->set_pace(v1::Job::REALTIME);
    for (const char* a : {"--name=watched", "--ioengine=null", "--rw=randread", "--bs=4k", "--size=1g",
                          "--rate_iops=1000", "--time_based=1", "--runtime=120s"}) {
      job->mutable_fio()->add_args(a);
    }
    grpc::ClientContext ctx;
    SetDeadline(&ctx, 10);
    v1::Job out;
    const grpc::Status s = control->CreateJob(&ctx, req, &out);
    if (!s.ok()) {
      r.note = absl::StrCat("CreateJob of a watched job failed: ", CodeName(s.error_code()), " ",
                            s.error_message());
      return r;
    }
    jobs.push_back(out.name());
  }
  for (const std::string& name : jobs) {
    if (WaitForState(control.get(), name, {v1::Job::RUNNING}, 60) < 0) {
      r.note = name + " did not start running within 60 s";
    }
  }
  std::vector<std::unique_ptr<v1::JobService::Stub>> stubs;
  for (const auto& ch : channels) stubs.push_back(v1::JobService::NewStub(ch));
  StreamCounters c;
  std::vector<std::unique_ptr<WatchStream>> all;
  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < streams; ++i) {
    all.push_back(std::make_unique<WatchStream>(stubs[i % stubs.size()].get(), jobs[i % jobs.size()],
                                                hold_s + 60, &c));
  }
  r.opened = streams;
  r.open_s = std::chrono::duration<double>(Clock::now() - t0).count();
  // Hold them; every running job sends one snapshot per second.
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int64_t>(hold_s * 1e6)));
  r.open_at_count = c.open.load();
  r.held = c.got_snapshot.load();
  r.messages = c.messages.load();

  // End: cancel the jobs (each stream gets its final snapshot), then cancel
  // whatever is still open.
  for (const std::string& name : jobs) {
    grpc::ClientContext ctx;
    SetDeadline(&ctx, 10);
    v1::CancelJobRequest req;
    req.set_name(name);
    v1::Job out;
    control->CancelJob(&ctx, req, &out);
  }
  Clock::time_point deadline = Clock::now() + std::chrono::seconds(15);
  while (c.open.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& s : all) {
    if (!s->done()) s->Cancel();
  }
  deadline = Clock::now() + std::chrono::seconds(15);
  while (c.open.load() > 0 && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (c.open.load() > 0) {
    r.note = absl::StrCat(c.open.load(), " stream(s) did not end; leaked");
    for (auto& s : all) {
      if (!s->done()) s.release();  // its reactor may still be called
    }
  }
  std::lock_guard<std::mutex> lock(c.mu);
  r.ended = c.ended;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("load benchmark of blklabd over loopback gRPC");
  absl::ParseCommandLine(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  const int threads = std::max(1, absl::GetFlag(FLAGS_threads));
  const double seconds = std::clamp(absl::GetFlag(FLAGS_seconds), 0.1, 600.0);
  const int streams = std::clamp(absl::GetFlag(FLAGS_streams), 0, 20000);
  const int watch_jobs = std::max(1, absl::GetFlag(FLAGS_watch_jobs));
  const double hold_s = std::clamp(absl::GetFlag(FLAGS_hold_seconds), 0.5, 120.0);

  ServerProcess server;
  std::string addr = absl::GetFlag(FLAGS_server);
  if (addr.empty()) {
    const std::string binary = absl::GetFlag(FLAGS_blklabd);
    if (binary.empty() || !server.Start(binary, absl::GetFlag(FLAGS_workers), streams + 100)) {
      std::fprintf(stderr, "server_bench: cannot start blklabd (%s)\n", binary.c_str());
      return 1;
    }
    addr = server.address();
    std::printf("server_bench: started blklabd on %s (--workers=%d)\n", addr.c_str(), absl::GetFlag(FLAGS_workers));
  } else if (!IsLoopback(addr)) {
    std::fprintf(stderr, "server_bench: --server must be a loopback address\n");
    return 2;
  }

  const std::vector<std::shared_ptr<grpc::Channel>> channels = Channels(addr, 8);
  for (const auto& ch : channels) {
    if (!ch->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(10))) {
      std::fprintf(stderr, "server_bench: cannot connect to %s\n", addr.c_str());
      return 1;
    }
  }

  std::unique_ptr<v1::JobService::Stub> control = v1::JobService::NewStub(channels[0]);
  // Closed loop (throughput ceiling), then paced at --rate (latency at the
  // target load). After each, the server's queue drains before going on.
  double paced_rate = 0, paced_p99 = 0;
  for (const double rate : {0.0, absl::GetFlag(FLAGS_rate)}) {
    double elapsed = 0;
    std::string last_job;
    CreateStats cs = RunCreations(channels, threads, seconds, rate, &elapsed, &last_job);
    const double achieved = static_cast<double>(cs.create_ok) / elapsed;
    const double c50 = Percentile(cs.create_ms, 50), c99 = Percentile(cs.create_ms, 99);
    const double g50 = Percentile(cs.get_ms, 50), g99 = Percentile(cs.get_ms, 99);
    if (rate > 0) {
      std::printf("creations paced at %.0f/s: %d threads x %.1f s: %llu CreateJob ok = %.0f creations/s\n", rate,
                  threads, elapsed, static_cast<unsigned long long>(cs.create_ok), achieved);
      paced_rate = achieved;
      paced_p99 = c99;
    } else {
      std::printf("creations closed loop: %d threads x %.1f s: %llu CreateJob ok = %.0f creations/s\n", threads,
                  elapsed, static_cast<unsigned long long>(cs.create_ok), achieved);
    }
    std::printf("  CreateJob latency ms: p50 %.2f  p99 %.2f\n", c50, c99);
    std::printf("  GetJob (BASIC) latency ms: p50 %.2f  p99 %.2f  (%llu ok)\n", g50, g99,
                static_cast<unsigned long long>(cs.get_ok));
    for (const auto& [what, n] : cs.failures) {
      std::printf("  failed: %s x %llu\n", what.c_str(), static_cast<unsigned long long>(n));
    }
    if (!last_job.empty()) {
      const double drain = WaitForState(control.get(), last_job,
                                        {v1::Job::SUCCEEDED, v1::Job::FAILED, v1::Job::CANCELLED}, 120);
      if (drain < 0) {
        std::printf("  the job queue did not drain within 120 s\n");
      } else {
        std::printf("  all jobs ran %.1f s after the last creation: %.0f jobs run/s\n", drain,
                    static_cast<double>(cs.create_ok) / (elapsed + drain));
      }
    }
    if (rate == 0 && absl::GetFlag(FLAGS_rate) <= 0) break;
  }

  StreamResult sr;
  if (streams > 0) {
    sr = RunStreams(channels, streams, watch_jobs, hold_s);
    std::printf("watch streams: opened %d in %.2f s on %d job(s); after %.1f s: %d open, %d held "
                "(open and fed with snapshots); %llu snapshots received\n",
                sr.opened, sr.open_s, watch_jobs, hold_s, sr.open_at_count, sr.held,
                static_cast<unsigned long long>(sr.messages));
    std::string ended;
    for (const auto& [code, n] : sr.ended) absl::StrAppend(&ended, " ", code, " x ", n);
    std::printf("  streams ended:%s\n", ended.c_str());
    if (!sr.note.empty()) std::printf("  note: %s\n", sr.note.c_str());
  }

  const bool create_met = paced_rate >= 500 * 0.99 && paced_p99 < 20;
  const bool streams_met = sr.held >= 1000;
  std::printf("target >= 500 creations/s with CreateJob p99 < 20 ms: %s (paced run: %.0f/s, p99 %.2f ms)\n",
              create_met ? "MET" : "NOT MET", paced_rate, paced_p99);
  if (streams > 0) {
    std::printf("target >= 1000 concurrent watch streams: %s (%d held)\n", streams_met ? "MET" : "NOT MET",
                sr.held);
  }
  server.Stop();
  return 0;
}
