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
