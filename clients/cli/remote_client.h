// clients/cli/remote_client.h
//
// The connection the remote commands share (`blklab --server ADDR ...`): one
// gRPC channel to blklabd with the HostService and JobService stubs, the
// bearer token attached to every call, and the mapping of call outcomes to
// exit codes.
//
// Exit codes of every remote command follow the gRPC status: 0 for OK,
// otherwise the canonical code's number (3 INVALID_ARGUMENT, 5 NOT_FOUND,
// 14 UNAVAILABLE, 16 UNAUTHENTICATED, ...), with "CODE: message" on stderr.
// A job that ends FAILED or CANCELLED exits with its JobError.code (1 for
// CANCELLED). Usage errors exit 2, as the in-process commands do.
//
// Thread-safety: a RemoteClient is safe to use from several threads (gRPC
// stubs are); each call takes its own ClientContext from NewContext().
#ifndef BLKLAB_CLIENTS_CLI_REMOTE_CLIENT_H_
#define BLKLAB_CLIENTS_CLI_REMOTE_CLIENT_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "blklab/v1/service.grpc.pb.h"
#include "clients/cli/remote.h"
#include "google/protobuf/message.h"

namespace blklab::cli {

inline constexpr int kUsageExit = 2;

class RemoteClient {
 public:
  // Reads the token file and CA file; does not connect yet (gRPC connects on
  // the first call).
  static absl::StatusOr<std::unique_ptr<RemoteClient>> Create(const RemoteOptions& options);

  // A context carrying the bearer token; with a deadline unless
  // `deadline_seconds` is 0.
  std::unique_ptr<grpc::ClientContext> NewContext(int deadline_seconds = 60) const;

  v1::HostService::Stub& hosts() { return *hosts_; }
  v1::JobService::Stub& jobs() { return *jobs_; }
  const std::shared_ptr<grpc::Channel>& channel() const { return channel_; }
  const std::string& address() const { return address_; }

  // grpc.health.v1.Health/Check for `service` ("" = the whole server):
  // SERVING (1), NOT_SERVING (2), ... or the call's error.
  absl::StatusOr<int> HealthCheck(const std::string& service);

 private:
  RemoteClient() = default;

  std::string address_;
  std::string token_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::HostService::Stub> hosts_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
};

// The canonical name of a code, e.g. "UNAUTHENTICATED".
std::string StatusCodeName(int code);

// Prints "<prefix>: CODE: message" on stderr and returns the exit code
// (0 for OK, printing nothing).
int ReportStatus(const std::string& prefix, const grpc::Status& status);

// The message as JSON (proto field names, indented), as protobuf's
// JsonPrintOptions writes it.
std::string ToJson(const google::protobuf::Message& message, bool indent = true);

// "jobs/x" for "x" or "jobs/x" (likewise for hosts).
std::string ResourceName(const std::string& collection, const std::string& id_or_name);
// The inverse: "x" for "x" or "jobs/x".
std::string ResourceId(const std::string& collection, const std::string& id_or_name);

}  // namespace blklab::cli

#endif  // BLKLAB_CLIENTS_CLI_REMOTE_CLIENT_H_
