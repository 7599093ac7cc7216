#include "clients/kernel_lab/scenario.h"

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "clients/kernel_lab/doc_path.h"
#include "engine/util/status_macros.h"
#include "engine/util/yaml_reader.h"

namespace blklab::kernel_lab {
namespace {

using util::DocNode;

absl::Status Bad(const std::string& file, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(file, ": ", what));
}

absl::StatusOr<Tolerance> ParseTolerance(const DocNode& n, const std::string& where) {
  Tolerance t;
  std::string text = n.is_string() || n.is_number() ? n.text() : "";
  absl::string_view v = absl::StripAsciiWhitespace(text);
  if (absl::ConsumeSuffix(&v, "%")) t.relative = true;
  if (!absl::SimpleAtod(v, &t.value) || !std::isfinite(t.value) || t.value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".tolerance: a number or \"N%\", got ", text));
  }
  if (t.relative) t.value /= 100.0;
  return t;
}

struct Dir {
  bool read = false, write = false, trim = false;
};

absl::StatusOr<Dir> ParseDir(absl::string_view s, const std::string& expr) {
  if (s == "read") return Dir{true, false, false};
  if (s == "write") return Dir{false, true, false};
  if (s == "trim") return Dir{false, false, true};
  if (s == "all") return Dir{true, true, true};
  return absl::InvalidArgumentError(absl::StrCat(expr, ": direction must be read, write, trim or all, got ", s));
}

double Number(const DocNode* n) {
  if (n == nullptr) return 0;
  absl::StatusOr<double> d = n->AsDouble();
  return d.ok() ? *d : 0;
}


std::vector<const DocNode*> JobsNamed(const DocNode& fio, absl::string_view name) {
  std::vector<const DocNode*> out;
  const DocNode* jobs = fio.Find("jobs");
  if (jobs == nullptr || !jobs->is_list()) return out;
  for (const DocNode& j : jobs->items()) {
    const DocNode* n = j.Find("jobname");
    if (n != nullptr && n->is_string() && (name.empty() || n->text() == name)) out.push_back(&j);
  }
  return out;
}

// Sum of a per-direction field over `jobs`.
double Sum(const std::vector<const DocNode*>& jobs, Dir dir, absl::string_view field) {
  double v = 0;
  for (const DocNode* j : jobs) {
    if (dir.read) v += Number(DocPath(*j, {"read", field}));
    if (dir.write) v += Number(DocPath(*j, {"write", field}));
    if (dir.trim) v += Number(DocPath(*j, {"trim", field}));
  }
  return v;
}

std::string JobFilename(const DocNode& fio, const DocNode& job) {
  const DocNode* f = DocPath(job, {"job options", "filename"});
  if (f == nullptr) f = DocPath(fio, {"global options", "filename"});
  return f != nullptr && f->is_string() ? f->text() : "";
}

const DocNode* Disk(const DocNode& fio, const std::string& dev, const DiskNameMap& names) {
  const DocNode* disks = fio.Find("disk_util");
  if (disks == nullptr || !disks->is_list()) return nullptr;
  for (const DocNode& d : disks->items()) {
    const DocNode* n = d.Find("name");
    if (n != nullptr && n->is_string() && names(n->text()) == dev) return &d;
  }
  return nullptr;
}

size_t DiskCount(const DocNode& fio) {
  const DocNode* disks = fio.Find("disk_util");
  return disks != nullptr && disks->is_list() ? disks->size() : 0;
}

// A disk's /sys/block/*/stat counters, over the whole run (ramp time
// included, as fio's disk_util): the guest's (the lab's "kernel" key, named
// as the host spec names them) or the model's ("blklab" key, "diskstats").
const DocNode* DiskStat(const DocNode& doc, const std::string& dev) {
  for (const auto& [root, list] : {std::pair{"kernel", "devices"}, std::pair{"blklab", "diskstats"}}) {
    const DocNode* l = DocPath(doc, {root, list});
    if (l == nullptr || !l->is_list()) continue;
    for (const DocNode& d : l->items()) {
      const DocNode* n = d.Find("name");
      if (n != nullptr && n->is_string() && n->text() == dev) return &d;
    }
  }
  return nullptr;
}

}  // namespace

bool Tolerance::Holds(double kernel, double model) const {
  const double limit = relative ? value * std::fabs(kernel) : value;
  return std::fabs(model - kernel) <= limit + 1e-12;
}

std::string Tolerance::ToString() const {
  return relative ? absl::StrFormat("%g%%", value * 100) : absl::StrFormat("%g", value);
}

absl::StatusOr<Scenario> ParseScenario(const std::string& text, const std::string& file) {
  BLKLAB_ASSIGN_OR_RETURN(DocNode doc, util::ParseYaml(text));
  if (!doc.is_map()) return Bad(file, "a scenario is a map");
  Scenario s;
  for (const auto& e : doc.entries()) {
    const std::string& k = e.key;
    const DocNode& v = e.value;
    if (k == "name" && v.is_string()) {
      s.name = v.text();
    } else if (k == "mechanism" && v.is_string()) {
      s.mechanism = v.text();
    } else if (k == "ci" && v.is_bool()) {
      s.ci = v.bool_value();
    } else if (k == "kernel_runs" && v.is_number()) {
      absl::StatusOr<int64_t> n = v.AsInt64();
      if (!n.ok() || *n < 1 || *n > 9) return Bad(file, "kernel_runs: a whole number from 1 to 9");
      s.kernel_runs = static_cast<int>(*n);
    } else if (k == "host" && v.is_map()) {
      s.host = v;
    } else if (k == "fio" && v.is_string()) {
      s.fio_file = v.text();
    } else if (k == "metrics" && v.is_list()) {
      for (size_t i = 0; i < v.size(); ++i) {
        const DocNode& m = v.items()[i];
        const std::string where = absl::StrCat(file, ": metrics[", i, "]");
        const DocNode* expr = m.is_map() ? m.Find("value") : nullptr;
        const DocNode* tol = m.is_map() ? m.Find("tolerance") : nullptr;
        if (expr == nullptr || !expr->is_string() || tol == nullptr) {
          return absl::InvalidArgumentError(absl::StrCat(where, ": needs value: EXPR and tolerance: N or \"N%\""));
        }
        BLKLAB_ASSIGN_OR_RETURN(Tolerance t, ParseTolerance(*tol, where));
        s.metrics.push_back({expr->text(), t});
      }
    } else if (k == "analytic" && v.is_list()) {
      for (size_t i = 0; i < v.size(); ++i) {
        const DocNode& m = v.items()[i];
        const DocNode* expr = m.is_map() ? m.Find("value") : nullptr;
        const DocNode* expected = m.is_map() ? m.Find("expected") : nullptr;
        if (expr == nullptr || !expr->is_string() || expected == nullptr || !expected->AsDouble().ok()) {
          return Bad(file, absl::StrCat("analytic[", i, "]: needs value: EXPR and expected: NUMBER"));
        }
        s.analytic.push_back({expr->text(), *expected->AsDouble()});
      }
    } else {
      return Bad(file, absl::StrCat("unknown or mistyped field '", k, "' (line ", e.key_pos.line, ")"));
    }
  }
  if (s.name.empty()) return Bad(file, "name: missing");
  if (!s.host.is_map()) return Bad(file, "host: missing (an inline host spec)");
  if (s.fio_file.empty() || s.fio_file.find('/') != std::string::npos || !absl::EndsWith(s.fio_file, ".fio")) {
    return Bad(file, "fio: the name of a job file (NAME.fio) beside the scenario");
  }
  if (s.metrics.empty()) return Bad(file, "metrics: at least one");
  return s;
}

absl::StatusOr<double> EvalMetric(const std::string& expr, const DocNode& fio, const DiskNameMap& names) {
  absl::string_view e = absl::StripAsciiWhitespace(expr);
  if (e == "total_iops") return Sum(JobsNamed(fio, ""), Dir{true, true, true}, "iops");
  const size_t open = e.find('(');
  if (open == absl::string_view::npos || !absl::EndsWith(e, ")")) {
    return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': expected NAME(ARGS) or total_iops"));
  }
  const std::string fn(e.substr(0, open));
  std::vector<std::string> args;
  for (absl::string_view a : absl::StrSplit(e.substr(open + 1, e.size() - open - 2), ',')) {
    args.emplace_back(absl::StripAsciiWhitespace(a));
  }
  auto dir_arg = [&](size_t i) -> absl::StatusOr<Dir> {
    return i < args.size() ? ParseDir(args[i], expr) : Dir{true, true, true};
  };
  auto jobs = [&](const std::string& name) -> absl::StatusOr<std::vector<const DocNode*>> {
    std::vector<const DocNode*> j = JobsNamed(fio, name);
    if (j.empty()) return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': no job named ", name));
    return j;
  };
  if ((fn == "iops" || fn == "share") && (args.size() == 1 || args.size() == 2)) {
    BLKLAB_ASSIGN_OR_RETURN(Dir dir, dir_arg(1));
    BLKLAB_ASSIGN_OR_RETURN(auto j, jobs(args[0]));
    if (fn == "iops") return Sum(j, dir, "iops");
    const double all = Sum(JobsNamed(fio, ""), dir, "total_ios");
    return all > 0 ? Sum(j, dir, "total_ios") / all : 0.0;
  }
  if (fn == "ratio" && (args.size() == 2 || args.size() == 3)) {
    BLKLAB_ASSIGN_OR_RETURN(Dir dir, dir_arg(2));
    BLKLAB_ASSIGN_OR_RETURN(auto a, jobs(args[0]));
    BLKLAB_ASSIGN_OR_RETURN(auto b, jobs(args[1]));
    const double db = Sum(b, dir, "iops");
    return db > 0 ? Sum(a, dir, "iops") / db : 0.0;
  }
  if ((fn == "lat_us" && args.size() == 3) || (fn == "mean_lat_us" && args.size() == 2)) {
    BLKLAB_ASSIGN_OR_RETURN(auto j, jobs(args[0]));
    if (args[1] != "read" && args[1] != "write" && args[1] != "trim") {
      return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': direction must be read, write or trim"));
    }
    std::string key = "mean";
    if (fn == "lat_us") {
      double p = 0;
      if (!absl::SimpleAtod(args[2], &p)) return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': P"));
      key = absl::StrFormat("%f", p);
    }
    double sum = 0;
    int n = 0;
    for (const DocNode* job : j) {
      const DocNode* v = fn == "lat_us" ? DocPath(*job, {args[1], "clat_ns", "percentile", key})
                                        : DocPath(*job, {args[1], "clat_ns", "mean"});
      if (v != nullptr && Number(DocPath(*job, {args[1], "total_ios"})) > 0) {
        sum += Number(v);
        ++n;
      }
    }
    return n > 0 ? sum / n / 1000.0 : 0.0;
  }
  if ((fn == "merges_per_io" || fn == "request_kib" || fn == "ios_per_job_io") && args.size() == 2) {
    if (args[1] != "read" && args[1] != "write") {
      return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': direction must be read or write"));
    }
    if (fn == "merges_per_io") {
      const DocNode* d = Disk(fio, args[0], names);
      if (d == nullptr) return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': no disk ", args[0]));
      const double ios = Number(d->Find(args[1] + "_ios"));
      return ios > 0 ? Number(d->Find(args[1] + "_merges")) / ios : 0.0;
    }
    // Sizes come from the disk's sectors per request, never from fio's byte
    // counts over the disk's request count: fio leaves ramp_time out of its
    // job figures, the disk counts every request of the run.
    const DocNode* st = DiskStat(fio, args[0]);
    if (st == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          "metric '", expr, "': no sector counts for ", args[0],
          " (the lab's \"kernel\" section or the model's \"blklab\" diskstats)"));
    }
    const double ios = Number(st->Find(args[1] + "_ios"));
    const double request_bytes = ios > 0 ? 512.0 * Number(st->Find(args[1] + "_sectors")) / ios : 0.0;
    if (fn == "request_kib") return request_bytes / 1024.0;
    // Block requests per fio I/O: the mean fio I/O size over the mean
    // request size, both free of ramp time (every byte fio moved reaches the
    // disk: direct I/O or a cold page cache).
    std::vector<const DocNode*> on_dev;
    for (const DocNode* j : JobsNamed(fio, "")) {
      const std::string f = JobFilename(fio, *j);
      if (DiskCount(fio) <= 1 || absl::StrContains(f, args[0])) on_dev.push_back(j);
    }
    const Dir dir = args[1] == "read" ? Dir{true, false, false} : Dir{false, true, false};
    const double job_ios = Sum(on_dev, dir, "total_ios");
    const double job_io_bytes = job_ios > 0 ? Sum(on_dev, dir, "io_bytes") / job_ios : 0.0;
    return request_bytes > 0 ? job_io_bytes / request_bytes : 0.0;
  }
  return absl::InvalidArgumentError(absl::StrCat("metric '", expr, "': unknown function or wrong arguments"));
}

}  // namespace blklab::kernel_lab
