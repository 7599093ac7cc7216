#include "clients/kernel_lab/lab_run.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "clients/kernel_lab/guest_plan.h"
#include "engine/engine.h"
#include "engine/report/report.h"
#include "engine/util/file.h"
#include "engine/util/json_reader.h"
#include "engine/util/status_macros.h"

namespace blklab::kernel_lab {
namespace {

constexpr char kSnapshot[] = R"sh(snapshot() {
  echo "@@blklab-begin diskstats-$1@@"
  for d in $sys/block/*; do echo "${d##*/} $(cat $d/stat)"; done
  echo "@@blklab-end diskstats-$1@@"
  for f in stat interrupts softirqs schedstat; do
    echo "@@blklab-begin $f-$1@@"; cat $proc/$f; echo "@@blklab-end $f-$1@@"
  done
}
)sh";

// blk-mq's debugfs state of each device after the run: per hctx its state,
// dispatch_busy, what waits on hctx->dispatch, and both tag sets.
constexpr char kDebugfs[] = R"sh(echo "@@blklab-begin debugfs@@"
for name in $lab_devices; do
  eval dev=\$dev_of_$(echo $name | tr -c 'A-Za-z0-9\n' _)
  for h in $sys/kernel/debug/block/$dev/hctx*; do
    [ -d "$h" ] || continue
    for f in state dispatch_busy dispatch tags sched_tags; do
      [ -r $h/$f ] || continue
      v=$(grep -E '^(nr_tags|active_queues|busy|depth)|^[^=]*$' $h/$f 2>/dev/null | tr '\n' ' ')
      [ -n "$v" ] && echo "$name ${h##*/}/$f: $v"
    done
  done
done
echo "@@blklab-end debugfs@@"
)sh";

// blktrace on every device while fio runs, summarised in the guest: events
// by action, dispatched request sizes, the order of dispatch by job (pid).
constexpr char kBlktraceStart[] = R"sh(mkdir -p /tmp/bt
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
for name in $lab_devices; do
  blktrace -d /dev/$name -D /tmp/bt >/dev/null 2>&1 &
done
sleep 1
)sh";
constexpr char kBlktraceStop[] = R"sh(killall -INT blktrace 2>/dev/null; sleep 2
echo "@@blklab-begin blktrace@@"
for name in $lab_devices; do
  blkparse -D /tmp/bt -i $name -f '%a %d %n %p\n' -q 2>/dev/null | awk -v dev=$name '
    { n[$1]++ }
    $1 == "D" { size[$3 / 2]++; order = order " " $4; if (++k >= 64) { print dev " first dispatches by pid:" order; order = ""; k = -1000000 } }
    END {
      line = dev " events:"; for (a in n) line = line " " a "=" n[a]; print line
      line = dev " dispatched KiB:"; for (s in size) line = line " " s "=" size[s]; print line
    }'
done
echo "@@blklab-end blktrace@@"
)sh";

// On the machine's own kernel: the undo runs on every exit (a failed
// set-up, fio's end, a signal), prints what it ran, and keeps the status.
constexpr char kRealPrologue[] = R"sh(sys=${BLKLAB_REAL_ROOT:-}/sys
proc=${BLKLAB_REAL_ROOT:-}/proc
work=$(mktemp -d "${TMPDIR:-/tmp}/blklab-real.XXXXXX") || exit 1
command -v fio >/dev/null || { echo 'blklab: fio is not installed on this machine'; exit 1; }
blklab_restore() {
  status=$?
  trap - EXIT INT TERM HUP
  set +e
  echo '@@blklab-begin restore@@'
  blklab_undo
  echo '@@blklab-end restore@@'
  rm -rf "$work"
  exit $status
}
trap blklab_restore EXIT
trap 'exit 130' INT TERM HUP
)sh";

std::string GuestScript(const GuestPlan& plan, const std::vector<std::string>& fio_args, bool blktrace) {
  std::string s = "#!/bin/sh\n";
  if (plan.real) {
    std::string undo = "blklab_undo() {\n  :\n";
    for (absl::string_view line : absl::StrSplit(plan.restore_script, '\n', absl::SkipEmpty())) {
      absl::StrAppend(&undo, "  echo ", ShellQuote(std::string(line)), "\n  ", line, "\n");
    }
    absl::StrAppend(&s, undo, "}\n", kRealPrologue);
  } else {
    absl::StrAppend(&s, "sys=/sys\nproc=/proc\n");
  }
  absl::StrAppend(&s, "echo '@@blklab-begin uname@@'; uname -r; echo '@@blklab-end uname@@'\n");
  absl::StrAppend(&s, "set -e\n", plan.setup_script, "set +e\n");
  absl::StrAppend(&s, "lab_devices='", absl::StrJoin(plan.devices, " "), "'\n");
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    std::string var = plan.devices[i];
    for (char& c : var) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    absl::StrAppend(&s, "dev_of_", var, "=$dev_", i, "\n");
  }
  absl::StrAppend(&s, kSnapshot);
  if (blktrace) absl::StrAppend(&s, kBlktraceStart);
  const std::string tmp = plan.real ? "$work" : "/tmp";
  if (!plan.real) absl::StrAppend(&s, "cd /lab/jobs 2>/dev/null || cd /tmp\n");
  absl::StrAppend(&s, "snapshot before\n");
  std::vector<std::string> quoted;
  for (const std::string& a : fio_args) quoted.push_back(ShellQuote(a));
  absl::StrAppend(&s, "echo '@@blklab-begin fio@@'\nfio ", absl::StrJoin(quoted, " "), " 2>", tmp,
                  "/fio.err\nfio_status=$?\necho '@@blklab-end fio@@'\n");
  absl::StrAppend(&s, "snapshot after\n");
  if (blktrace) absl::StrAppend(&s, kBlktraceStop);
  absl::StrAppend(&s, "echo '@@blklab-begin fio-stderr@@'; cat ", tmp, "/fio.err; echo '@@blklab-end fio-stderr@@'\n");
  absl::StrAppend(&s, "echo \"@@blklab-begin fio-exit@@\"; echo $fio_status; echo \"@@blklab-end fio-exit@@\"\n");
  absl::StrAppend(&s, kDebugfs);
  absl::StrAppend(&s, "exit 0\n");
  return s;
}

// fio's options that name a file the lab cannot hand back.
absl::Status CheckFioArgs(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    for (const char* opt : {"--output=", "--write_bw_log", "--write_iops_log", "--write_lat_log",
                            "--write_hist_log", "--write_iolog", "--read_iolog"}) {
      if (absl::StartsWith(a, opt)) {
        return absl::UnimplementedError(absl::StrCat(
            opt, ": the kernel lab returns fio's report and the kernel section, not files written in the guest"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<std::string> WithJsonOutput(const std::vector<std::string>& fio_args) {
  std::vector<std::string> out;
  for (const std::string& a : fio_args) {
    if (!absl::StartsWith(a, "--output-format")) out.push_back(a);
  }
  out.insert(out.begin(), "--output-format=json");
  return out;
}

absl::StatusOr<KernelRun> RunOnKernel(const LabImage& image, const LabJob& job) {
  BLKLAB_RETURN_IF_ERROR(CheckFioArgs(job.fio_args));
  BLKLAB_ASSIGN_OR_RETURN(GuestPlan plan, PlanGuest(job.host_doc, job.host));
  GuestRun run;
  run.vcpus = plan.vcpus;
  run.memory_mib = plan.memory_mib;
  run.qemu_args = plan.qemu_args;
  run.kernel_cmdline = plan.kernel_cmdline;
  // Job files (arguments that are not options) go to /lab/jobs under their
  // base names, and fio runs from there.
  std::vector<std::string> guest_args;
  std::set<std::string> taken;
  for (const std::string& a : job.fio_args) {
    if (a.empty() || a[0] == '-') {
      guest_args.push_back(a);
      continue;
    }
    BLKLAB_ASSIGN_OR_RETURN(std::string text, job.read_file(a));
    std::string base = std::filesystem::path(a).filename().string();
    while (!taken.insert(base).second) base = "_" + base;
    run.files.emplace_back("lab/jobs/" + base, text);
    guest_args.push_back(base);
  }
  // The job's runtime bounds the wait: fio's own limit plus boot and set-up.
  run.timeout_s = 900;
  run.run_script = GuestScript(plan, guest_args, job.blktrace);
  BLKLAB_ASSIGN_OR_RETURN(GuestOutput out, RunGuest(image, run));
  KernelRun r;
  r.image = image.description;
  auto fio = out.sections.find("fio");
  if (out.exit_status != 0 || fio == out.sections.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the guest's set-up failed (exit ", out.exit_status, "):\n", out.transcript.substr(0, 4000),
        "\nconsole:\n", out.console_tail));
  }
  r.fio_output = fio->second;
  r.kernel = ParseKernelSection(out);
  r.fio_exit = std::atoi(out.sections["fio-exit"].c_str());
  r.blktrace_summary = out.sections["blktrace"];
  return r;
}

absl::StatusOr<GuestPlan> PlanRealRun(const LabJob& job) {
  if (job.blktrace) {
    return absl::UnimplementedError("--blktrace: not with --real (it would stop every blktrace on the machine)");
  }
  BLKLAB_RETURN_IF_ERROR(CheckFioArgs(job.fio_args));
  BLKLAB_ASSIGN_OR_RETURN(GuestPlan plan, PlanReal(job.host_doc, job.host));
  // fio runs only on the devices the plan makes: never on a disk of the
  // machine's.
  BLKLAB_ASSIGN_OR_RETURN(ParsedFio parsed, ParseFio(job.fio_args, job.host, job.read_file, nullptr));
  std::set<std::string> made;
  for (const std::string& d : plan.devices) made.insert("/dev/" + d);
  std::vector<std::string> targets = JobTargets(parsed.jobs);
  // The command line's own file options too, whatever the job files say.
  for (const std::string& a : job.fio_args) {
    if (absl::StartsWith(a, "--directory") || absl::StartsWith(a, "--filename_format")) {
      return absl::FailedPreconditionError(absl::StrCat(a, ": not with --real; name the devices with --filename"));
    }
    if (absl::StartsWith(a, "--filename=")) {
      for (absl::string_view f : absl::StrSplit(a.substr(11), ':')) targets.emplace_back(f);
    }
  }
  for (const std::string& target : targets) {
    if (!made.contains(target)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--real: a job targets ", target, ", which is not a device the spec makes (",
          absl::StrJoin(made, ", "), "); --real runs fio only on the devices it creates"));
    }
  }
  return plan;
}

std::string RealScript(const GuestPlan& plan, const std::vector<std::string>& fio_args) {
  return GuestScript(plan, fio_args, /*blktrace=*/false);
}

absl::StatusOr<KernelRun> RunOnRealKernel(const LabJob& job) {
  const char* fake_root = std::getenv("BLKLAB_REAL_ROOT");
  if (geteuid() != 0 && (fake_root == nullptr || *fake_root == '\0')) {
    return absl::PermissionDeniedError("--real --apply: run as root (it loads modules and writes sysfs)");
  }
  BLKLAB_ASSIGN_OR_RETURN(GuestPlan plan, PlanRealRun(job));
  const std::string script = RealScript(plan, job.fio_args);
  std::string dir = std::filesystem::temp_directory_path() / "blklab-real-script.XXXXXX";
  if (mkdtemp(dir.data()) == nullptr) return absl::InternalError("--real: cannot make a temporary directory");
  const std::string path = dir + "/run.sh";
  BLKLAB_RETURN_IF_ERROR(util::WriteStringToFile(path, script, "--real: the run's script"));
  const absl::Time start = absl::Now();
  FILE* p = popen(absl::StrCat("/bin/sh ", ShellQuote(path), " 2>&1").c_str(), "r");
  if (p == nullptr) {
    std::filesystem::remove_all(dir);
    return absl::InternalError("--real: cannot start /bin/sh");
  }
  GuestOutput out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.transcript.append(buf, n);
  const int status = pclose(p);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  ParseTranscript(out.transcript, out);
  out.exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  out.accel = "none (this machine)";
  out.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  auto fio = out.sections.find("fio");
  if (out.exit_status != 0 || fio == out.sections.end()) {
    return absl::FailedPreconditionError(absl::StrCat("--real: the set-up failed (exit ", out.exit_status,
                                                      "); what was undone is listed:\n", out.transcript.substr(0, 4000)));
  }
  KernelRun r;
  r.image = "this machine's kernel";
  r.fio_output = fio->second;
  r.kernel = ParseKernelSection(out);
  r.fio_exit = std::atoi(out.sections["fio-exit"].c_str());
  r.restore = out.sections["restore"];
  return r;
}

absl::StatusOr<std::string> RunOnModel(const LabJob& job) {
  const host::HostSpec spec = job.real ? job.host : WithLabKernel(job.host);
  BLKLAB_ASSIGN_OR_RETURN(ParsedFio parsed,
                          ParseFio(WithJsonOutput(job.fio_args), spec, job.read_file, nullptr));
  RunRequest req;
  req.host = spec;
  req.jobs = parsed.jobs;
  BLKLAB_ASSIGN_OR_RETURN(RunResult result, RunFio(req));
  WallClock clock{0, 0, "Thu Jan  1 00:00:00 1970"};
  report::ReportInput input = BuildReport(req, result, clock, /*with_kernel_report=*/true);
  report::OutputFormats formats;
  formats.json = true;
  return report::WriteReport(input, formats);
}

absl::StatusOr<util::DocNode> ParseFioJson(const std::string& text) {
  const size_t start = text.find("{\n");
  if (start == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("no fio JSON in the output: ", text.substr(0, 400)));
  }
  util::ParseLimits limits;
  limits.max_bytes = 64 << 20;
  limits.max_nodes = 4 << 20;
  const size_t end = text.rfind('}');
  return util::ParseJson(absl::string_view(text).substr(start, end + 1 - start), limits);
}

std::vector<MetricSpec> DefaultMetrics(const util::DocNode& fio, const DiskNameMap& names) {
  std::vector<MetricSpec> m;
  std::set<std::string> jobs;
  const util::DocNode* list = fio.Find("jobs");
  std::vector<std::string> order;
  if (list != nullptr && list->is_list()) {
    for (const util::DocNode& j : list->items()) {
      const util::DocNode* n = j.Find("jobname");
      if (n != nullptr && n->is_string() && jobs.insert(n->text()).second) order.push_back(n->text());
    }
  }
  const Tolerance share{0.05, false}, per_io{0.15, true}, rate{0.25, true};
  for (const std::string& name : order) {
    for (const char* dir : {"read", "write"}) {
      absl::StatusOr<double> ios = EvalMetric(absl::StrCat("iops(", name, ",", dir, ")"), fio, names);
      if (!ios.ok() || *ios <= 0) continue;
      m.push_back({absl::StrCat("iops(", name, ",", dir, ")"), rate});
      if (order.size() > 1) m.push_back({absl::StrCat("share(", name, ",", dir, ")"), share});
      m.push_back({absl::StrCat("lat_us(", name, ",", dir, ",50)"), rate});
      m.push_back({absl::StrCat("lat_us(", name, ",", dir, ",99)"), rate});
    }
  }
  if (const util::DocNode* disks = fio.Find("disk_util"); disks != nullptr && disks->is_list()) {
    for (const util::DocNode& d : disks->items()) {
      const util::DocNode* n = d.Find("name");
      if (n == nullptr || !n->is_string()) continue;
      const std::string dev = names(n->text());
      for (const char* dir : {"read", "write"}) {
        const util::DocNode* ios = d.Find(absl::StrCat(dir, "_ios"));
        if (ios == nullptr || !ios->AsDouble().ok() || *ios->AsDouble() <= 0) continue;
        m.push_back({absl::StrCat("merges_per_io(", dev, ",", dir, ")"), per_io});
        m.push_back({absl::StrCat("request_kib(", dev, ",", dir, ")"), per_io});
      }
    }
  }
  return m;
}

bool IsTimingMetric(const std::string& expr) {
  for (const char* fn : {"iops(", "total_iops", "lat_us(", "mean_lat_us("}) {
    if (absl::StartsWith(expr, fn)) return true;
  }
  return false;
}

absl::StatusOr<std::vector<CompareRow>> CompareMetrics(const std::vector<MetricSpec>& metrics,
                                                       const util::DocNode& kernel_json,
                                                       const DiskNameMap& kernel_names,
                                                       const util::DocNode& model_json) {
  std::vector<CompareRow> rows;
  const DiskNameMap same = [](const std::string& n) { return n; };
  for (const MetricSpec& m : metrics) {
    CompareRow r;
    r.metric = m.expr;
    r.tolerance = m.tolerance;
    BLKLAB_ASSIGN_OR_RETURN(r.kernel, EvalMetric(m.expr, kernel_json, kernel_names));
    BLKLAB_ASSIGN_OR_RETURN(r.model, EvalMetric(m.expr, model_json, same));
    r.agrees = m.tolerance.Holds(r.kernel, r.model);
    r.timing_bound = IsTimingMetric(m.expr);
    rows.push_back(r);
  }
  return rows;
}

std::string CompareTable(const std::vector<CompareRow>& rows) {
  size_t w = 6;
  for (const CompareRow& r : rows) w = std::max(w, r.metric.size());
  std::string s = absl::StrFormat("%-*s %12s %12s %9s %9s\n", static_cast<int>(w), "metric", "kernel", "model",
                                  "diff", "tolerance");
  for (const CompareRow& r : rows) {
    const double diff = r.model - r.kernel;
    std::string d = r.tolerance.relative && r.kernel != 0 ? absl::StrFormat("%+.1f%%", 100 * diff / r.kernel)
                                                          : absl::StrFormat("%+.3f", diff);
    absl::StrAppendFormat(&s, "%-*s %12.4g %12.4g %9s %9s%s\n", static_cast<int>(w), r.metric, r.kernel, r.model, d,
                          r.tolerance.ToString(), r.agrees ? "" : (r.timing_bound ? "  * (timing)" : "  *"));
  }
  return s;
}

}  // namespace blklab::kernel_lab
