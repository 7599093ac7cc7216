#include "clients/cli/remote_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>

#include <grpcpp/impl/codegen/client_unary_call.h>
#include <grpcpp/impl/codegen/rpc_method.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/util/json_util.h"
#include "engine/util/file.h"

namespace blklab::cli {

namespace {

// More than any bundle of root certificates (the system's is about 200 KiB).
constexpr off_t kMaxCaFileBytes = 16 << 20;

// The PEM roots of --tls_ca_file, read and checked before anything connects:
// gRPC takes any bytes and only fails each call's handshake later, with a
// message that names neither the flag nor the file. An unreadable file is
// the OS's error; a file without a complete CERTIFICATE block, or with one
// whose body is not base64 of a DER certificate, is "not a PEM certificate".
absl::StatusOr<std::string> ReadCaFile(const std::string& path) {
  const std::string what = "--tls_ca_file " + path + ": ";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return absl::InvalidArgumentError(what + std::strerror(errno));
  std::string text;
  struct stat st;
  int err = 0;
  if (fstat(fd, &st) != 0) {
    err = errno;
  } else if (S_ISDIR(st.st_mode)) {
    err = EISDIR;
  } else if (S_ISREG(st.st_mode) && st.st_size > kMaxCaFileBytes) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrCat(what, st.st_size, " bytes: not a PEM certificate bundle (at most ",
                                                   kMaxCaFileBytes, ")"));
  } else {
    char buf[65536];
    while (true) {
      const ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) err = errno;
      if (n <= 0) break;
      text.append(buf, static_cast<size_t>(n));
      if (text.size() > static_cast<size_t>(kMaxCaFileBytes)) {
        close(fd);
        return absl::InvalidArgumentError(what + "not a PEM certificate bundle (more than 16 MiB)");
      }
    }
  }
  close(fd);
  if (err != 0) return absl::InvalidArgumentError(what + std::strerror(err));
  static constexpr absl::string_view kBegin = "-----BEGIN CERTIFICATE-----";
  static constexpr absl::string_view kEnd = "-----END CERTIFICATE-----";
  const absl::string_view view(text);
  int blocks = 0;
  for (size_t at = view.find(kBegin); at != absl::string_view::npos; at = view.find(kBegin, at)) {
    const size_t body = at + kBegin.size();
    const size_t end = view.find(kEnd, body);
    if (end == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, "not a PEM certificate (certificate ", blocks + 1,
                                                     " has no '", kEnd, "' line)"));
    }
    std::string b64;
    for (char ch : view.substr(body, end - body)) {
      if (!absl::ascii_isspace(static_cast<unsigned char>(ch))) b64.push_back(ch);
    }
    std::string der;
    if (b64.empty() || !absl::Base64Unescape(b64, &der) || der.empty() || static_cast<unsigned char>(der[0]) != 0x30) {
      return absl::InvalidArgumentError(absl::StrCat(what, "not a PEM certificate (certificate ", blocks + 1,
                                                     " is not base64 of a DER certificate)"));
    }
    ++blocks;
    at = end + kEnd.size();
  }
  if (blocks == 0) {
    return absl::InvalidArgumentError(absl::StrCat(what, "not a PEM certificate (no '", kBegin, "' block)"));
  }
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteClient>> RemoteClient::Create(const RemoteOptions& options) {
  std::unique_ptr<RemoteClient> c(new RemoteClient());
  c->address_ = options.server;
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> t = util::ReadFileToString(options.token_file);
    if (!t.ok()) return absl::InvalidArgumentError("--token_file: " + std::string(t.status().message()));
    c->token_ = std::string(absl::StripAsciiWhitespace(t->substr(0, t->find('\n'))));
    if (c->token_.empty()) return absl::InvalidArgumentError("--token_file: the token is empty");
  } else {
    c->token_ = std::string(absl::StripAsciiWhitespace(options.token));
  }
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (!options.tls_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadCaFile(options.tls_ca_file);
    if (!ca.ok()) return ca.status();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;
    creds = grpc::SslCredentials(ssl);
  } else {
    creds = grpc::InsecureChannelCredentials();
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // results carry fio's texts (logs come in chunks)
  c->channel_ = grpc::CreateCustomChannel(options.server, creds, args);
  c->hosts_ = v1::HostService::NewStub(c->channel_);
  c->jobs_ = v1::JobService::NewStub(c->channel_);
  return c;
}

std::unique_ptr<grpc::ClientContext> RemoteClient::NewContext(int deadline_seconds) const {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!token_.empty()) ctx->AddMetadata("authorization", "Bearer " + token_);
  if (deadline_seconds > 0) {
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(deadline_seconds));
  }
  return ctx;
}

absl::StatusOr<int> RemoteClient::HealthCheck(const std::string& service) {
  // grpc.health.v1 is not part of grpc++'s public client API: encode the
  // two one-field messages by hand (HealthCheckRequest{string service = 1},
  // HealthCheckResponse{ServingStatus status = 1}).
  std::string req;
  if (!service.empty()) {
    req.push_back(0x0a);
    req.push_back(static_cast<char>(service.size()));  // names < 128 bytes
    req += service;
  }
  grpc::Slice slice(req);
  grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer response;
  std::unique_ptr<grpc::ClientContext> ctx = NewContext(10);
  const grpc::internal::RpcMethod method("/grpc.health.v1.Health/Check", grpc::internal::RpcMethod::NORMAL_RPC);
  grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(
      channel_.get(), method, ctx.get(), request, &response);
  if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
  std::vector<grpc::Slice> slices;
  if (!response.Dump(&slices).ok()) return absl::InternalError("bad health response");
  std::string bytes;
  for (const grpc::Slice& sl : slices) bytes.append(reinterpret_cast<const char*>(sl.begin()), sl.size());
  if (bytes.size() >= 2 && bytes[0] == 0x08) return static_cast<int>(bytes[1]);
  return 0;  // UNKNOWN
}

std::string StatusCodeName(int code) {
  static const char* const kNames[] = {
      "OK",        "CANCELLED",          "UNKNOWN",        "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
      "NOT_FOUND", "ALREADY_EXISTS",     "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
      "FAILED_PRECONDITION", "ABORTED",  "OUT_OF_RANGE",   "UNIMPLEMENTED",    "INTERNAL",
      "UNAVAILABLE", "DATA_LOSS",        "UNAUTHENTICATED"};
  if (code >= 0 && code <= 16) return kNames[code];
  return absl::StrCat("CODE_", code);
}

int ReportStatus(const std::string& prefix, const grpc::Status& status) {
  if (status.ok()) return 0;
  std::cerr << prefix << ": " << StatusCodeName(status.error_code()) << ": " << status.error_message() << "\n";
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    std::cerr << prefix << ": hint: is blklabd running at the --server address (or BLKLAB_SERVER)? "
                           "Start one with `blklabd --listen=HOST:PORT`, or drop --server to run in-process.\n";
  } else if (status.error_code() == grpc::StatusCode::UNAUTHENTICATED) {
    std::cerr << prefix << ": hint: this server wants a token: --token_file=FILE or BLKLAB_TOKEN.\n";
  }
  return static_cast<int>(status.error_code());
}

std::string ToJson(const google::protobuf::Message& message, bool indent) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = indent;
  options.preserve_proto_field_names = true;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return absl::StrCat("{\"error\": \"", status.ToString(), "\"}\n");
  if (out.empty() || out.back() != '\n') out += '\n';
  return out;
}

std::string ResourceName(const std::string& collection, const std::string& id_or_name) {
  if (absl::StartsWith(id_or_name, collection + "/")) return id_or_name;
  return collection + "/" + id_or_name;
}

std::string ResourceId(const std::string& collection, const std::string& id_or_name) {
  return std::string(absl::StripPrefix(id_or_name, collection + "/"));
}

}  // namespace blklab::cli
