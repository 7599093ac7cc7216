#include "server/job_service.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/host/presets.h"
#include "engine/util/status_macros.h"
#include "server/job_record.h"
#include "server/log.h"
#include "server/proto_time.h"
#include "server/resource_name.h"
#include "server/status_convert.h"

namespace blklab::server {
namespace {

// Merges a newer interval snapshot into an older one the stream has not sent
// yet: the interval grows, counts add up, rates and shares cover both.
// Percentiles cannot be merged exactly: each is the larger of the two (an
// upper bound for the merged interval). Locks are summed by name over the
// two top lists and cut to the top kSnapshotTopLocks again.
v1::Snapshot MergeSnapshots(const v1::Snapshot& older, const v1::Snapshot& newer) {
  if (newer.has_final_job()) return newer;
  v1::Snapshot m = newer;
  const double a = older.interval().seconds() + older.interval().nanos() * 1e-9;
  const double b = newer.interval().seconds() + newer.interval().nanos() * 1e-9;
  SetDuration(DurationNs(older.interval()) + DurationNs(newer.interval()), m.mutable_interval());
  auto merge = [&](const v1::IntervalDirection& x, const v1::IntervalDirection& y, v1::IntervalDirection* out) {
    out->set_ios(x.ios() + y.ios());
    if (a + b > 0) {
      out->set_iops(static_cast<double>(x.ios() + y.ios()) / (a + b));
      out->set_bw_bytes_per_sec(static_cast<uint64_t>(
          (static_cast<double>(x.bw_bytes_per_sec()) * a + static_cast<double>(y.bw_bytes_per_sec()) * b) /
          (a + b)));
    }
    if (x.clat_percentiles_size() == 0) return;  // y's (already in out) stand
    if (y.clat_percentiles_size() != x.clat_percentiles_size()) {
      *out->mutable_clat_percentiles() = x.clat_percentiles();
      return;
    }
    for (int i = 0; i < x.clat_percentiles_size(); ++i) {
      v1::Percentile* p = out->mutable_clat_percentiles(i);
      p->set_value_ns(std::max(p->value_ns(), x.clat_percentiles(i).value_ns()));
    }
  };
  merge(older.read(), newer.read(), m.mutable_read());
  merge(older.write(), newer.write(), m.mutable_write());
  merge(older.trim(), newer.trim(), m.mutable_trim());
  if (a + b > 0) {
    const v1::CpuShares& x = older.cpu();
    const v1::CpuShares& y = newer.cpu();
    v1::CpuShares* c = m.mutable_cpu();
    auto avg = [&](double p, double q) { return (p * a + q * b) / (a + b); };
    c->set_usr_pct(avg(x.usr_pct(), y.usr_pct()));
    c->set_sys_pct(avg(x.sys_pct(), y.sys_pct()));
    c->set_irq_pct(avg(x.irq_pct(), y.irq_pct()));
    c->set_softirq_pct(avg(x.softirq_pct(), y.softirq_pct()));
    c->set_idle_pct(avg(x.idle_pct(), y.idle_pct()));
    // Contention is a share of busy time: weigh by each interval's busy time.
    const double busy_x = (100.0 - x.idle_pct()) * a;
    const double busy_y = (100.0 - y.idle_pct()) * b;
    m.set_contention_pct(busy_x + busy_y > 0 ? (older.contention_pct() * busy_x + newer.contention_pct() * busy_y) /
                                                   (busy_x + busy_y)
                                             : 0.0);
  }
  if (older.top_locks_size() > 0) {
    std::map<std::string, v1::LockRow> rows;
    for (const auto* list : {&older.top_locks(), &newer.top_locks()}) {
      for (const v1::LockRow& l : *list) {
        v1::LockRow& r = rows[l.name()];
        r.set_name(l.name());
        r.set_acquisitions(r.acquisitions() + l.acquisitions());
        r.set_contended(r.contended() + l.contended());
        r.set_wait_ns(r.wait_ns() + l.wait_ns());
        r.set_hold_ns(r.hold_ns() + l.hold_ns());
      }
    }
    std::vector<v1::LockRow> sorted;
    for (auto& [name, row] : rows) sorted.push_back(std::move(row));
    std::stable_sort(sorted.begin(), sorted.end(), [](const v1::LockRow& x, const v1::LockRow& y) {
      if (x.wait_ns() != y.wait_ns()) return x.wait_ns() > y.wait_ns();
      return x.contended() > y.contended();
    });
    m.clear_top_locks();
    for (size_t i = 0; i < sorted.size() && i < kSnapshotTopLocks; ++i) *m.add_top_locks() = std::move(sorted[i]);
  }
  return m;
}

class WatchReactor;

// One of the server's max_streams slots, held by a stream from its start. It
// is given back as the stream's last message is written (before the client
// can see it), so a client that opens its next stream on receiving the last
// one never finds its own finished stream still counted; OnDone gives it back
// for streams that end otherwise. Release is idempotent and thread-safe.
class StreamSlot {
 public:
  explicit StreamSlot(std::atomic<int>* streams) : streams_(streams) {}
  void Release() {
    if (held_.exchange(false)) streams_->fetch_sub(1);
  }

 private:
  std::atomic<int>* const streams_;
  std::atomic<bool> held_{true};
};

// The job manager's handle on one WatchJob stream. It outlives the reactor
// if need be: Detach() cuts the link when the RPC is done.
class WatchChannel final : public WatchSink {
 public:
  WatchChannel(WatchReactor* reactor, StreamSlot* slot, absl::Duration min_wall_interval)
      : reactor_(reactor), slot_(slot), min_wall_interval_(min_wall_interval) {}
  void Push(const v1::Snapshot& snapshot) override;
  void Close(const absl::Status& status) override;
  void OnWriteDone(bool ok);
  void OnCancel();
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
    slot_ = nullptr;
  }

 private:
  void WriteLocked(v1::Snapshot snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  WatchReactor* reactor_ ABSL_GUARDED_BY(mu_);
  StreamSlot* slot_ ABSL_GUARDED_BY(mu_);  // the reactor's; null once detached
  const absl::Duration min_wall_interval_;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
  absl::Time last_write_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  std::optional<v1::Snapshot> pending_ ABSL_GUARDED_BY(mu_);        // merged intervals
  std::optional<v1::Snapshot> pending_final_ ABSL_GUARDED_BY(mu_);  // sent after pending_
  std::optional<grpc::Status> pending_close_ ABSL_GUARDED_BY(mu_);
  v1::Snapshot current_ ABSL_GUARDED_BY(mu_);  // alive until OnWriteDone
};

// One WatchJob call (route_guide's Lister pattern). Deletes itself in OnDone.
class WatchReactor final : public grpc::ServerWriteReactor<v1::Snapshot> {
 public:
  WatchReactor(JobQueue* jobs, std::atomic<int>* streams, std::string id, absl::Duration min_wall_interval)
      : jobs_(jobs), slot_(streams), id_(std::move(id)),
        channel_(std::make_shared<WatchChannel>(this, &slot_, min_wall_interval)) {}

  void Begin() {
    absl::Status s = jobs_->Watch(id_, channel_);
    if (!s.ok()) channel_->Close(s);
  }
  void OnWriteDone(bool ok) override { channel_->OnWriteDone(ok); }
  void OnCancel() override { channel_->OnCancel(); }
  void OnDone() override {
    channel_->Detach();
    jobs_->Unwatch(id_, channel_.get());
    slot_.Release();
    delete this;
  }

 private:
  JobQueue* const jobs_;
  StreamSlot slot_;
  const std::string id_;
  const std::shared_ptr<WatchChannel> channel_;
};

void WatchChannel::WriteLocked(v1::Snapshot snapshot) {
  current_ = std::move(snapshot);
  writing_ = true;
  last_write_ = absl::Now();
  if (current_.has_final_job()) {
    finished_ = true;
    slot_->Release();
    reactor_->StartWriteAndFinish(&current_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    reactor_->StartWrite(&current_);
  }
}

void WatchChannel::FinishLocked(const grpc::Status& status) {
  finished_ = true;
  if (reactor_ == nullptr) return;
  slot_->Release();
  reactor_->Finish(status);
}

void WatchChannel::Push(const v1::Snapshot& snapshot) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr || pending_close_ || pending_final_) return;
  if (snapshot.has_final_job()) {
    // The last interval still goes out, then the final snapshot.
    if (writing_ || pending_) {
      pending_final_ = snapshot;
      if (!writing_) {
        v1::Snapshot out = std::move(*pending_);
        pending_.reset();
        WriteLocked(std::move(out));
      }
      return;
    }
    WriteLocked(snapshot);
    return;
  }
  if (writing_ || absl::Now() - last_write_ < min_wall_interval_) {
    pending_ = pending_ ? MergeSnapshots(*pending_, snapshot) : snapshot;
    return;
  }
  v1::Snapshot out = pending_ ? MergeSnapshots(*pending_, snapshot) : snapshot;
  pending_.reset();
  WriteLocked(std::move(out));
}

void WatchChannel::Close(const absl::Status& status) {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  if (writing_) {
    pending_close_ = ToGrpcStatus(status);
    return;
  }
  FinishLocked(ToGrpcStatus(status));
}

void WatchChannel::OnWriteDone(bool ok) {
  absl::MutexLock lock(&mu_);
  writing_ = false;
  if (finished_ || reactor_ == nullptr) return;
  if (!ok) {
    FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the stream broke"));
  } else if (pending_close_) {
    FinishLocked(*pending_close_);
  } else if (pending_ && (pending_final_ || absl::Now() - last_write_ >= min_wall_interval_)) {
    v1::Snapshot next = std::move(*pending_);
    pending_.reset();
    WriteLocked(std::move(next));
  } else if (pending_final_) {
    v1::Snapshot next = std::move(*pending_final_);
    pending_final_.reset();
    WriteLocked(std::move(next));
  }
}

void WatchChannel::OnCancel() {
  absl::MutexLock lock(&mu_);
  if (finished_ || reactor_ == nullptr) return;
  if (!writing_) FinishLocked(grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the watch"));
  // else: OnWriteDone(false) follows and finishes the call.
}

}  // namespace

absl::StatusOr<host::HostSpec> JobServiceImpl::ResolveTarget(const v1::Job& in) {
  switch (in.target_case()) {
    case v1::Job::kHost: {
      absl::StatusOr<std::string> host_id = ParseResourceName(in.host(), "hosts");
      if (!host_id.ok()) return absl::InvalidArgumentError(absl::StrCat("job.host: ", host_id.status().message()));
      BLKLAB_ASSIGN_OR_RETURN(v1::Host stored, store_->GetHost(*host_id));
      return HostSpecFromProto(stored.spec(), limits_->host, *host_id);
    }
    case v1::Job::kHostSpec: {
      absl::StatusOr<host::HostSpec> host = HostSpecFromProto(in.host_spec(), limits_->host, "inline");
      if (!host.ok()) {
        return absl::Status(host.status().code(), absl::StrCat("job.host_spec.", host.status().message()));
      }
      return host;
    }
    case v1::Job::kPreset: {
      absl::StatusOr<host::HostSpec> host = host::GetPreset(in.preset());
      if (!host.ok()) return absl::InvalidArgumentError(absl::StrCat("job.preset: ", host.status().message()));
      return host;
    }
    default:
      return absl::InvalidArgumentError("job: one of host, host_spec or preset is required");
  }
}

absl::Status JobServiceImpl::DoCreateJob(const v1::CreateJobRequest& req, v1::Job* resp) {
  const std::string& rid = req.request_id();
  if (!rid.empty()) {
    if (rid.size() > 128) return absl::InvalidArgumentError("request_id: at most 128 characters");
    for (char c : rid) {
      if (c < 0x20 || c > 0x7e) return absl::InvalidArgumentError("request_id: printable ASCII only");
    }
    // A request id answers with its job for request_id_ttl (24 h, as the
    // API promises); an older one is released and creates a new job.
    const int64_t not_before_ms = absl::ToUnixMillis(absl::Now()) - limits_->request_id_ttl_ms;
    BLKLAB_ASSIGN_OR_RETURN(std::optional<v1::Job> seen, store_->FindJobByRequestId(rid, not_before_ms));
    if (seen.has_value()) {
      *resp = *std::move(seen);
      return absl::OkStatus();
    }
  }
  JobRecord job;
  job.id = req.job_id();
  if (job.id.empty()) {
    job.id = "j-" + RandomHex(8);
  } else if (!IsValidResourceId(job.id)) {
    return absl::InvalidArgumentError("job_id: must match [a-z0-9][a-z0-9-]{0,62}");
  }
  const v1::Job& in = req.job();
  if (in.has_comparison_cell()) {
    return absl::InvalidArgumentError(
        "job.comparison_cell: output only (a comparison's cells are created by "
        "ComparisonService.CreateComparison)");
  }
  BLKLAB_ASSIGN_OR_RETURN(host::HostSpec host, ResolveTarget(in));
  BLKLAB_RETURN_IF_ERROR(PrepareJob(in, host, *limits_).status());

  // The definition: what the client asked for, and the host it resolved to.
  auto definition = std::make_shared<v1::Job>();
  switch (in.target_case()) {
    case v1::Job::kHost:
      definition->set_host(in.host());
      break;
    case v1::Job::kHostSpec:
      *definition->mutable_host_spec() = in.host_spec();
      break;
    default:
      definition->set_preset(in.preset());
  }
  if (in.has_spec()) {
    *definition->mutable_spec() = in.spec();
  } else {
    *definition->mutable_fio() = in.fio();
  }
  definition->set_seed(in.seed());
  definition->set_pace(in.pace());
  *definition->mutable_limits() = in.limits();
  if (in.has_report_time()) *definition->mutable_report_time() = in.report_time();
  definition->set_collect_stacks(in.collect_stacks());
  BLKLAB_RETURN_IF_ERROR(HostSpecToProto(host, definition->mutable_resolved_host()));
  definition->set_request_id(rid);
  job.definition = std::move(definition);
  job.state = JobState::kQueued;
  job.create_time = absl::Now();
  if (req.validate_only()) {
    *resp = JobToProto(job);
    return absl::OkStatus();
  }
  if (absl::Status s = jobs_->Submit(job); !s.ok()) {
    if (absl::IsAlreadyExists(s) && !rid.empty()) {
      // A concurrent call with the same request id won the race.
      absl::StatusOr<std::optional<v1::Job>> seen =
          store_->FindJobByRequestId(rid, absl::ToUnixMillis(absl::Now()) - limits_->request_id_ttl_ms);
      if (seen.ok() && seen->has_value()) {
        *resp = **seen;
        return absl::OkStatus();
      }
    }
    if (absl::IsAlreadyExists(s)) return absl::AlreadyExistsError(job.name() + " already exists");
    return s;
  }
  Log("info", "job_created", {{"job", job.name()}, {"request_id", rid}});
  *resp = JobToProto(job);
  return absl::OkStatus();
}

void JobServiceImpl::FillProgress(v1::Job* job) const {
  absl::StatusOr<std::string> id = ParseResourceName(job->name(), "jobs");
  if (!id.ok()) return;
  const std::optional<JobProgress> progress = jobs_->Progress(*id);
  if (!progress) return;
  SetDuration(progress->virtual_ns, job->mutable_progress_virtual_time());
  job->set_progress_fraction(progress->fraction);
}

grpc::ServerUnaryReactor* JobServiceImpl::CreateJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CreateJobRequest* req, v1::Job* resp) {
  return gate_->Unary(ctx, [&] { return DoCreateJob(*req, resp); });
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                                 v1::Job* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "jobs"));
    BLKLAB_ASSIGN_OR_RETURN(*resp, store_->GetJob(id, req->view() != v1::JOB_VIEW_BASIC));
    OmitLogContents(resp);
    FillProgress(resp);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* JobServiceImpl::ListJobs(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                                   v1::ListJobsResponse* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(JobFilter filter, ParseJobFilter(req->filter()));
    // A token is "j2:SEQ:DIGEST": where the last page stopped, and the
    // filter it was issued for (AIP-158: a token with another filter is an
    // error, not a page of something else).
    const std::string digest = QueryDigest(req->filter());
    int64_t before = 0;
    if (!req->page_token().empty()) {
      std::vector<std::string> parts = absl::StrSplit(req->page_token(), ':');
      if (parts.size() != 3 || parts[0] != "j2" || !absl::SimpleAtoi(parts[1], &before) || before <= 0) {
        return absl::InvalidArgumentError("page_token: not a token this server issued");
      }
      if (parts[2] != digest) {
        return absl::InvalidArgumentError("page_token: issued for another filter; list again from the first page");
      }
    }
    BLKLAB_ASSIGN_OR_RETURN(const int size, PageSize(req->page_size()));
    BLKLAB_ASSIGN_OR_RETURN(Store::JobPage page,
                            store_->ListJobs(filter, before, size, req->view() == v1::JOB_VIEW_FULL));
    // Cut by bytes too: at least one job, then none past kMaxPageBytes.
    size_t bytes = 0;
    for (size_t i = 0; i < page.jobs.size(); ++i) {
      v1::Job& j = page.jobs[i];
      OmitLogContents(&j);
      FillProgress(&j);
      if (i > 0 && bytes + j.ByteSizeLong() > kMaxPageBytes) {
        page.more = true;
        page.last_seq = page.seqs[i - 1];
        break;
      }
      bytes += j.ByteSizeLong();
      *resp->add_jobs() = std::move(j);
    }
    if (page.more) resp->set_next_page_token(absl::StrCat("j2:", page.last_seq, ":", digest));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* JobServiceImpl::CancelJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CancelJobRequest* req, v1::Job* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "jobs"));
    BLKLAB_ASSIGN_OR_RETURN(JobRecord job, jobs_->Cancel(id));
    Log("info", "job_cancel_requested", {{"job", req->name()}});
    *resp = JobToProto(job);
    resp->clear_result();
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* JobServiceImpl::DeleteJob(grpc::CallbackServerContext* ctx,
                                                    const v1::DeleteJobRequest* req, google::protobuf::Empty*) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "jobs"));
    if (jobs_->IsActive(id)) {
      return absl::FailedPreconditionError(absl::StrCat(req->name(), " is QUEUED or RUNNING; cancel it first"));
    }
    return store_->DeleteJob(id);
  });
}

namespace {

// One ReadJobArtifacts call: the chunks of the asked artifacts of one stored
// result, written one at a time (flow control: the next only after the
// previous one's OnWriteDone). It holds the job's result in memory, so it
// counts as one of the server's max_streams streams. Deletes itself in
// OnDone.
class ArtifactReactor final : public grpc::ServerWriteReactor<v1::ArtifactChunk> {
 public:
  struct Part {
    std::string name;
    const std::string* data;  // into job_'s result
  };
  ArtifactReactor(std::shared_ptr<const v1::Job> job, std::vector<Part> parts, size_t chunk_bytes,
                  std::atomic<int>* streams)
      : job_(std::move(job)), parts_(std::move(parts)), chunk_bytes_(chunk_bytes), slot_(streams) {
    Next();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      slot_.Release();
      Finish(grpc::Status(grpc::StatusCode::CANCELLED, "the client went away"));
      return;
    }
    Next();
  }
  void OnDone() override {
    slot_.Release();
    delete this;
  }

 private:
  void Next() {
    if (part_ == parts_.size()) {
      slot_.Release();
      Finish(grpc::Status::OK);
      return;
    }
    const Part& p = parts_[part_];
    const size_t n = std::min(chunk_bytes_, p.data->size() - offset_);
    chunk_.set_artifact(p.name);
    chunk_.set_offset(static_cast<int64_t>(offset_));
    chunk_.set_total_bytes(static_cast<int64_t>(p.data->size()));
    chunk_.set_data(p.data->substr(offset_, n));
    offset_ += n;
    if (offset_ == p.data->size()) {
      ++part_;
      offset_ = 0;
    }
    StartWrite(&chunk_);
  }

  const std::shared_ptr<const v1::Job> job_;
  const std::vector<Part> parts_;
  const size_t chunk_bytes_;
  StreamSlot slot_;
  size_t part_ = 0;
  size_t offset_ = 0;
  v1::ArtifactChunk chunk_;
};

}  // namespace

grpc::ServerWriteReactor<v1::ArtifactChunk>* JobServiceImpl::ReadJobArtifacts(
    grpc::CallbackServerContext* ctx, const v1::ReadJobArtifactsRequest* req) {
  return gate_->ServerStream<v1::ArtifactChunk>(
      ctx, [&]() -> absl::StatusOr<grpc::ServerWriteReactor<v1::ArtifactChunk>*> {
        BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "jobs"));
        constexpr int kDefaultChunk = 1 << 20;
        constexpr int kMaxChunk = 4 << 20;
        if (req->chunk_bytes() < 0 || req->chunk_bytes() > kMaxChunk) {
          return absl::InvalidArgumentError(
              absl::StrCat("chunk_bytes: ", req->chunk_bytes(), " is outside 0..", kMaxChunk, " (0 = 1 MiB)"));
        }
        if (streams_.fetch_add(1) >= max_streams_) {
          streams_.fetch_sub(1);
          return absl::ResourceExhaustedError(
              absl::StrCat("too many concurrent streams (max_streams = ", max_streams_, ")"));
        }
        // Until the reactor owns the count, an early return gives it back.
        struct Release {
          std::atomic<int>* n;
          ~Release() {
            if (n != nullptr) n->fetch_sub(1);
          }
        } release{&streams_};
        BLKLAB_ASSIGN_OR_RETURN(v1::Job job, store_->GetJob(id, /*full=*/true));
        if (!job.has_result()) {
          return absl::FailedPreconditionError(
              absl::StrCat(req->name(), " has no result (", v1::Job::State_Name(job.state()), ")"));
        }
        auto held = std::make_shared<const v1::Job>(std::move(job));
        const v1::JobResult& r = held->result();
        std::vector<ArtifactReactor::Part> parts;
        if (req->artifacts().empty()) {
          for (const v1::LogFile& f : r.logs()) parts.push_back({absl::StrCat("logs/", f.name()), &f.content()});
        }
        for (const std::string& a : req->artifacts()) {
          const std::string* data = nullptr;
          if (a == "fio_normal") data = &r.fio_normal();
          if (a == "fio_json") data = &r.fio_json();
          if (a == "fio_json_plus") data = &r.fio_json_plus();
          if (a == "fio_terse") data = &r.fio_terse();
          if (a == "stacks.folded" && r.stacks_folded_bytes() > 0) data = &r.stacks_folded();
          absl::string_view log = a;
          if (absl::ConsumePrefix(&log, "logs/")) {
            for (const v1::LogFile& f : r.logs()) {
              if (f.name() == log) data = &f.content();
            }
          }
          if (data == nullptr) {
            std::string logs;
            for (const v1::LogFile& f : r.logs()) absl::StrAppend(&logs, logs.empty() ? "" : ", ", "logs/", f.name());
            return absl::NotFoundError(absl::StrCat(
                req->name(), " has no artifact \"", a.substr(0, 200),
                "\"; it has fio_normal, fio_json, fio_json_plus, fio_terse",
                r.stacks_folded_bytes() > 0 ? ", stacks.folded" : "",
                logs.empty() ? " and no log files" : absl::StrCat(" and ", logs)));
          }
          parts.push_back({a, data});
        }
        release.n = nullptr;
        return new ArtifactReactor(std::move(held), std::move(parts),
                                   req->chunk_bytes() == 0 ? kDefaultChunk : req->chunk_bytes(), &streams_);
      });
}

grpc::ServerWriteReactor<v1::Snapshot>* JobServiceImpl::WatchJob(grpc::CallbackServerContext* ctx,
                                                                 const v1::WatchJobRequest* req) {
  return gate_->ServerStream<v1::Snapshot>(
      ctx, [&]() -> absl::StatusOr<grpc::ServerWriteReactor<v1::Snapshot>*> {
        BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "jobs"));
        if (streams_.fetch_add(1) >= max_streams_) {
          streams_.fetch_sub(1);
          return absl::ResourceExhaustedError(
              absl::StrCat("too many concurrent streams (max_streams = ", max_streams_, ")"));
        }
        auto* reactor = new WatchReactor(jobs_, &streams_, std::move(id),
                                         absl::Nanoseconds(DurationNs(req->min_wall_interval())));
        reactor->Begin();
        return reactor;
      });
}

}  // namespace blklab::server
