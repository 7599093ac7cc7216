#include "server/rpc.h"

#include <algorithm>
#include <cstdint>

#include "absl/base/const_init.h"
#include "absl/random/random.h"
#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"

namespace blklab::server {

absl::Status RpcGate::Authorize(const grpc::ServerContextBase& ctx) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return absl::UnauthenticatedError("missing \"authorization: Bearer <token>\" metadata");
  const absl::string_view value(it->second.data(), it->second.size());
  const std::string expected = "Bearer " + token_;
  // Constant-time comparison.
  unsigned diff = value.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned>(i < value.size() ? value[i] : 0) ^ static_cast<unsigned>(expected[i]);
  }
  if (diff != 0) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

int PageSize(int requested) {
  if (requested <= 0) return 100;
  return std::min(requested, 1000);
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
