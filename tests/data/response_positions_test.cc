// dataset.json's response positions for captures without a loss mask:
// "prompt_lengths" or "loss_mask": "all-positions", and their defects.
#include "data/dataset_manifest.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;

TEST(ResponsePositionsTest, PromptLengthsOrAllPositions) {
  ASSERT_OK_AND_ASSIGN(auto m, ParseManifest(R"({"prompt_lengths": [16, 12],
      "features": {"hidden_states": [1]}})",
                                             "m"));
  EXPECT_THAT(m.responses.prompt_lengths, ElementsAre(16, 12));
  EXPECT_FALSE(m.responses.all_positions);
  ASSERT_OK_AND_ASSIGN(m, ParseManifest(R"({"loss_mask": "all-positions",
      "features": {"hidden_states": [1]}})",
                                        "m"));
  EXPECT_TRUE(m.responses.all_positions);
  ASSERT_OK_AND_ASSIGN(m, ParseManifest(R"({"features": {"hidden_states": [1]}})", "m"));
  EXPECT_FALSE(m.responses.declared());
}

TEST(ResponsePositionsTest, Defects) {
  const auto invalid = [](const char* text, const char* message) {
    EXPECT_THAT(ParseManifest(text, "m"),
                StatusIs(absl::StatusCode::kInvalidArgument, Eq(std::string(message))))
        << text;
  };
  invalid(R"({"loss_mask": "none", "features": {"hidden_states": [1]}})",
          "manifest 'm': 'loss_mask' can only be \"all-positions\" (every position counts as a "
          "response); got \"none\"");
  invalid(R"({"loss_mask": "all-positions", "prompt_lengths": [1],
              "features": {"hidden_states": [1]}})",
          "manifest 'm': declares both 'prompt_lengths' and 'loss_mask'; keep one");
  invalid(R"({"prompt_lengths": [], "features": {"hidden_states": [1]}})",
          "manifest 'm': 'prompt_lengths' must be a non-empty list (one per sample index)");
  invalid(R"({"prompt_lengths": [3, -1], "features": {"hidden_states": [1]}})",
          "manifest 'm': 'prompt_lengths' holds -1; expected integers >= 0");
}

}  // namespace
}  // namespace dflash::data
