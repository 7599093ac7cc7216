// server/rpc.h
//
// What the gRPC services of blklab.v1 share (HostService:
// server/host_service.h, JobService: server/job_service.h,
// ComparisonService: server/comparison_service.h): the one door
// every method enters by, and small helpers of their replies.
//
// RpcGate is that door and holds the server's one auth check. Each handler
// is a single `return gate_->Unary(ctx, [&] { ... })` (or ServerStream): the
// gate checks the caller's bearer token before the handler body runs, and
// turns the body's absl::Status into the call's grpc::Status
// (server/status_convert.h). With a token configured, a call without
// "authorization: Bearer <token>" metadata ends UNAUTHENTICATED ("missing
// ..." or "invalid bearer token") and its body never runs. The standard
// health and reflection services do not go through the gate: probes answer
// without a token. server_auth_test calls every method of both services'
// descriptors without a token, so a method that bypassed the gate would
// fail it.
//
// Why a gate and not a gRPC server interceptor: in gRPC 1.51 a server
// interceptor can watch a call but not end it (server interceptors cannot
// hijack, and the handler runs once the interceptors have proceeded), so it
// could not keep an unauthenticated CreateJob from creating a job. The
// interceptor of server/grpc_metrics.h still sees every call, rejected or
// not, and counts it by code.
//
// Thread-safety: thread-safe (immutable after construction).
// Cost: one metadata lookup and a constant-time token comparison per call.
#ifndef BLKLAB_SERVER_RPC_H_
#define BLKLAB_SERVER_RPC_H_

#include <grpcpp/grpcpp.h>

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "server/status_convert.h"

namespace blklab::server {

class RpcGate {
 public:
  // `token`: the bearer token every call must carry; "" turns auth off.
  explicit RpcGate(std::string token) : token_(std::move(token)) {}

  // A unary method. When the call is authorized, runs `body` (a callable
  // returning absl::Status) and finishes the call with its status.
  template <typename Body>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* ctx, Body&& body) const {
    absl::Status status = Authorize(*ctx);
    if (status.ok()) status = std::forward<Body>(body)();
    grpc::ServerUnaryReactor* reactor = ctx->DefaultReactor();
    reactor->Finish(ToGrpcStatus(status));
    return reactor;
  }

  // A server-streaming method. When the call is authorized, `open` (a
  // callable returning absl::StatusOr<grpc::ServerWriteReactor<T>*>) starts
  // the stream; an error, the gate's included, ends the call at once.
  template <typename T, typename Open>
  grpc::ServerWriteReactor<T>* ServerStream(grpc::CallbackServerContext* ctx, Open&& open) const {
    absl::Status status = Authorize(*ctx);
    if (status.ok()) {
      absl::StatusOr<grpc::ServerWriteReactor<T>*> reactor = std::forward<Open>(open)();
      if (reactor.ok()) return *reactor;
      status = reactor.status();
    }
    return new Rejected<T>(status);
  }

  // A method of a synchronous service (ComparisonService, whose calls
  // wait for cells on the server's thread pool): the same check, then
  // `body` (returning absl::Status), as a grpc::Status.
  template <typename Body>
  grpc::Status Sync(const grpc::ServerContext* ctx, Body&& body) const {
    absl::Status status = Authorize(*ctx);
    if (status.ok()) status = std::forward<Body>(body)();
    return ToGrpcStatus(status);
  }

  // OK, or UNAUTHENTICATED saying what is wrong with the call's token.
  absl::Status Authorize(const grpc::ServerContextBase& ctx) const;

 private:
  // A stream that only reports an error. Deletes itself when done.
  template <typename T>
  class Rejected final : public grpc::ServerWriteReactor<T> {
   public:
    explicit Rejected(const absl::Status& status) { this->Finish(ToGrpcStatus(status)); }
    void OnDone() override { delete this; }
  };

  const std::string token_;
};

// A list call's page size: 100 when the request gives none (0), at most
// 1000; a negative size is INVALID_ARGUMENT.
absl::StatusOr<int> PageSize(int requested);

// A page is also cut once its messages reach this many bytes (the last
// message may cross it), so that no page nears gRPC's message limit.
inline constexpr size_t kMaxPageBytes = 16 << 20;

// "host:port", "[v6]:port" or "unix:PATH": OK, or INVALID_ARGUMENT naming
// `flag` when the port is not a number from 0 to 65535.
absl::Status CheckListenAddress(const std::string& address, const std::string& flag);

// A short, stable digest of a page's query (the filter): page tokens carry
// it, and a token shown with another query is refused.
std::string QueryDigest(absl::string_view query);

// `bytes` random bytes as lowercase hex (job ids, etags).
std::string RandomHex(int bytes);

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_RPC_H_
