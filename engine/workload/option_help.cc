#include "engine/workload/option_help.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "engine/workload/option_bind.h"

namespace blklab::workload {
namespace {

// fio's type phrases (parse.c typehelp[]), chosen from the option kind.
constexpr char kTypeString[] = "string (opt=bla)";
constexpr char kTypeInt[] = "integer value (opt=100)";
constexpr char kTypeBool[] = "boolean value (opt=1)";
constexpr char kTypeFlag[] = "empty or boolean value ([0|1])";
constexpr char kTypeTime[] = "string with time postfix (opt=10s)";
constexpr char kTypeFloatList[] = "list of floating point values separated by ':' (opt=5.9:7.8)";
constexpr char kTypeRange[] = "one to three ranges (opt=1k-4k[,4k-8k[,1k-8k]])";
constexpr char kTypeSize[] = "string with possible k/m/g postfix (opt=4k)";

const char* TypeOfKind(OptionKind k) {
  switch (k) {
    case OptionKind::kBool: return kTypeBool;
    case OptionKind::kFlag: return kTypeFlag;
    case OptionKind::kInt: return kTypeInt;
    case OptionKind::kSize: return kTypeSize;
    case OptionKind::kTime: return kTypeTime;
    case OptionKind::kFloatList: return kTypeFloatList;
    case OptionKind::kString:
    case OptionKind::kChoice:
    case OptionKind::kFlagOrString: return kTypeString;
  }
  return kTypeString;
}

// Where blklab's table kind differs from how fio types and describes the
// option (per-direction integers are strings in the table), plus ranges and
// blklab's own one-line help for the options users ask about most.
struct HelpOverride {
  const char* name;
  const char* type;   // nullptr: from the kind
  const char* range;  // nullptr: none (bool kinds get min=0, max=1)
  const char* help;   // nullptr: the table's help
};
constexpr HelpOverride kOverrides[] = {
    {"bs", kTypeInt, "min=1, max=-1", "Block size of each I/O, per direction"},
    {"ba", kTypeInt, "min=1, max=-1", "Alignment of I/O offsets, per direction"},
    {"bsrange", kTypeRange, "min=1", "Range of block sizes, per direction"},
    {"bssplit", kTypeString, nullptr, "Weighted mix of block sizes"},
    {"iodepth", kTypeInt, "min=1, max=-1", "Number of I/Os kept in flight"},
    {"iodepth_batch", kTypeInt, "min=0, max=-1", "Number of I/Os submitted at once"},
    {"iodepth_batch_complete_min", kTypeInt, "min=0, max=-1", "Minimum completions reaped at once"},
    {"iodepth_batch_complete_max", kTypeInt, "min=0, max=-1", "Maximum completions reaped at once"},
    {"iodepth_low", kTypeInt, "min=0, max=-1", "Refill the queue when it drains to this depth"},
    {"numjobs", kTypeInt, "min=0, max=-1", "Number of clones of this job"},
    {"rate", kTypeInt, "min=0, max=-1", "Bandwidth limit, per direction"},
    {"rate_min", kTypeInt, "min=0, max=-1", "Minimum bandwidth before the job is stopped"},
    {"rate_iops", kTypeInt, "min=0, max=-1", "IOPS limit, per direction"},
    {"rate_iops_min", kTypeInt, "min=0, max=-1", "Minimum IOPS before the job is stopped"},
    {"thinktime", kTypeInt, "min=0, max=-1", "Idle time after I/Os (microseconds)"},
    {"thinktime_spin", kTypeInt, "min=0, max=-1", "Busy part of the think time (microseconds)"},
    {"thinktime_blocks", kTypeInt, "min=1, max=-1", "Number of I/Os between think times"},
    {"percentage_random", kTypeInt, "min=0, max=100", "Share of random offsets, per direction"},
    {"rwmixread", kTypeInt, "min=0, max=100", "Share of reads in a mixed workload (percent)"},
    {"rwmixwrite", kTypeInt, "min=0, max=100", "Share of writes in a mixed workload (percent)"},
    {"startdelay", kTypeTime, nullptr, "Delay before the job starts (range: random)"},
    {"size", nullptr, nullptr, "Size of the region the job works on"},
    {"offset", nullptr, nullptr, "Start of the region the job works on"},
    {"io_size", nullptr, nullptr, "Amount of I/O the job does"},
    {"loops", kTypeInt, "min=1, max=-1", "Number of passes over the workload"},
    {"significant_figures", kTypeInt, "min=1, max=10", "Significant figures in normal output"},
    {"kb_base", kTypeString, nullptr, "Meaning of k/m/g suffixes (1024 or 1000)"},
    {"unit_base", kTypeString, nullptr, "Report bytes (8) or bits (1); 0 = auto"},
    {"percentile_list", kTypeFloatList, "min=0.000000, max=100.000000", "Percentiles to report"},
    {"write_bw_log", kTypeString, nullptr, "Log bandwidth samples (optional file prefix)"},
    {"write_iops_log", kTypeString, nullptr, "Log IOPS samples (optional file prefix)"},
    {"write_lat_log", kTypeString, nullptr, "Log latency samples (optional file prefix)"},
    {"write_hist_log", kTypeString, nullptr, "Log latency histograms (optional file prefix)"},
    {"rw", nullptr, nullptr, "I/O pattern"},
    {"ioengine", nullptr, nullptr, "I/O engine"},
    {"direct", nullptr, nullptr, "Bypass the page cache (O_DIRECT)"},
    {"runtime", nullptr, nullptr, "Stop the job after this time"},
    {"time_based", nullptr, nullptr, "Repeat the workload until runtime has passed"},
    {"ramp_time", nullptr, nullptr, "Warm-up time excluded from statistics"},
    {"stonewall", nullptr, nullptr, "Wait for earlier jobs and start a new reporting group"},
    {"new_group", nullptr, nullptr, "Start a new reporting group"},
    {"group_reporting", nullptr, nullptr, "Report a group's jobs as one"},
    {"filename", nullptr, nullptr, "Target file(s) or device(s), ':' separated"},
};

const HelpOverride* FindOverride(const char* name) {
  for (const HelpOverride& o : kOverrides) {
    if (std::strcmp(o.name, name) == 0) return &o;
  }
  return nullptr;
}

std::string HelpText(const OptionDef& def) {
  const HelpOverride* o = FindOverride(def.name);
  if (o != nullptr && o->help != nullptr) return o->help;
  if (def.help[0] != '\0') return def.help;
  return "(no description)";
}

// The description line's text: the help, then the marker of an option
// blklab does not model.
std::string HelpLine(const std::string& help, OptionModelling m) {
  const char* marker = ModellingMarker(m);
  return marker[0] == '\0' ? help : absl::StrCat(help, " ", marker);
}

std::string HelpLine(const OptionDef& def) { return HelpLine(HelpText(def), ModellingOf(def)); }

OptionHelp MakeHelp(const OptionDef& def) {
  OptionHelp h;
  h.name = def.name;
  std::vector<std::string> aliases = absl::StrSplit(def.aliases, ' ', absl::SkipEmpty());
  if (!aliases.empty()) h.alias = aliases[0];
  h.help = HelpText(def);
  h.modelling = ModellingOf(def);
  const HelpOverride* o = FindOverride(def.name);
  h.type = o != nullptr && o->type != nullptr ? o->type : TypeOfKind(def.kind);
  h.default_value = def.default_value[0] != '\0' ? def.default_value : "no default";
  if (o != nullptr && o->range != nullptr) {
    h.range = o->range;
  } else if (def.kind == OptionKind::kBool) {
    h.range = "min=0, max=1";
  }
  if (def.kind == OptionKind::kChoice) {
    h.valid_values = absl::StrSplit(def.choices, ' ', absl::SkipEmpty());
  }
  return h;
}

std::string FormatHelp(const OptionHelp& h) {
  std::string out = absl::StrFormat("%20s: %s\n", h.name, HelpLine(h.help, h.modelling));
  if (!h.alias.empty()) absl::StrAppendFormat(&out, "%20s: %s\n", "alias", h.alias);
  absl::StrAppendFormat(&out, "%20s: %s\n", "type", h.type);
  absl::StrAppendFormat(&out, "%20s: %s\n", "default", h.default_value);
  if (!h.range.empty()) absl::StrAppendFormat(&out, "%20s: %s\n", "range", h.range);
  for (size_t i = 0; i < h.valid_values.size(); ++i) {
    absl::StrAppendFormat(&out, "%20s: %s\n", i == 0 ? "valid values" : "", h.valid_values[i]);
  }
  out += "\n";
  return out;
}

absl::Status NoSuchCommand(const std::string& name) {
  return absl::NotFoundError(absl::StrCat("No such command: ", name));
}

}  // namespace

OptionModelling ModellingOf(const OptionDef& def) {
  if (def.binding.kind == OptionBinding::Kind::kCallback &&
      def.binding.callback == &option_bind::ApplyUnmodelledEffect) {
    return OptionModelling::kRefusedByRun;
  }
  // Tier 3 is what job_parser.cc warns about; a kGeneric row without a
  // binding is validated only (option_table.h) and so changes nothing.
  if (def.tier == 3) return OptionModelling::kIgnored;
  if (def.id == OptionId::kGeneric && def.binding.kind == OptionBinding::Kind::kNone) {
    return OptionModelling::kIgnored;
  }
  return OptionModelling::kModelled;
}

const char* ModellingMarker(OptionModelling m) {
  switch (m) {
    case OptionModelling::kModelled: return "";
    case OptionModelling::kIgnored: return "(accepted, not modelled)";
    case OptionModelling::kRefusedByRun: return "(accepted, not modelled: a run refuses it)";
  }
  return "";
}

absl::StatusOr<OptionHelp> GetOptionHelp(const std::string& option) {
  const OptionDef* def = FindOption(option);
  if (def == nullptr) return NoSuchCommand(option);
  return MakeHelp(*def);
}

absl::StatusOr<std::string> CmdHelp(const std::string& option) {
  if (option.empty() || option == "all") {
    std::string out;
    for (const OptionDef& def : AllOptions()) {
      if (def.is_engine_private()) continue;
      absl::StrAppendFormat(&out, "%-24s: %s\n", def.name, HelpLine(def));
    }
    return out;
  }
  const OptionDef* def = FindOption(option);
  if (def == nullptr || def->is_engine_private()) return NoSuchCommand(option);
  return FormatHelp(MakeHelp(*def));
}

absl::StatusOr<std::string> EngHelp(const std::string& engine_arg) {
  if (engine_arg.empty()) {
    std::string out = "Available IO engines:\n";
    for (absl::string_view e : absl::StrSplit(KnownFioEngines(), ' ', absl::SkipEmpty())) {
      absl::StrAppend(&out, "\t", e, "\n");
    }
    return out;
  }
  std::string engine = engine_arg;
  std::string option;
  if (const size_t comma = engine_arg.find(','); comma != std::string::npos) {
    engine = engine_arg.substr(0, comma);
    option = engine_arg.substr(comma + 1);
  }
  if (!IsKnownFioEngine(engine)) {
    return absl::NotFoundError(absl::StrCat("engine ", engine, " not loadable"));
  }
  if (!option.empty()) {
    const OptionDef* def = FindOption(option);
    if (def == nullptr || !def->EngineHasIt(engine)) return NoSuchCommand(option);
    return FormatHelp(MakeHelp(*def));
  }
  std::string out;
  for (const OptionDef& def : AllOptions()) {
    if (def.EngineHasIt(engine)) absl::StrAppendFormat(&out, "%-24s: %s\n", def.name, HelpLine(def));
  }
  return out;
}

}  // namespace blklab::workload
