#include "server/comparison_service.h"

#include <atomic>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "server/convert.h"
#include "server/resource_name.h"

namespace blklab::server {

namespace {

// "comparisons/{id}" checked.
absl::Status CheckName(const std::string& name) {
  return ParseResourceName(name, "comparisons").status();
}

}  // namespace

grpc::Status ComparisonServiceImpl::CreateComparison(grpc::ServerContext* ctx, const v1::CreateComparisonRequest* req,
                                                     v1::Comparison* resp) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    absl::StatusOr<v1::Comparison> c = manager_->Create(req->bundle(), req->comparison_id());
    if (!c.ok()) return c.status();
    *resp = *std::move(c);
    return absl::OkStatus();
  });
}

grpc::Status ComparisonServiceImpl::GetComparison(grpc::ServerContext* ctx, const v1::GetComparisonRequest* req,
                                                  v1::Comparison* resp) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    if (absl::Status s = CheckName(req->name()); !s.ok()) return s;
    absl::StatusOr<v1::Comparison> c = manager_->Get(req->name(), req->full());
    if (!c.ok()) return c.status();
    *resp = *std::move(c);
    return absl::OkStatus();
  });
}

grpc::Status ComparisonServiceImpl::ListComparisons(grpc::ServerContext* ctx, const v1::ListComparisonsRequest* req,
                                                    v1::ListComparisonsResponse* resp) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    absl::StatusOr<v1::ListComparisonsResponse> r = manager_->List(req->page_size(), req->page_token());
    if (!r.ok()) return r.status();
    *resp = *std::move(r);
    return absl::OkStatus();
  });
}

grpc::Status ComparisonServiceImpl::CancelComparison(grpc::ServerContext* ctx, const v1::CancelComparisonRequest* req,
                                                     v1::Comparison* resp) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    if (absl::Status s = CheckName(req->name()); !s.ok()) return s;
    absl::StatusOr<v1::Comparison> c = manager_->Cancel(req->name());
    if (!c.ok()) return c.status();
    *resp = *std::move(c);
    return absl::OkStatus();
  });
}

grpc::Status ComparisonServiceImpl::DeleteComparison(grpc::ServerContext* ctx, const v1::DeleteComparisonRequest* req,
                                                     google::protobuf::Empty* /*resp*/) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    if (absl::Status s = CheckName(req->name()); !s.ok()) return s;
    return manager_->Delete(req->name());
  });
}

grpc::Status ComparisonServiceImpl::WatchComparison(grpc::ServerContext* ctx, const v1::WatchComparisonRequest* req,
                                                    grpc::ServerWriter<v1::Comparison>* writer) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    if (absl::Status s = CheckName(req->name()); !s.ok()) return s;
    if (streams_.fetch_add(1) >= max_streams_) {
      streams_.fetch_sub(1);
      return absl::ResourceExhaustedError(absl::StrCat("more than ", max_streams_, " WatchComparison streams"));
    }
    struct Release {
      std::atomic<int>& n;
      ~Release() { n.fetch_sub(1); }
    } release{streams_};
    int64_t version = -1;
    while (!ctx->IsCancelled()) {
      // Wake at least every second to notice a client that went away.
      absl::StatusOr<v1::Comparison> c = manager_->WaitChange(req->name(), &version, absl::Now() + absl::Seconds(1));
      if (!c.ok()) return c.status();
      if (!writer->Write(*c)) return absl::CancelledError("the client went away");
      if (c->state() != v1::Comparison::RUNNING) return absl::OkStatus();
      // Coalesce: at most one message per 100 ms.
      absl::SleepFor(absl::Milliseconds(100));
    }
    return absl::CancelledError("the client went away");
  });
}

grpc::Status ComparisonServiceImpl::GetComparisonOutput(grpc::ServerContext* ctx,
                                                        const v1::GetComparisonOutputRequest* req,
                                                        v1::ComparisonOutput* resp) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    if (absl::Status s = CheckName(req->name()); !s.ok()) return s;
    absl::StatusOr<v1::ComparisonOutput> out = manager_->Output(req->name(), req->format());
    if (!out.ok()) return out.status();
    *resp = *std::move(out);
    return absl::OkStatus();
  });
}

grpc::Status ComparisonServiceImpl::RunComparisonCell(grpc::ServerContext* ctx,
                                                      const v1::RunComparisonCellRequest* req,
                                                      grpc::ServerWriter<v1::RunComparisonCellResponse>* writer) {
  return gate_->Sync(ctx, [&]() -> absl::Status {
    std::atomic<bool> cancel{false};
    absl::Mutex job_mu;
    std::string job;  // set once the cell is a job here
    bool told = false;
    std::optional<absl::StatusOr<compare::CellResult>> result;
    absl::Notification done;
    std::thread run([&] {
      result.emplace(manager_->RunCellHere(req->bundle(), req->cell(), req->comparison(), &cancel,
                                           [&](const std::string& name) {
                                             absl::MutexLock lock(&job_mu);
                                             job = name;
                                           }));
      done.Notify();
    });
    // A message once the cell is a job here, and at least every
    // kCellHeartbeat while it waits or runs: the caller tells a long cell
    // from a server that stopped answering by them.
    absl::Time last_write = absl::Now();
    while (!done.WaitForNotificationWithTimeout(absl::Milliseconds(50))) {
      if (ctx->IsCancelled()) cancel.store(true);
      std::string name;
      {
        absl::MutexLock lock(&job_mu);
        name = job;
      }
      const bool first = !name.empty() && !told;
      if (first || absl::Now() - last_write >= ComparisonManager::kCellHeartbeat) {
        if (first) told = true;
        v1::RunComparisonCellResponse msg;
        msg.set_started(!name.empty());
        msg.set_job(name);
        if (!writer->Write(msg)) cancel.store(true);
        last_write = absl::Now();
      }
    }
    run.join();
    if (!result->ok()) {
      // Not this server's trouble but the cell's: the caller does not retry.
      if (IsCellError(result->status())) ctx->AddTrailingMetadata(ComparisonManager::kCellErrorTrailer, "1");
      return result->status();
    }
    v1::RunComparisonCellResponse last;
    last.set_started(true);
    {
      absl::MutexLock lock(&job_mu);
      last.set_job(job);
    }
    *last.mutable_result() = CellResultToProto(**result);
    if (!writer->Write(last)) return absl::CancelledError("the caller went away");
    return absl::OkStatus();
  });
}

}  // namespace blklab::server
