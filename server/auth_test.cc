// The one auth check (server/rpc.h), in-process: with a token configured,
// every method of every blklab.v1 service — taken from the services'
// descriptors, so a method added later is covered too — answers
// UNAUTHENTICATED without the token or with a wrong one, and runs with the
// right one; the health and reflection services answer without a token.
#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "gtest/gtest.h"
#include "server/comparison_service.h"
#include "server/host_service.h"
#include "server/job_manager.h"
#include "server/job_service.h"
#include "server/rpc.h"
#include "server/store.h"

namespace blklab::server {
namespace {

constexpr char kToken[] = "s3cret-token-0123456789";

class AuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / absl::StrCat("blklab-auth-test-", ::getpid());
    std::filesystem::remove_all(dir_);
    absl::StatusOr<std::unique_ptr<Store>> store = Store::Open(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    jobs_.emplace(store_.get(), JobManagerOptions{});  // no workers: nothing runs
    hosts_.emplace(store_.get(), &limits_, &gate_);
    job_service_.emplace(store_.get(), &jobs_->queue(), &limits_, &gate_, 8);
    comparisons_.emplace(ComparisonConfig{});
    comparison_service_.emplace(&*comparisons_, &gate_);
    grpc::EnableDefaultHealthCheckService(true);
    grpc::reflection::InitProtoReflectionServerBuilderPlugin();
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(&*hosts_);
    builder.RegisterService(&*job_service_);
    builder.RegisterService(&*comparison_service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(port, 0);
    channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());
  }

  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
    jobs_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  // Calls `method` ("/pkg.Service/Method") with an empty request message
  // (a valid encoding of every message type), reading every response, and
  // returns the call's status. Works for unary and streaming methods alike.
  grpc::Status Call(const std::string& method, const std::optional<std::string>& authorization) {
    grpc::GenericStub stub(channel_);
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    if (authorization) ctx.AddMetadata("authorization", *authorization);
    grpc::CompletionQueue cq;
    std::unique_ptr<grpc::GenericClientAsyncReaderWriter> call = stub.PrepareCall(&ctx, method, &cq);
    void* tag;
    bool ok;
    auto wait = [&] { return cq.Next(&tag, &ok) && ok; };
    call->StartCall(reinterpret_cast<void*>(1));
    wait();
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1);
    call->WriteLast(request, grpc::WriteOptions(), reinterpret_cast<void*>(2));
    wait();
    grpc::ByteBuffer response;
    do {
      call->Read(&response, reinterpret_cast<void*>(3));
    } while (wait());
    grpc::Status status;
    call->Finish(&status, reinterpret_cast<void*>(4));
    wait();
    cq.Shutdown();
    while (cq.Next(&tag, &ok)) {
    }
    return status;
  }

  // "/blklab.v1.HostService/CreateHost", ... for every service.
  static std::vector<std::string> Methods() {
    std::vector<std::string> out;
    for (const char* name : {v1::HostService::service_full_name(), v1::JobService::service_full_name(),
                             v1::ComparisonService::service_full_name()}) {
      const google::protobuf::ServiceDescriptor* s =
          google::protobuf::DescriptorPool::generated_pool()->FindServiceByName(name);
      EXPECT_NE(s, nullptr) << name;
      if (s == nullptr) continue;
      for (int i = 0; i < s->method_count(); ++i) {
        out.push_back(absl::StrCat("/", s->full_name(), "/", s->method(i)->name()));
      }
    }
    return out;
  }

  std::filesystem::path dir_;
  JobLimitsConfig limits_;
  RpcGate gate_{kToken};
  std::unique_ptr<Store> store_;
  std::optional<JobManager> jobs_;
  std::optional<HostServiceImpl> hosts_;
  std::optional<JobServiceImpl> job_service_;
  std::optional<ComparisonManager> comparisons_;
  std::optional<ComparisonServiceImpl> comparison_service_;
  std::unique_ptr<grpc::Server> server_;
  std::shared_ptr<grpc::Channel> channel_;
};

TEST_F(AuthTest, EveryMethodNeedsTheToken) {
  const std::vector<std::string> methods = Methods();
  ASSERT_EQ(methods.size(), 21u);
  for (const std::string& m : methods) {
    grpc::Status missing = Call(m, std::nullopt);
    EXPECT_EQ(missing.error_code(), grpc::StatusCode::UNAUTHENTICATED) << m;
    EXPECT_EQ(missing.error_message(), "missing \"authorization: Bearer <token>\" metadata") << m;
    grpc::Status wrong = Call(m, "Bearer nope");
    EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED) << m;
    EXPECT_EQ(wrong.error_message(), "invalid bearer token") << m;
    EXPECT_EQ(Call(m, "s3cret-token-0123456789").error_code(), grpc::StatusCode::UNAUTHENTICATED) << m << ": no scheme";
  }
}

TEST_F(AuthTest, TheTokenLetsEveryMethodRun) {
  for (const std::string& m : Methods()) {
    // Empty requests: lists answer OK, the rest INVALID_ARGUMENT (no name).
    grpc::Status s = Call(m, absl::StrCat("Bearer ", kToken));
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << m << ": " << s.error_message();
    EXPECT_NE(s.error_code(), grpc::StatusCode::UNIMPLEMENTED) << m << ": " << s.error_message();
  }
}

TEST_F(AuthTest, TheSchemeIsCaseInsensitive) {
  const std::string m = "/blklab.v1.JobService/ListJobs";
  for (const char* scheme : {"bearer ", "BEARER ", "Bearer ", "bEaReR "}) {
    EXPECT_TRUE(Call(m, absl::StrCat(scheme, kToken)).ok()) << scheme;
  }
  for (const char* wrong : {"Basic ", "Bearer  ", "Bearer", "Bearerx "}) {
    EXPECT_EQ(Call(m, absl::StrCat(wrong, kToken)).error_code(), grpc::StatusCode::UNAUTHENTICATED) << wrong;
  }
}

TEST_F(AuthTest, ProbesNeedNoToken) {
  EXPECT_TRUE(Call("/grpc.health.v1.Health/Check", std::nullopt).ok());
  EXPECT_TRUE(Call("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", std::nullopt).ok());
}

}  // namespace
}  // namespace blklab::server
