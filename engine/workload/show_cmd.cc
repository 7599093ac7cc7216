#include "engine/workload/show_cmd.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/util/status_macros.h"
#include "engine/workload/option_table.h"

namespace blklab::workload {
namespace {

bool IsGlobalName(const std::string& name) { return name.compare(0, 6, "global") == 0; }

void AppendOption(const OptionLine& ol, std::string* out) {
  const OptionDef* def = FindOption(ol.name);
  const std::string& name = def != nullptr ? std::string(def->name) : ol.name;
  absl::StrAppend(out, "--", name);
  if (!ol.value.has_value()) {
    out->push_back(' ');
    return;
  }
  const char* quote = name == "description" ? "\"" : "";
  absl::StrAppend(out, "=", quote, *ol.value, quote, " ");
}

// fio's own flags that SplitShowCmdLine also recognises as argument starts.
bool IsKnownArgName(const std::string& name) {
  return name == "name" || FindOption(name) != nullptr;
}

}  // namespace

int OptionPriority(const OptionDef& def) {
  static constexpr const char* kFirst[] = {"kb_base", "unit_base", "lockfile", "cpus_allowed_policy"};
  static constexpr const char* kLast[] = {"filename", "filename_format"};
  for (const char* n : kFirst) {
    if (std::strcmp(def.name, n) == 0) return 1;
  }
  for (const char* n : kLast) {
    if (std::strcmp(def.name, n) == 0) return -1;
  }
  return 0;
}

std::vector<OptionLine> OrderSectionLines(const std::vector<OptionLine>& lines) {
  std::vector<std::pair<int, const OptionLine*>> general;
  std::vector<const OptionLine*> engine;
  for (const OptionLine& ol : lines) {
    const OptionDef* def = FindOption(ol.name);
    if (def == nullptr || def->is_engine_private()) {
      engine.push_back(&ol);
    } else {
      general.emplace_back(OptionPriority(*def), &ol);
    }
  }
  std::stable_sort(general.begin(), general.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<OptionLine> out;
  out.reserve(lines.size());
  for (const auto& [prio, ol] : general) out.push_back(*ol);
  for (const OptionLine* ol : engine) out.push_back(*ol);
  return out;
}

std::string ShowCmdLine(const std::vector<Section>& sections,
                        const std::vector<std::string>& only_sections,
                        const std::vector<OptionLine>& initial_globals) {
  std::string out;
  bool first = true;
  std::vector<OptionLine> globals = initial_globals;
  for (const Section& s : sections) {
    const bool global = s.is_global || IsGlobalName(s.name);
    if (!global && !only_sections.empty() &&
        std::find(only_sections.begin(), only_sections.end(), s.name) == only_sections.end()) {
      continue;
    }
    if (first) out += "fio ";
    first = false;
    const std::vector<OptionLine> ordered = OrderSectionLines(s.lines);
    if (global) {
      globals.insert(globals.end(), ordered.begin(), ordered.end());
      for (const OptionLine& ol : globals) AppendOption(ol, &out);
    } else {
      absl::StrAppend(&out, "--name=", s.name, " ");
      for (const OptionLine& ol : ordered) AppendOption(ol, &out);
    }
  }
  out += "\n";
  return out;
}

absl::StatusOr<std::string> ShowCmd(const FioInvocation& invocation, const ParseOptions& options) {
  BLKLAB_RETURN_IF_ERROR(BuildJobs(invocation, options).status());
  std::vector<std::string> only = options.sections;
  only.insert(only.end(), invocation.sections.begin(), invocation.sections.end());
  std::vector<OptionLine> cmd_globals;
  if (!invocation.cmdline_sections.empty()) cmd_globals = invocation.cmdline_sections[0].lines;
  std::string out;
  for (size_t i = 0; i < invocation.job_files.size(); ++i) {
    const std::string& file = invocation.job_files[i];
    if (!options.read_file) return absl::InvalidArgumentError(absl::StrCat("cannot read job file ", file));
    absl::StatusOr<std::string> text = options.read_file(file);
    if (!text.ok()) return text.status();
    BLKLAB_ASSIGN_OR_RETURN(std::vector<Section> sections, ParseJobFileSections(*text, file, options));
    out += ShowCmdLine(sections, only, i == 0 ? cmd_globals : std::vector<OptionLine>{});
  }
  return out;
}

std::vector<std::string> SplitShowCmdLine(const std::string& line_in) {
  std::string line = line_in;
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (line.compare(0, 4, "fio ") == 0) {
    line = line.substr(4);
  } else if (line == "fio") {
    line.clear();
  }
  // Argument starts: position 0 and every " --NAME" with a known NAME.
  std::vector<size_t> starts;
  auto known_at = [&](size_t pos) {
    size_t end = pos + 2;
    while (end < line.size() && line[end] != '=' && line[end] != ' ') ++end;
    return IsKnownArgName(line.substr(pos + 2, end - pos - 2));
  };
  if (line.compare(0, 2, "--") == 0) starts.push_back(0);
  for (size_t p = line.find(" --"); p != std::string::npos; p = line.find(" --", p + 1)) {
    if (known_at(p + 1)) starts.push_back(p + 1);
  }
  std::vector<std::string> args;
  for (size_t i = 0; i < starts.size(); ++i) {
    const size_t end = i + 1 < starts.size() ? starts[i + 1] - 1 : line.size();
    std::string arg = line.substr(starts[i], end - starts[i]);
    if (arg.compare(0, 14, "--description=") == 0 && arg.size() >= 16 && arg[14] == '"' &&
        arg.back() == '"') {
      arg = "--description=" + arg.substr(15, arg.size() - 16);
    }
    args.push_back(std::move(arg));
  }
  return args;
}

}  // namespace blklab::workload
