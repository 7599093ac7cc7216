#include "server/services.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/host/presets.h"
#include "google/protobuf/util/field_mask_util.h"
#include "server/log.h"
#include "server/proto_time.h"
#include "server/resource_name.h"
#include "server/status_convert.h"

namespace blklab::server {
namespace {

grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* ctx, const absl::Status& status) {
  grpc::ServerUnaryReactor* r = ctx->DefaultReactor();
  r->Finish(ToGrpcStatus(status));
  return r;
}

std::string RandomHex(int bytes) {
  static absl::Mutex mu(absl::kConstInit);
  static absl::BitGen* gen = new absl::BitGen();
  absl::MutexLock lock(&mu);
  std::string out;
  for (int i = 0; i < bytes; ++i) absl::StrAppendFormat(&out, "%02x", absl::Uniform<uint32_t>(*gen, 0, 256));
  return out;
}

int PageSize(int requested) {
  if (requested <= 0) return 100;
  return std::min(requested, 1000);
}

// A host's spec, resolved and canonical, from either form of a request.
absl::StatusOr<host::HostSpec> SpecFromRequest(const v1::HostSpec* spec, const std::string& text,
                                               const std::string& default_name,
                                               const host::HostLimits& limits) {
  if (!text.empty()) {
    if (text.size() > limits.max_document_bytes) {
      return absl::InvalidArgumentError(absl::StrCat("spec_text: ", text.size(), " bytes, the limit is ",
                                                     limits.max_document_bytes));
    }
    absl::StatusOr<host::HostSpec> s = host::ParseHostSpec(text, host::SpecFormat::kAuto, limits);
    if (!s.ok()) return absl::Status(s.status().code(), absl::StrCat("spec_text: ", s.status().message()));
    return s;
  }
  if (spec == nullptr) return absl::InvalidArgumentError("host.spec or spec_text is required");
  return HostSpecFromProto(*spec, limits, default_name);
}

absl::Status CanonicalSpec(const host::HostSpec& spec, v1::HostSpec* out) {
  return HostSpecToProto(spec, out);
}

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

// The job manager's handle on one WatchJob stream. It outlives the reactor
// if need be: Detach() cuts the link when the RPC is done.
class WatchChannel final : public WatchSink {
 public:
  WatchChannel(WatchReactor* reactor, absl::Duration min_wall_interval)
      : reactor_(reactor), min_wall_interval_(min_wall_interval) {}
  void Push(const v1::Snapshot& snapshot) override;
  void Close(const absl::Status& status) override;
  void OnWriteDone(bool ok);
  void OnCancel();
  void Detach() {
    absl::MutexLock lock(&mu_);
    reactor_ = nullptr;
  }

 private:
  void WriteLocked(v1::Snapshot snapshot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void FinishLocked(const grpc::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  absl::Mutex mu_;
  WatchReactor* reactor_ ABSL_GUARDED_BY(mu_);
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
  WatchReactor(JobManager* jobs, std::atomic<int>* streams, std::string id, absl::Duration min_wall_interval)
      : jobs_(jobs), streams_(streams), id_(std::move(id)),
        channel_(std::make_shared<WatchChannel>(this, min_wall_interval)) {}

  void Begin() {
    absl::Status s = jobs_->Watch(id_, channel_);
    if (!s.ok()) channel_->Close(s);
  }
  void OnWriteDone(bool ok) override { channel_->OnWriteDone(ok); }
  void OnCancel() override { channel_->OnCancel(); }
  void OnDone() override {
    channel_->Detach();
    jobs_->Unwatch(id_, channel_.get());
    streams_->fetch_sub(1);
    delete this;
  }

 private:
  JobManager* const jobs_;
  std::atomic<int>* const streams_;
  const std::string id_;
  const std::shared_ptr<WatchChannel> channel_;
};

void WatchChannel::WriteLocked(v1::Snapshot snapshot) {
  current_ = std::move(snapshot);
  writing_ = true;
  last_write_ = absl::Now();
  if (current_.has_final_job()) {
    finished_ = true;
    reactor_->StartWriteAndFinish(&current_, grpc::WriteOptions(), grpc::Status::OK);
  } else {
    reactor_->StartWrite(&current_);
  }
}

void WatchChannel::FinishLocked(const grpc::Status& status) {
  finished_ = true;
  if (reactor_ != nullptr) reactor_->Finish(status);
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

absl::Status Authorizer::Check(const grpc::CallbackServerContext* context) const {
  if (token_.empty()) return absl::OkStatus();
  const auto& md = context->client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return absl::UnauthenticatedError("missing \"authorization: Bearer <token>\" metadata");
  const absl::string_view value(it->second.data(), it->second.size());
  const std::string expected = "Bearer " + token_;
  // Constant-time comparison.
  unsigned diff = value.size() != expected.size();
  for (size_t i = 0; i < expected.size(); ++i) {
    diff |= static_cast<unsigned>(i < value.size() ? value[i] : 0) ^ static_cast<unsigned>(expected[i]);
  }
  if (diff != 0) return absl::UnauthenticatedError("invalid bearer token");
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// HostService

grpc::ServerUnaryReactor* HostServiceImpl::CreateHost(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateHostRequest* req, v1::Host* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  if (!IsValidResourceId(req->host_id())) {
    return Reply(ctx, absl::InvalidArgumentError("host_id: must match [a-z0-9][a-z0-9-]{0,62}"));
  }
  if (req->has_host() && req->host().has_spec() && !req->spec_text().empty()) {
    return Reply(ctx, absl::InvalidArgumentError("give host.spec or spec_text, not both"));
  }
  absl::StatusOr<host::HostSpec> spec =
      SpecFromRequest(req->has_host() && req->host().has_spec() ? &req->host().spec() : nullptr,
                      req->spec_text(), req->host_id(), limits_->host);
  if (!spec.ok()) return Reply(ctx, spec.status());
  v1::Host host;
  host.set_name("hosts/" + req->host_id());
  if (absl::Status s = CanonicalSpec(*spec, host.mutable_spec()); !s.ok()) return Reply(ctx, s);
  SetTimestamp(absl::Now(), host.mutable_create_time());
  *host.mutable_update_time() = host.create_time();
  host.set_etag(RandomHex(8));
  if (!req->validate_only()) {
    if (absl::Status s = store_->CreateHost(host); !s.ok()) return Reply(ctx, s);
    Log("info", "host_created", {{"host", host.name()}});
  }
  *resp = std::move(host);
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HostServiceImpl::GetHost(grpc::CallbackServerContext* ctx, const v1::GetHostRequest* req,
                                                   v1::Host* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->name(), "hosts");
  if (!id.ok()) return Reply(ctx, id.status());
  absl::StatusOr<v1::Host> host = store_->GetHost(*id);
  if (!host.ok()) return Reply(ctx, host.status());
  *resp = *std::move(host);
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HostServiceImpl::ListHosts(grpc::CallbackServerContext* ctx,
                                                     const v1::ListHostsRequest* req, v1::ListHostsResponse* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  std::string after;
  if (!req->page_token().empty()) {
    if (!absl::StartsWith(req->page_token(), "h1:")) {
      return Reply(ctx, absl::InvalidArgumentError("page_token: not a token this server issued"));
    }
    after = req->page_token().substr(3);
  }
  const int size = PageSize(req->page_size());
  absl::StatusOr<std::vector<v1::Host>> hosts = store_->ListHosts(after, size + 1);
  if (!hosts.ok()) return Reply(ctx, hosts.status());
  for (int i = 0; i < static_cast<int>(hosts->size()) && i < size; ++i) *resp->add_hosts() = (*hosts)[i];
  if (static_cast<int>(hosts->size()) > size) {
    absl::StatusOr<std::string> last = ParseResourceName(resp->hosts(size - 1).name(), "hosts");
    if (!last.ok()) return Reply(ctx, last.status());
    resp->set_next_page_token("h1:" + *last);
  }
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HostServiceImpl::UpdateHost(grpc::CallbackServerContext* ctx,
                                                      const v1::UpdateHostRequest* req, v1::Host* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->host().name(), "hosts");
  if (!id.ok()) return Reply(ctx, absl::InvalidArgumentError(absl::StrCat("host.", id.status().message())));
  absl::StatusOr<v1::Host> current = store_->GetHost(*id);
  if (!current.ok()) return Reply(ctx, current.status());
  if (!req->etag().empty() && req->etag() != current->etag()) {
    return Reply(ctx, absl::AbortedError(absl::StrCat(req->host().name(), " was changed (etag mismatch)")));
  }
  v1::Host updated = *current;
  if (req->update_mask().paths_size() == 0) {
    *updated.mutable_spec() = req->host().spec();
  } else {
    for (const std::string& path : req->update_mask().paths()) {
      if (path != "spec" && !absl::StartsWith(path, "spec.")) {
        return Reply(ctx, absl::InvalidArgumentError(absl::StrCat("update_mask: \"", path,
                                                                  "\" is not an updatable field (spec.*)")));
      }
    }
    google::protobuf::util::FieldMaskUtil::MergeOptions opts;
    opts.set_replace_message_fields(true);
    opts.set_replace_repeated_fields(true);
    if (!google::protobuf::util::FieldMaskUtil::IsValidFieldMask<v1::Host>(req->update_mask())) {
      return Reply(ctx, absl::InvalidArgumentError("update_mask: names a field Host does not have"));
    }
    google::protobuf::util::FieldMaskUtil::MergeMessageTo(req->host(), req->update_mask(), opts, &updated);
  }
  absl::StatusOr<host::HostSpec> spec = HostSpecFromProto(updated.spec(), limits_->host, *id);
  if (!spec.ok()) return Reply(ctx, spec.status());
  if (absl::Status s = CanonicalSpec(*spec, updated.mutable_spec()); !s.ok()) return Reply(ctx, s);
  SetTimestamp(absl::Now(), updated.mutable_update_time());
  updated.set_etag(RandomHex(8));
  if (!req->validate_only()) {
    if (absl::Status s = store_->UpdateHost(updated); !s.ok()) return Reply(ctx, s);
  }
  *resp = std::move(updated);
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* HostServiceImpl::DeleteHost(grpc::CallbackServerContext* ctx,
                                                      const v1::DeleteHostRequest* req, google::protobuf::Empty*) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->name(), "hosts");
  if (!id.ok()) return Reply(ctx, id.status());
  if (!req->etag().empty()) {
    absl::StatusOr<v1::Host> current = store_->GetHost(*id);
    if (!current.ok()) return Reply(ctx, current.status());
    if (current->etag() != req->etag()) {
      return Reply(ctx, absl::AbortedError(absl::StrCat(req->name(), " was changed (etag mismatch)")));
    }
  }
  return Reply(ctx, store_->DeleteHost(*id));
}

grpc::ServerUnaryReactor* HostServiceImpl::ListPresets(grpc::CallbackServerContext* ctx,
                                                       const v1::ListPresetsRequest*, v1::ListPresetsResponse* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  for (const host::PresetInfo& info : host::ListPresets()) {
    v1::Preset* p = resp->add_presets();
    p->set_name(info.name);
    p->set_description(info.description);
    absl::StatusOr<host::HostSpec> spec = host::GetPreset(info.name);
    if (!spec.ok()) return Reply(ctx, spec.status());
    if (absl::Status s = CanonicalSpec(*spec, p->mutable_spec()); !s.ok()) return Reply(ctx, s);
    absl::StatusOr<absl::string_view> yaml = host::PresetYaml(info.name);
    if (yaml.ok()) p->set_spec_yaml(std::string(*yaml));
  }
  return Reply(ctx, absl::OkStatus());
}

// ---------------------------------------------------------------------------
// JobService

absl::Status JobServiceImpl::DoCreateJob(const v1::CreateJobRequest& req, v1::Job* resp) {
  const std::string& rid = req.request_id();
  if (!rid.empty()) {
    if (rid.size() > 128) return absl::InvalidArgumentError("request_id: at most 128 characters");
    for (char c : rid) {
      if (c < 0x20 || c > 0x7e) return absl::InvalidArgumentError("request_id: printable ASCII only");
    }
    absl::StatusOr<std::optional<v1::Job>> seen = store_->FindJobByRequestId(rid);
    if (!seen.ok()) return seen.status();
    if (seen->has_value()) {
      *resp = **seen;
      return absl::OkStatus();
    }
  }
  std::string id = req.job_id();
  if (id.empty()) {
    id = "j-" + RandomHex(8);
  } else if (!IsValidResourceId(id)) {
    return absl::InvalidArgumentError("job_id: must match [a-z0-9][a-z0-9-]{0,62}");
  }
  const v1::Job& in = req.job();
  absl::StatusOr<host::HostSpec> host;
  switch (in.target_case()) {
    case v1::Job::kHost: {
      absl::StatusOr<std::string> host_id = ParseResourceName(in.host(), "hosts");
      if (!host_id.ok()) return absl::InvalidArgumentError(absl::StrCat("job.host: ", host_id.status().message()));
      absl::StatusOr<v1::Host> stored = store_->GetHost(*host_id);
      if (!stored.ok()) return stored.status();
      host = HostSpecFromProto(stored->spec(), limits_->host, *host_id);
      break;
    }
    case v1::Job::kHostSpec:
      host = HostSpecFromProto(in.host_spec(), limits_->host, "inline");
      if (!host.ok()) {
        return absl::Status(host.status().code(), absl::StrCat("job.host_spec.", host.status().message()));
      }
      break;
    case v1::Job::kPreset:
      host = host::GetPreset(in.preset());
      if (!host.ok()) return absl::InvalidArgumentError(absl::StrCat("job.preset: ", host.status().message()));
      break;
    default:
      return absl::InvalidArgumentError("job: one of host, host_spec or preset is required");
  }
  if (!host.ok()) return host.status();
  absl::StatusOr<PreparedJob> prepared = PrepareJob(in, *host, *limits_);
  if (!prepared.ok()) return prepared.status();

  v1::Job job;
  job.set_name("jobs/" + id);
  switch (in.target_case()) {
    case v1::Job::kHost:
      job.set_host(in.host());
      break;
    case v1::Job::kHostSpec:
      *job.mutable_host_spec() = in.host_spec();
      break;
    default:
      job.set_preset(in.preset());
  }
  if (in.has_spec()) {
    *job.mutable_spec() = in.spec();
  } else {
    *job.mutable_fio() = in.fio();
  }
  job.set_seed(in.seed());
  job.set_pace(in.pace());
  *job.mutable_limits() = in.limits();
  job.set_state(v1::Job::QUEUED);
  if (absl::Status s = HostSpecToProto(*host, job.mutable_resolved_host()); !s.ok()) return s;
  SetTimestamp(absl::Now(), job.mutable_create_time());
  job.set_request_id(rid);
  if (req.validate_only()) {
    *resp = std::move(job);
    return absl::OkStatus();
  }
  if (absl::Status s = jobs_->Submit(job); !s.ok()) {
    if (absl::IsAlreadyExists(s) && !rid.empty()) {
      // A concurrent call with the same request id won the race.
      absl::StatusOr<std::optional<v1::Job>> seen = store_->FindJobByRequestId(rid);
      if (seen.ok() && seen->has_value()) {
        *resp = **seen;
        return absl::OkStatus();
      }
    }
    if (absl::IsAlreadyExists(s)) return absl::AlreadyExistsError(job.name() + " already exists");
    return s;
  }
  Log("info", "job_created", {{"job", job.name()}, {"request_id", rid}});
  *resp = std::move(job);
  return absl::OkStatus();
}

grpc::ServerUnaryReactor* JobServiceImpl::CreateJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CreateJobRequest* req, v1::Job* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  return Reply(ctx, DoCreateJob(*req, resp));
}

grpc::ServerUnaryReactor* JobServiceImpl::GetJob(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                                 v1::Job* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->name(), "jobs");
  if (!id.ok()) return Reply(ctx, id.status());
  absl::StatusOr<v1::Job> job = store_->GetJob(*id, req->view() != v1::JOB_VIEW_BASIC);
  if (!job.ok()) return Reply(ctx, job.status());
  jobs_->FillProgress(&*job);
  *resp = *std::move(job);
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* JobServiceImpl::ListJobs(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                                   v1::ListJobsResponse* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<JobFilter> filter = ParseJobFilter(req->filter());
  if (!filter.ok()) return Reply(ctx, filter.status());
  int64_t before = 0;
  if (!req->page_token().empty()) {
    if (!absl::StartsWith(req->page_token(), "j1:") || !absl::SimpleAtoi(req->page_token().substr(3), &before) ||
        before <= 0) {
      return Reply(ctx, absl::InvalidArgumentError("page_token: not a token this server issued"));
    }
  }
  absl::StatusOr<Store::JobPage> page =
      store_->ListJobs(*filter, before, PageSize(req->page_size()), req->view() == v1::JOB_VIEW_FULL);
  if (!page.ok()) return Reply(ctx, page.status());
  for (v1::Job& j : page->jobs) {
    jobs_->FillProgress(&j);
    *resp->add_jobs() = std::move(j);
  }
  if (page->more) resp->set_next_page_token(absl::StrCat("j1:", page->last_seq));
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* JobServiceImpl::CancelJob(grpc::CallbackServerContext* ctx,
                                                    const v1::CancelJobRequest* req, v1::Job* resp) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->name(), "jobs");
  if (!id.ok()) return Reply(ctx, id.status());
  absl::StatusOr<v1::Job> job = jobs_->Cancel(*id);
  if (!job.ok()) return Reply(ctx, job.status());
  Log("info", "job_cancel_requested", {{"job", req->name()}});
  *resp = *std::move(job);
  resp->clear_result();
  return Reply(ctx, absl::OkStatus());
}

grpc::ServerUnaryReactor* JobServiceImpl::DeleteJob(grpc::CallbackServerContext* ctx,
                                                    const v1::DeleteJobRequest* req, google::protobuf::Empty*) {
  if (absl::Status s = auth_->Check(ctx); !s.ok()) return Reply(ctx, s);
  absl::StatusOr<std::string> id = ParseResourceName(req->name(), "jobs");
  if (!id.ok()) return Reply(ctx, id.status());
  if (jobs_->IsActive(*id)) {
    return Reply(ctx, absl::FailedPreconditionError(
                          absl::StrCat(req->name(), " is QUEUED or RUNNING; cancel it first")));
  }
  return Reply(ctx, store_->DeleteJob(*id));
}

grpc::ServerWriteReactor<v1::Snapshot>* JobServiceImpl::WatchJob(grpc::CallbackServerContext* ctx,
                                                                 const v1::WatchJobRequest* req) {
  absl::Status status = auth_->Check(ctx);
  absl::StatusOr<std::string> id = status.ok() ? ParseResourceName(req->name(), "jobs") : status;
  if (id.ok() && streams_.fetch_add(1) >= max_streams_) {
    streams_.fetch_sub(1);
    id = absl::ResourceExhaustedError(
        absl::StrCat("too many concurrent streams (max_streams = ", max_streams_, ")"));
  }
  if (!id.ok()) {
    // A reactor that only reports the error.
    class Reject final : public grpc::ServerWriteReactor<v1::Snapshot> {
     public:
      explicit Reject(const absl::Status& s) { Finish(ToGrpcStatus(s)); }
      void OnDone() override { delete this; }
    };
    return new Reject(id.status());
  }
  const absl::Duration min_interval = absl::Nanoseconds(DurationNs(req->min_wall_interval()));
  auto* reactor = new WatchReactor(jobs_, &streams_, *id, min_interval);
  reactor->Begin();
  return reactor;
}

}  // namespace blklab::server
