#include "server/grpc_metrics.h"

#include <array>
#include <utility>

#include <google/protobuf/descriptor.h>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace blklab::server {
namespace {

const char* TypeLabel(grpc::experimental::ServerRpcInfo::Type type) {
  switch (type) {
    case grpc::experimental::ServerRpcInfo::Type::UNARY:
      return "unary";
    case grpc::experimental::ServerRpcInfo::Type::CLIENT_STREAMING:
      return "client_stream";
    case grpc::experimental::ServerRpcInfo::Type::SERVER_STREAMING:
      return "server_stream";
    case grpc::experimental::ServerRpcInfo::Type::BIDI_STREAMING:
      return "bidi_stream";
  }
  return "unknown";
}

// The canonical names of grpc::StatusCode (as grpc-go prints them).
const char* CodeLabel(grpc::StatusCode code) {
  static constexpr std::array<const char*, 17> kNames = {
      "OK",       "Canceled",          "Unknown",        "InvalidArgument",  "DeadlineExceeded", "NotFound",
      "AlreadyExists", "PermissionDenied", "ResourceExhausted", "FailedPrecondition", "Aborted",
      "OutOfRange", "Unimplemented",    "Internal",       "Unavailable",      "DataLoss",         "Unauthenticated"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < static_cast<int>(kNames.size()) ? kNames[i] : "Unknown";
}

// Latency buckets, seconds: 100 us to 10 s.
const prometheus::Histogram::BucketBoundaries& Buckets() {
  static const auto* const kBuckets = new prometheus::Histogram::BucketBoundaries{
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
  return *kBuckets;
}

class MetricsInterceptor : public grpc::experimental::Interceptor {
 public:
  MetricsInterceptor(GrpcMetrics* metrics, grpc::experimental::ServerRpcInfo* info)
      : metrics_(metrics),
        method_(info->method() != nullptr ? info->method() : ""),
        type_(info->type()),
        start_(absl::Now()) {
    metrics_->Started(method_, type_);
  }

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(grpc::experimental::InterceptionHookPoints::PRE_SEND_STATUS)) {
      metrics_->Handled(method_, type_, methods->GetSendStatus().error_code(),
                        absl::ToDoubleSeconds(absl::Now() - start_));
    }
    methods->Proceed();
  }

 private:
  GrpcMetrics* const metrics_;
  const std::string method_;
  const grpc::experimental::ServerRpcInfo::Type type_;
  const absl::Time start_;
};

class MetricsInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit MetricsInterceptorFactory(GrpcMetrics* metrics) : metrics_(metrics) {}
  grpc::experimental::Interceptor* CreateServerInterceptor(grpc::experimental::ServerRpcInfo* info) override {
    return new MetricsInterceptor(metrics_, info);
  }

 private:
  GrpcMetrics* const metrics_;
};

}  // namespace

// The methods of `service`: from the generated descriptor pool, else the
// well-known ones of gRPC's health and reflection services.
std::set<std::string> MethodsOf(const std::string& service) {
  std::set<std::string> out;
  if (const google::protobuf::ServiceDescriptor* d =
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(service);
      d != nullptr) {
    for (int i = 0; i < d->method_count(); ++i) out.insert(std::string(d->method(i)->name()));
    return out;
  }
  if (service == "grpc.health.v1.Health") return {"Check", "Watch", "List"};
  if (absl::StartsWith(service, "grpc.reflection.")) return {"ServerReflectionInfo"};
  return out;
}

GrpcMetrics::GrpcMetrics(prometheus::Registry& registry, std::set<std::string> services)
    : started_(prometheus::BuildCounter()
                   .Name("grpc_server_started_total")
                   .Help("RPCs started on the server.")
                   .Register(registry)),
      handled_(prometheus::BuildCounter()
                   .Name("grpc_server_handled_total")
                   .Help("RPCs completed on the server, by status code.")
                   .Register(registry)),
      handling_seconds_(prometheus::BuildHistogram()
                            .Name("grpc_server_handling_seconds")
                            .Help("Time from the start of an RPC until its status is sent, seconds.")
                            .Register(registry)) {
  for (const std::string& service : services) methods_[service] = MethodsOf(service);
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> GrpcMetrics::NewInterceptorFactory() {
  return std::make_unique<MetricsInterceptorFactory>(this);
}

GrpcMetrics::Names GrpcMetrics::Split(const std::string& full_method) const {
  // "/package.Service/Method"
  const size_t slash = full_method.rfind('/');
  if (full_method.size() > 1 && full_method[0] == '/' && slash != std::string::npos && slash > 1) {
    std::string service = full_method.substr(1, slash - 1);
    auto it = methods_.find(service);
    if (it != methods_.end()) {
      // A method the service does not have shares one label.
      std::string method = full_method.substr(slash + 1);
      if (it->second.count(method) == 0) method = "unknown";
      return {std::move(service), std::move(method)};
    }
  }
  return {"unknown", "unknown"};
}

void GrpcMetrics::Started(const std::string& full_method, grpc::experimental::ServerRpcInfo::Type type) {
  const Names n = Split(full_method);
  started_.Add({{"grpc_type", TypeLabel(type)}, {"grpc_service", n.service}, {"grpc_method", n.method}}).Increment();
}

void GrpcMetrics::Handled(const std::string& full_method, grpc::experimental::ServerRpcInfo::Type type, grpc::StatusCode code,
                          double seconds) {
  const Names n = Split(full_method);
  handled_
      .Add({{"grpc_type", TypeLabel(type)},
            {"grpc_service", n.service},
            {"grpc_method", n.method},
            {"grpc_code", CodeLabel(code)}})
      .Increment();
  handling_seconds_
      .Add({{"grpc_type", TypeLabel(type)}, {"grpc_service", n.service}, {"grpc_method", n.method}}, Buckets())
      .Observe(seconds);
}

}  // namespace blklab::server
