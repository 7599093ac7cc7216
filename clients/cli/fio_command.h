// clients/cli/fio_command.h
//
// `blklab fio [blklab options] [fio options and job files]`: runs fio jobs
// in-process against a simulated host and prints fio's output.
//
// blklab's own options (removed before fio's parser sees the arguments):
//   --host=PRESET|FILE   host spec: a preset name or a YAML/JSON file
//                        (default: the embedded `default` preset)
//   --seed=N             run seed for jobs with randrepeat=0 and no randseed
//   --perf-top[=N]       append a perf-top-style table of the N hottest
//                        functions (default 25)
// Everything else is fio's command line, read as fio 3.33 reads it.
//
// As fio does, the command
//  - writes the jobs' log files (write_bw_log, write_iops_log,
//    write_lat_log, write_hist_log, write_iolog) after the run, before the
//    final report (each file written afresh), in the current directory or
//    the one their prefix names, which must exist before the run
//    (CheckOutputDirectories); a file that still cannot be written costs
//    the exit value, not the report;
//  - with --status-interval=T prints a complete report every T of *virtual*
//    time while the jobs run, then the final one (json: several top-level
//    objects concatenated; normal: the preamble once, at the start);
//  - with --eta=always, or auto when stdout is a terminal, rewrites fio's
//    progress line ("Jobs: 1 (f=1): [r(1)][45.0%][r=...][r=... IOPS][eta
//    00m:01s]") on stdout with \r every 100 ms of virtual time (percent and
//    ETA in virtual time, rates over the last interval); never when stdout
//    carries only terse/json output.
#ifndef BLKLAB_CLIENTS_CLI_FIO_COMMAND_H_
#define BLKLAB_CLIENTS_CLI_FIO_COMMAND_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/report/report.h"
#include "engine/workload/job_parser.h"

namespace blklab::cli {

// Returns the process exit code; output goes to stdout (or --output), errors
// to stderr.
int RunFioCommand(const std::vector<std::string>& args);

// `blklab hosts auto [fio options] [job files]`: prints the host spec
// --host=auto would build for the job (host/auto_host.h). Returns the exit
// code.
int PrintAutoHost(const std::vector<std::string>& fio_args);

// blklab's own options of `blklab fio`, taken out of the command line, and
// fio's arguments that are left, in order.
struct BlklabOptions {
  std::optional<std::string> host;  // --host=PRESET|FILE (remote: also hosts/NAME)
  uint64_t seed = 0;                // --seed=N
  bool realtime = false;            // --pace=realtime|fast (remote runs only)
  int perf_top = 0;                 // --perf-top[=N] rows, 0: off (local runs only)
  std::string folded_file;          // --folded=FILE: CPU time by call stack, folded (local runs only)
  std::string flame_file;           // --flame=FILE.svg: the same as a flame graph (local runs only)
  int64_t max_virtual_ns = 0;       // --max-virtual-time=TIME: the run's virtual-time limit (0: default)
  std::vector<std::string> fio_args;
};

// Where the jobs run: in-process, or on blklabd (`--server`).
enum class RunSite { kLocal, kRemote };

// Splits `args` into blklab's options and fio's arguments. The first bad
// option, in argument order, is the error: InvalidArgument for a bad value
// or for --pace in a local run, Unimplemented for --perf-top in a remote
// one (the result carries the profile rows instead).
absl::StatusOr<BlklabOptions> SplitBlklabOptions(const std::vector<std::string>& args, RunSite site);

// Checks, before a run, that every file the run will write afterwards can be
// created: the directory of each enabled write_*_log prefix (the job's name
// when it has none) and of write_iolog, and of --folded / --flame, must be a
// writable directory. InvalidArgument naming the option, its job and the
// directory otherwise, so that a long run is not lost to a typo at its end.
absl::Status CheckOutputDirectories(const workload::ParsedJobs& jobs, const BlklabOptions& options);

// The output formats fio's command line selects (--output-format).
report::OutputFormats SelectedFormats(const workload::FioInvocation& invocation);

// fio's --help text for `blklab fio`.
std::string FioUsage();

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_FIO_COMMAND_H_
