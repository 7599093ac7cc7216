// clients/cli/kernel_command.h
//
// `blklab kernel`: the real Linux kernel as the model's oracle
// (clients/kernel_lab/).
//
//   blklab kernel run [--host=SPEC] [fio options] [job files]
//       boots Debian's kernel in QEMU as the host spec says, runs the fio job
//       there unchanged, prints fio's output in the format asked for and a
//       `kernel` section read from the guest.
//   blklab kernel compare [--host=SPEC] [fio options] [job files]
//   blklab kernel compare SCENARIO.yaml
//       the same on the kernel and on the model (with the lab kernel's
//       knobs), side by side; differences beyond the tolerance are flagged.
//   blklab kernel suite [--ci] [--results=FILE] [SCENARIO.yaml|DIR]...
//       the differential suite: every scenario compared, one line each, and a
//       closing count.
//   blklab kernel image
//       builds (or finds) the lab image and prints what it holds.
#ifndef BLKLAB_CLIENTS_CLI_KERNEL_COMMAND_H_
#define BLKLAB_CLIENTS_CLI_KERNEL_COMMAND_H_

#include <string>
#include <vector>

namespace blklab::cli {

// Returns the process exit code.
int RunKernelCommand(const std::vector<std::string>& args);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_KERNEL_COMMAND_H_
