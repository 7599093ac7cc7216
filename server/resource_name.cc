#include "server/resource_name.h"

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace blklab::server {

bool IsValidResourceId(const std::string& id) {
  if (id.empty() || id.size() > 63) return false;
  auto ok = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!ok(id[0])) return false;
  for (char c : id) {
    if (!ok(c) && c != '-') return false;
  }
  return true;
}

absl::StatusOr<std::string> ParseResourceName(const std::string& name, const std::string& collection) {
  const std::string prefix = collection + "/";
  if (!absl::StartsWith(name, prefix) || !IsValidResourceId(name.substr(prefix.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("name: expected \"", collection, "/{id}\" with {id} matching [a-z0-9][a-z0-9-]{0,62}, got \"",
                     name, "\""));
  }
  return name.substr(prefix.size());
}

}  // namespace blklab::server
