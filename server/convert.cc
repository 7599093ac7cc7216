// Job preparation (convert.h): a job's limits clamped to the server's, a
// structured JobSpec as fio arguments, and a job's fio bundle (or comparison
// cell) checked and parsed into a RunRequest. Host specs are converted in
// convert_host.cc, results and snapshots in convert_result.cc, comparison
// bundles and cell figures in convert_comparison.cc.
#include "server/convert.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "engine/workload/value_syntax.h"
#include "server/proto_time.h"

namespace blklab::server {
namespace {

bool IsBundleName(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
      return false;
    }
  }
  return s != "." && s != "..";
}

bool IsVariableName(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  if (!(absl::ascii_isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

// fio options that would touch the real machine or talk to other fio
// processes; the server refuses them.
absl::Status CheckArg(const std::string& arg, int index) {
  static const char* const kRefused[] = {"--server", "--client", "--exec", "--output",
                                         "--daemonize", "--remote-config", "--trigger",
                                         "--idle-prof", "--inflate-log"};
  // fio takes its long options with one dash as well (-output=x).
  const std::string norm = absl::StartsWith(arg, "-") && !absl::StartsWith(arg, "--") ? "-" + arg : arg;
  for (const char* r : kRefused) {
    if (absl::StartsWith(norm, r) && !absl::StartsWith(norm, "--output-format")) {
      return absl::InvalidArgumentError(absl::StrCat("fio.args[", index, "]: ", arg,
                                                     ": not accepted by the server (results "
                                                     "and logs are returned in the job)"));
    }
  }
  if (arg == "-") {
    return absl::InvalidArgumentError(
        absl::StrCat("fio.args[", index, "]: the server has no standard input; name a bundle file"));
  }
  return absl::OkStatus();
}

}  // namespace

EffectiveLimits EffectiveJobLimits(const v1::JobLimits& job, const JobLimitsConfig& server) {
  EffectiveLimits out;
  out.host = server.host;
  auto clamp = [](auto requested, auto server_max) {
    using T = decltype(server_max);
    return requested > 0 ? std::min<T>(static_cast<T>(requested), server_max) : server_max;
  };
  out.host.max_cpus = clamp(job.max_cpus(), server.host.max_cpus);
  out.host.max_devices = clamp(job.max_devices(), server.host.max_devices);
  out.host.max_total_requests = clamp(job.max_total_requests(), server.host.max_total_requests);
  out.run.max_virtual_ns = clamp(DurationNs(job.max_virtual_time()), server.max_virtual_ns);
  out.run.max_ios = clamp(job.max_simulated_ios(), server.max_simulated_ios);
  out.max_wall_ns = clamp(DurationNs(job.max_wall_time()), server.max_wall_ns);
  return out;
}

absl::StatusOr<std::vector<std::string>> SpecToArgs(const v1::JobSpec& spec) {
  // fio's command-line form: global options before any --name, then each job
  // as --name=X followed by its options. Maps are emitted in name order so
  // the same spec always gives the same arguments.
  if (spec.jobs_size() == 0) return absl::InvalidArgumentError("spec.jobs: at least one job");
  if (spec.jobs_size() > 4096) {
    return absl::InvalidArgumentError(absl::StrCat("spec.jobs: ", spec.jobs_size(), " jobs, the limit is 4096"));
  }
  std::vector<std::string> args(spec.args().begin(), spec.args().end());
  auto option = [](const std::string& name, const std::string& value) {
    return value.empty() ? absl::StrCat("--", name) : absl::StrCat("--", name, "=", value);
  };
  auto sorted = [](const google::protobuf::Map<std::string, std::string>& m) {
    std::vector<std::pair<std::string, std::string>> v(m.begin(), m.end());
    std::sort(v.begin(), v.end());
    return v;
  };
  auto check_name = [](const std::string& name, const std::string& path) -> absl::Status {
    if (name.empty() || name.size() > 64 || name.find_first_of("= \t\n") != std::string::npos ||
        absl::StartsWith(name, "-")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": \"", name, "\" is not an option name"));
    }
    return absl::OkStatus();
  };
  for (const auto& [name, value] : sorted(spec.global_options())) {
    BLKLAB_RETURN_IF_ERROR(check_name(name, "spec.global_options"));
    if (name == "name") return absl::InvalidArgumentError("spec.global_options: `name` belongs to a job");
    args.push_back(option(name, value));
  }
  for (int i = 0; i < spec.jobs_size(); ++i) {
    const v1::StructuredJob& j = spec.jobs(i);
    const std::string path = absl::StrCat("spec.jobs[", i, "]");
    if (j.name().empty() || j.name().size() > 255 || absl::StrContains(j.name(), "\n")) {
      return absl::InvalidArgumentError(absl::StrCat(path, ".name: required, one line, at most 255 bytes"));
    }
    args.push_back(option("name", j.name()));
    auto str = [&](bool has, const char* name, const std::string& v) {
      if (has) args.push_back(option(name, v));
    };
    auto num = [&](bool has, const char* name, uint64_t v) {
      if (has) args.push_back(option(name, absl::StrCat(v)));
    };
    auto flag = [&](bool has, const char* name, bool v) {
      if (has) args.push_back(option(name, v ? "1" : "0"));
    };
    auto duration = [&](bool has, const char* name, const google::protobuf::Duration& d) {
      if (has) args.push_back(option(name, absl::StrCat(d.seconds() * 1000000 + d.nanos() / 1000, "us")));
    };
    str(j.has_rw(), "rw", j.rw());
    num(j.has_rwmixread(), "rwmixread", j.rwmixread());
    str(j.has_bs(), "bs", j.bs());
    str(j.has_ioengine(), "ioengine", j.ioengine());
    num(j.has_iodepth(), "iodepth", j.iodepth());
    num(j.has_iodepth_batch_submit(), "iodepth_batch_submit", j.iodepth_batch_submit());
    num(j.has_iodepth_batch_complete_min(), "iodepth_batch_complete_min", j.iodepth_batch_complete_min());
    str(j.has_filename(), "filename", j.filename());
    str(j.has_size(), "size", j.size());
    str(j.has_io_size(), "io_size", j.io_size());
    duration(j.has_runtime(), "runtime", j.runtime());
    flag(j.has_time_based(), "time_based", j.time_based());
    duration(j.has_ramp_time(), "ramp_time", j.ramp_time());
    num(j.has_numjobs(), "numjobs", j.numjobs());
    flag(j.has_group_reporting(), "group_reporting", j.group_reporting());
    str(j.has_cpus_allowed(), "cpus_allowed", j.cpus_allowed());
    str(j.has_cpus_allowed_policy(), "cpus_allowed_policy", j.cpus_allowed_policy());
    str(j.has_rate_iops(), "rate_iops", j.rate_iops());
    flag(j.has_norandommap(), "norandommap", j.norandommap());
    num(j.has_randseed(), "randseed", j.randseed());
    flag(j.has_direct(), "direct", j.direct());
    str(j.has_ioscheduler(), "ioscheduler", j.ioscheduler());
    for (const auto& [name, value] : sorted(j.options())) {
      BLKLAB_RETURN_IF_ERROR(check_name(name, path + ".options"));
      if (name == "name") return absl::InvalidArgumentError(path + ".options: use the `name` field");
      args.push_back(option(name, value));
    }
  }
  return args;
}

namespace {

// A comparison's cell as a job: the host and fio jobs `blklab compare`
// prepares for that cell from the comparison's bundle (the job's host spec
// is informative), within the job's limits.
absl::StatusOr<PreparedJob> PrepareComparisonCellJob(const v1::Job& job, const JobLimitsConfig& server) {
  const v1::ComparisonCellWork& work = job.comparison_cell();
  const v1::ComparisonBundle& bundle = work.bundle();
  const size_t total = BundleBytes(bundle);
  // Each cell's job stores the bundle: it is held to a job's bundle limit.
  if (total > server.max_bundle_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("comparison_cell.bundle: ", total,
                                                   " bytes of arguments, files and variables; a job's bundle limit is ",
                                                   server.max_bundle_bytes));
  }
  const compare::Inputs inputs = BundleInputs(&bundle);
  BLKLAB_ASSIGN_OR_RETURN(const compare::Comparison c, ParseComparisonBundle(bundle, inputs));
  const std::vector<compare::Cell> cells = compare::Cells(c);
  if (work.cell() < 0 || static_cast<size_t>(work.cell()) >= cells.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("comparison_cell.cell: ", work.cell(), " out of range [0, ", cells.size(), ")"));
  }
  PreparedJob out;
  out.limits = EffectiveJobLimits(job.limits(), server);
  BLKLAB_ASSIGN_OR_RETURN(
      out.request, compare::PrepareCell(c, cells[static_cast<size_t>(work.cell())], inputs,
                                        compare::CellLimits{out.limits.host, out.limits.run}));
  out.comparison_cell = true;
  out.request.status_interval_ns = kDefaultStatusIntervalNs;
  out.request.snapshot_interval_ns = int64_t{100'000'000};
  return out;
}

}  // namespace

absl::StatusOr<PreparedJob> PrepareJob(const v1::Job& job, const host::HostSpec& host,
                                       const JobLimitsConfig& server) {
  if (job.has_comparison_cell()) return PrepareComparisonCellJob(job, server);
  // A structured spec has no files or variables: only its arguments.
  const v1::FioBundle& bundle = job.fio();
  if (bundle.files_size() > static_cast<int>(server.max_bundle_files)) {
    return absl::InvalidArgumentError(absl::StrCat("fio.files: ", bundle.files_size(),
                                                   " files, the limit is ", server.max_bundle_files));
  }
  size_t total = 0;
  for (const auto& [name, text] : bundle.files()) {
    if (!IsBundleName(name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("fio.files[\"", name, "\"]: a file name must match [A-Za-z0-9._-]{1,128}"));
    }
    total += name.size() + text.size();
  }
  // Arguments and variables count too: they are stored with the job and
  // returned by every listing, as the files are.
  for (const std::string& a : bundle.args()) total += a.size();
  for (const auto& [name, value] : bundle.variables()) total += name.size() + value.size();
  if (total > server.max_bundle_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("fio: the bundle (files, args and variables) is ", total,
                                                   " bytes, the limit is ", server.max_bundle_bytes));
  }
  for (const auto& [name, value] : bundle.variables()) {
    if (!IsVariableName(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "fio.variables[\"", workload::QuoteForError(name), "\"]: a name must match [A-Za-z_][A-Za-z0-9_]{0,63}"));
    }
  }
  std::vector<std::string> args(bundle.args().begin(), bundle.args().end());
  if (job.has_spec()) {
    BLKLAB_ASSIGN_OR_RETURN(args, SpecToArgs(job.spec()));
  } else if (!job.has_fio()) {
    return absl::InvalidArgumentError("job: set fio (a job bundle) or spec (a structured JobSpec)");
  }
  if (args.empty()) return absl::InvalidArgumentError("fio.args: empty (name a job file or options)");
  for (size_t i = 0; i < args.size(); ++i) {
    if (absl::Status s = CheckArg(args[i], static_cast<int>(i)); !s.ok()) return s;
  }

  PreparedJob out;
  out.limits = EffectiveJobLimits(job.limits(), server);
  if (absl::Status s = host::ValidateHostSpec(host, out.limits.host); !s.ok()) return s;

  // Job files come from the bundle only: never the server's disk.
  const auto* files = &bundle.files();
  workload::FileReader reader = [files](const std::string& path) -> absl::StatusOr<std::string> {
    std::string key = path;
    while (absl::StartsWith(key, "./")) key = key.substr(2);
    auto it = files->find(key);
    if (it == files->end()) {
      return absl::NotFoundError(absl::StrCat("file '", path, "' is not in the job bundle"));
    }
    return it->second;
  };
  // ${VAR} from the bundle only: never the server's environment.
  const auto* vars = &bundle.variables();
  workload::VarLookup lookup = [vars](const std::string& name) -> std::optional<std::string> {
    auto it = vars->find(name);
    if (it == vars->end()) return std::nullopt;
    return it->second;
  };
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, host, reader, lookup);
  if (!parsed.ok()) {
    // A file missing from the bundle is the client's mistake.
    if (parsed.status().code() == absl::StatusCode::kNotFound) {
      return absl::InvalidArgumentError(parsed.status().message());
    }
    return parsed.status();
  }
  const workload::FioInvocation& inv = parsed->invocation;
  if (inv.parse_only || inv.version || inv.showcmd || inv.cmdhelp || inv.enghelp) {
    return absl::InvalidArgumentError(
        "fio.args: --parse-only, --version, --showcmd, --cmdhelp and --enghelp run nothing; "
        "a job must run");
  }
  out.request.host = host;
  out.request.jobs = std::move(parsed->jobs);
  out.request.seed = job.seed();
  out.request.collect_stacks = job.collect_stacks();
  out.realtime = job.pace() == v1::Job::REALTIME;
  if (job.has_report_time()) {
    const google::protobuf::Timestamp& t = job.report_time();
    if (t.seconds() < 0 || t.seconds() > 253402300799 || t.nanos() < 0 || t.nanos() > 999999999) {
      return absl::InvalidArgumentError("report_time: must be between 1970 and 9999");
    }
    out.report_time_ms = t.seconds() * 1000 + t.nanos() / 1000000;
  }
  out.request.limits = out.limits.run;
  // WatchJob intervals: fio's --status-interval, else 1 s of virtual time;
  // slices stay at most 100 ms (cancellation, pacing) and divide it. The
  // slice length does not change results.
  const int64_t status_ns =
      inv.status_interval_ns > 0 ? std::max(inv.status_interval_ns, kMinStatusIntervalNs) : kDefaultStatusIntervalNs;
  out.request.status_interval_ns = status_ns;
  out.request.snapshot_interval_ns = std::max(std::gcd(status_ns, int64_t{100'000'000}), kMinStatusIntervalNs);
  if (absl::Status s = ValidateRun(out.request); !s.ok()) return s;
  return out;
}

}  // namespace blklab::server
