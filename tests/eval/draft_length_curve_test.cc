// The greedy draft-length curve from anchor mode's histogram of leading
// matches (docs/decision-metrics.md §3), computed by hand.
#include "eval/draft_length_curve.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;

TEST(DraftLengthCurveTest, DraftLengthCurveFromTheHistogram) {
  // B = 4: n = 0, 1, 2, 3 in 2, 1, 0, 1 blocks (pooled accept length (2+2+4)/4 = 2).
  // k = 1: (2*1 + 1*2 + 0 + 1*2) / 4 = 1.5; k = 2: (2 + 2 + 3) / 4 = 1.75; k = 3: 2.
  EXPECT_THAT(DraftLengthCurve({2, 1, 0, 1}), ElementsAre(1.5, 1.75, 2.0));
  EXPECT_TRUE(DraftLengthCurve({0, 0, 0}).empty());
}

TEST(DraftLengthCurveTest, NoPositionsGiveNoCurve) {
  // B = 1: only n = 0 exists, there is no k to propose.
  EXPECT_TRUE(DraftLengthCurve({5}).empty());
  EXPECT_TRUE(DraftLengthCurve({}).empty());
}

TEST(DraftLengthCurveTest, AllBlocksFullyAcceptedGrowByOne) {
  // B = 4, every block matches 3: k + 1 at each k.
  EXPECT_THAT(DraftLengthCurve({0, 0, 0, 2}), ElementsAre(2.0, 3.0, 4.0));
}

}  // namespace
}  // namespace dflash::eval
