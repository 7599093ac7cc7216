#include "clients/cli/host_arg.h"

#include <cstdlib>

#include "compare/compare.h"
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
  return compare::LoadHostDoc(host_arg, base_dir, LocalFileReader());
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
