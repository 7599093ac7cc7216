// clients/cli/io_uring_command.h
//
// `blklab io_uring [blklab options] [t/io_uring options] FILES...`: fio's
// t/io_uring benchmark on a simulated host, its command line unchanged and
// its output line for line (engine/report/t_io_uring_writer.h). Each
// simulated second prints as it completes; -rN runs N seconds of virtual
// time and prints N-1 lines, as the tool does; without -r it runs until
// Ctrl-C ("Exiting on signal").
//
// blklab's own options, in front of the tool's:
//   --host=PRESET|FILE      the host (else $BLKLAB_HOST, else the default)
//   --cpus=LIST             CPUs the submitters run on, round robin (what
//                           `taskset -c LIST` does); default thread i on CPU i
//   --seed=N                the offsets' random stream
//   --output-format=normal|json   json: one object with "iops" (the mean of
//                           the printed seconds), "max_iops", "seconds"
//                           (every simulated second), "threads" and blklab's
//                           kernel report under "blklab"
//   --perf-top[=N]          append the perf-top table (normal output)
#ifndef BLKLAB_CLIENTS_CLI_IO_URING_COMMAND_H_
#define BLKLAB_CLIENTS_CLI_IO_URING_COMMAND_H_

#include <string>
#include <vector>

namespace blklab::cli {

int RunIoUringCommand(const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_IO_URING_COMMAND_H_
