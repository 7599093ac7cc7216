// engine/workload/show_cmd.h
//
// `fio --showcmd`: prints job files back as one fio command line each, the
// way fio 3.33 does (docs/fio-compatibility.md a.1-a.6 and the oracle `fio --showcmd`):
//
//   - each job file gives one line "fio " ... "\n"; a file without sections
//     gives just "\n";
//   - a job section prints "--name=NAME " followed by its own options; a
//     global section prints no name but the *accumulated* options of every
//     global section so far (fio keeps one list for its defaults), and the
//     first file's list starts with the command-line globals;
//   - within a section the options are ordered as fio applies them: a stable
//     sort by fio's option priority (kb_base, unit_base, lockfile,
//     cpus_allowed_policy first; filename, filename_format last), then the
//     engine-private options in their written order;
//   - each option is "--NAME=VALUE " with fio's canonical name (aliases
//     resolved: blocksize -> bs, blockalign -> ba, ratemin -> rate_min), the
//     value as read (after ${VAR} and $pagesize-style substitution, inline
//     comments cut, white space after '=' kept), or "--NAME " when bare;
//     `description` is wrapped in double quotes;
//   - --section filters job sections (global sections always print).
//
// Thread-safety: stateless functions; safe from any thread if the
//   ParseOptions callbacks are.
// Cost: linear in the input.
#ifndef BLKLAB_ENGINE_WORKLOAD_SHOW_CMD_H_
#define BLKLAB_ENGINE_WORKLOAD_SHOW_CMD_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/workload/job_parser.h"
#include "engine/workload/option_table.h"

namespace blklab::workload {

// fio's sort priority of an option for --showcmd and for the order in which
// a section's lines are applied: 1 for kb_base, unit_base, lockfile and
// cpus_allowed_policy, -1 for filename and filename_format, else 0.
int OptionPriority(const OptionDef& def);

// Orders one section's lines the way fio applies and prints them (see the
// file comment). Unknown names count as engine-private.
std::vector<OptionLine> OrderSectionLines(const std::vector<OptionLine>& lines);

// Formats one job file's sections as fio's --showcmd line, ending in "\n".
// `only_sections`: --section filter (empty: all). `initial_globals`: the
// command-line globals that seed fio's global option list (first file only).
std::string ShowCmdLine(const std::vector<Section>& sections,
                        const std::vector<std::string>& only_sections = {},
                        const std::vector<OptionLine>& initial_globals = {});

// `fio --showcmd` for a whole invocation: validates it with BuildJobs (an
// invalid invocation returns BuildJobs' error, where fio would stop with a
// partial line) and prints one line per job file, read through
// options.read_file. Command-line jobs (--name=...) are not printed, as in
// fio.
absl::StatusOr<std::string> ShowCmd(const FioInvocation& invocation, const ParseOptions& options);

// Splits a --showcmd line back into arguments ("--name=a", "--bs=4k", ...)
// without the leading "fio": an argument starts at " --" followed by a known
// option or fio flag name; the quotes fio adds around `description` are
// removed. Used to compare fio's output with BuildJobs as a command line.
std::vector<std::string> SplitShowCmdLine(const std::string& line);

}  // namespace blklab::workload

#endif  // BLKLAB_ENGINE_WORKLOAD_SHOW_CMD_H_
