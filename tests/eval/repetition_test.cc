// LoopMask by hand: which response tokens lie in a repeating loop
// (eval/repetition.h; docs/slices.md).
#include "eval/repetition.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

int Marked(const std::vector<uint8_t>& m) {
  int n = 0;
  for (uint8_t v : m) n += v;
  return n;
}

// `prompt` distinct tokens, then `body` as the response.
std::vector<int64_t> Sequence(int prompt, const std::vector<int64_t>& body) {
  std::vector<int64_t> t;
  for (int i = 0; i < prompt; ++i) t.push_back(1000 + i);
  t.insert(t.end(), body.begin(), body.end());
  return t;
}

std::vector<int64_t> Repeat(const std::vector<int64_t>& unit, int times) {
  std::vector<int64_t> out;
  for (int k = 0; k < times; ++k) out.insert(out.end(), unit.begin(), unit.end());
  return out;
}

TEST(LoopMaskTest, DistinctTokensHaveNoLoop) {
  std::vector<int64_t> body;
  for (int i = 0; i < 40; ++i) body.push_back(i);
  EXPECT_EQ(Marked(LoopMask(Sequence(5, body), 5)), 0);
}

TEST(LoopMaskTest, SixteenEqualTokensAreALoopFifteenAreNot) {
  // Period 1: a run of 15 matches spans 16 tokens (the minimum length).
  std::vector<int64_t> body = {1, 2, 3};
  for (int i = 0; i < 16; ++i) body.push_back(7);
  body.push_back(9);
  const std::vector<uint8_t> m = LoopMask(Sequence(4, body), 4);
  EXPECT_EQ(Marked(m), 16);
  EXPECT_EQ(m[4 + 3], 1);        // the first 7
  EXPECT_EQ(m[4 + 3 + 15], 1);   // the last 7
  EXPECT_EQ(m[4 + 2], 0);        // 3 before it
  EXPECT_EQ(m[4 + 3 + 16], 0);   // 9 after it
  body.erase(body.begin() + 3);  // fifteen 7s
  EXPECT_EQ(Marked(LoopMask(Sequence(4, body), 4)), 0);
}

TEST(LoopMaskTest, APhraseRepeatedThreeTimesOverSixteenTokens) {
  // Period 6, three repeats = 18 tokens: a loop. Two repeats (12) are not:
  // fewer than three periods and fewer than 16 tokens.
  const std::vector<int64_t> unit = {11, 12, 13, 14, 15, 16};
  std::vector<int64_t> body = Repeat(unit, 3);
  body.push_back(99);
  EXPECT_EQ(Marked(LoopMask(Sequence(2, body), 2)), 18);
  EXPECT_EQ(Marked(LoopMask(Sequence(2, Repeat(unit, 2)), 2)), 0);
  // Period 10, 20 tokens: two periods only, not a loop although >= 16 tokens.
  std::vector<int64_t> ten;
  for (int i = 0; i < 10; ++i) ten.push_back(50 + i);
  EXPECT_EQ(Marked(LoopMask(Sequence(2, Repeat(ten, 2)), 2)), 0);
  EXPECT_EQ(Marked(LoopMask(Sequence(2, Repeat(ten, 3)), 2)), 30);
}

TEST(LoopMaskTest, ThePromptIsNeverMarked) {
  // The same 20 tokens, first in the prompt, then in the response.
  std::vector<int64_t> t(20, 5);
  t.insert(t.end(), 20, 5);
  const std::vector<uint8_t> m = LoopMask(t, 20);
  EXPECT_EQ(Marked(m), 20);
  EXPECT_EQ(m[19], 0);
  EXPECT_EQ(m[20], 1);
  EXPECT_EQ(Marked(LoopMask(t, -1)), 0);  // no response
  EXPECT_EQ(Marked(LoopMask(t, 40)), 0);
}

TEST(LoopMaskTest, PeriodsAboveTheLimitAreNotLoops) {
  std::vector<int64_t> unit;
  for (int i = 0; i < kMaxLoopPeriod + 1; ++i) unit.push_back(200 + i);
  EXPECT_EQ(Marked(LoopMask(Sequence(1, Repeat(unit, 4)), 1)), 0);
  unit.pop_back();
  EXPECT_EQ(Marked(LoopMask(Sequence(1, Repeat(unit, 3)), 1)), 3 * kMaxLoopPeriod);
}

}  // namespace
}  // namespace dflash::eval
