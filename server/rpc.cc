#include "server/rpc.h"

#include <algorithm>
#include <cstdint>

#include "absl/base/const_init.h"
#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace blklab::server {

absl::Status RpcGate::Authorize(const grpc::ServerContextBase& ctx) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return absl::UnauthenticatedError("missing \"authorization: Bearer <token>\" metadata");
  absl::string_view value(it->second.data(), it->second.size());
  // RFC 7235: the scheme is case-insensitive ("bearer", "BEARER").
  const size_t space = value.find(' ');
  if (space == absl::string_view::npos || !absl::EqualsIgnoreCase(value.substr(0, space), "Bearer")) {
    return absl::UnauthenticatedError("invalid bearer token");
  }
  value.remove_prefix(space + 1);
  const std::string& expected = token_;
  // Constant-time comparison.
  unsigned diff = value.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned>(i < value.size() ? value[i] : 0) ^ static_cast<unsigned>(expected[i]);
  }
  if (diff != 0) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

absl::StatusOr<int> PageSize(int requested) {
  if (requested < 0) {
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", requested, " is negative (0 for the default, 100)"));
  }
  if (requested == 0) return 100;
  return std::min(requested, 1000);
}

absl::Status CheckListenAddress(const std::string& address, const std::string& flag) {
  if (absl::StartsWith(address, "unix:")) return absl::OkStatus();
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  int value = -1;
  if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &value) || value > 65535 ||
      (address[0] == '[' && (colon == 0 || address[colon - 1] != ']'))) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", address,
                                                   ": expected HOST:PORT with a port from 0 to 65535"));
  }
  return absl::OkStatus();
}

std::string QueryDigest(absl::string_view query) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (unsigned char c : query) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return absl::StrFormat("%08x", static_cast<uint32_t>(h ^ (h >> 32)));
}

std::string RandomHex(int bytes) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  std::string out;
  for (int i = 0; i < bytes; ++i) absl::StrAppendFormat(&out, "%02x", absl::Uniform<uint32_t>(*gen, 0, 256));
  return out;
}

}  // namespace blklab::server
