// service/status_convert: every absl code becomes the gRPC code of the same
// number with the message unchanged; long messages are cut on a UTF-8
// character boundary and say how much was cut.
#include "service/status_convert.h"

#include <string>

#include "common/fix_hint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::service {
namespace {

class StatusConvertTest : public ::testing::Test {};

TEST_F(StatusConvertTest, OkIsOk) {
  const grpc::Status s = ToGrpcStatus(absl::OkStatus());
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.error_message(), "");
}

// The core describes the problem and marks how to fix it; the service words
// the fix with the client's and server's own flag names.
TEST_F(StatusConvertTest, FixHintsAreWordedWithFlagNames) {
  const std::pair<FixHint, std::string> hints[] = {
      {FixHint::kLoadTarget, "no target is loaded (dflash-eval load-target PATH)"},
      {FixHint::kNameDrafter, "no target is loaded with --drafter"},
      {FixHint::kChooseName, "no target is loaded (--name)"},
      {FixHint::kResidentBudget, "no target is loaded (server flag --max-resident-bytes)"},
      {FixHint::kEvalBlockLimit, "no target is loaded (server flag --max-eval-blocks)"},
  };
  for (const auto& [hint, want] : hints) {
    const grpc::Status s =
        ToGrpcStatus(WithFixHint(absl::FailedPreconditionError("no target is loaded"), hint));
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), want);
  }
  // No hint, no suffix; a malformed payload is ignored.
  absl::Status odd = absl::InternalError("boom");
  odd.SetPayload(kFixHintPayloadUrl, absl::Cord("x9"));
  EXPECT_EQ(ToGrpcStatus(odd).error_message(), "boom");
}

TEST_F(StatusConvertTest, EveryCodeKeepsItsNumberAndMessage) {
  const std::pair<absl::StatusCode, grpc::StatusCode> pairs[] = {
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
  for (const auto& [absl_code, grpc_code] : pairs) {
    SCOPED_TRACE(absl::StatusCodeToString(absl_code));
    const grpc::Status s = ToGrpcStatus(absl::Status(absl_code, "drafter 'm' is in use"));
    EXPECT_EQ(s.error_code(), grpc_code);
    EXPECT_EQ(s.error_message(), "drafter 'm' is in use");
    EXPECT_EQ(s.error_details(), "");
  }
}

TEST_F(StatusConvertTest, MessagesUpToTheLimitPassUnchanged) {
  const std::string exact(kMaxStatusMessageBytes, 'a');
  EXPECT_EQ(BoundedMessage(exact), exact);
  EXPECT_EQ(BoundedMessage(""), "");
  EXPECT_EQ(ToGrpcStatus(absl::InternalError(exact)).error_message(), exact);
}

TEST_F(StatusConvertTest, LongMessagesAreCutAndSaySo) {
  const std::string msg(kMaxStatusMessageBytes + 10, 'a');
  EXPECT_EQ(BoundedMessage(msg), std::string(kMaxStatusMessageBytes, 'a') + "... (10 more bytes)");
  EXPECT_EQ(ToGrpcStatus(absl::InvalidArgumentError(msg)).error_message(),
            std::string(kMaxStatusMessageBytes, 'a') + "... (10 more bytes)");
}

TEST_F(StatusConvertTest, NeverCutsHalfACharacter) {
  // "é" is two bytes (C3 A9); put one across the limit.
  std::string msg(kMaxStatusMessageBytes - 1, 'a');
  msg += "\xC3\xA9";
  msg += std::string(5, 'b');
  const std::string cut = BoundedMessage(msg);
  EXPECT_EQ(cut, std::string(kMaxStatusMessageBytes - 1, 'a') + "... (7 more bytes)");
  // A three-byte character ("€", E2 82 AC) starting one byte before the limit.
  std::string euro(kMaxStatusMessageBytes - 1, 'a');
  euro += "\xE2\x82\xAC";
  EXPECT_EQ(BoundedMessage(euro),
            std::string(kMaxStatusMessageBytes - 1, 'a') + "... (3 more bytes)");
  // A character ending exactly at the limit stays whole.
  std::string whole(kMaxStatusMessageBytes - 2, 'a');
  whole += "\xC3\xA9";
  whole += "zz";
  EXPECT_EQ(BoundedMessage(whole), whole.substr(0, kMaxStatusMessageBytes) + "... (2 more bytes)");
}

}  // namespace
}  // namespace dflash::service
