// server/grpc_metrics.h
//
// gRPC request metrics in the go-grpc-prometheus convention, recorded by a
// server interceptor on every call of every service (blklab.v1, health,
// reflection): grpc_server_started_total, grpc_server_handled_total (by
// status code) and grpc_server_handling_seconds (latency until the status
// is sent), labelled grpc_type, grpc_service and grpc_method.
//
// Bounded labels: a call outside the services named at construction is
// counted as service "unknown", method "unknown"; a method a named service
// does not have (by its descriptor) as that service, method "unknown".
// Thread-safety: thread-safe (prometheus-cpp families lock internally).
// Cost: per call, three family lookups under their mutexes and a clock read.
#ifndef BLKLAB_SERVER_GRPC_METRICS_H_
#define BLKLAB_SERVER_GRPC_METRICS_H_

#include <map>
#include <memory>
#include <set>
#include <string>

#include <grpcpp/support/server_interceptor.h>

#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace blklab::server {

class GrpcMetrics {
 public:
  // Registers the families in `registry`. `services` are the full service
  // names whose methods are labelled by name.
  GrpcMetrics(prometheus::Registry& registry, std::set<std::string> services);

  // A factory for ServerBuilder::experimental().SetInterceptorCreators. The
  // GrpcMetrics must outlive the server.
  std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> NewInterceptorFactory();

  // Records one call (also used by tests). `full_method` is
  // "/package.Service/Method".
  void Started(const std::string& full_method, grpc::experimental::ServerRpcInfo::Type type);
  void Handled(const std::string& full_method, grpc::experimental::ServerRpcInfo::Type type, grpc::StatusCode code,
               double seconds);

 private:
  struct Names {
    std::string service;
    std::string method;
  };
  Names Split(const std::string& full_method) const;

  // The services named at construction, each with its methods.
  std::map<std::string, std::set<std::string>> methods_;
  prometheus::Family<prometheus::Counter>& started_;
  prometheus::Family<prometheus::Counter>& handled_;
  prometheus::Family<prometheus::Histogram>& handling_seconds_;
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_GRPC_METRICS_H_
