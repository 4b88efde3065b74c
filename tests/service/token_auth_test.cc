#include "service/token_auth.h"

#include <map>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kFull[] = "full-token-0123456789";
constexpr char kRead[] = "read-token-0123456789";

class TokenAuthTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto auth = TokenAuth::FromText(
        std::string("# comment\n\n  ") + kFull + "  \nro:" + kRead + "\n", "'tokens'");
    ASSERT_TRUE(auth.ok()) << auth.status();
    auth_ = *std::move(auth);
  }

  absl::Status Call(const std::string& header, const char* method) {
    std::multimap<grpc::string_ref, grpc::string_ref> md;
    if (!header.empty()) md.emplace("authorization", header);
    return auth_.Check(md, method);
  }

  TokenAuth auth_;
};

TEST_F(TokenAuthTest, CountsTokensOfBothKinds) {
  EXPECT_EQ(auth_.full_tokens(), 1u);
  EXPECT_EQ(auth_.read_only_tokens(), 1u);
}

TEST_F(TokenAuthTest, FullTokenCallsAnything) {
  EXPECT_OK(Call(std::string("Bearer ") + kFull, "LoadTarget"));
  EXPECT_OK(Call(std::string("bearer ") + kFull, "SubmitEval"));  // scheme is case-insensitive
  EXPECT_OK(Call(std::string("Bearer ") + kFull, "GetEval"));
}

TEST_F(TokenAuthTest, MissingOrWrongTokenIsUnauthenticated) {
  for (const std::string& header :
       {std::string(""), std::string("Bearer"), std::string("Bearer "),
        std::string("Basic ") + kFull, std::string(kFull), std::string("Bearer wrong"),
        std::string("Bearer ") + kFull + "x", std::string("Bearer ") + std::string(kFull, 20)}) {
    EXPECT_THAT(
        Call(header, "GetServerInfo"),
        StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("missing or invalid bearer token")))
        << "header '" << header << "'";
  }
}

TEST_F(TokenAuthTest, ReadOnlyTokenReadsButDoesNotChange) {
  const std::string ro = std::string("Bearer ") + kRead;
  for (const char* m : {"GetServerInfo", "ValidateCheckpoint", "ListResources", "GetEval",
                        "ListEvals", "WatchEval", "CompareEvals"}) {
    EXPECT_OK(Call(ro, m)) << m;
  }
  for (const char* m : {"LoadTarget", "LoadDrafter", "LoadDataset", "UnloadTarget", "UnloadDrafter",
                        "UnloadDataset", "RunEval", "SubmitEval", "CancelEval", "ResubmitEval"}) {
    EXPECT_THAT(Call(ro, m), StatusIs(absl::StatusCode::kPermissionDenied,
                                      HasSubstr(std::string("read-only token cannot call ") + m)));
  }
}

TEST(TokenAuthFileTest, RejectsEmptyShortAndUnprintableTokens) {
  EXPECT_THAT(TokenAuth::FromText("# only a comment\n\n", "'f'"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'f' has no tokens")));
  auto short_token = TokenAuth::FromText("ok-token-long-enough\nshort\n", "'f'");
  EXPECT_THAT(short_token, StatusIs(absl::StatusCode::kInvalidArgument,
                                    HasSubstr("token on line 2 of 'f' has 5 characters; "
                                              "expected at least 16")));
  // The message never repeats the token.
  EXPECT_THAT(short_token.status().message(), Not(HasSubstr("short")));
  EXPECT_THAT(TokenAuth::FromText("token with a space inside\n", "'f'"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("printable ASCII")));
  EXPECT_THAT(TokenAuth::FromFile("/nonexistent/tokens"),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("cannot read token file '/nonexistent/tokens'")));
}

TEST(ConstantTimeEqualsTest, ComparesWholeStrings) {
  EXPECT_TRUE(ConstantTimeEquals("abcdef", "abcdef"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdeg"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcde"));
  EXPECT_FALSE(ConstantTimeEquals("abcdef", "abcdefabcdef"));  // a repeated prefix
  EXPECT_FALSE(ConstantTimeEquals("", "x"));
  EXPECT_FALSE(ConstantTimeEquals("x", ""));
  EXPECT_TRUE(ConstantTimeEquals("", ""));
}

}  // namespace
}  // namespace dflash::service
