#include "server/host_service.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "engine/host/presets.h"
#include "engine/util/status_macros.h"
#include "google/protobuf/util/field_mask_util.h"
#include "server/log.h"
#include "server/proto_time.h"
#include "server/resource_name.h"

namespace blklab::server {
namespace {

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

// Applies an UpdateHost request's mask (empty: the whole spec) to `host`.
absl::Status ApplyUpdate(const v1::UpdateHostRequest& req, v1::Host* host) {
  if (req.update_mask().paths_size() == 0) {
    *host->mutable_spec() = req.host().spec();
    return absl::OkStatus();
  }
  for (const std::string& path : req.update_mask().paths()) {
    if (path != "spec" && !absl::StartsWith(path, "spec.")) {
      return absl::InvalidArgumentError(
          absl::StrCat("update_mask: \"", path, "\" is not an updatable field (spec.*)"));
    }
  }
  if (!google::protobuf::util::FieldMaskUtil::IsValidFieldMask<v1::Host>(req.update_mask())) {
    return absl::InvalidArgumentError("update_mask: names a field Host does not have");
  }
  google::protobuf::util::FieldMaskUtil::MergeOptions opts;
  opts.set_replace_message_fields(true);
  opts.set_replace_repeated_fields(true);
  google::protobuf::util::FieldMaskUtil::MergeMessageTo(req.host(), req.update_mask(), opts, host);
  return absl::OkStatus();
}

absl::Status CheckEtag(const std::string& name, const std::string& want, const v1::Host& current) {
  if (want.empty() || want == current.etag()) return absl::OkStatus();
  return absl::AbortedError(absl::StrCat(name, " was changed (etag mismatch)"));
}

}  // namespace

grpc::ServerUnaryReactor* HostServiceImpl::CreateHost(grpc::CallbackServerContext* ctx,
                                                      const v1::CreateHostRequest* req, v1::Host* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    if (!IsValidResourceId(req->host_id())) {
      return absl::InvalidArgumentError("host_id: must match [a-z0-9][a-z0-9-]{0,62}");
    }
    const bool has_spec = req->has_host() && req->host().has_spec();
    if (has_spec && !req->spec_text().empty()) {
      return absl::InvalidArgumentError("give host.spec or spec_text, not both");
    }
    BLKLAB_ASSIGN_OR_RETURN(host::HostSpec spec, SpecFromRequest(has_spec ? &req->host().spec() : nullptr,
                                                                 req->spec_text(), req->host_id(), limits_->host));
    v1::Host host;
    host.set_name("hosts/" + req->host_id());
    BLKLAB_RETURN_IF_ERROR(HostSpecToProto(spec, host.mutable_spec()));
    SetTimestamp(absl::Now(), host.mutable_create_time());
    *host.mutable_update_time() = host.create_time();
    host.set_etag(RandomHex(8));
    if (!req->validate_only()) {
      BLKLAB_RETURN_IF_ERROR(store_->CreateHost(host));
      Log("info", "host_created", {{"host", host.name()}});
    }
    *resp = std::move(host);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* HostServiceImpl::GetHost(grpc::CallbackServerContext* ctx, const v1::GetHostRequest* req,
                                                   v1::Host* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "hosts"));
    BLKLAB_ASSIGN_OR_RETURN(*resp, store_->GetHost(id));
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* HostServiceImpl::ListHosts(grpc::CallbackServerContext* ctx,
                                                     const v1::ListHostsRequest* req, v1::ListHostsResponse* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    absl::string_view after = req->page_token();
    if (!after.empty() && !absl::ConsumePrefix(&after, "h1:")) {
      return absl::InvalidArgumentError("page_token: not a token this server issued");
    }
    BLKLAB_ASSIGN_OR_RETURN(const int size, PageSize(req->page_size()));
    BLKLAB_ASSIGN_OR_RETURN(std::vector<v1::Host> hosts, store_->ListHosts(std::string(after), size + 1));
    for (int i = 0; i < static_cast<int>(hosts.size()) && i < size; ++i) *resp->add_hosts() = std::move(hosts[i]);
    if (static_cast<int>(hosts.size()) > size) {
      BLKLAB_ASSIGN_OR_RETURN(std::string last, ParseResourceName(resp->hosts(size - 1).name(), "hosts"));
      resp->set_next_page_token("h1:" + last);
    }
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* HostServiceImpl::UpdateHost(grpc::CallbackServerContext* ctx,
                                                      const v1::UpdateHostRequest* req, v1::Host* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    absl::StatusOr<std::string> id = ParseResourceName(req->host().name(), "hosts");
    if (!id.ok()) return absl::InvalidArgumentError(absl::StrCat("host.", id.status().message()));
    BLKLAB_ASSIGN_OR_RETURN(v1::Host updated, store_->GetHost(*id));
    BLKLAB_RETURN_IF_ERROR(CheckEtag(req->host().name(), req->etag(), updated));
    BLKLAB_RETURN_IF_ERROR(ApplyUpdate(*req, &updated));
    BLKLAB_ASSIGN_OR_RETURN(host::HostSpec spec, HostSpecFromProto(updated.spec(), limits_->host, *id));
    BLKLAB_RETURN_IF_ERROR(HostSpecToProto(spec, updated.mutable_spec()));
    SetTimestamp(absl::Now(), updated.mutable_update_time());
    updated.set_etag(RandomHex(8));
    if (!req->validate_only()) BLKLAB_RETURN_IF_ERROR(store_->UpdateHost(updated));
    *resp = std::move(updated);
    return absl::OkStatus();
  });
}

grpc::ServerUnaryReactor* HostServiceImpl::DeleteHost(grpc::CallbackServerContext* ctx,
                                                      const v1::DeleteHostRequest* req, google::protobuf::Empty*) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    BLKLAB_ASSIGN_OR_RETURN(std::string id, ParseResourceName(req->name(), "hosts"));
    if (!req->etag().empty()) {
      BLKLAB_ASSIGN_OR_RETURN(v1::Host current, store_->GetHost(id));
      BLKLAB_RETURN_IF_ERROR(CheckEtag(req->name(), req->etag(), current));
    }
    return store_->DeleteHost(id);
  });
}

grpc::ServerUnaryReactor* HostServiceImpl::ListPresets(grpc::CallbackServerContext* ctx,
                                                       const v1::ListPresetsRequest*, v1::ListPresetsResponse* resp) {
  return gate_->Unary(ctx, [&]() -> absl::Status {
    for (const host::PresetInfo& info : host::ListPresets()) {
      v1::Preset* p = resp->add_presets();
      p->set_name(info.name);
      p->set_description(info.description);
      BLKLAB_ASSIGN_OR_RETURN(host::HostSpec spec, host::GetPreset(info.name));
      BLKLAB_RETURN_IF_ERROR(HostSpecToProto(spec, p->mutable_spec()));
      absl::StatusOr<absl::string_view> yaml = host::PresetYaml(info.name);
      if (yaml.ok()) p->set_spec_yaml(std::string(*yaml));
    }
    return absl::OkStatus();
  });
}

}  // namespace blklab::server
