// File: status_matchers.h
// Local gMock matchers for absl::Status / StatusOr (Debian's abseil 20220623
// ships none):
//
//   EXPECT_THAT(OpenSafetensors(p), IsOk());
//   EXPECT_THAT(st, StatusIs(absl::StatusCode::kNotFound, HasSubstr("fc.weight")));
//   ASSERT_OK_AND_ASSIGN(auto src, OpenSafetensors(p));
//   EXPECT_THAT(ReadInt(obj, "n", "n", &v), IsOkAndHolds(true));
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::testing {

// The code most bad-input tests expect.
inline constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

inline const absl::Status& GetStatus(const absl::Status& s) {
  return s;
}
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

MATCHER(IsOk, "is OK") {
  const absl::Status& s = GetStatus(arg);
  if (!s.ok()) *result_listener << "status: " << s.ToString();
  return s.ok();
}

MATCHER_P2(StatusIs, code, message_matcher, "has code " + absl::StatusCodeToString(code)) {
  const absl::Status& s = GetStatus(arg);
  *result_listener << "status: " << s.ToString();
  return s.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(s.message()), result_listener);
}

// An OK StatusOr whose value matches `value_matcher`.
MATCHER_P(IsOkAndHolds, value_matcher, "is OK and holds a matching value") {
  if (!arg.ok()) {
    *result_listener << "status: " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(value_matcher, *arg, result_listener);
}

}  // namespace dflash::testing

#define DFLASH_TEST_CONCAT_(a, b) a##b
#define DFLASH_TEST_CONCAT(a, b) DFLASH_TEST_CONCAT_(a, b)
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::dflash::testing::IsOk())
#define EXPECT_OK(expr) EXPECT_THAT((expr), ::dflash::testing::IsOk())
#define ASSERT_OK_AND_ASSIGN(lhs, expr)                                            \
  auto DFLASH_TEST_CONCAT(statusor_, __LINE__) = (expr);                           \
  ASSERT_THAT(DFLASH_TEST_CONCAT(statusor_, __LINE__), ::dflash::testing::IsOk()); \
  lhs = std::move(DFLASH_TEST_CONCAT(statusor_, __LINE__)).value()
