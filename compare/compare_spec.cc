// The comparison core's parsing (compare/compare.h): the arguments of
// `blklab compare` (ParseComparison), a comparison spec file, a fleet
// inventory, host documents, and t/io_uring's command line as a comparison
// takes it.
#include "compare/compare.h"

#include <algorithm>
#include <cstdint>
#include <set>
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
#include "absl/strings/str_split.h"
#include "compare/compare_internal.h"
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

namespace internal {

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

}  // namespace internal

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


namespace {

// What the command line names besides the comparison itself.
struct CommandLine {
  std::string host_arg;
  std::string fleet_arg;
  std::string spec_file;
  bool have_seed = false, have_samples = false, have_tool = false;
};

// "; did you mean --variant?" for a misspelt option of blklab compare (its
// own and the CLI's), or nothing when none is close.
std::string OptionHint(const std::string& arg) {
  static constexpr const char* kOptions[] = {"--host", "--fleet", "--variant", "--matrix", "--tool",
                                             "--baseline", "--samples", "--seed", "--format", "--plot",
                                             "--jobs", "--dry-run"};
  const std::string name = arg.substr(0, arg.find('='));
  if (name.size() > 64) return "";
  std::string best;
  size_t best_d = 3;  // close names only
  for (const char* o : kOptions) {
    const size_t d = workload::EditDistance(name, o);
    if (d < best_d) {
      best_d = d;
      best = o;
    }
  }
  return best.empty() ? "" : "; did you mean " + best + "?";
}

// The options, a spec file's name and the tool's arguments (after --) into
// *c and *cl; usage errors name the option.
absl::Status ParseCommandLine(const std::vector<std::string>& args, Comparison* c, CommandLine* cl) {
  bool fio_part = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (fio_part) {
      c->tool_args.push_back(a);
      continue;
    }
    auto value_of = [&](const std::string& flag, std::string* out) { return FlagValue(args, i, flag, out); };
    std::string v;
    absl::StatusOr<bool> m;
    if (a == "--") {
      fio_part = true;
    } else if (m = value_of("--host", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      cl->host_arg = v;
    } else if (m = value_of("--fleet", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (v.empty()) return UsageError("--fleet needs an inventory file");
      cl->fleet_arg = v;
    } else if (m = value_of("--variant", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      BLKLAB_ASSIGN_OR_RETURN(Variant var, ParseVariant(v));
      c->variants.push_back(std::move(var));
    } else if (m = value_of("--matrix", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      BLKLAB_ASSIGN_OR_RETURN(Axis axis, ParseAxis(v));
      c->axes.push_back(std::move(axis));
    } else if (m = value_of("--tool", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (v != "fio" && v != "io_uring") return UsageError("--tool: fio or io_uring, got '" + v + "'");
      c->tool = v == "fio" ? Tool::kFio : Tool::kIoUring;
      cl->have_tool = true;
    } else if (m = value_of("--baseline", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      c->baseline = v;
    } else if (m = value_of("--samples", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (!absl::SimpleAtoi(v, &c->samples) || c->samples < 1 || c->samples > kMaxSamples) {
        return absl::InvalidArgumentError(absl::StrCat("--samples: expected 1..", kMaxSamples, ", got ", v));
      }
      cl->have_samples = true;
    } else if (m = value_of("--seed", &v); !m.ok() || *m) {
      if (!m.ok()) return m.status();
      if (!absl::SimpleAtoi(v, &c->seed)) {
        return absl::InvalidArgumentError("--seed: not an unsigned integer: " + v);
      }
      cl->have_seed = true;
    } else if (!absl::StartsWith(a, "-") && cl->spec_file.empty()) {
      cl->spec_file = a;
    } else {
      return UsageError("unknown option '" + a + "'" + OptionHint(a) + " (fio's options go after --)");
    }
  }
  return absl::OkStatus();
}

// The baseline first: the variant named, else the first one. Only a
// comparison with no variants at all (a matrix of the job as given) gets
// one of its own, "baseline": no row appears that the user did not ask for.
absl::Status PutBaselineFirst(Comparison* c) {
  if (c->variants.empty()) {
    if (!c->baseline.empty()) {
      return absl::InvalidArgumentError("baseline '" + c->baseline + "': no variant of that name");
    }
    c->variants.push_back(Variant{"baseline", {}});
    return absl::OkStatus();
  }
  if (c->baseline.empty()) return absl::OkStatus();
  auto base = std::find_if(c->variants.begin(), c->variants.end(),
                           [c](const Variant& v) { return v.name == c->baseline; });
  if (base == c->variants.end()) {
    return absl::InvalidArgumentError("baseline '" + c->baseline + "': no variant of that name");
  }
  std::rotate(c->variants.begin(), base, base + 1);
  return absl::OkStatus();
}

// The number of cells within kMaxCells, variant names unique, and for
// t/io_uring its command line and no fio.OPTION settings.
absl::Status CheckVariants(const Comparison& c) {
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
    BLKLAB_RETURN_IF_ERROR(internal::ParseIoUringToolArgs(c.tool_args).status());
    for (const Axis& a : c.axes) {
      if (IsFioPath(a.path)) return absl::InvalidArgumentError(a.path + ": fio options do not apply to t/io_uring");
    }
    for (const Variant& v : c.variants) {
      for (const Setting& s : v.settings) {
        if (IsFioPath(s.path)) return absl::InvalidArgumentError(s.path + ": fio options do not apply to t/io_uring");
      }
    }
  }
  return absl::OkStatus();
}

// Every host as given must be valid on its own, and every variant's
// overlay is checked on each before any cell runs, so a typo fails at once.
// Sets c->host_label without a fleet.
absl::Status CheckHosts(Comparison* c) {
  std::vector<std::pair<std::string, const DocNode*>> docs;
  if (c->fleet.empty()) docs.emplace_back("", &c->host_doc);
  for (const auto& [name, doc] : c->fleet) docs.emplace_back(name, &doc);
  for (const auto& [name, doc] : docs) {
    const std::string in = name.empty() ? "" : " on host type " + name;
    absl::StatusOr<host::HostSpec> host = host::ApplyHostOverrides(*doc, {});
    if (!host.ok()) return absl::Status(host.status().code(), std::string(host.status().message()) + in);
    if (c->fleet.empty()) c->host_label = host->name;
    for (const Variant& v : c->variants) {
      std::vector<host::HostOverride> o;
      for (const Setting& s : v.settings) {
        if (!IsFioPath(s.path)) o.push_back({s.path, s.value});
      }
      if (absl::Status s = host::ApplyHostOverrides(*doc, o).status(); !s.ok()) {
        return absl::InvalidArgumentError("variant " + v.name + in + ": " + std::string(s.message()));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<Comparison> ParseComparison(const std::vector<std::string>& args, const Inputs& inputs,
                                           const std::string& default_host_arg) {
  Comparison c;
  CommandLine cl;
  std::string base_dir;
  BLKLAB_RETURN_IF_ERROR(ParseCommandLine(args, &c, &cl));
  if (!cl.spec_file.empty()) {
    if (!cl.host_arg.empty() || !cl.fleet_arg.empty() || !c.variants.empty() || !c.axes.empty() ||
        !c.tool_args.empty() || cl.have_seed || cl.have_samples || cl.have_tool || !c.baseline.empty()) {
      return UsageError(
          "a spec file holds the host, variants, matrix, seed, samples and the tool's arguments: "
          "only --jobs, --format, --plot and --dry-run go with it");
    }
    BLKLAB_RETURN_IF_ERROR(ReadSpecFile(cl.spec_file, inputs, &c, &cl.host_arg, &cl.fleet_arg, &base_dir));
  } else {
    if (c.tool_args.empty()) return UsageError(absl::StrCat("no ", ToolName(c.tool), " arguments (after --)"));
    if (!cl.host_arg.empty() && !cl.fleet_arg.empty()) return UsageError("--host and --fleet: give one");
    if (cl.host_arg.empty() && cl.fleet_arg.empty()) cl.host_arg = default_host_arg;
  }
  if (!cl.fleet_arg.empty()) BLKLAB_RETURN_IF_ERROR(ReadFleet(cl.fleet_arg, inputs, &c));
  BLKLAB_RETURN_IF_ERROR(PutBaselineFirst(&c));
  BLKLAB_RETURN_IF_ERROR(CheckVariants(c));

  if (c.fleet.empty()) {
    BLKLAB_ASSIGN_OR_RETURN(c.host_doc, LoadHostDoc(cl.host_arg, base_dir, inputs.read_file));
  }
  BLKLAB_RETURN_IF_ERROR(CheckHosts(&c));
  return c;
}

absl::Status CheckSettings(const Comparison& c, const Inputs& inputs, const CellLimits& limits) {
  if (c.variants.empty()) return absl::OkStatus();  // ParseComparison gives every comparison one
  // Probes: one-cell comparisons of the same job and hosts, with one
  // variant (or one axis value) and, with a fleet, the fleet axis, so cell
  // {h, 0, 0} runs on host type h.
  Comparison probe = c;
  probe.samples = 1;
  probe.collect_stacks = false;
  probe.axes.clear();
  const bool fleet = !c.fleet.empty();
  if (fleet) {
    Axis types{kFleetAxis, {}};
    for (const auto& [name, doc] : c.fleet) types.values.push_back(name);
    probe.axes.push_back(std::move(types));
  }
  const size_t base_axes = probe.axes.size();
  const size_t hosts = fleet ? c.fleet.size() : 1;
  int budget = kMaxCells;
  auto prepare = [&](size_t h) -> absl::Status {
    --budget;
    const Cell cell{h, 0, 0};
    if (probe.tool == Tool::kIoUring) return PrepareIoUringCell(probe, cell, limits).status();
    return PrepareCell(probe, cell, inputs, limits).status();
  };
  auto refuse = [&](const std::string& what, size_t h, const absl::Status& s) {
    const absl::StatusCode code = s.code() == absl::StatusCode::kResourceExhausted
                                      ? absl::StatusCode::kResourceExhausted
                                      : absl::StatusCode::kInvalidArgument;
    return absl::Status(code, absl::StrCat(what, fleet ? " on host type " + c.fleet[h].first : "", ": ",
                                           s.message()));
  };
  for (size_t h = 0; h < hosts && budget > 0; ++h) {
    probe.variants = {Variant{c.variants[0].name, {}}};
    probe.axes.resize(base_axes);
    if (!prepare(h).ok()) continue;  // the job as given: the cells' to report
    for (const Variant& v : c.variants) {
      if (v.settings.empty() || budget <= 0) continue;
      probe.variants = {v};
      if (absl::Status s = prepare(h); !s.ok()) return refuse("variant " + v.name, h, s);
    }
    probe.variants = {Variant{c.variants[0].name, {}}};
    for (const Axis& a : c.axes) {
      if (fleet && a.path == kFleetAxis) continue;
      std::set<std::string> seen;
      for (const std::string& value : a.values) {
        if (budget <= 0) break;
        if (!seen.insert(value).second) continue;
        probe.axes.resize(base_axes);
        probe.axes.push_back(Axis{a.path, {value}});
        if (absl::Status s = prepare(h); !s.ok()) return refuse("--matrix " + a.path + "=" + value, h, s);
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace blklab::compare
