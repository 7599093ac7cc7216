#include "compare/compare.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "engine/host/host_overlay.h"
#include "engine/host/presets.h"
#include "engine/util/doc_node.h"
#include "engine/util/status_macros.h"
#include "engine/workload/t_io_uring.h"
#include "engine/workload/value_syntax.h"

namespace blklab::compare {
namespace {

using util::DocNode;

absl::StatusOr<std::string> ReadInput(const Inputs& inputs, const std::string& path) {
  if (inputs.read_file == nullptr) return absl::NotFoundError(path + ": no files may be read");
  return inputs.read_file(path);
}

// A run the engine ended because simulated I/O could never finish.
bool IsStall(const absl::Status& s) {
  return s.code() == absl::StatusCode::kDeadlineExceeded && absl::StrContains(s.message(), "simulated I/O stalled");
}

}  // namespace

absl::StatusOr<DocNode> LoadHostDoc(const std::string& host_arg, const std::string& base_dir,
                                    const workload::FileReader& read_file) {
  absl::StatusOr<absl::string_view> preset = host::PresetYaml(host_arg);
  if (preset.ok()) return host::ParseHostDoc(*preset);
  std::string path = host_arg;
  if (!base_dir.empty() && !path.empty() && path[0] != '/') path = base_dir + "/" + path;
  absl::StatusOr<std::string> text =
      read_file == nullptr ? absl::NotFoundError(path) : read_file(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError("--host=" + host_arg + ": neither a preset nor a readable file (" +
                                      std::string(preset.status().message()) + ")");
  }
  absl::StatusOr<DocNode> doc = host::ParseHostDoc(*text);
  if (!doc.ok()) return absl::InvalidArgumentError(host_arg + ": " + std::string(doc.status().message()));
  return doc;
}

bool IsFioPath(const std::string& path) { return absl::StartsWith(path, "fio."); }

const char* ToolName(Tool tool) { return tool == Tool::kIoUring ? "io_uring" : "fio"; }

namespace {

absl::StatusOr<Setting> ParseSetting(absl::string_view text) {
  const size_t eq = text.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': expected PATH=VALUE"));
  }
  Setting s{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
  if (IsFioPath(s.path) && s.path.size() == 4) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "': fio. needs an option name (fio.iodepth=32)"));
  }
  if (!IsFioPath(s.path)) BLKLAB_RETURN_IF_ERROR(host::ParseHostOverride(text).status());
  return s;
}

absl::Status CheckName(const std::string& name, const std::string& what) {
  if (name.empty() || name.size() > 64 ||
      name.find_first_of(" ,:=\t\n\"") != std::string::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " '", name, "': a name of 1-64 characters without spaces, ',', ':', '=' or quotes"));
  }
  return absl::OkStatus();
}

// --variant NAME:PATH=VALUE[,PATH=VALUE...]
absl::StatusOr<Variant> ParseVariant(const std::string& text) {
  const size_t colon = text.find(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("--variant " + text + ": expected NAME:PATH=VALUE[,PATH=VALUE...]");
  }
  Variant v;
  v.name = text.substr(0, colon);
  BLKLAB_RETURN_IF_ERROR(CheckName(v.name, "--variant"));
  const std::string rest = text.substr(colon + 1);
  if (rest.empty()) return v;
  for (absl::string_view part : absl::StrSplit(rest, ',')) {
    absl::StatusOr<Setting> s = ParseSetting(part);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("--variant ", v.name, ": ", s.status().message()));
    v.settings.push_back(*std::move(s));
  }
  return v;
}

// --matrix PATH=V1,V2,...
absl::StatusOr<Axis> ParseAxis(const std::string& text) {
  absl::StatusOr<Setting> s = ParseSetting(text);
  if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("--matrix ", s.status().message()));
  Axis a{s->path, absl::StrSplit(s->value, ',')};
  for (const std::string& v : a.values) {
    if (v.empty()) return absl::InvalidArgumentError("--matrix " + text + ": an empty value");
  }
  return a;
}

// The scalar text of a spec value ("true", "64", "mq-deadline").
absl::StatusOr<std::string> ScalarText(const DocNode& node, const std::string& where) {
  if (node.is_bool()) return std::string(node.bool_value() ? "true" : "false");
  if (node.is_number() || node.is_string()) return node.text();
  return absl::InvalidArgumentError(
      absl::StrCat(where, " (", util::FormatPos(node.pos()), "): expected a scalar, got a ",
                   DocNode::KindName(node.kind())));
}

// A comparison spec file (see compare_command.h).
absl::Status ReadSpecFile(const std::string& path, const Inputs& inputs, Comparison* c, std::string* host_arg,
                          std::string* fleet_arg, std::string* base_dir) {
  BLKLAB_ASSIGN_OR_RETURN(std::string text, ReadInput(inputs, path));
  absl::StatusOr<DocNode> doc = host::ParseHostDoc(text);
  if (!doc.ok()) return absl::InvalidArgumentError(path + ": " + std::string(doc.status().message()));
  if (!doc->is_map()) return absl::InvalidArgumentError(path + ": expected a map (host, fio, variants, ...)");
  const size_t slash = path.rfind('/');
  *base_dir = slash == std::string::npos ? "" : path.substr(0, slash);
  auto where = [&path](const std::string& field, const DocNode& n) {
    return absl::StrCat(path, ":", util::FormatPos(n.pos()), ": ", field);
  };
  for (const util::DocMapEntry& e : doc->entries()) {
    const DocNode& v = e.value;
    if (e.key == "host") {
      BLKLAB_ASSIGN_OR_RETURN(*host_arg, ScalarText(v, where("host", v)));
    } else if (e.key == "fleet") {
      BLKLAB_ASSIGN_OR_RETURN(std::string f, ScalarText(v, where("fleet", v)));
      *fleet_arg = f.empty() || f[0] == '/' || base_dir->empty() ? f : *base_dir + "/" + f;
    } else if (e.key == "fio" || e.key == "io_uring") {
      const Tool tool = e.key == "fio" ? Tool::kFio : Tool::kIoUring;
      if (!c->tool_args.empty() && c->tool != tool) {
        return absl::InvalidArgumentError(where(e.key, v) + ": give fio or io_uring arguments, not both");
      }
      c->tool = tool;
      if (v.is_string()) {
        for (absl::string_view a : absl::StrSplit(v.text(), ' ', absl::SkipEmpty())) c->tool_args.emplace_back(a);
      } else if (v.is_list()) {
        for (const DocNode& a : v.items()) {
          BLKLAB_ASSIGN_OR_RETURN(std::string s, ScalarText(a, where(e.key, a)));
          c->tool_args.push_back(std::move(s));
        }
      } else {
        return absl::InvalidArgumentError(where(e.key, v) + ": expected a list of arguments or one string");
      }
    } else if (e.key == "baseline") {
      BLKLAB_ASSIGN_OR_RETURN(c->baseline, ScalarText(v, where("baseline", v)));
    } else if (e.key == "seed" || e.key == "samples") {
      absl::StatusOr<int64_t> n = v.AsInt64();
      if (!n.ok() || *n < 0 || (e.key == "samples" && (*n < 1 || *n > kMaxSamples))) {
        return absl::InvalidArgumentError(where(e.key, v) + (e.key == "samples"
                                                                 ? absl::StrCat(": expected 1..", kMaxSamples)
                                                                 : ": expected an unsigned integer"));
      }
      if (e.key == "seed") c->seed = static_cast<uint64_t>(*n);
      if (e.key == "samples") c->samples = static_cast<int>(*n);
    } else if (e.key == "variants") {
      if (!v.is_map()) return absl::InvalidArgumentError(where("variants", v) + ": expected a map NAME: {PATH: VALUE}");
      for (const util::DocMapEntry& ve : v.entries()) {
        Variant var;
        var.name = ve.key;
        BLKLAB_RETURN_IF_ERROR(CheckName(var.name, where("variant", ve.value)));
        if (!ve.value.is_null() && !ve.value.is_map()) {
          return absl::InvalidArgumentError(where("variants." + ve.key, ve.value) + ": expected a map PATH: VALUE");
        }
        if (ve.value.is_map()) {
          for (const util::DocMapEntry& se : ve.value.entries()) {
            BLKLAB_ASSIGN_OR_RETURN(std::string value, ScalarText(se.value, where("variants." + ve.key + "." + se.key, se.value)));
            absl::StatusOr<Setting> s = ParseSetting(se.key + "=" + value);
            if (!s.ok()) return absl::InvalidArgumentError(where("variants." + ve.key, se.value) + ": " + std::string(s.status().message()));
            var.settings.push_back(*std::move(s));
          }
        }
        c->variants.push_back(std::move(var));
      }
    } else if (e.key == "matrix") {
      if (!v.is_map()) return absl::InvalidArgumentError(where("matrix", v) + ": expected a map PATH: [VALUES]");
      for (const util::DocMapEntry& ae : v.entries()) {
        Axis axis;
        axis.path = ae.key;
        BLKLAB_RETURN_IF_ERROR(ParseSetting(ae.key + "=x").status());
        if (!ae.value.is_list() || ae.value.items().empty()) {
          return absl::InvalidArgumentError(where("matrix." + ae.key, ae.value) + ": expected a non-empty list of values");
        }
        for (const DocNode& item : ae.value.items()) {
          BLKLAB_ASSIGN_OR_RETURN(std::string s, ScalarText(item, where("matrix." + ae.key, item)));
          axis.values.push_back(std::move(s));
        }
        c->axes.push_back(std::move(axis));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", util::FormatPos(e.key_pos), ": unknown field '", e.key,
                       "' (fields: host or fleet, fio or io_uring, seed, samples, baseline, variants, matrix)"));
    }
  }
  // Job files (positional arguments, not the value of a preceding option
  // written without '=') are read relative to the spec file.
  for (size_t i = 0; c->tool == Tool::kFio && i < c->tool_args.size() && !base_dir->empty(); ++i) {
    std::string& a = c->tool_args[i];
    const bool value_of_previous =
        i > 0 && absl::StartsWith(c->tool_args[i - 1], "-") && !absl::StrContains(c->tool_args[i - 1], "=");
    if (a.empty() || a[0] == '-' || a[0] == '/' || value_of_previous) continue;
    a = *base_dir + "/" + a;
  }
  if (host_arg->empty() == fleet_arg->empty()) {
    return absl::InvalidArgumentError(path + ": give a host or a fleet (an inventory file), not both or neither");
  }
  if (c->tool_args.empty()) {
    return absl::InvalidArgumentError(path + ": no tool arguments (fio: [...] or io_uring: [...])");
  }
  return absl::OkStatus();
}

// A fleet inventory: `hosts: {TYPE: PRESET|FILE}`, files relative to it.
// The host types become the comparison's first axis.
absl::Status ReadFleet(const std::string& path, const Inputs& inputs, Comparison* c) {
  BLKLAB_ASSIGN_OR_RETURN(std::string text, ReadInput(inputs, path));
  absl::StatusOr<DocNode> doc = host::ParseHostDoc(text);
  if (!doc.ok()) return absl::InvalidArgumentError(path + ": " + std::string(doc.status().message()));
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash);
  const DocNode* hosts = nullptr;
  if (doc->is_map()) {
    for (const util::DocMapEntry& e : doc->entries()) {
      if (e.key != "hosts") {
        return absl::InvalidArgumentError(absl::StrCat(path, ":", util::FormatPos(e.key_pos), ": unknown field '",
                                                       e.key, "' (an inventory has hosts: {TYPE: PRESET|FILE})"));
      }
      hosts = &e.value;
    }
  }
  if (hosts == nullptr || !hosts->is_map() || hosts->entries().empty()) {
    return absl::InvalidArgumentError(path + ": expected hosts: {TYPE: PRESET|FILE, ...} with at least one type");
  }
  Axis axis{kFleetAxis, {}};
  for (const util::DocMapEntry& e : hosts->entries()) {
    BLKLAB_RETURN_IF_ERROR(CheckName(e.key, absl::StrCat(path, ": host type")));
    BLKLAB_ASSIGN_OR_RETURN(std::string arg, ScalarText(e.value, absl::StrCat(path, ": hosts.", e.key)));
    absl::StatusOr<DocNode> host = LoadHostDoc(arg, dir, inputs.read_file);
    if (!host.ok()) {
      return absl::Status(host.status().code(),
                          absl::StrCat(path, ": hosts.", e.key, ": ", host.status().message()));
    }
    c->fleet.emplace_back(e.key, *std::move(host));
    axis.values.push_back(e.key);
  }
  c->axes.insert(c->axes.begin(), std::move(axis));
  c->host_label = absl::StrCat("fleet ", path, " (", c->fleet.size(), " host types)");
  return absl::OkStatus();
}

}  // namespace

// The values of every axis at point `p` (last axis fastest).
std::vector<Setting> PointSettings(const Comparison& c, size_t p) {
  std::vector<Setting> out(c.axes.size());
  for (size_t a = c.axes.size(); a-- > 0;) {
    const Axis& axis = c.axes[a];
    out[a] = Setting{axis.path, axis.values[p % axis.values.size()]};
    p /= axis.values.size();
  }
  return out;
}


size_t NumPoints(const Comparison& c) {
  // Saturates: a product above the cell limit is refused, never wrapped.
  size_t n = 1;
  for (const Axis& a : c.axes) {
    n = a.values.size() != 0 && n > SIZE_MAX / a.values.size() ? SIZE_MAX : n * a.values.size();
  }
  return n;
}


uint64_t CellRandseed(const Comparison& c, int sample) { return sample == 0 ? 0 : c.seed + static_cast<uint64_t>(sample); }


namespace {

// The host of one cell (the point's and the variant's host settings on the
// baseline host), and its fio.OPTION settings as option lines.
absl::StatusOr<host::HostSpec> CellHost(const Comparison& c, const Cell& cell,
                                        std::vector<workload::OptionLine>* fio_overrides) {
  std::vector<Setting> settings = PointSettings(c, cell.point);
  for (const Setting& s : c.variants[cell.variant].settings) settings.push_back(s);
  std::vector<host::HostOverride> host_overrides;
  const DocNode* host_doc = &c.host_doc;
  for (const Setting& s : settings) {
    if (s.path == kFleetAxis && !c.fleet.empty()) {
      for (const auto& [name, doc] : c.fleet) {
        if (name == s.value) host_doc = &doc;
      }
    } else if (IsFioPath(s.path)) {
      fio_overrides->push_back(workload::OptionLine{s.path.substr(4), s.value, "<compare>", 0});
    } else {
      host_overrides.push_back(host::HostOverride{s.path, s.value});
    }
  }
  return host::ApplyHostOverrides(*host_doc, host_overrides);
}

// t/io_uring's command line of an io_uring comparison: `--cpus=LIST` (the
// submitters' CPUs, as `blklab io_uring` takes it), then the tool's own.
struct IoUringToolArgs {
  workload::TioUringSpec spec;
  std::vector<uint32_t> cpus;
};
absl::StatusOr<IoUringToolArgs> ParseIoUringToolArgs(const std::vector<std::string>& args) {
  IoUringToolArgs out;
  std::vector<std::string> tool;
  for (const std::string& a : args) {
    if (absl::StartsWith(a, "--cpus=")) {
      absl::StatusOr<std::vector<uint32_t>> cpus = workload::ParseCpuList(a.substr(7));
      if (!cpus.ok() || cpus->empty()) return absl::InvalidArgumentError("io_uring --cpus: not a CPU list: " + a.substr(7));
      out.cpus = *std::move(cpus);
    } else if (absl::StartsWith(a, "--")) {
      return absl::InvalidArgumentError("io_uring: unknown option '" + a +
                                        "' (a comparison takes --cpus=LIST and t/io_uring's own options)");
    } else {
      tool.push_back(a);
    }
  }
  // The tool's complaint is the first line of what it prints; its usage follows.
  auto first_line = [](absl::string_view text) {
    return std::string(absl::StripAsciiWhitespace(text.substr(0, text.find('\n'))));
  };
  absl::StatusOr<workload::TioUringArgs> parsed = workload::ParseTioUringArgs(tool);
  if (!parsed.ok()) return absl::InvalidArgumentError("io_uring: " + first_line(parsed.status().message()));
  if (parsed->show_usage) {
    const std::string complaint = first_line(parsed->stderr_text);
    return absl::InvalidArgumentError("io_uring: " +
                                      (complaint.empty() ? std::string("the arguments ask for t/io_uring's usage") : complaint));
  }
  if (parsed->spec.files.empty()) return absl::InvalidArgumentError("io_uring: no device (t/io_uring's file arguments)");
  out.spec = parsed->spec;
  if (out.spec.runtime_s < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "io_uring -r", out.spec.runtime_s, ": a comparison needs -r2 or more (t/io_uring prints every second but ",
        "the last; -r0 runs until interrupted)"));
  }
  return out;
}

}  // namespace

// The host and jobs of one cell, checked (ValidateRun) but not run.
absl::StatusOr<RunRequest> PrepareCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                       const CellLimits& limits) {
  if (c.tool != Tool::kFio) {
    return absl::FailedPreconditionError("an io_uring comparison's cells run t/io_uring (PrepareIoUringCell)");
  }
  std::vector<workload::OptionLine> fio_overrides;
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, CellHost(c, cell, &fio_overrides));
  if (cell.sample > 0) {
    fio_overrides.push_back(
        workload::OptionLine{"randseed", absl::StrCat(CellRandseed(c, cell.sample)), "<compare>", 0});
  }
  BLKLAB_ASSIGN_OR_RETURN(ParsedFio parsed,
                          ParseFio(c.tool_args, host, inputs.read_file, inputs.lookup_var, fio_overrides));
  RunRequest req;
  req.host = std::move(host);
  req.jobs = std::move(parsed.jobs);
  req.seed = c.seed;
  req.collect_stacks = c.collect_stacks;
  req.limits = limits.run;
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host, limits.host));
  BLKLAB_RETURN_IF_ERROR(ValidateRun(req));
  return req;
}


absl::StatusOr<IoUringRunRequest> PrepareIoUringCell(const Comparison& c, const Cell& cell,
                                                     const CellLimits& limits) {
  if (c.tool != Tool::kIoUring) return absl::FailedPreconditionError("not an io_uring comparison");
  std::vector<workload::OptionLine> fio_overrides;
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, CellHost(c, cell, &fio_overrides));
  if (!fio_overrides.empty()) {  // ParseComparison refuses these; a Comparison built in code may not have been
    return absl::InvalidArgumentError("fio." + fio_overrides[0].name + ": fio options do not apply to t/io_uring");
  }
  BLKLAB_ASSIGN_OR_RETURN(IoUringToolArgs args, ParseIoUringToolArgs(c.tool_args));
  IoUringRunRequest req;
  req.host = std::move(host);
  req.spec = std::move(args.spec);
  workload::TioUringApplyAioLimits(req.spec);  // as the tool does at startup (what it says is not a figure)
  req.cpus = std::move(args.cpus);
  // Samples after the first draw their offsets from another stream.
  req.seed = c.seed + static_cast<uint64_t>(cell.sample);
  req.limits = limits.run;
  BLKLAB_RETURN_IF_ERROR(host::ValidateHostSpec(req.host, limits.host));
  return req;
}

namespace {

// A cell's completion-latency percentiles and fio-style histogram bins.
void FillClat(const stats::LatencyHistogram& lat, CellResult* cell) {
  if (lat.total() == 0) return;
  CellResult& r = *cell;
  static constexpr double kPercents[] = {50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
  const std::vector<uint64_t> v = lat.Percentiles(kPercents);
  for (size_t i = 0; i < v.size(); ++i) r.clat_percentiles.emplace_back(kPercents[i], v[i]);
  // fio's buckets nest in the quarter-power-of-two bins (below 128 ns a
  // bucket is one value; above, a 64th of its power of two).
  for (int i = 0; i < stats::LatencyHistogram::kNumBuckets; ++i) {
    const uint64_t n = lat.count(i);
    if (n == 0) continue;
    const uint64_t v = std::max<uint64_t>(1, stats::LatencyHistogram::BucketValue(i));
    const int msb = std::bit_width(v) - 1;
    CellResult::HistogramBin bin;
    if (msb < 2) {
      bin.lower_ns = uint64_t{1} << msb;
      bin.upper_ns = bin.lower_ns * 2;
    } else {
      const uint64_t quarter = uint64_t{1} << (msb - 2);
      bin.lower_ns = v / quarter * quarter;
      bin.upper_ns = bin.lower_ns + quarter;
    }
    if (!r.clat_histogram.empty() && r.clat_histogram.back().lower_ns == bin.lower_ns) {
      r.clat_histogram.back().count += n;
    } else {
      bin.count = n;
      r.clat_histogram.push_back(bin);
    }
  }
}

}  // namespace

CellResult CellResultOfIoUring(const IoUringRunRequest& req, const IoUringResult& run) {
  CellResult r;
  r.iops = TioUringMeanIops(run, req.spec);
  r.dir_iops[0] = r.iops;  // t/io_uring reads
  r.bw_bytes = static_cast<uint64_t>(r.iops * static_cast<double>(req.spec.bs));
  r.ios = run.kernel.total_ios;
  r.sys_pct = run.kernel.sys_pct;
  r.kernel_sys_pct = run.kernel.sys_pct;
  r.contention_pct = run.kernel.contention_pct;
  r.jobs.emplace_back("t/io_uring", r.iops);
  stats::LatencyHistogram lat;
  for (const stats::LatencyHistogram& h : run.latency) lat.Merge(h);
  FillClat(lat, &r);
  r.profile = run.kernel.profile;
  r.locks = run.kernel.locks;
  return r;
}

absl::StatusOr<CellResult> RunCell(const Comparison& c, const Cell& cell, const Inputs& inputs,
                                   const std::atomic<bool>* cancel, const CellLimits& limits) {
  if (c.tool == Tool::kIoUring) {
    BLKLAB_ASSIGN_OR_RETURN(const IoUringRunRequest req, PrepareIoUringCell(c, cell, limits));
    absl::StatusOr<IoUringResult> ran = RunIoUring(req, nullptr, nullptr, cancel);
    if (!ran.ok()) return StalledCell(ran.status());
    if (ran->interrupted) return absl::CancelledError("cancelled");
    return CellResultOfIoUring(req, *ran);
  }
  BLKLAB_ASSIGN_OR_RETURN(const RunRequest req, PrepareCell(c, cell, inputs, limits));
  absl::StatusOr<RunResult> ran = RunFio(req, nullptr, cancel);
  if (!ran.ok()) return StalledCell(ran.status());
  return CellResultOf(req, *ran);
}

absl::StatusOr<CellResult> StalledCell(const absl::Status& run_status) {
  if (!IsStall(run_status)) return run_status;
  CellResult stalled;
  stalled.stalled = std::string(run_status.message());
  return stalled;
}

namespace {

// The log type of a fio log file name: PREFIX_TYPE.N.log or PREFIX_TYPE.log.
std::string LogKind(const std::string& name) {
  std::string stem = name;
  if (absl::EndsWith(stem, ".log")) stem.resize(stem.size() - 4);
  if (const size_t dot = stem.rfind('.'); dot != std::string::npos) {
    const std::string n = stem.substr(dot + 1);
    if (!n.empty() && std::all_of(n.begin(), n.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) stem.resize(dot);
  }
  const size_t underscore = stem.rfind('_');
  return underscore == std::string::npos ? stem : stem.substr(underscore + 1);
}

// The averaged logs as series (CellResult::log_series).
std::vector<CellResult::LogSeries> LogSeriesOf(const std::vector<stats::LogFile>& logs) {
  static constexpr const char* kKinds[] = {"bw", "iops", "lat", "slat", "clat"};
  std::vector<CellResult::LogSeries> out;
  for (const char* kind : kKinds) {
    std::map<int64_t, std::pair<double, int>> at;  // time -> (sum, lines)
    for (const stats::LogFile& f : logs) {
      if (LogKind(f.name) != kind) continue;
      std::map<int64_t, std::pair<double, int>> mine;
      bool averaged = true;
      for (absl::string_view line : absl::StrSplit(f.contents, '\n', absl::SkipEmpty())) {
        const std::vector<absl::string_view> fields = absl::StrSplit(line, ',');
        int64_t t = 0, bs = -1;
        double v = 0;
        if (fields.size() < 4 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[0]), &t) ||
            !absl::SimpleAtod(absl::StripAsciiWhitespace(fields[1]), &v) ||
            !absl::SimpleAtoi(absl::StripAsciiWhitespace(fields[3]), &bs) || bs != 0) {
          averaged = false;  // a per-IO log (its block size in BS) or not a log line
          break;
        }
        mine[t].first += v;
        ++mine[t].second;
      }
      if (!averaged) continue;
      for (const auto& [t, sv] : mine) {
        at[t].first += sv.first;
        at[t].second += sv.second;
      }
    }
    if (at.empty()) continue;
    const bool sum = std::string(kind) == "bw" || std::string(kind) == "iops";
    std::vector<std::pair<int64_t, double>> points;
    for (const auto& [t, sv] : at) points.emplace_back(t, sum ? sv.first : sv.first / sv.second);
    if (points.size() > CellResult::kMaxLogPoints) {
      const size_t k = (points.size() + CellResult::kMaxLogPoints - 1) / CellResult::kMaxLogPoints;
      std::vector<std::pair<int64_t, double>> merged;
      for (size_t i = 0; i < points.size(); i += k) {
        const size_t end = std::min(points.size(), i + k);
        double total = 0;
        for (size_t j = i; j < end; ++j) total += points[j].second;
        merged.emplace_back(points[end - 1].first, total / static_cast<double>(end - i));
      }
      points = std::move(merged);
    }
    out.push_back(CellResult::LogSeries{kind, std::move(points)});
  }
  return out;
}

}  // namespace

CellResult CellResultOf(const RunRequest& req, const RunResult& run) {
  const report::ReportInput report = BuildReport(req, run, WallClock{}, /*with_kernel_report=*/false);
  CellResult r;
  double clat_sum = 0;
  uint64_t clat_n = 0;
  stats::LatencyHistogram clat_all;
  for (const report::ReportEntry& e : report.entries) {
    for (int dir = 0; dir < stats::kNumDirs; ++dir) {
      const stats::DirResult& d = e.result.dirs[static_cast<size_t>(dir)];
      clat_all.Merge(d.clat_hist);
      r.dir_iops[static_cast<size_t>(dir)] += d.iops();
      r.iops += d.iops();
      r.bw_bytes += d.bw_bytes_per_sec();
      r.ios += d.total_ios;
      clat_sum += d.clat.mean() * static_cast<double>(d.clat.n());
      clat_n += d.clat.n();
    }
    r.usr_pct += e.result.cpu.usr_pct;
    r.sys_pct += e.result.cpu.sys_pct;
    double job_iops = 0;
    for (const stats::DirResult& d : e.result.dirs) job_iops += d.iops();
    r.jobs.emplace_back(e.name, job_iops);
  }
  if (!report.entries.empty()) {
    r.usr_pct /= static_cast<double>(report.entries.size());
    r.sys_pct /= static_cast<double>(report.entries.size());
  }
  r.clat_mean_ns = clat_n == 0 ? 0 : clat_sum / static_cast<double>(clat_n);
  FillClat(clat_all, &r);
  r.contention_pct = run.kernel.contention_pct;
  r.kernel_sys_pct = run.kernel.sys_pct;
  r.profile = run.kernel.profile;
  r.locks = run.kernel.locks;
  r.stacks = run.kernel.stacks;
  r.log_series = LogSeriesOf(run.logs);
  return r;
}


size_t CellIndex(const Comparison& c, size_t point, size_t variant, int sample) {
  return (point * c.variants.size() + variant) * static_cast<size_t>(c.samples) + static_cast<size_t>(sample);
}

namespace {

Change Diff(const CellResult& base, const CellResult& var, size_t point, size_t variant) {
  constexpr size_t kProfileRows = 6;
  constexpr size_t kLockRows = 3;
  Change ch;
  ch.point = point;
  ch.variant = variant;
  std::map<std::pair<std::string, std::string>, ProfileChange> prof;
  for (const stats::ProfileRow& p : base.profile) {
    ProfileChange& pc = prof[{p.function, stats::CpuModeName(p.mode)}];
    pc.function = p.function;
    pc.mode = stats::CpuModeName(p.mode);
    pc.baseline_pct = p.share_pct;
  }
  for (const stats::ProfileRow& p : var.profile) {
    ProfileChange& pc = prof[{p.function, stats::CpuModeName(p.mode)}];
    pc.function = p.function;
    pc.mode = stats::CpuModeName(p.mode);
    pc.variant_pct = p.share_pct;
  }
  for (auto& [key, pc] : prof) ch.profile.push_back(pc);
  std::stable_sort(ch.profile.begin(), ch.profile.end(), [](const ProfileChange& a, const ProfileChange& b) {
    return std::fabs(a.variant_pct - a.baseline_pct) > std::fabs(b.variant_pct - b.baseline_pct);
  });
  if (ch.profile.size() > kProfileRows) ch.profile.resize(kProfileRows);
  std::map<std::string, LockChange> locks;
  auto add = [&locks](const stats::LockRow& l, uint64_t ios, bool is_base) {
    LockChange& lc = locks[l.name];
    lc.name = l.name;
    const double cont = l.acquisitions == 0 ? 0 : 100.0 * static_cast<double>(l.contended) / static_cast<double>(l.acquisitions);
    const double wait = ios == 0 ? 0 : static_cast<double>(l.wait_ns) / static_cast<double>(ios);
    (is_base ? lc.baseline_contended_pct : lc.variant_contended_pct) = cont;
    (is_base ? lc.baseline_wait_ns_per_io : lc.variant_wait_ns_per_io) = wait;
  };
  for (const stats::LockRow& l : base.locks) add(l, base.ios, true);
  for (const stats::LockRow& l : var.locks) add(l, var.ios, false);
  for (auto& [name, lc] : locks) ch.locks.push_back(lc);
  std::stable_sort(ch.locks.begin(), ch.locks.end(), [](const LockChange& a, const LockChange& b) {
    return std::fabs(a.variant_wait_ns_per_io - a.baseline_wait_ns_per_io) >
           std::fabs(b.variant_wait_ns_per_io - b.baseline_wait_ns_per_io);
  });
  if (ch.locks.size() > kLockRows) ch.locks.resize(kLockRows);
  return ch;
}

}  // namespace

void Summarize(const Comparison& c, Results& res) {
  const size_t points = NumPoints(c);
  for (size_t p = 0; p < points; ++p) {
    for (size_t v = 0; v < c.variants.size(); ++v) {
      Row row;
      row.point = p;
      row.variant = v;
      double sum = 0, sum2 = 0, sys = 0, cont = 0;
      row.iops_min = 1e300;
      for (int s = 0; s < c.samples; ++s) {
        const CellResult& r = res.results[CellIndex(c, p, v, s)];
        if (!r.stalled.empty()) row.stalled = true;
        sum += r.iops;
        sum2 += r.iops * r.iops;
        sys += r.sys_pct;
        cont += r.contention_pct;
        row.iops_min = std::min(row.iops_min, r.iops);
        row.iops_max = std::max(row.iops_max, r.iops);
      }
      const double n = c.samples;
      row.iops = sum / n;
      row.sys_pct = sys / n;
      row.contention_pct = cont / n;
      if (c.samples > 1 && row.iops > 0) {
        const double var = std::max(0.0, (sum2 - sum * sum / n) / (n - 1));
        row.iops_stdev_pct = 100.0 * std::sqrt(var) / row.iops;
      }
      res.rows.push_back(row);
    }
    const Row& base = res.rows[res.rows.size() - c.variants.size()];
    for (size_t v = 1; v < c.variants.size(); ++v) {
      Row& row = res.rows[res.rows.size() - c.variants.size() + v];
      if (base.stalled || row.stalled) continue;  // no difference to a run that never finished
      if (base.iops > 0) row.diff_pct = 100.0 * (row.iops / base.iops - 1.0);
      res.changes.push_back(Diff(res.results[CellIndex(c, p, 0, 0)], res.results[CellIndex(c, p, v, 0)], p, v));
    }
  }
}

namespace {

// --- output ------------------------------------------------------------------

std::string FormatIops(double iops) {
  if (iops >= 1e5) return absl::StrFormat("%.0fK", iops / 1e3);
  if (iops >= 1e4) return absl::StrFormat("%.1fK", iops / 1e3);
  return absl::StrFormat("%.0f", iops);
}
std::string Pct(double v) { return absl::StrFormat("%.1f%%", v); }
std::string SignedPct(double v) { return absl::StrFormat("%+.1f%%", v); }

}  // namespace

std::string AxisHeader(const Axis& a) { return IsFioPath(a.path) ? a.path.substr(4) : a.path; }

namespace {

// The rows of the kernel-list table: header, then one per (point, variant).
std::vector<std::vector<std::string>> TableCells(const Comparison& c, const Results& res) {
  std::vector<std::vector<std::string>> t;
  std::vector<std::string> header = {"Variant"};
  for (const Axis& a : c.axes) header.push_back(AxisHeader(a));
  for (const char* h : {"IOPS", "sys", "contention", "diff"}) header.emplace_back(h);
  if (c.samples > 1) header.emplace_back("spread");
  t.push_back(header);
  for (const Row& row : res.rows) {
    std::vector<std::string> line = {c.variants[row.variant].name};
    for (const Setting& s : PointSettings(c, row.point)) line.push_back(s.value);
    line.push_back(row.stalled ? "stalled" : FormatIops(row.iops));
    line.push_back(row.stalled ? "-" : Pct(row.sys_pct));
    line.push_back(row.stalled ? "-" : Pct(row.contention_pct));
    line.push_back(row.diff_pct ? SignedPct(*row.diff_pct) : "");
    if (c.samples > 1) line.push_back(absl::StrFormat("±%.1f%%", row.iops_stdev_pct));
    t.push_back(std::move(line));
  }
  return t;
}

}  // namespace

std::string PointLabel(const Comparison& c, size_t point) {
  std::vector<std::string> parts;
  for (const Setting& s : PointSettings(c, point)) parts.push_back(AxisHeader(Axis{s.path, {}}) + "=" + s.value);
  return absl::StrJoin(parts, " ");
}

namespace {

// The stalled cells, each with the engine's message (cut to a few stuck
// requests).
std::string StalledText(const Comparison& c, const Results& res) {
  std::string out;
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const std::string& msg = res.results[i].stalled;
    if (msg.empty()) continue;
    if (out.empty()) out = "\nstalled cells (the run could never finish):\n";
    absl::StrAppend(&out, "  ", CellLabel(c, res.cells[i]), ": ",
                    msg.size() > 400 ? msg.substr(0, 400) + " ..." : msg, "\n");
  }
  return out;
}

// With several jobs (or groups) in a cell, each one's IOPS per row (mean over
// the samples): how a scheduler splits the device shows here, not in the sum.
std::string JobsText(const Comparison& c, const Results& res) {
  size_t most = 0;
  for (const CellResult& r : res.results) most = std::max(most, r.jobs.size());
  if (most < 2) return "";
  std::vector<std::string> names(most);
  for (const CellResult& r : res.results) {
    for (size_t j = 0; j < r.jobs.size(); ++j) {
      if (names[j].empty()) names[j] = r.jobs[j].first;
    }
  }
  std::string out = "\nIOPS per job\n";
  for (const Row& row : res.rows) {
    std::vector<double> sum(most, 0);
    int n = 0;
    for (size_t i = 0; i < res.cells.size(); ++i) {
      if (res.cells[i].point != row.point || res.cells[i].variant != row.variant) continue;
      ++n;
      for (size_t j = 0; j < res.results[i].jobs.size(); ++j) sum[j] += res.results[i].jobs[j].second;
    }
    std::string label = c.variants[row.variant].name;
    if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, row.point), ")");
    std::vector<std::string> parts;
    for (size_t j = 0; j < most; ++j) {
      parts.push_back(absl::StrCat(names[j], " ", FormatIops(n == 0 ? 0 : sum[j] / n)));
    }
    absl::StrAppend(&out, "  ", label, ": ", absl::StrJoin(parts, ", "), "\n");
  }
  return out;
}

std::string ChangesText(const Comparison& c, const Results& res) {
  std::string out;
  for (const Change& ch : res.changes) {
    std::string label = c.variants[ch.variant].name + " vs " + c.variants[0].name;
    if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, ch.point), ")");
    absl::StrAppend(&out, "\n", label, ": what changed most\n");
    absl::StrAppend(&out, "  profile (share of busy CPU time)\n");
    for (const ProfileChange& p : ch.profile) {
      absl::StrAppend(&out, absl::StrFormat("    %-44s %-8s %6.2f%% -> %6.2f%%  (%+.2f)\n", p.function, p.mode,
                                            p.baseline_pct, p.variant_pct, p.variant_pct - p.baseline_pct));
    }
    if (!ch.locks.empty()) absl::StrAppend(&out, "  locks (contended acquisitions, spin time per IO)\n");
    for (const LockChange& l : ch.locks) {
      absl::StrAppend(&out, absl::StrFormat("    %-32s %6.2f%% -> %6.2f%%   %8.1f ns -> %8.1f ns\n", l.name,
                                            l.baseline_contended_pct, l.variant_contended_pct,
                                            l.baseline_wait_ns_per_io, l.variant_wait_ns_per_io));
    }
  }
  return out;
}

std::string Header(const Comparison& c, const Results& res) {
  return absl::StrCat("blklab compare: host ", c.host_label, ", ", res.cells.size(), " cells (",
                      NumPoints(c), c.axes.empty() ? " point" : " points", " x ", c.variants.size(), " variants x ",
                      c.samples, c.samples == 1 ? " sample" : " samples", "), seed ", c.seed, "\n",
                      ToolName(c.tool), ": ", absl::StrJoin(c.tool_args, " "), "\n");
}

std::string VariantsText(const Comparison& c) {
  std::string out;
  for (const Variant& v : c.variants) {
    std::vector<std::string> s;
    for (const Setting& x : v.settings) s.push_back(x.path + "=" + x.value);
    absl::StrAppend(&out, "  ", v.name, ": ", s.empty() ? "(as given)" : absl::StrJoin(s, ", "), "\n");
  }
  return out;
}

// For a fleet: per variant, the host types by IOPS change against the
// baseline, largest gain first.
std::string FleetRankingText(const Comparison& c, const Results& res) {
  if (c.fleet.empty() || c.variants.size() < 2) return "";
  std::string out;
  for (size_t v = 1; v < c.variants.size(); ++v) {
    std::vector<std::pair<double, std::string>> ranked;
    for (const Row& row : res.rows) {
      if (row.variant != v || !row.diff_pct) continue;
      ranked.emplace_back(*row.diff_pct, PointLabel(c, row.point));
    }
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    absl::StrAppend(&out, "\n", c.variants[v].name, " vs ", c.variants[0].name,
                    ": host types by IOPS change, largest gain first\n");
    for (const auto& [pct, label] : ranked) absl::StrAppend(&out, absl::StrFormat("  %+8.1f%%  %s\n", pct, label));
  }
  return out;
}

std::string WriteTable(const Comparison& c, const Results& res) {
  const std::vector<std::vector<std::string>> t = TableCells(c, res);
  std::vector<size_t> width(t[0].size(), 0);
  for (const auto& line : t) {
    for (size_t i = 0; i < line.size(); ++i) {
      // "±" is two bytes and one column.
      const size_t cols = line[i].size() - (absl::StrContains(line[i], "±") ? 1 : 0);
      width[i] = std::max(width[i], cols);
    }
  }
  std::string out = Header(c, res) + VariantsText(c) + "\n";
  size_t total = 0;
  for (size_t w : width) total += w + 2;
  for (size_t r = 0; r < t.size(); ++r) {
    std::string line;
    for (size_t i = 0; i < t[r].size(); ++i) {
      const size_t cols = t[r][i].size() - (absl::StrContains(t[r][i], "±") ? 1 : 0);
      line += t[r][i];
      if (i + 1 < t[r].size()) line.append(width[i] - cols + 2, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    absl::StrAppend(&out, line, "\n");
    if (r == 0) absl::StrAppend(&out, std::string(total - 2, '='), "\n");
  }
  return out + JobsText(c, res) + StalledText(c, res) + FleetRankingText(c, res) + ChangesText(c, res);
}

std::string WriteMarkdown(const Comparison& c, const Results& res) {
  const std::vector<std::vector<std::string>> t = TableCells(c, res);
  std::string out = "`blklab compare` on host `" + c.host_label + "`, seed " + absl::StrCat(c.seed) + ": `" + ToolName(c.tool) + " " +
                    absl::StrJoin(c.tool_args, " ") + "`\n\n";
  for (const Variant& v : c.variants) {
    std::vector<std::string> s;
    for (const Setting& x : v.settings) s.push_back("`" + x.path + "=" + x.value + "`");
    absl::StrAppend(&out, "- **", v.name, "**: ", s.empty() ? "as given" : absl::StrJoin(s, ", "), "\n");
  }
  out += "\n";
  for (size_t r = 0; r < t.size(); ++r) {
    absl::StrAppend(&out, "| ", absl::StrJoin(t[r], " | "), " |\n");
    if (r == 0) {
      std::vector<std::string> align;
      for (size_t i = 0; i < t[0].size(); ++i) align.push_back(i <= c.axes.size() ? "---" : "---:");
      absl::StrAppend(&out, "|", absl::StrJoin(align, "|"), "|\n");
    }
  }
  std::string changes = JobsText(c, res) + StalledText(c, res) + FleetRankingText(c, res) + ChangesText(c, res);
  if (!changes.empty()) absl::StrAppend(&out, "\n```", changes, "```\n");
  return out;
}

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char ch : s) q += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return q + "\"";
}

std::string WriteCsv(const Comparison& c, const Results& res) {
  std::vector<std::string> header = {"variant"};
  for (const Axis& a : c.axes) header.push_back(CsvField(a.path));
  for (const char* h : {"sample", "randseed", "iops", "bw_bytes", "usr_pct", "sys_pct", "contention_pct",
                        "kernel_sys_pct", "clat_mean_ns", "diff_pct", "stalled"}) {
    header.emplace_back(h);
  }
  std::string out = absl::StrJoin(header, ",") + "\n";
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const Cell& cell = res.cells[i];
    const CellResult& r = res.results[i];
    std::vector<std::string> f = {CsvField(c.variants[cell.variant].name)};
    for (const Setting& s : PointSettings(c, cell.point)) f.push_back(CsvField(s.value));
    f.push_back(absl::StrCat(cell.sample));
    f.push_back(cell.sample == 0 ? "" : absl::StrCat(CellRandseed(c, cell.sample)));
    f.push_back(absl::StrFormat("%.3f", r.iops));
    f.push_back(absl::StrCat(r.bw_bytes));
    f.push_back(absl::StrFormat("%.4f", r.usr_pct));
    f.push_back(absl::StrFormat("%.4f", r.sys_pct));
    f.push_back(absl::StrFormat("%.4f", r.contention_pct));
    f.push_back(absl::StrFormat("%.4f", r.kernel_sys_pct));
    f.push_back(absl::StrFormat("%.1f", r.clat_mean_ns));
    const CellResult& base = res.results[CellIndex(c, cell.point, 0, cell.sample)];
    const bool no_diff = cell.variant == 0 || base.iops <= 0 || !base.stalled.empty() || !r.stalled.empty();
    f.push_back(no_diff ? "" : absl::StrFormat("%.4f", 100.0 * (r.iops / base.iops - 1)));
    f.push_back(CsvField(r.stalled));
    absl::StrAppend(&out, absl::StrJoin(f, ","), "\n");
  }
  return out;
}

DocNode PointDoc(const Comparison& c, size_t point) {
  DocNode m = DocNode::Map();
  for (const Setting& s : PointSettings(c, point)) m.AddEntry(s.path, {}, DocNode::String(s.value));
  return m;
}

std::string WriteJsonOut(const Comparison& c, const Results& res) {
  DocNode root = DocNode::Map();
  root.AddEntry("host", {}, DocNode::String(c.host_label));
  root.AddEntry("seed", {}, DocNode::Int(static_cast<int64_t>(c.seed)));
  root.AddEntry("samples", {}, DocNode::Int(c.samples));
  root.AddEntry("tool", {}, DocNode::String(ToolName(c.tool)));
  DocNode tool_args = DocNode::List();
  for (const std::string& a : c.tool_args) tool_args.Append(DocNode::String(a));
  root.AddEntry(absl::StrCat(ToolName(c.tool), "_args"), {}, std::move(tool_args));
  DocNode variants = DocNode::List();
  for (const Variant& v : c.variants) {
    DocNode vd = DocNode::Map();
    vd.AddEntry("name", {}, DocNode::String(v.name));
    DocNode settings = DocNode::Map();
    for (const Setting& s : v.settings) settings.AddEntry(s.path, {}, DocNode::String(s.value));
    vd.AddEntry("settings", {}, std::move(settings));
    variants.Append(std::move(vd));
  }
  root.AddEntry("variants", {}, std::move(variants));
  DocNode axes = DocNode::List();
  for (const Axis& a : c.axes) {
    DocNode ad = DocNode::Map();
    ad.AddEntry("path", {}, DocNode::String(a.path));
    DocNode values = DocNode::List();
    for (const std::string& v : a.values) values.Append(DocNode::String(v));
    ad.AddEntry("values", {}, std::move(values));
    axes.Append(std::move(ad));
  }
  root.AddEntry("matrix", {}, std::move(axes));
  DocNode cells = DocNode::List();
  for (size_t i = 0; i < res.cells.size(); ++i) {
    const Cell& cell = res.cells[i];
    const CellResult& r = res.results[i];
    DocNode cd = DocNode::Map();
    cd.AddEntry("variant", {}, DocNode::String(c.variants[cell.variant].name));
    cd.AddEntry("point", {}, PointDoc(c, cell.point));
    cd.AddEntry("sample", {}, DocNode::Int(cell.sample));
    cd.AddEntry("randseed", {},
                cell.sample == 0 ? DocNode::Null() : DocNode::Int(static_cast<int64_t>(CellRandseed(c, cell.sample))));
    cd.AddEntry("iops", {}, DocNode::Double(r.iops));
    DocNode dirs = DocNode::Map();
    static constexpr const char* kDirNames[] = {"read", "write", "trim"};
    for (int dir = 0; dir < stats::kNumDirs; ++dir) {
      dirs.AddEntry(kDirNames[dir], {}, DocNode::Double(r.dir_iops[static_cast<size_t>(dir)]));
    }
    cd.AddEntry("dir_iops", {}, std::move(dirs));
    cd.AddEntry("bw_bytes", {}, DocNode::Int(static_cast<int64_t>(r.bw_bytes)));
    cd.AddEntry("usr_pct", {}, DocNode::Double(r.usr_pct));
    cd.AddEntry("sys_pct", {}, DocNode::Double(r.sys_pct));
    cd.AddEntry("contention_pct", {}, DocNode::Double(r.contention_pct));
    cd.AddEntry("kernel_sys_pct", {}, DocNode::Double(r.kernel_sys_pct));
    cd.AddEntry("clat_mean_ns", {}, DocNode::Double(r.clat_mean_ns));
    cd.AddEntry("ios", {}, DocNode::Int(static_cast<int64_t>(r.ios)));
    DocNode jobs = DocNode::List();
    for (const auto& [name, iops] : r.jobs) {
      DocNode j = DocNode::Map();
      j.AddEntry("name", {}, DocNode::String(name));
      j.AddEntry("iops", {}, DocNode::Double(iops));
      jobs.Append(std::move(j));
    }
    cd.AddEntry("jobs", {}, std::move(jobs));
    cd.AddEntry("stalled", {}, r.stalled.empty() ? DocNode::Null() : DocNode::String(r.stalled));
    cells.Append(std::move(cd));
  }
  root.AddEntry("cells", {}, std::move(cells));
  DocNode rows = DocNode::List();
  for (const Row& row : res.rows) {
    DocNode rd = DocNode::Map();
    rd.AddEntry("variant", {}, DocNode::String(c.variants[row.variant].name));
    rd.AddEntry("point", {}, PointDoc(c, row.point));
    rd.AddEntry("iops", {}, DocNode::Double(row.iops));
    rd.AddEntry("iops_min", {}, DocNode::Double(row.iops_min));
    rd.AddEntry("iops_max", {}, DocNode::Double(row.iops_max));
    rd.AddEntry("iops_stdev_pct", {}, DocNode::Double(row.iops_stdev_pct));
    rd.AddEntry("sys_pct", {}, DocNode::Double(row.sys_pct));
    rd.AddEntry("contention_pct", {}, DocNode::Double(row.contention_pct));
    rd.AddEntry("diff_pct", {}, row.diff_pct ? DocNode::Double(*row.diff_pct) : DocNode::Null());
    rd.AddEntry("stalled", {}, DocNode::Bool(row.stalled));
    rows.Append(std::move(rd));
  }
  root.AddEntry("rows", {}, std::move(rows));
  DocNode changes = DocNode::List();
  for (const Change& ch : res.changes) {
    DocNode cd = DocNode::Map();
    cd.AddEntry("variant", {}, DocNode::String(c.variants[ch.variant].name));
    cd.AddEntry("point", {}, PointDoc(c, ch.point));
    DocNode prof = DocNode::List();
    for (const ProfileChange& p : ch.profile) {
      DocNode pd = DocNode::Map();
      pd.AddEntry("function", {}, DocNode::String(p.function));
      pd.AddEntry("mode", {}, DocNode::String(p.mode));
      pd.AddEntry("baseline_pct", {}, DocNode::Double(p.baseline_pct));
      pd.AddEntry("variant_pct", {}, DocNode::Double(p.variant_pct));
      prof.Append(std::move(pd));
    }
    cd.AddEntry("profile", {}, std::move(prof));
    DocNode locks = DocNode::List();
    for (const LockChange& l : ch.locks) {
      DocNode ld = DocNode::Map();
      ld.AddEntry("name", {}, DocNode::String(l.name));
      ld.AddEntry("baseline_contended_pct", {}, DocNode::Double(l.baseline_contended_pct));
      ld.AddEntry("variant_contended_pct", {}, DocNode::Double(l.variant_contended_pct));
      ld.AddEntry("baseline_wait_ns_per_io", {}, DocNode::Double(l.baseline_wait_ns_per_io));
      ld.AddEntry("variant_wait_ns_per_io", {}, DocNode::Double(l.variant_wait_ns_per_io));
      locks.Append(std::move(ld));
    }
    cd.AddEntry("locks", {}, std::move(locks));
    changes.Append(std::move(cd));
  }
  root.AddEntry("changes", {}, std::move(changes));
  return util::WriteJson(root, 2) + "\n";
}

}  // namespace

std::string CellLabel(const Comparison& c, const Cell& cell) {
  std::string label = "cell " + c.variants[cell.variant].name;
  if (!c.axes.empty()) absl::StrAppend(&label, " (", PointLabel(c, cell.point), ")");
  if (c.samples > 1) absl::StrAppend(&label, " sample ", cell.sample);
  return label;
}

absl::Status UsageError(const std::string& message) {
  absl::Status s = absl::InvalidArgumentError(message);
  s.SetPayload(kUsagePayload, absl::Cord("1"));
  return s;
}

bool IsUsageError(const absl::Status& s) { return s.GetPayload(kUsagePayload).has_value(); }

absl::StatusOr<bool> FlagValue(const std::vector<std::string>& args, size_t& i, const std::string& flag,
                               std::string* value) {
  const std::string& a = args[i];
  if (absl::StartsWith(a, flag + "=")) {
    *value = a.substr(flag.size() + 1);
    return true;
  }
  if (a != flag) return false;
  if (i + 1 >= args.size()) return UsageError(flag + " needs a value");
  *value = args[++i];
  return true;
}

absl::StatusOr<Comparison> ParseComparison(const std::vector<std::string>& args, const Inputs& inputs,
                                           const std::string& default_host_arg) {
  Comparison c;
  std::string host_arg;
  std::string fleet_arg;
  std::string base_dir;
  std::string spec_file;
  bool have_seed = false, have_samples = false, have_tool = false;
  bool fio_part = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (fio_part) {
      c.tool_args.push_back(a);
      continue;
    }
    auto value_of = [&](const std::string& flag, std::string* out) { return FlagValue(args, i, flag, out); };
    std::string v;
    absl::StatusOr<bool> m;
    if (a == "--") {
      fio_part = true;
    } else if (m = value_of("--host", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      host_arg = v;
    } else if (m = value_of("--fleet", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (v.empty()) return UsageError("--fleet needs an inventory file");
      fleet_arg = v;
    } else if (m = value_of("--variant", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      BLKLAB_ASSIGN_OR_RETURN(Variant var, ParseVariant(v));
      c.variants.push_back(std::move(var));
    } else if (m = value_of("--matrix", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      BLKLAB_ASSIGN_OR_RETURN(Axis axis, ParseAxis(v));
      c.axes.push_back(std::move(axis));
    } else if (m = value_of("--tool", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (v != "fio" && v != "io_uring") return UsageError("--tool: fio or io_uring, got '" + v + "'");
      c.tool = v == "fio" ? Tool::kFio : Tool::kIoUring;
      have_tool = true;
    } else if (m = value_of("--baseline", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      c.baseline = v;
    } else if (m = value_of("--samples", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (!absl::SimpleAtoi(v, &c.samples) || c.samples < 1 || c.samples > kMaxSamples) {
        return absl::InvalidArgumentError(absl::StrCat("--samples: expected 1..", kMaxSamples, ", got ", v));
      }
      have_samples = true;
    } else if (m = value_of("--seed", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (!absl::SimpleAtoi(v, &c.seed)) {
        return absl::InvalidArgumentError("--seed: not an unsigned integer: " + v);
      }
      have_seed = true;
    } else if (!absl::StartsWith(a, "-") && spec_file.empty()) {
      spec_file = a;
    } else {
      return UsageError("unknown option '" + a + "' (fio's options go after --)");
    }
  }
  if (!spec_file.empty()) {
    if (!host_arg.empty() || !fleet_arg.empty() || !c.variants.empty() || !c.axes.empty() || !c.tool_args.empty() ||
        have_seed || have_samples || have_tool || !c.baseline.empty()) {
      return UsageError(
          "a spec file holds the host, variants, matrix, seed, samples and the tool's arguments: "
          "only --jobs, --format, --plot and --dry-run go with it");
    }
    BLKLAB_RETURN_IF_ERROR(ReadSpecFile(spec_file, inputs, &c, &host_arg, &fleet_arg, &base_dir));
  } else {
    if (c.tool_args.empty()) return UsageError(absl::StrCat("no ", ToolName(c.tool), " arguments (after --)"));
    if (!host_arg.empty() && !fleet_arg.empty()) return UsageError("--host and --fleet: give one");
    if (host_arg.empty() && fleet_arg.empty()) host_arg = default_host_arg;
  }
  if (!fleet_arg.empty()) BLKLAB_RETURN_IF_ERROR(ReadFleet(fleet_arg, inputs, &c));
  // The baseline: the one named, else the first variant without an overlay,
  // else an implicit one (the host and job as given).
  auto base = c.baseline.empty()
                  ? std::find_if(c.variants.begin(), c.variants.end(),
                                 [](const Variant& v) { return v.settings.empty(); })
                  : std::find_if(c.variants.begin(), c.variants.end(),
                                 [&c](const Variant& v) { return v.name == c.baseline; });
  if (!c.baseline.empty() && base == c.variants.end()) {
    return absl::InvalidArgumentError("baseline '" + c.baseline + "': no variant of that name");
  }
  if (base == c.variants.end()) {
    c.variants.insert(c.variants.begin(), Variant{"baseline", {}});
  } else {
    std::rotate(c.variants.begin(), base, base + 1);
  }
  const size_t points = NumPoints(c);
  const size_t per_point = c.variants.size() * static_cast<size_t>(c.samples);
  if (points > static_cast<size_t>(kMaxCells) || per_point * points > static_cast<size_t>(kMaxCells)) {
    return absl::ResourceExhaustedError(absl::StrCat(
        points > static_cast<size_t>(kMaxCells) ? std::string("more than ") + std::to_string(kMaxCells)
                                                : absl::StrCat(per_point * points),
        " cells: at most ", kMaxCells, " per comparison"));
  }
  std::set<std::string> names;
  for (const Variant& v : c.variants) {
    if (!names.insert(v.name).second) return absl::InvalidArgumentError("variant '" + v.name + "' given twice");
  }
  if (c.tool == Tool::kIoUring) {
    BLKLAB_RETURN_IF_ERROR(ParseIoUringToolArgs(c.tool_args).status());
    for (const Axis& a : c.axes) {
      if (IsFioPath(a.path)) return absl::InvalidArgumentError(a.path + ": fio options do not apply to t/io_uring");
    }
    for (const Variant& v : c.variants) {
      for (const Setting& s : v.settings) {
        if (IsFioPath(s.path)) return absl::InvalidArgumentError(s.path + ": fio options do not apply to t/io_uring");
      }
    }
  }

  if (c.fleet.empty()) {
    BLKLAB_ASSIGN_OR_RETURN(c.host_doc, LoadHostDoc(host_arg, base_dir, inputs.read_file));
  }
  // Every host as given must be valid on its own, and every variant's
  // overlay is checked on each before any cell runs, so a typo fails at once.
  std::vector<std::pair<std::string, const DocNode*>> docs;
  if (c.fleet.empty()) docs.emplace_back("", &c.host_doc);
  for (const auto& [name, doc] : c.fleet) docs.emplace_back(name, &doc);
  for (const auto& [name, doc] : docs) {
    const std::string in = name.empty() ? "" : " on host type " + name;
    absl::StatusOr<host::HostSpec> host = host::ApplyHostOverrides(*doc, {});
    if (!host.ok()) return absl::Status(host.status().code(), std::string(host.status().message()) + in);
    if (c.fleet.empty()) c.host_label = host->name;
    for (const Variant& v : c.variants) {
      std::vector<host::HostOverride> o;
      for (const Setting& s : v.settings) {
        if (!IsFioPath(s.path)) o.push_back({s.path, s.value});
      }
      if (absl::Status s = host::ApplyHostOverrides(*doc, o).status(); !s.ok()) {
        return absl::InvalidArgumentError("variant " + v.name + in + ": " + std::string(s.message()));
      }
    }
  }
  return c;
}

std::vector<Cell> Cells(const Comparison& c) {
  std::vector<Cell> cells;
  for (size_t p = 0; p < NumPoints(c); ++p) {
    for (size_t v = 0; v < c.variants.size(); ++v) {
      for (int s = 0; s < c.samples; ++s) cells.push_back(Cell{p, v, s});
    }
  }
  return cells;
}

absl::StatusOr<Format> ParseFormat(const std::string& name) {
  if (name == "table") return Format::kTable;
  if (name == "markdown") return Format::kMarkdown;
  if (name == "csv") return Format::kCsv;
  if (name == "json") return Format::kJson;
  return absl::InvalidArgumentError("--format: expected table, markdown, csv or json, got " + name);
}

std::string Render(const Comparison& c, const Results& res, Format format) {
  switch (format) {
    case Format::kJson:
      return WriteJsonOut(c, res);
    case Format::kCsv:
      return WriteCsv(c, res);
    case Format::kMarkdown:
      return WriteMarkdown(c, res);
    case Format::kTable:
      break;
  }
  return WriteTable(c, res);
}

absl::StatusOr<std::string> DryRunText(const Comparison& c, const Inputs& inputs) {
  Results res;
  res.cells = Cells(c);
  std::string out = Header(c, res) + VariantsText(c);
  for (const Cell& cell : res.cells) {
    if (c.tool == Tool::kIoUring) {
      absl::StatusOr<IoUringRunRequest> req = PrepareIoUringCell(c, cell);
      if (!req.ok()) return absl::Status(req.status().code(), CellLabel(c, cell) + ": " + std::string(req.status().message()));
      absl::StrAppend(&out, CellLabel(c, cell), ": t/io_uring, ", req->spec.nthreads, " submitter",
                      req->spec.nthreads == 1 ? "" : "s", " on ", req->host.name, ", seed ", req->seed, "\n");
      continue;
    }
    absl::StatusOr<RunRequest> req = PrepareCell(c, cell, inputs);
    if (!req.ok()) return absl::Status(req.status().code(), CellLabel(c, cell) + ": " + std::string(req.status().message()));
    absl::StrAppend(&out, CellLabel(c, cell), ": ", req->jobs.clones.size(), " fio threads on ", req->host.name,
                    cell.sample > 0 ? absl::StrCat(", randseed=", CellRandseed(c, cell.sample)) : "", "\n");
  }
  return out;
}

}  // namespace blklab::compare
