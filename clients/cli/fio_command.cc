#include "clients/cli/fio_command.h"

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <sstream>
#include <sys/time.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "engine/engine.h"
#include "engine/host/presets.h"
#include "engine/report/report.h"

namespace blklab::cli {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Wall-clock fields of fio's output. SOURCE_DATE_EPOCH (the reproducible
// builds convention) pins them, so whole outputs can be compared byte for byte.
WallClock Now() {
  WallClock c;
  int64_t ms;
  const char* epoch = std::getenv("SOURCE_DATE_EPOCH");
  int64_t fixed = 0;
  if (epoch != nullptr && absl::SimpleAtoi(epoch, &fixed)) {
    ms = fixed * 1000;
  } else {
    struct timeval tv;
    gettimeofday(&tv, nullptr);
    ms = static_cast<int64_t>(tv.tv_sec) * 1000 + tv.tv_usec / 1000;
  }
  c.timestamp_sec = ms / 1000;
  c.timestamp_ms = ms;
  time_t t = static_cast<time_t>(c.timestamp_sec);
  struct tm tm;
  localtime_r(&t, &tm);
  char buf[64];
  strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm);
  c.time_string = buf;
  return c;
}

int Fail(const absl::Status& s) {
  std::cerr << "blklab fio: " << s.message() << "\n";
  return 1;
}

}  // namespace

int RunFioCommand(const std::vector<std::string>& all_args) {
  std::string host_arg(host::kDefaultPresetName);
  uint64_t seed = 0;
  int perf_top = 0;
  std::vector<std::string> args;
  for (const std::string& a : all_args) {
    if (absl::StartsWith(a, "--host=")) {
      host_arg = a.substr(7);
    } else if (absl::StartsWith(a, "--seed=")) {
      if (!absl::SimpleAtoi(a.substr(7), &seed)) {
        return Fail(absl::InvalidArgumentError("--seed: not an unsigned integer: " + a.substr(7)));
      }
    } else if (a == "--perf-top") {
      perf_top = 25;
    } else if (absl::StartsWith(a, "--perf-top=")) {
      if (!absl::SimpleAtoi(a.substr(11), &perf_top) || perf_top <= 0) {
        return Fail(absl::InvalidArgumentError("--perf-top: not a positive integer: " + a.substr(11)));
      }
    } else {
      args.push_back(a);
    }
  }

  // The host: a preset name, or a spec file.
  absl::StatusOr<host::HostSpec> host = host::GetPreset(host_arg);
  if (!host.ok()) {
    absl::StatusOr<std::string> text = ReadFile(host_arg);
    if (!text.ok()) {
      return Fail(absl::InvalidArgumentError("--host=" + host_arg +
                                             ": neither a preset nor a readable file (" +
                                             std::string(host.status().message()) + ")"));
    }
    host = host::ParseHostSpec(*text);
    if (!host.ok()) return Fail(absl::InvalidArgumentError(host_arg + ": " + std::string(host.status().message())));
  }

  // Locally, job files come from disk and ${VAR} from the environment, as with fio.
  auto read_file = [](const std::string& path) { return ReadFile(path); };
  auto lookup = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, *host, read_file, lookup);
  if (!parsed.ok()) return Fail(parsed.status());
  const workload::FioInvocation& inv = parsed->invocation;
  if (inv.version) {
    std::cout << "fio-3.33\n";
    return 0;
  }
  for (const std::string& w : parsed->jobs.warnings) std::cerr << "blklab fio: warning: " << w << "\n";
  if (inv.parse_only) return 0;

  RunRequest req;
  req.host = *host;
  req.jobs = parsed->jobs;
  req.seed = seed;
  absl::StatusOr<RunResult> run = RunFio(req);
  if (!run.ok()) return Fail(run.status());

  report::OutputFormats formats;
  for (workload::OutputFormat f : inv.output_formats) {
    switch (f) {
      case workload::OutputFormat::kNormal:
        formats.normal = true;
        break;
      case workload::OutputFormat::kTerse:
        formats.terse = true;
        break;
      case workload::OutputFormat::kJson:
        formats.json = true;
        break;
      case workload::OutputFormat::kJsonPlus:
        formats.json_plus = true;
        break;
    }
  }
  report::ReportInput input = BuildReport(req, *run, Now(), /*with_kernel_report=*/true);
  std::string out = report::WriteReport(input, formats);
  if (perf_top > 0) out += report::WritePerfTop(run->kernel, perf_top);
  if (!inv.output.empty()) {
    std::ofstream f(inv.output, std::ios::binary | std::ios::trunc);
    if (!f) return Fail(absl::InvalidArgumentError("--output: cannot write " + inv.output));
    f << out;
  } else {
    std::cout << out;
  }
  return 0;
}

}  // namespace blklab::cli
