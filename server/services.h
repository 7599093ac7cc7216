// server/services.h
//
// The gRPC services of blklabd (proto/blklab/v1/service.proto): HostService
// and JobService, callback API. Handlers are thin (STYLE.md §3.5): check the
// caller's token, convert the request (server/convert.h), call the store, the
// job manager or the engine facade, convert back, and turn absl::Status into
// grpc::Status in server/status_convert.h. WatchJob is a server-streaming
// write reactor fed by the job manager's snapshots; a slow reader gets merged
// intervals instead of slowing the run down.
//
// Auth: with a token configured, every call must carry
// "authorization: Bearer <token>" metadata, else UNAUTHENTICATED. (The
// standard health and reflection services stay open, for probes.)
//
// Thread-safety: thread-safe; shared state lives in the Store and the
//   JobManager, which are thread-safe. The stream count is atomic.
// Cost: unary handlers do one or a few store statements; CreateJob also
//   parses the bundle (linear in its size).
#ifndef BLKLAB_SERVER_SERVICES_H_
#define BLKLAB_SERVER_SERVICES_H_

#include <atomic>
#include <string>

#include "absl/status/status.h"
#include "blklab/v1/service.grpc.pb.h"
#include "server/convert.h"
#include "server/job_manager.h"
#include "server/store.h"

namespace blklab::server {

// Checks the bearer token of a call ("" = auth off).
class Authorizer {
 public:
  explicit Authorizer(std::string token) : token_(std::move(token)) {}
  absl::Status Check(const grpc::CallbackServerContext* context) const;

 private:
  const std::string token_;
};

class HostServiceImpl final : public v1::HostService::CallbackService {
 public:
  HostServiceImpl(Store* store, const JobLimitsConfig* limits, const Authorizer* auth)
      : store_(store), limits_(limits), auth_(auth) {}

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
  const Authorizer* const auth_;
};

class JobServiceImpl final : public v1::JobService::CallbackService {
 public:
  JobServiceImpl(Store* store, JobManager* jobs, const JobLimitsConfig* limits, const Authorizer* auth,
                 int max_streams)
      : store_(store), jobs_(jobs), limits_(limits), auth_(auth), max_streams_(max_streams) {}

  grpc::ServerUnaryReactor* CreateJob(grpc::CallbackServerContext* ctx, const v1::CreateJobRequest* req,
                                      v1::Job* resp) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                   v1::Job* resp) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                     v1::ListJobsResponse* resp) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* ctx, const v1::CancelJobRequest* req,
                                      v1::Job* resp) override;
  grpc::ServerUnaryReactor* DeleteJob(grpc::CallbackServerContext* ctx, const v1::DeleteJobRequest* req,
                                      google::protobuf::Empty* resp) override;
  grpc::ServerWriteReactor<v1::Snapshot>* WatchJob(grpc::CallbackServerContext* ctx,
                                                   const v1::WatchJobRequest* req) override;

 private:
  absl::Status DoCreateJob(const v1::CreateJobRequest& req, v1::Job* resp);

  Store* const store_;
  JobManager* const jobs_;
  const JobLimitsConfig* const limits_;
  const Authorizer* const auth_;
  const int max_streams_;
  std::atomic<int> streams_{0};
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_SERVICES_H_
