#include "clients/cli/fio_command.h"

#include "clients/cli/host_arg.h"
#include "clients/cli/run_signals.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/engine.h"
#include "engine/util/file.h"
#include "engine/util/status_macros.h"
#include "engine/wall_clock.h"
#include "engine/host/auto_host.h"
#include "engine/host/presets.h"
#include "engine/report/flame_graph.h"
#include "engine/report/num2str.h"
#include "engine/report/report.h"
#include "engine/workload/option_help.h"
#include "engine/workload/value_syntax.h"
#include "engine/workload/show_cmd.h"

namespace blklab::cli {
namespace {

int FioFail(const absl::Status& s) {
  std::cerr << "blklab fio: " << s.message() << "\n";
  return 1;
}

// fio's condensed run string: "rr_" -> "r(2),_(1)".
std::string CondenseRunStates(const std::string& states) {
  std::string out;
  for (size_t i = 0; i < states.size();) {
    size_t j = i;
    while (j < states.size() && states[j] == states[i]) ++j;
    if (!out.empty()) out += ',';
    absl::StrAppend(&out, std::string(1, states[i]), "(", j - i, ")");
    i = j;
  }
  return out;
}

// Says once, on stderr, that a run will take long in wall time: at the
// first snapshot past one simulated second or two seconds of wall time, the
// wall time per simulated second so far times the virtual time left (the
// engine's ETA). Silent for runs expected to end within kQuietSec.
class LongRunNotice {
 public:
  LongRunNotice(std::ostream& err, bool enabled)
      : err_(err), start_(std::chrono::steady_clock::now()), done_(!enabled) {}
  void Observe(const Snapshot& snap) {
    if (done_ || snap.virtual_ns <= 0) return;
    const double wall_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (snap.virtual_ns < 1'000'000'000 && wall_s < 2.0) return;
    done_ = true;
    if (snap.eta_ns <= 0) return;
    const double per_sim_s = wall_s / (static_cast<double>(snap.virtual_ns) / 1e9);
    const double left_s = per_sim_s * static_cast<double>(snap.eta_ns) / 1e9;
    if (left_s < kQuietSec) return;
    err_ << absl::StrFormat(
                "blklab: %.1f s of virtual time left at %.1f s of wall time per simulated second: about %s "
                "more (Ctrl-C stops the run and reports what ran; --runtime= shortens it)\n",
                static_cast<double>(snap.eta_ns) / 1e9, per_sim_s,
                FioEtaString(static_cast<int64_t>(left_s + 0.5)))
         << std::flush;
  }

 private:
  static constexpr double kQuietSec = 30;
  std::ostream& err_;
  std::chrono::steady_clock::time_point start_;
  bool done_;
};
// fio's progress line ("Jobs: 1 (f=1): [r(1)][45.0%][r=7346MiB/s][r=1881k
// IOPS][eta 00m:01s]"), in virtual time: percent done and ETA from the
// engine's estimate, rates over the interval since the previous snapshot.
class EtaPrinter {
 public:
  explicit EtaPrinter(std::ostream& out) : out_(out) {}

  void Print(const Snapshot& snap) {
    const bool finished = snap.clones_done == snap.run_states.size();
    // The snapshot after the end only shows the drain: keep the last line
    // of the run (unless the run was too short for one).
    if (finished && printed_) return;
    std::string line = absl::StrCat("Jobs: ", snap.clones_running, " (f=", snap.clones_running,
                                    "): [", CondenseRunStates(snap.run_states), "]");
    if (snap.eta_ns >= 0 || finished) {
      const int64_t eta_ns = finished ? 0 : snap.eta_ns;
      const double pct = snap.virtual_ns + eta_ns > 0
                             ? 100.0 * static_cast<double>(snap.virtual_ns) /
                                   static_cast<double>(snap.virtual_ns + eta_ns)
                             : 0.0;
      absl::StrAppend(&line, absl::StrFormat("[%3.1f%%]", pct));
      const int64_t dt = snap.virtual_ns - last_ns_;
      std::vector<std::string> bw, iops;
      static const char* const kDir[] = {"r", "w", "t"};
      for (int d = 0; d < stats::kNumDirs && dt > 0; ++d) {
        const uint64_t db = snap.dir_bytes[d] - last_bytes_[d];
        const uint64_t di = snap.dir_ios[d] - last_ios_[d];
        if (db == 0 && di == 0) continue;
        const auto per_sec = [dt](uint64_t v) {
          return static_cast<uint64_t>(static_cast<long double>(v) * 1e9L / dt);
        };
        bw.push_back(absl::StrCat(kDir[d], "=",
                                  report::Num2Str(per_sec(db), 4, true, report::NumUnit::kBytesPerSec)));
        iops.push_back(
            absl::StrCat(kDir[d], "=", report::Num2Str(per_sec(di), 4, false, report::NumUnit::kNone)));
      }
      if (!bw.empty()) {
        absl::StrAppend(&line, "[", absl::StrJoin(bw, ","), "][", absl::StrJoin(iops, ","), " IOPS]");
      }
      absl::StrAppend(&line, "[eta ", FioEtaString((eta_ns + 999000000) / 1000000000), "]");
    }
    last_ns_ = snap.virtual_ns;
    last_bytes_ = snap.dir_bytes;
    last_ios_ = snap.dir_ios;
    // Rewritten in place: pad over a longer previous line, return the cursor.
    const size_t len = line.size();
    if (len < last_len_) line.append(last_len_ - len, ' ');
    last_len_ = len;
    out_ << line << '\r' << std::flush;
    printed_ = true;
  }
  bool printed() const { return printed_; }

 private:
  std::ostream& out_;
  int64_t last_ns_ = 0;
  std::array<uint64_t, stats::kNumDirs> last_bytes_{};
  std::array<uint64_t, stats::kNumDirs> last_ios_{};
  size_t last_len_ = 0;
  bool printed_ = false;
};

int64_t Gcd(int64_t a, int64_t b) {
  while (b != 0) {
    const int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

// Writes fio's log files to the current directory (names may carry a path,
// as fio's write_*_log=PREFIX may). Each file is written afresh.
absl::Status WriteLogFiles(const std::vector<stats::LogFile>& logs) {
  for (const stats::LogFile& f : logs) {
    BLKLAB_RETURN_IF_ERROR(util::WriteStringToFile(f.name, f.contents, "log file"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckOutputDirectories(const workload::ParsedJobs& jobs, const BlklabOptions& options) {
  for (const workload::JobSpec& j : jobs.jobs) {
    const std::pair<const char*, const workload::LogSpec*> logs[] = {{"write_bw_log", &j.write_bw_log},
                                                                     {"write_iops_log", &j.write_iops_log},
                                                                     {"write_lat_log", &j.write_lat_log},
                                                                     {"write_hist_log", &j.write_hist_log}};
    for (const auto& [option, log] : logs) {
      if (!log->enabled) continue;
      // The files are PREFIX_iops.N.log and the like: PREFIX's directory.
      const std::string prefix = log->prefix.empty() ? j.name : log->prefix;
      BLKLAB_RETURN_IF_ERROR(
          util::CheckCanCreate(prefix + "_", absl::StrCat(option, "=", prefix, " (job '", j.name, "')")));
    }
    if (!j.write_iolog.empty()) {
      BLKLAB_RETURN_IF_ERROR(
          util::CheckCanCreate(j.write_iolog, absl::StrCat("write_iolog=", j.write_iolog, " (job '", j.name, "')")));
    }
  }
  for (const std::string* file : {&options.folded_file, &options.flame_file}) {
    if (file->empty()) continue;
    const char* option = file == &options.folded_file ? "--folded=" : "--flame=";
    BLKLAB_RETURN_IF_ERROR(util::CheckCanCreate(*file, option + *file));
  }
  return absl::OkStatus();
}

absl::StatusOr<BlklabOptions> SplitBlklabOptions(const std::vector<std::string>& args, RunSite site) {
  BlklabOptions out;
  for (const std::string& a : args) {
    if (absl::StartsWith(a, "--host=")) {
      out.host = a.substr(7);
    } else if (absl::StartsWith(a, "--seed=")) {
      if (!absl::SimpleAtoi(a.substr(7), &out.seed)) {
        return absl::InvalidArgumentError("--seed: not an unsigned integer: " + a.substr(7));
      }
    } else if (absl::StartsWith(a, "--pace=")) {
      const std::string v = a.substr(7);
      if (site == RunSite::kLocal) {
        return absl::InvalidArgumentError(
            "--pace: only with --server (a paced job runs on blklabd so that its metrics can be watched live)");
      }
      if (v != "realtime" && v != "fast") {
        return absl::InvalidArgumentError("--pace: expected realtime or fast, got " + v);
      }
      out.realtime = v == "realtime";
    } else if (a == "--perf-top" || absl::StartsWith(a, "--perf-top=")) {
      if (site == RunSite::kRemote) {
        return absl::UnimplementedError(
            "--perf-top: not available with --server (the result carries the profile rows: "
            "blklab jobs get ID --json)");
      }
      out.perf_top = 25;
      if (a != "--perf-top" && (!absl::SimpleAtoi(a.substr(11), &out.perf_top) || out.perf_top <= 0)) {
        return absl::InvalidArgumentError("--perf-top: not a positive integer: " + a.substr(11));
      }
    } else if (absl::StartsWith(a, "--max-virtual-time=")) {
      // fio's time syntax (10h, 90m, 3600s; a bare number is seconds).
      absl::StatusOr<int64_t> ns = workload::ParseTimeNs(a.substr(19), workload::TimeUnit::kSeconds);
      if (!ns.ok() || *ns <= 0) {
        return absl::InvalidArgumentError("--max-virtual-time: not a positive time (e.g. 10h, 90m): " + a.substr(19));
      }
      out.max_virtual_ns = *ns;
    } else if (absl::StartsWith(a, "--folded=") || absl::StartsWith(a, "--flame=")) {
      const bool folded = absl::StartsWith(a, "--folded=");
      const std::string file = a.substr(folded ? 9 : 8);
      const char* name = folded ? "--folded" : "--flame";
      if (file.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": needs a file name"));
      (folded ? out.folded_file : out.flame_file) = file;
    } else {
      out.fio_args.push_back(a);
    }
  }
  return out;
}

report::OutputFormats SelectedFormats(const workload::FioInvocation& invocation) {
  report::OutputFormats formats;
  for (workload::OutputFormat f : invocation.output_formats) {
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
  return formats;
}

int PrintAutoHost(const std::vector<std::string>& fio_args) {
  absl::StatusOr<host::HostSpec> base = host::GetPreset(host::kDefaultPresetName);
  if (!base.ok()) return FioFail(base.status());
  absl::StatusOr<ParsedFio> parsed = ParseFio(fio_args, *base, LocalFileReader(), EnvironmentLookup());
  if (!parsed.ok()) return FioFail(parsed.status());
  absl::StatusOr<std::string> yaml = host::AutoHostYaml(JobTargets(parsed->jobs), SizelessFiles(parsed->jobs));
  if (!yaml.ok()) return FioFail(yaml.status());
  std::cout << *yaml;
  return 0;
}

namespace {

// fio's informational options (--version, --help, --cmdhelp, --enghelp,
// --showcmd): their output and exit value, or nullopt for a run.
std::optional<int> RunInformational(const workload::FioInvocation& pre, const host::HostSpec& host,
                                    const workload::FileReader& read_file, const workload::VarLookup& lookup) {
  if (pre.version) {
    std::cout << "fio-3.33\n";
    return 0;
  }
  if (pre.help) {
    std::cout << FioUsage();
    return 0;
  }
  if (pre.cmdhelp.has_value() || pre.enghelp.has_value()) {
    absl::StatusOr<std::string> help =
        pre.cmdhelp.has_value() ? workload::CmdHelp(*pre.cmdhelp) : workload::EngHelp(*pre.enghelp);
    if (!help.ok()) return FioFail(help.status());
    std::cout << *help;
    return 0;
  }
  if (pre.showcmd) {
    absl::StatusOr<std::string> line =
        workload::ShowCmd(pre, ParseOptionsFor(pre, host, read_file, lookup));
    if (!line.ok()) return FioFail(line.status());
    std::cout << *line;
    return 0;
  }
  return std::nullopt;
}

// fio writes each job's logs when the job ends, before the final report;
// then --folded and --flame. A file that cannot be written after all (the
// directories were checked before the run) costs the exit value, not the
// report: it is printed, and the error follows it.
absl::Status WriteRunFiles(const RunResult& run, const BlklabOptions& options, const std::string& host_name) {
  absl::Status files_status = WriteLogFiles(run.logs);
  if (files_status.ok() && !options.folded_file.empty()) {
    files_status = util::WriteStringToFile(options.folded_file, report::FoldedStacks(run.kernel.stacks),
                                           "--folded file");
  }
  if (files_status.ok() && !options.flame_file.empty()) {
    files_status = util::WriteStringToFile(
        options.flame_file,
        report::FlameGraphSvg(run.kernel.stacks, absl::StrCat("blklab fio on ", host_name, ": simulated CPU time")),
        "--flame file");
  }
  return files_status;
}

// The virtual time between snapshots: the status interval, the progress
// line's 100 ms, or both (their gcd); 0 for neither.
int64_t SnapshotIntervalNs(int64_t status_ns, bool eta) {
  constexpr int64_t kEtaIntervalNs = 100'000'000;  // 100 ms of virtual time
  if (status_ns > 0 && eta) return Gcd(status_ns, kEtaIntervalNs);
  if (status_ns > 0) return status_ns;
  return eta ? kEtaIntervalNs : 0;
}

// What the jobs printed as they ran: fio's verify failures on stderr, and
// for each job that ended with an error its "fio: pid=" line on the output
// (fio's log_info at the thread's exit). Returns the jobs that failed: each
// adds one to the exit value, as fio's.
int PrintJobErrors(const RunResult& run, std::ostream& out) {
  const FioJobErrors job_errors = CollectJobErrors(run);
  for (const std::string& m : job_errors.stderr_lines) std::cerr << m << "\n";
  std::cerr << std::flush;
  out << job_errors.stdout_lines;
  return job_errors.failed;
}

}  // namespace

int RunFioCommand(const std::vector<std::string>& all_args) {
  absl::StatusOr<BlklabOptions> options = SplitBlklabOptions(all_args, RunSite::kLocal);
  if (!options.ok()) return FioFail(options.status());
  // The host, a preset name or a spec file: --host= wins, then $BLKLAB_HOST
  // (same values), then the embedded default. fio job files cannot name a host.
  const std::string host_arg = options->host ? *options->host : DefaultHostArg();
  const std::vector<std::string>& args = options->fio_args;
  absl::StatusOr<host::HostSpec> host = LoadHost(host_arg);
  if (!host.ok()) return FioFail(host.status());

  // Locally, job files come from disk and ${VAR} from the environment, as with fio.
  const workload::FileReader read_file = LocalFileReader();
  const workload::VarLookup lookup = EnvironmentLookup();
  // fio's informational options need no job.
  absl::StatusOr<workload::FioInvocation> pre = workload::ParseFioArgs(args);
  if (!pre.ok()) return FioFail(pre.status());
  if (std::optional<int> done = RunInformational(*pre, *host, read_file, lookup)) return *done;
  absl::StatusOr<ParsedFio> parsed = ParseFio(args, *host, read_file, lookup);
  if (!parsed.ok()) return FioFail(parsed.status());
  if (IsAutoHost(host_arg)) {
    // The auto host has the default host's CPUs, so $ncpus parsed the same.
    host = AutoHostFor(parsed->jobs);
    if (!host.ok()) return FioFail(host.status());
  }
  const workload::FioInvocation& inv = parsed->invocation;
  for (const std::string& w : parsed->jobs.warnings) std::cerr << "blklab fio: warning: " << w << "\n";
  if (inv.parse_only) return 0;
  if (absl::Status s = CheckOutputDirectories(parsed->jobs, *options); !s.ok()) return FioFail(s);

  const report::OutputFormats formats = SelectedFormats(inv);

  // Everything (the preamble, interim and final reports) goes to --output
  // or stdout.
  std::ofstream file;
  if (!inv.output.empty()) {
    file.open(inv.output, std::ios::binary | std::ios::trunc);
    if (!file) return FioFail(absl::InvalidArgumentError("--output: cannot write " + inv.output));
  }
  std::ostream& out = inv.output.empty() ? std::cout : file;

  RunRequest req;
  req.host = *host;
  req.jobs = parsed->jobs;
  req.seed = options->seed;
  if (options->max_virtual_ns > 0) req.limits.max_virtual_ns = options->max_virtual_ns;
  req.collect_stacks = !options->folded_file.empty() || !options->flame_file.empty();

  // fio's progress line: --eta=always, or auto when stdout is a terminal;
  // never when stdout carries only terse/json output (it would corrupt it).
  const bool eta = (inv.eta == "always" || (inv.eta == "auto" && isatty(STDOUT_FILENO) == 1)) &&
                   (formats.normal || !inv.output.empty());
  const int64_t status_ns = inv.status_interval_ns;
  req.snapshot_interval_ns = SnapshotIntervalNs(status_ns, eta);

  // With progress output, fio prints the normal preamble when the jobs
  // start and the reports after it without.
  const bool early_preamble = formats.normal && (eta || status_ns > 0);
  if (early_preamble) {
    out << report::WriteNormalPreamble(BuildReport(req, RunResult(), WallClockNow(), false)) << std::flush;
  }
  EtaPrinter eta_printer(std::cout);
  // Every slice of virtual time ends with a snapshot, which also notices a
  // terminating signal: the results as they stand are kept, the run stops.
  TerminationSignals signals;  // as fio: stop, say so, report what ran
  std::atomic<bool> cancel{false};
  std::optional<RunResult> partial;
  // A run that will take long in wall time says so once, early: after one
  // simulated second or two seconds of wall time, from the rate so far; on
  // stderr when it is a terminal or with --eta=always (scripts that check
  // fio's empty stderr see nothing).
  LongRunNotice long_run(std::cerr, isatty(STDERR_FILENO) == 1 || inv.eta == "always");
  SnapshotFn on_snapshot = [&](const Snapshot& snap) {
    if (TerminationSignals::count() != 0 && !partial) {
      partial = snap.interim();
      cancel.store(true);
      return;
    }
    long_run.Observe(snap);
    if (req.snapshot_interval_ns <= 0) return;
    {
      if (eta) eta_printer.Print(snap);
      const bool finished = snap.clones_done == snap.run_states.size();
      if (status_ns > 0 && !finished && snap.virtual_ns % status_ns == 0) {
        report::ReportInput input = BuildReport(req, snap.interim(), WallClockNow(), /*with_kernel_report=*/true);
        input.with_preamble = !early_preamble;
        out << report::WriteReport(input, formats) << std::flush;
      }
    }
  };
  absl::StatusOr<RunResult> run = RunFio(req, on_snapshot, &cancel);
  int exit_code = 0;
  if (!run.ok() && partial) {
    // fio's sig_int: "fio: terminating on signal N", exit value 128, then
    // the report of what ran.
    if (eta_printer.printed()) std::cout << "\n";
    out << "\nfio: terminating on signal " << TerminationSignals::last() << "\n" << std::flush;
    run = *std::move(partial);
    exit_code = 128;
  }
  // End the progress line unless the normal report that follows on stdout
  // does (it starts with a newline).
  if (eta_printer.printed() && (!run.ok() || !formats.normal || !inv.output.empty())) {
    std::cout << "\n" << std::flush;
  }
  if (!run.ok()) return FioFail(run.status());
  // fio writes each job's logs when the job ends, before the final report.
  // A file that cannot be written after all (the directories were checked
  // before the run) costs the exit value, not the report: it is printed,
  // and the error follows it.
  const absl::Status files_status = WriteRunFiles(*run, *options, req.host.name);
  exit_code = std::min(255, exit_code + PrintJobErrors(*run, out));
  report::ReportInput input = BuildReport(req, *run, WallClockNow(), /*with_kernel_report=*/true);
  input.with_preamble = !early_preamble;
  std::string text = report::WriteReport(input, formats);
  if (options->perf_top > 0) text += report::WritePerfTop(run->kernel, options->perf_top);
  out << text << std::flush;
  if (!out) return FioFail(absl::InvalidArgumentError("cannot write the report"));
  if (!files_status.ok()) return FioFail(files_status);
  return exit_code;
}

std::string FioUsage() {
  // fio's --help layout: the invocation, then each option and what it does.
  return "fio-3.33 (blklab: run against a simulated host)\n"
         "blklab fio [--host=PRESET|FILE] [--seed=N] [--perf-top[=N]] [--folded=FILE] [--flame=FILE.svg] [options] [job options] <job file(s)>\n"
         "  --host=PRESET|FILE|auto\tThe simulated host: a preset name, a host spec file, or auto (one device per\n"
         "\t\tdevice the job names, with the kernel's defaults: blklab hosts auto JOB prints it) (default: $BLKLAB_HOST,\n"
         "\t\telse default)\n"
         "  --seed=N\t\tSeed of the simulation (fio's randseed= still seeds each job's offsets)\n"
         "  --perf-top[=N]\t\tPrint the simulated kernel's profile, N rows\n"
         "  --folded=file\t\tWrite CPU time by call stack, folded (flamegraph.pl, inferno, speedscope read it)\n"
         "  --flame=file.svg\tWrite the same as an SVG flame graph\n"
         "  --max-virtual-time=t\tThe run's virtual-time limit, ramp time included (default 1h; 10h, 90m, 3600s)\n"
         "  --output=file\t\tWrite the report to file\n"
         "  --output-format=type\tnormal, terse, json or json+ (several, comma separated)\n"
         "  --minimal\t\tTerse output\n"
         "  --terse-version=type\tTerse version of the output (2, 3, 4 or 5; default 3)\n"
         "  --bandwidth-log\tGenerate aggregate bandwidth logs\n"
         "  --parse-only\t\tParse the options and job files, run nothing\n"
         "  --showcmd\t\tPrint the job files as command-line options\n"
         "  --status-interval=t\tReport the full status every t of virtual time\n"
         "  --section=name\t\tRun only the named section of the job file(s)\n"
         "  --eta=when\t\tWhen the ETA line is printed: always, never or auto\n"
         "  --eta-newline=t\tEnd the ETA line every t\n"
         "  --eta-interval=t\tUpdate the ETA line every t\n"
         "  --warnings-fatal\tTreat parser warnings as errors\n"
         "  --readonly\t\tRefuse jobs that write or trim\n"
         "  --version\t\tPrint the version of fio this front end follows\n"
         "  --cmdhelp=cmd\t\tDescribe a job option (all: every option)\n"
         "  --enghelp=engine\tAn I/O engine's options (engine,option: one option)\n"
         "  --help\t\t\tThis text\n"
         "Job options (--name=, --rw=, --bs=, ...) follow fio 3.33; --cmdhelp=all lists them with\n"
         "the ones blklab models, refuses or only accepts.\n";
}

}  // namespace blklab::cli
