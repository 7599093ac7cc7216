// server/comparison_service.h
//
// ComparisonService of blklab.v1 (proto/blklab/v1/service.proto): thin
// handlers over the ComparisonManager (server/comparison_manager.h), each
// entering through the RpcGate (the auth check, absl::Status ->
// grpc::Status). A synchronous service: WatchComparison and
// RunComparisonCell wait (for changes, for a cell's run) on gRPC's sync
// thread pool rather than on the callback threads the other services use.
//
// WatchComparison sends the comparison at once, then at each change of a
// cell's state (coalesced: a slow reader gets the latest state), until it
// ends or the client goes away. RunComparisonCell runs the cell on a thread
// of its own while the handler polls (every 50 ms) for the run's start,
// which it reports, and for the caller's cancellation, which stops the run;
// while the cell waits for a worker or runs, it sends a message (the job,
// no result) every ComparisonManager::kCellHeartbeat, so that the caller
// can tell a long cell from a server that stopped answering.
//
// Thread-safety: thread-safe (the manager is).
// Cost: unary handlers copy one comparison's cell states; a watch wakes per
//   change; RunComparisonCell parses the bundle and runs one cell.
#ifndef BLKLAB_SERVER_COMPARISON_SERVICE_H_
#define BLKLAB_SERVER_COMPARISON_SERVICE_H_

#include <atomic>

#include "blklab/v1/service.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "server/comparison_manager.h"
#include "server/rpc.h"

namespace blklab::server {

class ComparisonServiceImpl final : public v1::ComparisonService::Service {
 public:
  // `manager` and `gate` outlive the service. At most `max_streams`
  // WatchComparison streams are open at once.
  ComparisonServiceImpl(ComparisonManager* manager, const RpcGate* gate, int max_streams = 256)
      : manager_(manager), gate_(gate), max_streams_(max_streams) {}

  grpc::Status CreateComparison(grpc::ServerContext* ctx, const v1::CreateComparisonRequest* req,
                                v1::Comparison* resp) override;
  grpc::Status GetComparison(grpc::ServerContext* ctx, const v1::GetComparisonRequest* req,
                             v1::Comparison* resp) override;
  grpc::Status ListComparisons(grpc::ServerContext* ctx, const v1::ListComparisonsRequest* req,
                               v1::ListComparisonsResponse* resp) override;
  grpc::Status CancelComparison(grpc::ServerContext* ctx, const v1::CancelComparisonRequest* req,
                                v1::Comparison* resp) override;
  grpc::Status DeleteComparison(grpc::ServerContext* ctx, const v1::DeleteComparisonRequest* req,
                                google::protobuf::Empty* resp) override;
  grpc::Status WatchComparison(grpc::ServerContext* ctx, const v1::WatchComparisonRequest* req,
                               grpc::ServerWriter<v1::Comparison>* writer) override;
  grpc::Status GetComparisonOutput(grpc::ServerContext* ctx, const v1::GetComparisonOutputRequest* req,
                                   v1::ComparisonOutput* resp) override;
  grpc::Status RunComparisonCell(grpc::ServerContext* ctx, const v1::RunComparisonCellRequest* req,
                                 grpc::ServerWriter<v1::RunComparisonCellResponse>* writer) override;

 private:
  ComparisonManager* const manager_;
  const RpcGate* const gate_;
  const int max_streams_;
  std::atomic<int> streams_{0};
};

}  // namespace blklab::server

#endif  // BLKLAB_SERVER_COMPARISON_SERVICE_H_
