// server/host_service.h
//
// HostService of blklab.v1 (proto/blklab/v1/service.proto), callback API:
// stored simulated machines ("hosts/{host}") and the built-in presets.
// Handlers are thin (docs/style.md §3.5): each enters through the RpcGate
// (server/rpc.h: the auth check, absl::Status -> grpc::Status), converts the
// request (server/convert.h: host specs go through the engine's own decoder
// and validator, so errors name the field path), calls the store, and
// converts back. A host's spec is stored canonical: every default resolved.
//
// Thread-safety: thread-safe; the Store is.
// Cost: one or a few store statements per call; CreateHost and UpdateHost
//   also decode and validate the spec (linear in its size); ListPresets
//   converts every preset.
#ifndef BLKLAB_SERVER_HOST_SERVICE_H_
#define BLKLAB_SERVER_HOST_SERVICE_H_

#include "blklab/v1/service.grpc.pb.h"
#include "server/convert.h"
#include "server/rpc.h"
#include "server/store.h"

namespace blklab::server {

class HostServiceImpl final : public v1::HostService::CallbackService {
 public:
  // `store`, `limits` and `gate` outlive the service.
  HostServiceImpl(Store* store, const JobLimitsConfig* limits, const RpcGate* gate)
      : store_(store), limits_(limits), gate_(gate) {}

  grpc::ServerUnaryReactor* CreateHost(grpc::CallbackServerContext* ctx, const v1::CreateHostRequest* req,
                                       v1::Host* resp) override;
  grpc::ServerUnaryReactor* GetHost(grpc::CallbackServerContext* ctx, const v1::GetHostRequest* req,
                                    v1::Host* resp) override;
  grpc::ServerUnaryReactor* ListHosts(grpc::CallbackServerContext* ctx, const v1::ListHostsRequest* req,
                                      v1::ListHostsResponse* resp) override;
  grpc::ServerUnaryReactor* UpdateHost(grpc::CallbackServerContext* ctx, const v1::UpdateHostRequest* req,
                                       v1::Host* resp) override;
  grpc::ServerUnaryReactor* DeleteHost(grpc::CallbackServerContext* ctx, const v1::DeleteHostRequest* req,
                                       google::protobuf::Empty* resp) override;
  grpc::ServerUnaryReactor* ListPresets(grpc::CallbackServerContext* ctx, const v1::ListPresetsRequest* req,
                                        v1::ListPresetsResponse* resp) override;

 private:
  Store* const store_;
  const JobLimitsConfig* const limits_;
  const RpcGate* const gate_;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_HOST_SERVICE_H_
