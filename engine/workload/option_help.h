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
// fio so that scripts reading fio's help keep working. Unknown options give
// NotFound "No such command: X" (fio prints that text too).
//
// Thread-safety: stateless; safe from any thread.
#ifndef BLKLAB_ENGINE_WORKLOAD_OPTION_HELP_H_
#define BLKLAB_ENGINE_WORKLOAD_OPTION_HELP_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/workload/option_table.h"

namespace blklab::workload {

// Facts shown by --cmdhelp for one option.
struct OptionHelp {
  std::string name;
  std::string alias;          // first alias, "" if none
  std::string help;
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
