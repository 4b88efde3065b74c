// One evaluation's progress summed over its parts; a refusal stops them all.
#include "eval/part_progress.h"

#include <vector>

#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

types::EvalProgress P(int64_t done, int64_t total, int64_t sdone, int64_t stotal) {
  types::EvalProgress p;
  p.blocks_done = done;
  p.blocks_total = total;
  p.samples_done = sdone;
  p.samples_total = stotal;
  return p;
}

TEST(PartProgressTest, TheCallerSeesTheSum) {
  std::vector<types::EvalProgress> seen;
  PartProgress agg({P(0, 10, 0, 2), P(0, 30, 0, 3)}, [&](const types::EvalProgress& p) {
    seen.push_back(p);
    return true;
  });
  ASSERT_TRUE(agg.Start());
  ASSERT_TRUE(agg.For(1)(P(5, 30, 1, 3)));
  ASSERT_TRUE(agg.For(0)(P(10, 10, 2, 2)));
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].blocks_total, 40);
  EXPECT_EQ(seen[0].samples_total, 5);
  EXPECT_EQ(seen[1].blocks_done, 5);
  EXPECT_EQ(seen[2].blocks_done, 15);
  EXPECT_EQ(seen[2].samples_done, 3);
  EXPECT_FALSE(agg.cancelled());
}

TEST(PartProgressTest, ARefusalStopsEveryPart) {
  PartProgress agg({P(0, 10, 0, 1), P(0, 10, 0, 1)},
                   [](const types::EvalProgress& p) { return p.blocks_total <= 15; });
  EXPECT_FALSE(agg.Start());  // 20 blocks: refused before any work
  EXPECT_TRUE(agg.refused());
  EXPECT_FALSE(agg.For(0)(P(1, 10, 0, 1)));
  EXPECT_FALSE(agg.For(1)(P(1, 10, 0, 1)));
}

TEST(PartProgressTest, CancelIsNotARefusal) {
  PartProgress agg({P(0, 1, 0, 1)}, nullptr);
  EXPECT_TRUE(agg.For(0)(P(1, 1, 1, 1)));
  agg.Cancel();
  EXPECT_FALSE(agg.For(0)(P(1, 1, 1, 1)));
  EXPECT_TRUE(agg.cancelled());
  EXPECT_FALSE(agg.refused());
}

}  // namespace
}  // namespace dflash::eval
