// engine/workload/option_help.h
//
// `fio --cmdhelp[=OPTION]` and `fio --enghelp[=ENGINE[,OPTION]]` built from
// the option table (option_table.h), in fio 3.33's layout:
//
//   --cmdhelp=OPTION   "%20s: %s" lines: NAME: help, alias, type, default
//                      ("no default" when none), range (min/max) where the
//                      option has one, then "valid values" (one per line,
//                      "%-10s"), and a closing empty line;
//   --cmdhelp / =all   one "%-24s: %s" line per general option (NAME: help);
//   --enghelp          "Available IO engines:" and one tab-indented name per
//                      engine blklab accepts;
//   --enghelp=ENGINE   one "%-24s: %s" line per engine-private option;
//   --enghelp=ENGINE,OPTION  the --cmdhelp=OPTION text of that engine option.
//
// The help sentences are blklab's own; the type strings and layout follow
// fio so that scripts reading fio's help keep working. Wherever an option's
// help is printed (the "NAME: help" line of every form above), an option
// blklab accepts but does not model carries a marker after the help, e.g.
//   "nice                    : CPU nice value the job runs with (accepted, not modelled)";
// options without a marker are modelled (some only for some values: a run
// refuses the rest by name). Unknown options give NotFound
// "No such command: X" (fio prints that text too).
//
// Thread-safety: stateless; safe from any thread.
#ifndef BLKLAB_ENGINE_WORKLOAD_OPTION_HELP_H_
#define BLKLAB_ENGINE_WORKLOAD_OPTION_HELP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/workload/option_table.h"

namespace blklab::workload {

// Whether blklab models an option (from its table row, option_table.h).
enum class OptionModelling : uint8_t {
  kModelled,
  // Accepted and validated, no effect on a run: tier 3 rows (a job using one
  // gets the warning "option X is accepted but not modelled by blklab
  // (ignored)") and kGeneric rows without a binding (they set no field).
  kIgnored,
  // Accepted by the parser, but a run that sets it is refused by name
  // (rows bound to option_bind::ApplyUnmodelledEffect: read_iolog, thp,
  // steadystate_duration).
  kRefusedByRun,
};

// The modelling class of `def`.
OptionModelling ModellingOf(const OptionDef& def);

// The marker printed after the help of an option of class `m`: "" for
// kModelled, "(accepted, not modelled)" for kIgnored and
// "(accepted, not modelled: a run refuses it)" for kRefusedByRun.
const char* ModellingMarker(OptionModelling m);

// Facts shown by --cmdhelp for one option.
struct OptionHelp {
  std::string name;
  std::string alias;          // first alias, "" if none
  std::string help;           // the description, without the marker
  OptionModelling modelling = OptionModelling::kModelled;
  std::string type;           // fio's type phrase, e.g. "integer value (opt=100)"
  std::string default_value;  // "no default" when none
  std::string range;          // e.g. "min=1, max=-1"; "" if none
  std::vector<std::string> valid_values;
};

// The help facts of an option (by name or alias); NotFound if unknown.
absl::StatusOr<OptionHelp> GetOptionHelp(const std::string& option);

// --cmdhelp[=OPTION]: "" or "all" lists every general option.
absl::StatusOr<std::string> CmdHelp(const std::string& option);

// --enghelp[=ENGINE[,OPTION]]: "" lists the engines.
absl::StatusOr<std::string> EngHelp(const std::string& engine);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_OPTION_HELP_H_
