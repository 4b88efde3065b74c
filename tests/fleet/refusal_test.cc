// A fleet runner's "not on this server" (fleet/refusal.h): a refusal keeps
// its cause's code, message and payloads, is told apart from the same
// status unmarked, and survives being copied; an OK status cannot be one.
#include "fleet/refusal.h"

#include <string>

#include "absl/strings/cord.h"
#include "gtest/gtest.h"

namespace dflash::fleet {
namespace {

TEST(RefusalTest, KeepsTheCausesCodeAndMessage) {
  const absl::Status cause = absl::ResourceExhaustedError("needs 9 GB; 4 GB free");
  const absl::Status refused = Refusal(cause);
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(refused.message(), "needs 9 GB; 4 GB free");
  EXPECT_TRUE(IsRefusal(refused));
  EXPECT_FALSE(IsRefusal(cause));  // the cause itself is left unmarked
  // What a refused attempt records; the store's claim matches 'refused: %'.
  EXPECT_STREQ(kRefusedPrefix, "refused: ");
}

TEST(RefusalTest, TheSameStatusUnmarkedIsNoRefusal) {
  EXPECT_FALSE(IsRefusal(absl::ResourceExhaustedError("needs 9 GB; 4 GB free")));
  EXPECT_FALSE(IsRefusal(absl::OkStatus()));
  EXPECT_FALSE(IsRefusal(absl::CancelledError("refused: by hand")));  // words do not make one
}

TEST(RefusalTest, OtherPayloadsStayAndCopiesAreRefusals) {
  absl::Status cause = absl::NotFoundError("no target");
  cause.SetPayload("dflash/fix_hint", absl::Cord("load_target"));
  const absl::Status refused = Refusal(cause);
  ASSERT_TRUE(refused.GetPayload("dflash/fix_hint").has_value());
  EXPECT_EQ(std::string(*refused.GetPayload("dflash/fix_hint")), "load_target");
  const absl::Status copy = refused;  // NOLINT(performance-unnecessary-copy-initialization)
  EXPECT_TRUE(IsRefusal(copy));
  EXPECT_EQ(copy, refused);
  EXPECT_NE(copy, cause);  // the mark is part of the status
}

TEST(RefusalTest, AnOkStatusCannotBeMarked) {
  EXPECT_FALSE(IsRefusal(Refusal(absl::OkStatus())));
  EXPECT_TRUE(Refusal(absl::OkStatus()).ok());
}

}  // namespace
}  // namespace dflash::fleet
