#include "server/status_convert.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"

namespace blklab::server {
namespace {

// Every canonical code, paired by its google.rpc.Code number.
const std::vector<std::pair<absl::StatusCode, grpc::StatusCode>>& AllCodes() {
  static const auto* const codes = new std::vector<std::pair<absl::StatusCode, grpc::StatusCode>>{
      {absl::StatusCode::kOk, grpc::StatusCode::OK},
      {absl::StatusCode::kCancelled, grpc::StatusCode::CANCELLED},
      {absl::StatusCode::kUnknown, grpc::StatusCode::UNKNOWN},
      {absl::StatusCode::kInvalidArgument, grpc::StatusCode::INVALID_ARGUMENT},
      {absl::StatusCode::kDeadlineExceeded, grpc::StatusCode::DEADLINE_EXCEEDED},
      {absl::StatusCode::kNotFound, grpc::StatusCode::NOT_FOUND},
      {absl::StatusCode::kAlreadyExists, grpc::StatusCode::ALREADY_EXISTS},
      {absl::StatusCode::kPermissionDenied, grpc::StatusCode::PERMISSION_DENIED},
      {absl::StatusCode::kResourceExhausted, grpc::StatusCode::RESOURCE_EXHAUSTED},
      {absl::StatusCode::kFailedPrecondition, grpc::StatusCode::FAILED_PRECONDITION},
      {absl::StatusCode::kAborted, grpc::StatusCode::ABORTED},
      {absl::StatusCode::kOutOfRange, grpc::StatusCode::OUT_OF_RANGE},
      {absl::StatusCode::kUnimplemented, grpc::StatusCode::UNIMPLEMENTED},
      {absl::StatusCode::kInternal, grpc::StatusCode::INTERNAL},
      {absl::StatusCode::kUnavailable, grpc::StatusCode::UNAVAILABLE},
      {absl::StatusCode::kDataLoss, grpc::StatusCode::DATA_LOSS},
      {absl::StatusCode::kUnauthenticated, grpc::StatusCode::UNAUTHENTICATED},
  };
  return *codes;
}

TEST(StatusConvertTest, TableCoversAllSeventeenCanonicalCodesWithMatchingNumbers) {
  ASSERT_EQ(AllCodes().size(), 17u);
  for (size_t i = 0; i < AllCodes().size(); ++i) {
    EXPECT_EQ(static_cast<int>(AllCodes()[i].first), static_cast<int>(i));
    EXPECT_EQ(static_cast<int>(AllCodes()[i].second), static_cast<int>(i));
  }
}

TEST(StatusConvertTest, CodesMapBothWays) {
  for (const auto& [absl_code, grpc_code] : AllCodes()) {
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    EXPECT_EQ(ToGrpcCode(absl_code), grpc_code);
    EXPECT_EQ(ToAbslCode(grpc_code), absl_code);
  }
}

TEST(StatusConvertTest, AbslToGrpcKeepsCodeAndMessage) {
  for (const auto& [absl_code, grpc_code] : AllCodes()) {
    if (absl_code == absl::StatusCode::kOk) continue;
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    const std::string message = "devices[1].null_blk.irqmode: must be 0, 1 or 2, got 3";
    const grpc::Status converted = ToGrpcStatus(absl::Status(absl_code, message));
    EXPECT_FALSE(converted.ok());
    EXPECT_EQ(converted.error_code(), grpc_code);
    EXPECT_EQ(converted.error_message(), message);
  }
}

TEST(StatusConvertTest, GrpcToAbslKeepsCodeAndMessage) {
  for (const auto& [absl_code, grpc_code] : AllCodes()) {
    if (grpc_code == grpc::StatusCode::OK) continue;
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    const std::string message = "randread.fio:3: unknown option 'iodeptth'";
    const absl::Status converted = ToAbslStatus(grpc::Status(grpc_code, message));
    EXPECT_FALSE(converted.ok());
    EXPECT_EQ(converted.code(), absl_code);
    EXPECT_EQ(converted.message(), message);
  }
}

TEST(StatusConvertTest, RoundTripsAreIdentity) {
  for (const auto& [absl_code, grpc_code] : AllCodes()) {
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    const std::string message = absl_code == absl::StatusCode::kOk ? "" : "msg";
    const absl::Status original(absl_code, message);
    EXPECT_EQ(ToAbslStatus(ToGrpcStatus(original)), original);

    const grpc::Status wire(grpc_code, message);
    const grpc::Status back = ToGrpcStatus(ToAbslStatus(wire));
    EXPECT_EQ(back.error_code(), wire.error_code());
    EXPECT_EQ(back.error_message(), wire.error_message());
  }
}

TEST(StatusConvertTest, OkStatusesConvertToOk) {
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
  EXPECT_TRUE(ToAbslStatus(grpc::Status::OK).ok());
  // absl has no message on OK; a message on an OK grpc::Status is dropped.
  const absl::Status from_wire = ToAbslStatus(grpc::Status(grpc::StatusCode::OK, "ignored"));
  EXPECT_TRUE(from_wire.ok());
  EXPECT_EQ(from_wire.message(), "");
}

TEST(StatusConvertTest, MessagesAreKeptByteForByte) {
  // Empty, embedded NUL, non-ASCII UTF-8 and a 2 KiB message all survive.
  const std::vector<std::string> messages = {
      "", std::string("a\0b", 3), "p\xc3\xa4th: \xe2\x9c\x97", std::string(2048, 'x')};
  for (const std::string& message : messages) {
    const grpc::Status g = ToGrpcStatus(absl::InvalidArgumentError(message));
    EXPECT_EQ(g.error_message(), message);
    const absl::Status a = ToAbslStatus(grpc::Status(grpc::StatusCode::INTERNAL, message));
    EXPECT_EQ(a.message(), message);
  }
}

TEST(StatusConvertTest, LongMessagesAreCutTowardsTheWire) {
  const std::string huge(100000, 'n');
  const grpc::Status g = ToGrpcStatus(absl::InvalidArgumentError("name: too long: " + huge));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_LE(g.error_message().size(), 2048u);
  EXPECT_EQ(g.error_message().rfind("name: too long: nnn", 0), 0u);
  EXPECT_NE(g.error_message().find("(message of 100016 bytes cut)"), std::string::npos);
}

TEST(StatusConvertTest, NonCanonicalCodesBecomeUnknown) {
  EXPECT_EQ(ToGrpcCode(static_cast<absl::StatusCode>(42)), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(ToAbslCode(grpc::StatusCode::DO_NOT_USE), absl::StatusCode::kUnknown);
  EXPECT_EQ(ToAbslCode(static_cast<grpc::StatusCode>(99)), absl::StatusCode::kUnknown);

  const absl::Status a = ToAbslStatus(grpc::Status(grpc::StatusCode::DO_NOT_USE, "odd"));
  EXPECT_EQ(a.code(), absl::StatusCode::kUnknown);
  EXPECT_EQ(a.message(), "odd");
  const grpc::Status g = ToGrpcStatus(absl::Status(static_cast<absl::StatusCode>(42), "odd"));
  EXPECT_EQ(g.error_code(), grpc::StatusCode::UNKNOWN);
  EXPECT_EQ(g.error_message(), "odd");
}

}  // namespace
}  // namespace blklab::server
