// ComparisonManager's fleet client (server/comparison_manager.h): a cell as
// one RunComparisonCell call on the fleet, watched for silence, its reply's
// figures checked; --fleet as a gRPC target.
#include <netdb.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "blklab/v1/job.pb.h"
#include "blklab/v1/service.grpc.pb.h"
#include "compare/compare.h"
#include "engine/util/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"
#include "server/comparison_fleet_internal.h"
#include "server/comparison_manager.h"
#include "server/convert.h"

namespace blklab::server {

namespace {

// A failure of the fleet server rather than of the cell (which the server
// marks with kCellErrorTrailer): the cell is taken again by whoever is free.
bool Retryable(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::CANCELLED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::UNAUTHENTICATED:
      return true;
    default:
      return false;
  }
}

// The bounds of a figure of a cell's result other than 0: within them, the
// sums, squares and ratios the summary takes of figures stay finite.
constexpr double kMinFigure = 1e-100;
constexpr double kMaxFigure = 1e100;

absl::Status CheckFigure(double v, const std::string& at) {
  if (std::isnan(v)) return absl::InvalidArgumentError(at + " is NaN");
  if (std::isinf(v)) return absl::InvalidArgumentError(at + (v > 0 ? " is +inf" : " is -inf"));
  if (v < 0) return absl::InvalidArgumentError(absl::StrCat(at, " is ", v, ": negative"));
  if (v != 0 && (v < kMinFigure || v > kMaxFigure)) {
    return absl::InvalidArgumentError(
        absl::StrCat(at, " is ", v, ": out of range (0, or ", kMinFigure, " to ", kMaxFigure, ")"));
  }
  return absl::OkStatus();
}

// Every number of a cell's result as another process sent it (a fleet
// server's reply, a job's stored result), over `m` and its messages,
// repeated ones included: every figure counts, rates, shares or times, so
// none is negative, and a floating-point one is finite and within
// CheckFigure's range. The error names the field from `path`
// ("result.log_series[0].value[3] is NaN").
absl::Status CheckFigures(const google::protobuf::Message& m, const std::string& path) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  for (const FieldDescriptor* f : fields) {
    const bool repeated = f->is_repeated();
    const int n = repeated ? reflection->FieldSize(m, f) : 1;
    for (int k = 0; k < n; ++k) {
      const std::string at = absl::StrCat(path, ".", f->name(), repeated ? absl::StrCat("[", k, "]") : "");
      absl::Status s;
      switch (f->cpp_type()) {
        case FieldDescriptor::CPPTYPE_MESSAGE:
          s = CheckFigures(repeated ? reflection->GetRepeatedMessage(m, f, k) : reflection->GetMessage(m, f), at);
          break;
        case FieldDescriptor::CPPTYPE_DOUBLE:
          s = CheckFigure(repeated ? reflection->GetRepeatedDouble(m, f, k) : reflection->GetDouble(m, f), at);
          break;
        case FieldDescriptor::CPPTYPE_FLOAT:
          s = CheckFigure(repeated ? reflection->GetRepeatedFloat(m, f, k) : reflection->GetFloat(m, f), at);
          break;
        case FieldDescriptor::CPPTYPE_INT32:
        case FieldDescriptor::CPPTYPE_INT64: {
          const int64_t v = f->cpp_type() == FieldDescriptor::CPPTYPE_INT32
                                ? (repeated ? reflection->GetRepeatedInt32(m, f, k) : reflection->GetInt32(m, f))
                                : (repeated ? reflection->GetRepeatedInt64(m, f, k) : reflection->GetInt64(m, f));
          if (v < 0) s = absl::InvalidArgumentError(absl::StrCat(at, " is ", v, ": negative"));
          break;
        }
        default:
          break;
      }
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// Cancels a call that hears nothing for `limit` (Heard() restarts the
// clock): a server that stopped answering though its connection lives.
class SilenceWatch {
 public:
  SilenceWatch(grpc::ClientContext* ctx, absl::Duration limit)
      : ctx_(ctx), limit_(limit), last_(absl::Now()), thread_([this] { Run(); }) {}
  ~SilenceWatch() { Stop(); }
  SilenceWatch(const SilenceWatch&) = delete;
  SilenceWatch& operator=(const SilenceWatch&) = delete;

  void Heard() {
    absl::MutexLock lock(&mu_);
    last_ = absl::Now();
  }
  // Ends the watch; whether it cancelled the call.
  bool Stop() {
    {
      absl::MutexLock lock(&mu_);
      done_ = true;
    }
    if (thread_.joinable()) thread_.join();
    absl::MutexLock lock(&mu_);
    return fired_;
  }

 private:
  void Run() {
    absl::MutexLock lock(&mu_);
    while (!done_) {
      const absl::Time due = last_ + limit_;
      if (absl::Now() >= due) {
        fired_ = true;
        ctx_->TryCancel();
        return;
      }
      mu_.AwaitWithDeadline(absl::Condition(&done_), due);
    }
  }

  grpc::ClientContext* const ctx_;
  const absl::Duration limit_;
  absl::Mutex mu_;
  absl::Time last_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  bool fired_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;  // last: it starts once the rest is set
};

}  // namespace

namespace comparison_internal {

// --fleet as a gRPC target and the number of addresses it names now.
std::pair<std::string, int> FleetTarget(const std::string& fleet) {
  if (absl::StrContains(fleet, ":///") || absl::StartsWith(fleet, "ipv4:") || absl::StartsWith(fleet, "ipv6:")) {
    int n = 1;
    if (absl::StartsWith(fleet, "ipv4:") || absl::StartsWith(fleet, "ipv6:")) {
      n = static_cast<int>(std::count(fleet.begin(), fleet.end(), ',')) + 1;
    } else if (absl::StartsWith(fleet, "dns:///")) {
      std::string hostport = fleet.substr(7);
      const size_t colon = hostport.rfind(':');
      const std::string hostname = colon == std::string::npos ? hostport : hostport.substr(0, colon);
      addrinfo hints{};
      hints.ai_socktype = SOCK_STREAM;
      addrinfo* res = nullptr;
      if (getaddrinfo(hostname.c_str(), nullptr, &hints, &res) == 0) {
        int count = 0;
        for (addrinfo* p = res; p != nullptr; p = p->ai_next) ++count;
        freeaddrinfo(res);
        n = std::max(1, count);
      }
    }
    return {fleet, n};
  }
  // "a:p,b:p": an ipv4 list (names go through dns:///).
  std::vector<std::string> parts = absl::StrSplit(fleet, ',', absl::SkipEmpty());
  return {"ipv4:" + absl::StrJoin(parts, ","), static_cast<int>(parts.size())};
}

// A cell's figures from another process, checked (CheckFigures), as the
// comparison keeps them.
absl::StatusOr<compare::CellResult> CheckedCellResult(const v1::ComparisonCellResult& p) {
  BLKLAB_RETURN_IF_ERROR(CheckFigures(p, "result"));
  return CellResultFromProto(p);
}

}  // namespace comparison_internal

absl::StatusOr<compare::CellResult> ComparisonManager::RunCellOnFleet(Entry* e, int i, std::string* server,
                                                                      bool* server_fault) {
  grpc::ClientContext ctx;
  if (!config_.token.empty()) ctx.AddMetadata("authorization", "Bearer " + config_.token);
  const absl::Time deadline = absl::Now() + config_.fleet_call_deadline;
  ctx.set_deadline(absl::ToChronoTime(deadline));
  v1::RunComparisonCellRequest req;
  *req.mutable_bundle() = e->bundle;
  req.set_cell(i);
  req.set_comparison(e->name);
  {
    absl::MutexLock lock(&mu_);
    if (e->cancel.load()) ctx.TryCancel();
    e->fleet_calls.push_back(&ctx);
  }
  SilenceWatch silence(&ctx, config_.fleet_silence);
  // The stream's first message says the cell is there: from then on the
  // cell shows that server (and its job, once it is one).
  std::unique_ptr<grpc::ClientReader<v1::RunComparisonCellResponse>> reader =
      fleet_stub_->RunComparisonCell(&ctx, req);
  v1::RunComparisonCellResponse msg;
  std::optional<v1::ComparisonCellResult> resp;
  bool heard = false;
  std::string job;
  while (reader->Read(&msg)) {
    silence.Heard();
    if (msg.has_result()) resp = std::move(*msg.mutable_result());
    if (heard && msg.job() == job) continue;
    heard = true;
    *server = ctx.peer();
    job = msg.job();
    absl::MutexLock lock(&mu_);
    e->cells[static_cast<size_t>(i)].set_server(*server);
    e->cells[static_cast<size_t>(i)].set_job(job);
    ++e->version;
    changed_.SignalAll();
  }
  const grpc::Status status = reader->Finish();
  const bool silent = silence.Stop();
  {
    absl::MutexLock lock(&mu_);
    e->fleet_calls.erase(std::find(e->fleet_calls.begin(), e->fleet_calls.end(), &ctx));
  }
  // Without a message, the peer gRPC knows of (else the fleet's target).
  if (server->empty()) *server = ctx.peer();
  if (server->empty()) *server = config_.fleet;
  if (silent) {
    *server_fault = true;
    return absl::DeadlineExceededError(
        absl::StrCat("no message for ", absl::FormatDuration(config_.fleet_silence), ": the server stopped answering"));
  }
  if (!status.ok()) {
    // The cell's own failure (a limit, a bad job), which the server marks,
    // fails wherever it runs.
    *server_fault = ctx.GetServerTrailingMetadata().count(kCellErrorTrailer) == 0 && Retryable(status.error_code());
    if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED && absl::Now() >= deadline) {
      return absl::DeadlineExceededError(absl::StrCat(
          "no result within ", absl::FormatDuration(config_.fleet_call_deadline), " (the call's deadline)"));
    }
    return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
  }
  // A reply no blklabd sends is the server's fault: the cell runs elsewhere.
  *server_fault = true;
  if (!resp) return absl::InternalError("the stream ended without a result");
  return comparison_internal::CheckedCellResult(*resp);
}

}  // namespace blklab::server
