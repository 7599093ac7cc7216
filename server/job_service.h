// server/job_service.h
//
// JobService of blklab.v1 (proto/blklab/v1/service.proto), callback API:
// jobs ("jobs/{job}") created from a fio bundle or a structured JobSpec, run
// in the background by the job manager. Handlers are thin (docs/style.md §3.5):
// each enters through the RpcGate (server/rpc.h: the auth check,
// absl::Status -> grpc::Status), converts the request (server/convert.h,
// server/job_record.h), calls the store or the JobQueue, and converts back.
// Jobs are read from the store (GetJob, ListJobs), with the live progress of
// running ones laid over; everything that changes a job goes through the
// JobQueue.
//
// WatchJob is a server-streaming write reactor (route_guide's Lister
// pattern) fed by the queue's snapshots through a WatchChannel. A slow
// reader gets merged intervals instead of slowing the run down, and a
// stream sends at most one snapshot per `min_wall_interval` of wall time.
//
// No Job a handler returns carries log contents (they grow with the run):
// ReadJobArtifacts streams them, and fio's outputs, in bounded chunks from
// the stored result.
//
// Thread-safety: thread-safe; shared state lives in the Store and the
//   JobQueue, which are thread-safe. The stream count is atomic.
// Cost: unary handlers do one or a few store statements; CreateJob also
//   resolves the host and parses the bundle (linear in their size).
#ifndef BLKLAB_SERVER_JOB_SERVICE_H_
#define BLKLAB_SERVER_JOB_SERVICE_H_

#include <atomic>

#include "absl/status/status.h"
#include "blklab/v1/service.grpc.pb.h"
#include "server/convert.h"
#include "server/job_queue.h"
#include "server/rpc.h"
#include "server/store.h"

namespace blklab::server {

class JobServiceImpl final : public v1::JobService::CallbackService {
 public:
  // `store`, `jobs`, `limits` and `gate` outlive the service. At most
  // `max_streams` WatchJob and ReadJobArtifacts streams are open at once.
  JobServiceImpl(Store* store, JobQueue* jobs, const JobLimitsConfig* limits, const RpcGate* gate,
                 int max_streams)
      : store_(store), jobs_(jobs), limits_(limits), gate_(gate), max_streams_(max_streams) {}

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
  grpc::ServerWriteReactor<v1::ArtifactChunk>* ReadJobArtifacts(grpc::CallbackServerContext* ctx,
                                                                const v1::ReadJobArtifactsRequest* req) override;

 private:
  absl::Status DoCreateJob(const v1::CreateJobRequest& req, v1::Job* resp);
  // The host a new job simulates, from its target (a stored host, an inline
  // spec or a preset), resolved and validated.
  absl::StatusOr<host::HostSpec> ResolveTarget(const v1::Job& job);
  // Lays the live progress of a QUEUED or RUNNING job over `job`.
  void FillProgress(v1::Job* job) const;

  Store* const store_;
  JobQueue* const jobs_;
  const JobLimitsConfig* const limits_;
  const RpcGate* const gate_;
  const int max_streams_;
  std::atomic<int> streams_{0};
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_JOB_SERVICE_H_
