// server/status_convert.h
//
// The one place where absl::Status (the engine's and the server's error
// type) and grpc::Status (what goes on the wire) are converted into each
// other (docs/style.md §3.4). Handlers return ToGrpcStatus(status); clients of a
// remote server turn a grpc::Status back into an absl::Status with
// ToAbslStatus so the CLI reports remote and embedded errors alike.
//
// Both directions map the 17 canonical codes (google.rpc.Code: OK = 0 ...
// UNAUTHENTICATED = 16) one to one and keep the message byte for byte, up
// to 2 KiB towards the wire (longer ones are cut, saying so: gRPC trailers
// beyond a client's metadata limit would replace the error by the client's
// RESOURCE_EXHAUSTED).
// Codes outside that set (absl's reserved enumerator, gRPC's DO_NOT_USE,
// any other integer) become UNKNOWN with the message kept. An OK status
// carries no message in absl, so an OK grpc::Status with a message converts
// to a plain OkStatus. Not carried: absl payloads and gRPC error_details
// (nothing in blklab sets them yet; field paths travel in the message).
//
// Thread-safety: pure functions.
#ifndef BLKLAB_SERVER_STATUS_CONVERT_H_
#define BLKLAB_SERVER_STATUS_CONVERT_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace blklab::server {

grpc::StatusCode ToGrpcCode(absl::StatusCode code);
absl::StatusCode ToAbslCode(grpc::StatusCode code);

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status ToAbslStatus(const grpc::Status& status);

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_STATUS_CONVERT_H_
