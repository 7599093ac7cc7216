// clients/cli/host_arg.h
//
// The host of an in-process run: `--host=` wins, then $BLKLAB_HOST (the same
// values), then the embedded default; a value is a preset name or a YAML /
// JSON host spec file.
#ifndef BLKLAB_CLIENTS_CLI_HOST_ARG_H_
#define BLKLAB_CLIENTS_CLI_HOST_ARG_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"

namespace blklab::cli {

// The default host argument: $BLKLAB_HOST if set, else the default preset.
std::string DefaultHostArg();

// A preset by name, else the spec in the file of that name; errors name the
// argument.
absl::StatusOr<host::HostSpec> LoadHost(const std::string& host_arg);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_HOST_ARG_H_
