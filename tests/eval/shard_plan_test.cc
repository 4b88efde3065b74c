// Where samples split: contiguous, covering, non-empty ranges.
#include "eval/shard_plan.h"

#include <vector>

#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

std::vector<std::pair<size_t, size_t>> Pairs(const std::vector<SampleRange>& r) {
  std::vector<std::pair<size_t, size_t>> out;
  for (const SampleRange& x : r) out.emplace_back(x.begin, x.end);
  return out;
}

using Ranges = std::vector<std::pair<size_t, size_t>>;

TEST(SplitEvenlyTest, EqualWeightsSplitEqually) {
  EXPECT_EQ(Pairs(SplitEvenly(std::vector<int64_t>(8, 10), 4)),
            (Ranges{{0, 2}, {2, 4}, {4, 6}, {6, 8}}));
}

TEST(SplitEvenlyTest, CutsByTokensNotBySamples) {
  // 100 tokens in the first sample, then ten of 10: two halves of 100.
  std::vector<int64_t> w = {100, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10};
  EXPECT_EQ(Pairs(SplitEvenly(w, 2)), (Ranges{{0, 1}, {1, 11}}));
}

TEST(SplitEvenlyTest, NeverEmptyAndNeverMoreThanSamples) {
  EXPECT_EQ(Pairs(SplitEvenly({5, 5, 5}, 8)), (Ranges{{0, 1}, {1, 2}, {2, 3}}));
  // A heavy last sample: the light ones fill the ranges before it, as far
  // as each leaves a sample for every range after it; it ends alone.
  EXPECT_EQ(Pairs(SplitEvenly({1, 1, 1, 1000}, 3)), (Ranges{{0, 2}, {2, 3}, {3, 4}}));
  EXPECT_EQ(Pairs(SplitEvenly({7}, 4)), (Ranges{{0, 1}}));
  EXPECT_TRUE(SplitEvenly({}, 4).empty());
  EXPECT_EQ(Pairs(SplitEvenly({1, 2, 3}, 0)), (Ranges{{0, 3}}));
}

TEST(SplitUnderCapTest, StaysUnderTheCap) {
  EXPECT_EQ(Pairs(SplitUnderCap({4, 4, 4, 4, 4}, 8)), (Ranges{{0, 2}, {2, 4}, {4, 5}}));
  EXPECT_EQ(Pairs(SplitUnderCap({4, 4, 4}, 100)), (Ranges{{0, 3}}));
}

TEST(SplitUnderCapTest, AHeavySampleIsARangeOfItsOwn) {
  EXPECT_EQ(Pairs(SplitUnderCap({2, 50, 2, 2}, 8)), (Ranges{{0, 1}, {1, 2}, {2, 4}}));
  EXPECT_TRUE(SplitUnderCap({}, 8).empty());
}

}  // namespace
}  // namespace dflash::eval
