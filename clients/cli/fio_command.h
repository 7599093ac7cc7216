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
//    write_lat_log, write_hist_log) to the current directory after the run,
//    before the final report (each file written afresh);
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

#include <string>
#include <vector>

namespace blklab::cli {

// Returns the process exit code; output goes to stdout (or --output), errors
// to stderr.
int RunFioCommand(const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_FIO_COMMAND_H_
