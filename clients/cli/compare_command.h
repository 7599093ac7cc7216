// clients/cli/compare_command.h
//
// `blklab compare`: one fio job over a host's baseline and variants (and a
// matrix, a fleet inventory, samples), in-process on --jobs threads, printed
// as a table, markdown, CSV or JSON, with --plot's charts. The comparison
// itself (grammar, cells, summary, text forms) is compare/compare.h; this is
// the command around it: its local flags, the local disk and environment as
// inputs, the worker threads and the plots. `blklab --server ADDR compare`
// (clients/cli/remote_compare.cc) sends the same comparison to blklabd.
#ifndef BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_
#define BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "compare/compare.h"

namespace blklab::cli {

// The command's own flags, split from the comparison's arguments (those
// before "--"; everything from "--" on belongs to the comparison).
struct CompareCommandLine {
  std::vector<std::string> comparison_args;  // for compare::ParseComparison
  compare::Format format = compare::Format::kTable;
  std::string plot_dir;  // --plot
  int jobs = 1;          // --jobs (default: the machine's cores)
  bool dry_run = false;
  bool help = false;
};
absl::StatusOr<CompareCommandLine> SplitCompareArgs(const std::vector<std::string>& args);

// Files from the local disk, ${VAR} from the environment.
compare::Inputs LocalCompareInputs();

// --plot: writes `files` ((name, content), compare::PlotFiles) into `dir`,
// created if missing. Errors name the file.
absl::Status WritePlotFiles(const std::string& dir, const std::vector<std::pair<std::string, std::string>>& files);

const char* CompareUsage();

int RunCompareCommand(const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_COMPARE_COMMAND_H_
