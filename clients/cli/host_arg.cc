#include "clients/cli/host_arg.h"

#include <cstdlib>

#include "engine/engine.h"
#include "engine/host/auto_host.h"
#include "engine/host/presets.h"
#include "engine/util/file.h"

namespace blklab::cli {

std::string DefaultHostArg() {
  if (const char* env = std::getenv("BLKLAB_HOST"); env != nullptr && env[0] != '\0') return env;
  return std::string(host::kDefaultPresetName);
}

absl::StatusOr<util::DocNode> LoadHostDoc(const std::string& host_arg, const std::string& base_dir) {
  absl::StatusOr<absl::string_view> preset = host::PresetYaml(host_arg);
  if (preset.ok()) return host::ParseHostDoc(*preset);
  std::string path = host_arg;
  if (!base_dir.empty() && !path.empty() && path[0] != '/') path = base_dir + "/" + path;
  absl::StatusOr<std::string> text = util::ReadFileToString(path);
  if (!text.ok()) {
    return absl::InvalidArgumentError("--host=" + host_arg + ": neither a preset nor a readable file (" +
                                      std::string(preset.status().message()) + ")");
  }
  absl::StatusOr<util::DocNode> doc = host::ParseHostDoc(*text);
  if (!doc.ok()) return absl::InvalidArgumentError(host_arg + ": " + std::string(doc.status().message()));
  return doc;
}

bool IsAutoHost(const std::string& host_arg) { return host_arg == host::kAutoHostName; }

absl::StatusOr<host::HostSpec> AutoHostFor(workload::ParsedJobs& jobs) {
  const std::vector<std::string> targets = JobTargets(jobs);
  absl::StatusOr<host::HostSpec> spec = host::AutoHost(targets, SizelessFiles(jobs));
  if (spec.ok()) {
    for (std::string& note : host::AutoHostNotes(targets)) jobs.warnings.push_back(std::move(note));
  }
  return spec;
}

absl::StatusOr<host::HostSpec> LoadHost(const std::string& host_arg) {
  if (IsAutoHost(host_arg)) return host::GetPreset(host::kDefaultPresetName);
  absl::StatusOr<util::DocNode> doc = LoadHostDoc(host_arg);
  if (!doc.ok()) return doc.status();
  absl::StatusOr<host::HostSpec> host = host::HostSpecFromDoc(*doc);
  if (!host.ok()) return absl::InvalidArgumentError(host_arg + ": " + std::string(host.status().message()));
  return host;
}

workload::FileReader LocalFileReader() {
  return [](const std::string& path) { return util::ReadFileToString(path); };
}

workload::VarLookup EnvironmentLookup() {
  return [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
}

}  // namespace blklab::cli
