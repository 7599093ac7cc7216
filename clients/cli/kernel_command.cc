#include "clients/cli/kernel_command.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "clients/cli/host_arg.h"
#include "clients/kernel_lab/guest_plan.h"
#include "clients/kernel_lab/lab_run.h"
#include "clients/kernel_lab/scenario.h"
#include "engine/util/file.h"
#include "engine/util/status_macros.h"

namespace blklab::cli {
// A named namespace: the CLI library builds as one unity translation unit.
namespace kernel_cmd {

namespace fs = std::filesystem;
using kernel_lab::CompareRow;
using kernel_lab::KernelRun;
using kernel_lab::LabJob;
using kernel_lab::Scenario;

constexpr char kKernelUsage[] =
    "usage: blklab kernel run [--host=PRESET|FILE] [--blktrace] [--real [--apply]] [fio options] [job files]\n"
    "       blklab kernel compare [--host=PRESET|FILE] [--real [--apply]] [fio options] [job files]\n"
    "       blklab kernel compare SCENARIO.yaml\n"
    "       blklab kernel suite [--ci] [--results=FILE] [SCENARIO.yaml|DIR]...  (default: tests/kernel/scenarios)\n"
    "       blklab kernel image\n"
    "The real kernel (Debian's 6.1) booted in QEMU as the host spec says; the image is built by\n"
    "scripts/kernel-lab-image (or taken from $BLKLAB_LAB_IMAGE). Under TCG the guest CPU is slow and its\n"
    "timers run late: compare shares, orders and counts per I/O in a device-bound regime.\n"
    "--real: the same set-up on this machine's own kernel instead of a VM (null_blk and scsi_debug\n"
    "only, modules not loaded before, fio only on the devices it makes, everything undone on exit).\n"
    "Without --apply it prints the script and touches nothing; --apply runs it, as root.\n";

int Fail(const absl::Status& s) {
  std::cerr << "blklab kernel: " << s.message() << "\n";
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

absl::StatusOr<LabJob> JobFromArgs(const std::vector<std::string>& args, bool* apply) {
  LabJob job;
  std::string host_arg = DefaultHostArg();
  for (const std::string& a : args) {
    if (absl::StartsWith(a, "--host=")) {
      host_arg = a.substr(7);
    } else if (a == "--blktrace") {
      job.blktrace = true;
    } else if (a == "--real") {
      job.real = true;
    } else if (a == "--apply") {
      *apply = true;
    } else {
      job.fio_args.push_back(a);
    }
  }
  if (IsAutoHost(host_arg)) return absl::InvalidArgumentError("--host=auto: name the host the lab should boot");
  if (*apply && !job.real) return absl::InvalidArgumentError("--apply: only with --real");
  BLKLAB_ASSIGN_OR_RETURN(job.host_doc, LoadHostDoc(host_arg));
  BLKLAB_ASSIGN_OR_RETURN(job.host, LoadHost(host_arg));
  job.read_file = LocalFileReader();
  return job;
}

absl::StatusOr<LabJob> JobFromScenario(const Scenario& s) {
  LabJob job;
  job.host_doc = s.host;
  absl::StatusOr<host::HostSpec> spec = host::HostSpecFromDoc(s.host);
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat(s.name, ": host: ", spec.status().message()));
  job.host = *spec;
  const std::string job_name = s.fio_file;
  const std::string text = s.fio;
  job.fio_args = {job_name};
  job.read_file = [job_name, text](const std::string& path) -> absl::StatusOr<std::string> {
    if (path == job_name) return text;
    return absl::NotFoundError(absl::StrCat(path, ": a scenario's job cannot include other files"));
  };
  return job;
}

// --real without --apply: the script that would run, and nothing done.
int PrintRealPlan(const LabJob& job, const char* command) {
  absl::StatusOr<kernel_lab::GuestPlan> plan = kernel_lab::PlanRealRun(job);
  if (!plan.ok()) return Fail(plan.status());
  std::cout << "blklab kernel " << command
            << " --real: nothing was done. With --apply, as root, this script runs on this machine's own kernel "
               "and undoes its set-up on every exit (blklab_undo):\n\n"
            << kernel_lab::RealScript(*plan, job.fio_args);
  return 0;
}

// Runs the job on the lab's VM, or on this machine's kernel with --real.
absl::StatusOr<KernelRun> RunOnKernel(const LabJob& job) {
  if (job.real) return kernel_lab::RunOnRealKernel(job);
  // Refusals first: no image build for a host the VM cannot be.
  BLKLAB_RETURN_IF_ERROR(kernel_lab::PlanGuest(job.host_doc, job.host).status());
  BLKLAB_ASSIGN_OR_RETURN(kernel_lab::LabImage image, kernel_lab::FindImage());
  return kernel_lab::RunOnKernel(image, job);
}

int Run(const std::vector<std::string>& args) {
  bool apply = false;
  absl::StatusOr<LabJob> job = JobFromArgs(args, &apply);
  if (!job.ok()) return Fail(job.status());
  if (job->real && !apply) return PrintRealPlan(*job, "run");
  absl::StatusOr<KernelRun> run = RunOnKernel(*job);
  if (!run.ok()) return Fail(run.status());
  const bool json = std::any_of(job->fio_args.begin(), job->fio_args.end(), [](const std::string& a) {
    return absl::StartsWith(a, "--output-format=") && absl::StrContains(a, "json");
  });
  std::string out = run->fio_output;
  if (json) {
    out = kernel_lab::WithKernelJson(out, run->kernel);
  } else {
    absl::StrAppend(&out, kernel_lab::KernelSectionText(run->kernel));
    if (!run->blktrace_summary.empty()) absl::StrAppend(&out, "  blktrace:\n", run->blktrace_summary);
    absl::StrAppendFormat(&out, "  lab: %s CPUs %.0f%% busy while fio ran; image: %s\n", job->real ? "the" : "guest",
                          100 * kernel_lab::GuestCpuBusy(run->kernel), run->image);
    if (job->real) absl::StrAppend(&out, "  undone on exit:\n", run->restore);
  }
  std::cout << out << std::flush;
  std::cerr << run->kernel.fio_stderr;
  return run->fio_exit;
}

struct Compared {
  std::vector<CompareRow> rows;
  bool model_misses_analytic = false;  // the model outside a metric's tolerance of an analytic answer
  std::vector<std::string> analytic;  // "value: kernel K, expected E (error X%)"
  double guest_busy = 0;
  std::string release, accel;
  bool real = false;  // this machine's kernel, the model on the spec as written
  int kernel_runs = 1;  // the kernel's figures are the median of this many runs
  std::vector<std::string> runs_text;  // per metric, every run's kernel figure
  std::vector<std::vector<double>> kernel_values;  // per metric, every run's (kernel_runs > 1)
};

absl::StatusOr<Compared> CompareJob(const LabJob& job, const std::vector<kernel_lab::MetricSpec>* metrics,
                                    const std::vector<kernel_lab::AnalyticSpec>& analytic, int kernel_runs = 1) {
  if (job.real) {
    BLKLAB_RETURN_IF_ERROR(kernel_lab::PlanRealRun(job).status());
  } else {
    BLKLAB_RETURN_IF_ERROR(kernel_lab::PlanGuest(job.host_doc, job.host).status());
  }
  // The model first: a job it cannot run needs no boot.
  BLKLAB_ASSIGN_OR_RETURN(std::string model_text, kernel_lab::RunOnModel(job));
  BLKLAB_ASSIGN_OR_RETURN(util::DocNode model_json, kernel_lab::ParseFioJson(model_text));
  LabJob kjob = job;
  kjob.fio_args = kernel_lab::WithJsonOutput(job.fio_args);
  Compared c;
  std::vector<std::vector<double>> kernel_values;  // per metric, one per run
  for (int run_index = 0; run_index < kernel_runs; ++run_index) {
    BLKLAB_ASSIGN_OR_RETURN(KernelRun run, RunOnKernel(kjob));
    // The guest's disk counters (sectors per request) join fio's JSON as
    // `blklab kernel run` prints them.
    BLKLAB_ASSIGN_OR_RETURN(util::DocNode kernel_json,
                            kernel_lab::ParseFioJson(kernel_lab::WithKernelJson(run.fio_output, run.kernel)));
    const kernel_lab::KernelSection k = run.kernel;
    const kernel_lab::DiskNameMap names = [k](const std::string& n) { return kernel_lab::SpecName(k, n); };
    const std::vector<kernel_lab::MetricSpec> defaults = kernel_lab::DefaultMetrics(kernel_json, names);
    BLKLAB_ASSIGN_OR_RETURN(c.rows, kernel_lab::CompareMetrics(metrics != nullptr ? *metrics : defaults, kernel_json,
                                                              names, model_json));
    kernel_values.resize(c.rows.size());
    for (size_t i = 0; i < c.rows.size(); ++i) kernel_values[i].push_back(c.rows[i].kernel);
    c.analytic.clear();
    c.model_misses_analytic = false;
    for (const kernel_lab::AnalyticSpec& a : analytic) {
      BLKLAB_ASSIGN_OR_RETURN(double v, kernel_lab::EvalMetric(a.expr, kernel_json, names));
      BLKLAB_ASSIGN_OR_RETURN(double m, kernel_lab::EvalMetric(a.expr, model_json, names));
      for (const kernel_lab::MetricSpec& ms : metrics != nullptr ? *metrics : defaults) {
        if (ms.expr == a.expr && !ms.tolerance.Holds(a.expected, m)) c.model_misses_analytic = true;
      }
      c.analytic.push_back(absl::StrFormat(
          "%s: expected %.6g, kernel %.6g (lab timing error %+.1f%%), model %.6g (%+.1f%%)", a.expr, a.expected, v,
          100 * (v - a.expected) / a.expected, m, 100 * (m - a.expected) / a.expected));
    }
    c.guest_busy = kernel_lab::GuestCpuBusy(k);
    c.release = k.release;
    c.accel = k.accel;
  }
  // Several runs: each metric's kernel figure is their median.
  if (kernel_runs > 1) {
    c.kernel_runs = kernel_runs;
    c.kernel_values = kernel_values;
    for (size_t i = 0; i < c.rows.size(); ++i) {
      std::vector<double> v = kernel_values[i];
      std::sort(v.begin(), v.end());
      const size_t n = v.size();
      c.rows[i].kernel = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
      c.rows[i].agrees = c.rows[i].tolerance.Holds(c.rows[i].kernel, c.rows[i].model);
      c.runs_text.push_back(absl::StrCat(c.rows[i].metric, ": ", absl::StrJoin(kernel_values[i], " ",
                                                                                   [](std::string* out, double x) {
                                                                                     absl::StrAppendFormat(out, "%.4g", x);
                                                                                   })));
    }
  }
  c.real = job.real;
  return c;
}

// agree: every metric within its tolerance; explained: only rates or
// latencies are off (the lab's timing, see timing-* scenarios) and the model
// meets every analytic answer; else disagree.
enum class Verdict { kAgree, kExplained, kDisagree };

Verdict VerdictOf(const Compared& c) {
  bool all = true, behaviour = true;
  for (const CompareRow& r : c.rows) {
    all = all && r.agrees;
    behaviour = behaviour && (r.agrees || r.timing_bound);
  }
  if (c.model_misses_analytic) return Verdict::kDisagree;
  if (all) return Verdict::kAgree;
  return behaviour ? Verdict::kExplained : Verdict::kDisagree;
}

void PrintCompared(const std::string& title, const Compared& c) {
  std::cout << title << "\n"
            << (c.real ? absl::StrFormat("kernel: Linux %s on this machine, its CPUs %.0f%% busy while fio ran; "
                                         "model: blklab on the spec as written\n",
                                         c.release, 100 * c.guest_busy)
                       : absl::StrFormat("kernel: Linux %s under QEMU/%s, guest CPUs %.0f%% busy while fio ran; "
                                         "model: blklab with the lab kernel's settings (examples/hosts/lab-6.1.yaml)\n",
                                         c.release, c.accel, 100 * c.guest_busy))
            << kernel_lab::CompareTable(c.rows);
  if (c.kernel_runs > 1) {
    std::cout << "kernel: the median of " << c.kernel_runs << " runs (its figure varies from run to run):\n";
    for (const std::string& r : c.runs_text) std::cout << "  " << r << "\n";
  }
  for (const std::string& a : c.analytic) std::cout << "analytic " << a << "\n";
  const size_t off = std::count_if(c.rows.begin(), c.rows.end(), [](const CompareRow& r) { return !r.agrees; });
  switch (VerdictOf(c)) {
    case Verdict::kAgree:
      std::cout << "agree: every metric within its tolerance\n";
      break;
    case Verdict::kExplained:
      std::cout << "known disagreement (lab timing): " << off << " of " << c.rows.size()
                << " metrics outside their tolerance, each a rate or a latency, which TCG's slow guest and late "
                   "timers distort (timing-* scenarios measure by how much); the behaviour agrees\n";
      break;
    case Verdict::kDisagree:
      std::cout << "disagree: " << off << " of " << c.rows.size() << " metrics outside their tolerance (*)"
                << (c.model_misses_analytic ? ", and the model misses an analytic answer" : "") << "\n";
      break;
  }
}

absl::StatusOr<Scenario> LoadScenario(const std::string& path) {
  BLKLAB_ASSIGN_OR_RETURN(std::string text, util::ReadFileToString(path));
  BLKLAB_ASSIGN_OR_RETURN(Scenario s, kernel_lab::ParseScenario(text, path));
  BLKLAB_ASSIGN_OR_RETURN(s.fio, util::ReadFileToString((fs::path(path).parent_path() / s.fio_file).string()));
  return s;
}

int Compare(const std::vector<std::string>& args) {
  if (args.size() == 1 && (absl::EndsWith(args[0], ".yaml") || absl::EndsWith(args[0], ".yml"))) {
    absl::StatusOr<Scenario> s = LoadScenario(args[0]);
    if (!s.ok()) return Fail(s.status());
    absl::StatusOr<LabJob> job = JobFromScenario(*s);
    if (!job.ok()) return Fail(job.status());
    absl::StatusOr<Compared> c = CompareJob(*job, &s->metrics, s->analytic, s->kernel_runs);
    if (!c.ok()) return Fail(c.status());
    PrintCompared(absl::StrCat(s->name, " (", s->mechanism, ")"), *c);
    return VerdictOf(*c) == Verdict::kDisagree ? 3 : 0;
  }
  bool apply = false;
  absl::StatusOr<LabJob> job = JobFromArgs(args, &apply);
  if (!job.ok()) return Fail(job.status());
  if (job->real && !apply) return PrintRealPlan(*job, "compare");
  absl::StatusOr<Compared> c = CompareJob(*job, nullptr, {});
  if (!c.ok()) return Fail(c.status());
  PrintCompared(absl::StrCat("host ", job->host.name), *c);
  return std::all_of(c->rows.begin(), c->rows.end(), [](const CompareRow& r) { return r.agrees; }) ? 0 : 3;
}

int Suite(const std::vector<std::string>& args) {
  bool ci_only = false;
  std::string results_file;
  std::vector<std::string> paths;
  for (const std::string& a : args) {
    if (a == "--ci") {
      ci_only = true;
    } else if (absl::StartsWith(a, "--results=")) {
      results_file = a.substr(10);
    } else if (absl::StartsWith(a, "-")) {
      std::cerr << "blklab kernel suite: unknown option " << a << "\n" << kKernelUsage;
      return 2;
    } else {
      paths.push_back(a);
    }
  }
  if (paths.empty()) paths.push_back("tests/kernel/scenarios");
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const auto& e : fs::directory_iterator(p)) {
        if (e.path().extension() == ".yaml") files.push_back(e.path().string());
      }
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  std::ofstream results;
  if (!results_file.empty()) {
    results.open(results_file, std::ios::app);
    if (!results) return Fail(absl::InvalidArgumentError("--results: cannot write " + results_file));
  }
  int agree = 0, explained = 0, disagree = 0, errors = 0;
  for (const std::string& f : files) {
    absl::StatusOr<Scenario> s = LoadScenario(f);
    if (!s.ok()) {
      std::cout << "ERROR " << f << ": " << s.status().message() << "\n";
      ++errors;
      continue;
    }
    if (ci_only && !s->ci) continue;
    absl::StatusOr<LabJob> job = JobFromScenario(*s);
    absl::StatusOr<Compared> c = job.ok() ? CompareJob(*job, &s->metrics, s->analytic, s->kernel_runs) : job.status();
    if (!c.ok()) {
      std::cout << "ERROR " << s->name << ": " << c.status().message() << "\n" << std::flush;
      ++errors;
      continue;
    }
    PrintCompared(absl::StrCat("== ", s->name, " (", s->mechanism, ")"), *c);
    const Verdict v = VerdictOf(*c);
    const bool ok = v == Verdict::kAgree;
    (v == Verdict::kAgree ? agree : v == Verdict::kExplained ? explained : disagree)++;
    if (results.is_open()) {
      std::string line = absl::StrCat("{\"scenario\":\"", s->name, "\",\"agrees\":", ok ? "true" : "false",
                                      ",\"verdict\":\"",
                                      v == Verdict::kAgree ? "agree" : v == Verdict::kExplained ? "timing" : "disagree",
                                      "\",\"guest_busy\":", absl::StrFormat("%.3f", c->guest_busy),
                                      ",\"metrics\":[");
      for (size_t i = 0; i < c->rows.size(); ++i) {
        const CompareRow& r = c->rows[i];
        std::string runs;
        if (c->kernel_runs > 1) {
          runs = absl::StrCat(",\"kernel_runs\":[", absl::StrJoin(c->kernel_values[i], ",", [](std::string* out, double x) {
                                absl::StrAppendFormat(out, "%.6g", x);
                              }), "]");
        }
        absl::StrAppendFormat(&line, "%s{\"metric\":\"%s\",\"kernel\":%.6g,\"model\":%.6g,\"agrees\":%s%s}",
                              i ? "," : "", r.metric, r.kernel, r.model, r.agrees ? "true" : "false", runs);
      }
      results << line << "]}\n" << std::flush;
    }
    std::cout << std::flush;
  }
  std::cout << "kernel suite: " << agree << " agree, " << disagree << " disagree, " << explained
            << " explained by the lab's timing, " << errors << " errors\n";
  return errors > 0 ? 1 : (disagree > 0 ? 3 : 0);
}

}  // namespace kernel_cmd

int RunKernelCommand(const std::vector<std::string>& args) {
  using namespace kernel_cmd;  // NOLINT(build/namespaces)
  if (args.empty() || args[0] == "--help" || args[0] == "help") {
    (args.empty() ? std::cerr : std::cout) << kKernelUsage;
    return args.empty() ? 2 : 0;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "run") return Run(rest);
  if (args[0] == "compare") return Compare(rest);
  if (args[0] == "suite") return Suite(rest);
  if (args[0] == "image") {
    absl::StatusOr<kernel_lab::LabImage> image = kernel_lab::FindImage();
    if (!image.ok()) return Fail(image.status());
    std::cout << "dir " << image->dir << "\n" << image->description;
    return 0;
  }
  std::cerr << "blklab kernel: unknown subcommand '" << args[0] << "'\n" << kKernelUsage;
  return 2;
}

}  // namespace blklab::cli
