// clients/cli/host_arg.h
//
// The inputs of an in-process run. The host: `--host=` wins, then
// $BLKLAB_HOST (the same values), then the embedded default; a value is a
// preset name or a YAML / JSON host spec file. Job files and ${VAR}: the
// local disk and environment.
#ifndef BLKLAB_CLIENTS_CLI_HOST_ARG_H_
#define BLKLAB_CLIENTS_CLI_HOST_ARG_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/host/host_spec.h"
#include "engine/util/doc_node.h"
#include "engine/workload/job_parser.h"

namespace blklab::cli {

// The default host argument: $BLKLAB_HOST if set, else the default preset.
std::string DefaultHostArg();

// A preset by name, else the spec in the file of that name; errors name the
// argument. For "auto" (host::kAutoHostName), the default preset: the
// caller builds the host from the parsed job (AutoHostFor).
absl::StatusOr<host::HostSpec> LoadHost(const std::string& host_arg);
bool IsAutoHost(const std::string& host_arg);
// --host=auto: the host built from the targets the parsed jobs name; what
// the user should know about it (stand-in devices) joins jobs.warnings.
absl::StatusOr<host::HostSpec> AutoHostFor(workload::ParsedJobs& jobs);
// The same, as the document is written (for overlays, host_overlay.h); a
// relative file name is read from `base_dir` when it is not empty.
absl::StatusOr<util::DocNode> LoadHostDoc(const std::string& host_arg, const std::string& base_dir = "");

// What an in-process run reads, as fio does: job files and includes from
// disk, ${VAR} from the environment.
workload::FileReader LocalFileReader();
workload::VarLookup EnvironmentLookup();

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_HOST_ARG_H_
