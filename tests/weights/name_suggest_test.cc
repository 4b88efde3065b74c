#include "weights/name_suggest.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::weights {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(NearestNamesTest, LongestSharedDotSuffixComesFirst) {
  std::vector<std::string> present = {
      "model.layers.0.mlp.up_proj.bias",
      "model.layers.1.mlp.up_proj.weight",
      "layers.0.mlp.up_proj.weight",
  };
  // Shared suffix parts: 0, 3, 5; edit distance alone would put layers.1 first.
  EXPECT_THAT(NearestNames("model.layers.0.mlp.up_proj.weight", present),
              ElementsAre("layers.0.mlp.up_proj.weight", "model.layers.1.mlp.up_proj.weight",
                          "model.layers.0.mlp.up_proj.bias"));
}

TEST(NearestNamesTest, EditDistanceBreaksSuffixTies) {
  std::vector<std::string> present = {"fc.bias", "xx.weight", "fc.weight"};
  // No shared suffix ("wieght"); distances 2 (fc.weight) < 4 (xx.weight) < fc.bias.
  EXPECT_THAT(NearestNames("fc.wieght", present), ElementsAre("fc.weight", "xx.weight", "fc.bias"));
}

TEST(NearestNamesTest, NameBreaksFullTies) {
  EXPECT_THAT(NearestNames("c", {"b", "a", "d"}, 2), ElementsAre("a", "b"));
}

TEST(NearestNamesTest, RespectsLimit) {
  std::vector<std::string> present = {"a.w", "b.w", "c.w", "d.w", "e.w"};
  EXPECT_EQ(NearestNames("x.w", present).size(), 3u);  // default limit
  EXPECT_EQ(NearestNames("x.w", present, 5).size(), 5u);
  EXPECT_EQ(NearestNames("x.w", present, 10).size(), 5u);
  EXPECT_THAT(NearestNames("x.w", present, 0), IsEmpty());
}

TEST(NearestNamesTest, EmptyPresentGivesNothing) {
  EXPECT_THAT(NearestNames("fc.weight", {}), IsEmpty());
}

TEST(NearestNamesTest, ExactNameIsFirst) {
  EXPECT_THAT(NearestNames("norm.weight", {"fc.weight", "norm.weight"}, 1),
              ElementsAre("norm.weight"));
}

TEST(QuoteListTest, QuotesAndJoins) {
  EXPECT_EQ(QuoteList({"a", "b.c"}), "'a', 'b.c'");
  EXPECT_EQ(QuoteList({"only"}), "'only'");
}

TEST(QuoteListTest, EmptyIsNone) {
  EXPECT_EQ(QuoteList({}), "(none)");
}

}  // namespace
}  // namespace dflash::weights
