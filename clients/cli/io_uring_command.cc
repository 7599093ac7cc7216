#include "clients/cli/io_uring_command.h"

#include <atomic>
#include <csignal>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "clients/cli/host_arg.h"
#include "engine/engine.h"
#include "engine/report/json.h"
#include "engine/report/report.h"
#include "engine/report/t_io_uring_writer.h"
#include "engine/workload/t_io_uring.h"
#include "engine/workload/value_syntax.h"

namespace blklab::cli {
namespace {

std::atomic<bool> g_interrupted{false};
void OnSigint(int) { g_interrupted.store(true); }

int IoUringFail(const std::string& message) {
  std::cerr << "blklab io_uring: " << message << "\n";
  return 1;
}

// The tid the startup line shows (a fixed, deterministic number per thread).
int Tid(int index) { return 1001 + index; }

report::Json SecondsJson(const std::vector<IoUringSecond>& seconds, int bs) {
  report::Json a = report::Json::Array();
  for (const IoUringSecond& s : seconds) {
    report::Json o = report::Json::Object();
    o.AddUint("iops", s.done);
    o.AddUint("calls", s.calls);
    o.AddUint("reaps", s.reaps);
    o.AddUint("bw_bytes", s.done * static_cast<uint64_t>(bs));
    a.Push(std::move(o));
  }
  return a;
}

// The tool's result as JSON (--output-format=json), with blklab's section.
report::Json ResultJson(const IoUringResult& result, const workload::TioUringSpec& spec, uint64_t max_iops) {
  report::Json root = report::Json::Object();
  root.Add("tool", "t/io_uring");
  root.AddDouble("iops", TioUringMeanIops(result, spec));
  root.AddUint("max_iops", max_iops);
  root.AddInt("bs", spec.bs);
  root.AddInt("depth", spec.depth);
  root.Add("exit", result.interrupted ? "signal" : "timeout");
  root.Add("seconds", SecondsJson(result.seconds, spec.bs));
  report::Json threads = report::Json::Array();
  for (size_t t = 0; t < result.thread_files.size(); ++t) {
    report::Json o = report::Json::Object();
    o.AddInt("submitter", static_cast<int64_t>(t));
    o.AddInt("cpu", result.thread_cpus[t]);
    o.Add("file", result.thread_files[t]);
    threads.Push(std::move(o));
  }
  root.Add("threads", std::move(threads));
  root.Add("blklab", report::KernelReportJson(result.kernel));
  return root;
}

}  // namespace

int RunIoUringCommand(const std::vector<std::string>& all_args) {
  std::string host_arg = DefaultHostArg();
  std::string format = "normal";
  int perf_top = 0;
  IoUringRunRequest req;
  std::vector<std::string> args;
  for (const std::string& a : all_args) {
    if (absl::StartsWith(a, "--host=")) {
      host_arg = a.substr(7);
    } else if (absl::StartsWith(a, "--cpus=")) {
      absl::StatusOr<std::vector<uint32_t>> cpus = workload::ParseCpuList(a.substr(7));
      if (!cpus.ok() || cpus->empty()) return IoUringFail("--cpus: not a CPU list: " + a.substr(7));
      req.cpus = *std::move(cpus);
    } else if (absl::StartsWith(a, "--seed=")) {
      if (!absl::SimpleAtoi(a.substr(7), &req.seed)) return IoUringFail("--seed: not an unsigned integer: " + a.substr(7));
    } else if (absl::StartsWith(a, "--output-format=")) {
      format = a.substr(16);
      if (format != "normal" && format != "json") return IoUringFail("--output-format: normal or json, got " + format);
    } else if (a == "--perf-top") {
      perf_top = 25;
    } else if (absl::StartsWith(a, "--perf-top=")) {
      if (!absl::SimpleAtoi(a.substr(11), &perf_top) || perf_top <= 0) {
        return IoUringFail("--perf-top: not a positive integer: " + a.substr(11));
      }
    } else {
      args.push_back(a);
    }
  }
  absl::StatusOr<workload::TioUringArgs> parsed = workload::ParseTioUringArgs(args);
  if (!parsed.ok()) {
    std::cout << parsed.status().message();
    return 1;
  }
  if (parsed->show_usage) {
    std::cerr << parsed->stderr_text;
    std::cout << workload::TioUringUsage("t/io_uring", parsed->spec);
    return parsed->exit_code;
  }
  absl::StatusOr<host::HostSpec> host = LoadHost(host_arg);
  if (!host.ok()) return IoUringFail(std::string(host.status().message()));
  req.host = *host;
  req.spec = parsed->spec;
  const workload::TioUringSpec& spec = req.spec;
  const bool text = format == "normal";

  // The aio mode turns off what aio cannot do, and says so.
  std::cerr << workload::TioUringApplyAioLimits(req.spec);

  g_interrupted.store(false);
  std::signal(SIGINT, OnSigint);
  const std::string engine = spec.aio ? "aio" : spec.use_sync ? "preadv2" : "io_uring";
  uint64_t max_iops = 0;
  size_t seconds = 0;
  // The per-second lines print as the seconds complete; the tool's last
  // second (-rN) is never printed.
  auto on_second = [&](const IoUringSecond& s) {
    if (!TioUringPrintsSecond(seconds++, spec)) return;
    max_iops = std::max<uint64_t>(max_iops, s.done);
    if (!text) return;
    std::cout << report::TioUringSecondLine({s.done, s.calls, s.reaps}, spec.bs, spec.nop);
    std::cout.flush();
  };
  // The startup lines, once the files are open: the submitters' files as
  // the tool deals them.
  auto on_start = [&]() {
    if (!text) return;
    const std::vector<std::vector<int>> files = workload::TioUringThreadFiles(spec);
    for (size_t t = 0; t < files.size(); ++t) {
      const std::string file = files[t].empty() ? "(null)" : spec.files[files[t].back()];
      std::cout << report::TioUringSubmitterLine(static_cast<int>(t), Tid(static_cast<int>(t)), file);
      if (t == 0) {
        std::cout << report::TioUringSetupLines(req.spec.polled, req.spec.fixedbufs, req.spec.dma_map,
                                                req.spec.register_files, req.spec.buffered, req.spec.depth, engine);
      }
    }
    std::cout.flush();
  };
  absl::StatusOr<IoUringResult> result = RunIoUring(req, on_start, on_second, &g_interrupted);
  std::signal(SIGINT, SIG_DFL);
  if (!result.ok()) {
    if (result.status().code() == absl::StatusCode::kFailedPrecondition) {
      // The tool's own failure lines (e.g. polled IO on a device without
      // poll queues): it stops without the "Exiting" lines.
      std::cout << result.status().message() << "\n";
      return 0;
    }
    return IoUringFail(std::string(result.status().message()));
  }
  if (text) {
    std::cout << (result->interrupted ? "Exiting on signal\n" : "Exiting on timeout\n");
    std::cout << "Maximum IOPS=" << report::TioUringIops(max_iops) << "\n";
    if (spec.stats) {
      for (size_t t = 0; t < result->latency.size(); ++t) {
        std::cout << report::TioUringLatency(Tid(static_cast<int>(t)), result->latency[t]);
      }
    }
    std::cout << "\n" << report::WriteKernelSections(result->kernel);
    if (perf_top > 0) std::cout << report::WritePerfTop(result->kernel, perf_top);
    return 0;
  }
  std::cout << ResultJson(*result, spec, max_iops).Print() << "\n";
  return 0;
}

}  // namespace blklab::cli
