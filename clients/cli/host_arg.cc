#include "clients/cli/host_arg.h"

#include <cstdlib>

#include "engine/host/presets.h"
#include "engine/util/file.h"

namespace blklab::cli {

std::string DefaultHostArg() {
  if (const char* env = std::getenv("BLKLAB_HOST"); env != nullptr && env[0] != '\0') return env;
  return std::string(host::kDefaultPresetName);
}

absl::StatusOr<host::HostSpec> LoadHost(const std::string& host_arg) {
  absl::StatusOr<host::HostSpec> host = host::GetPreset(host_arg);
  if (host.ok()) return host;
  absl::StatusOr<std::string> text = util::ReadFileToString(host_arg);
  if (!text.ok()) {
    return absl::InvalidArgumentError("--host=" + host_arg + ": neither a preset nor a readable file (" +
                                      std::string(host.status().message()) + ")");
  }
  host = host::ParseHostSpec(*text);
  if (!host.ok()) return absl::InvalidArgumentError(host_arg + ": " + std::string(host.status().message()));
  return host;
}

}  // namespace blklab::cli
