// Hand-computed cases of docs/decision-metrics.md §2-§3: expected accept
// length, the accumulator's pooled and per-sample means, shard merges and
// setting checks (the processed distributions: sampling_distributions_test).
#include "eval/sampled_acceptance.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

class SampledAcceptanceTest : public ::testing::Test {};

TEST_F(SampledAcceptanceTest, ExpectedAcceptLengthOfABlock) {
  // alpha = (0.5, 0.5, 1): 1 + 0.5 + 0.25 + 0.25 = 2.
  EXPECT_DOUBLE_EQ(ExpectedAcceptLength({0.5f, 0.5f, 1.0f}), 2.0);
  EXPECT_DOUBLE_EQ(ExpectedAcceptLength({}), 1.0);
  // Greedy alphas are 0/1: 1 + leading ones.
  EXPECT_DOUBLE_EQ(ExpectedAcceptLength({1, 1, 0, 1}), 3.0);
  // B = 5 (4 positions), a truncated block with 3: k = 1..4 -> 1.5, 1.75, 2, 2.
  EXPECT_THAT(ExpectedAcceptByDraftLength({0.5f, 0.5f, 1.0f}, 5), ElementsAre(1.5, 1.75, 2.0, 2.0));
}

TEST_F(SampledAcceptanceTest, AccumulatorPoolsBlocksAndAveragesSamples) {
  // Two settings; sample 7 has blocks (0.5, 0.5) and (1, 0), sample 9 has (0).
  SampledAccumulator acc({{0.6, 0.95, 20}, {1.0, 1.0, 0}}, 3);
  acc.Add(7, {{0.5f, 0.5f}, {1, 1}});
  acc.Add(7, {{1, 0}, {1, 1}});
  acc.Add(9, {{0}, {0}});
  const std::vector<types::SampledAcceptance> r = acc.Finish();
  ASSERT_EQ(r.size(), 2u);
  // Setting 0: E = 1.75, 2, 1; pooled (1.75 + 2 + 1) / 3; tau (1.875 + 1) / 2.
  EXPECT_DOUBLE_EQ(r[0].expected_accept_length_pooled, 4.75 / 3);
  EXPECT_DOUBLE_EQ(r[0].expected_tau, 2.875 / 2);
  EXPECT_THAT(r[0].counted, ElementsAre(3, 2));
  EXPECT_THAT(r[0].mean_alpha, ElementsAre(DoubleEq(0.5), DoubleEq(0.25)));
  // Curve k = 1: (1.5 + 2 + 1) / 3; k = 2: the pooled value.
  EXPECT_THAT(r[0].draft_length_curve, ElementsAre(DoubleEq(1.5), DoubleEq(4.75 / 3)));
  EXPECT_EQ(r[1].setting.temperature, 1.0);
  EXPECT_DOUBLE_EQ(r[1].expected_accept_length_pooled, 7.0 / 3);  // 3, 3, 1
}

TEST_F(SampledAcceptanceTest, ShardsMergedInOrderEqualOnePass) {
  SampledAccumulator one({{0.6, 0.95, 20}}, 3), a({{0.6, 0.95, 20}}, 3), b({{0.6, 0.95, 20}}, 3);
  for (SampledAccumulator* acc : {&one, &a}) {
    acc->Add(7, {{0.5f, 0.5f}});
    acc->Add(7, {{1, 0}});
  }
  for (SampledAccumulator* acc : {&one, &b}) acc->Add(9, {{0.25f}});
  ASSERT_TRUE(a.Merge(b).ok());
  const types::SampledAcceptance x = one.Finish(200, 5)[0], y = a.Finish(200, 5)[0];
  EXPECT_EQ(x.counted, y.counted);
  EXPECT_DOUBLE_EQ(x.expected_accept_length_pooled, y.expected_accept_length_pooled);
  EXPECT_DOUBLE_EQ(x.expected_tau, y.expected_tau);
  ASSERT_TRUE(x.accept_length_ci.has_value() && y.accept_length_ci.has_value());
  EXPECT_EQ(x.accept_length_ci->lo, y.accept_length_ci->lo);  // same samples, same seed
  EXPECT_EQ(x.accept_length_ci->hi, y.accept_length_ci->hi);
  EXPECT_EQ(a.Merge(b).ToString(), "INVALID_ARGUMENT: sample 9 is in two shards");
  SampledAccumulator other({{0.6, 0.95, 20}, {1, 1, 0}}, 3);
  EXPECT_EQ(a.Merge(other).ToString(),
            "INVALID_ARGUMENT: shard has 2 sampling setting(s) at block size 3; expected 1 at 3");
}

TEST_F(SampledAcceptanceTest, PooledIntervalIsThePercentilesOfTheResamples) {
  // Sample 7 holds E = 1.75 + 2 over 2 blocks, sample 9 E = 1 over 1. A
  // resample is {7,7} (1.875), {7,9} (4.75/3) or {9,9} (1), each end drawn
  // about 250 times in 1000: the 2.5th and 97.5th percentiles are the ends
  // (the percentiles were once asked for as 2.5 and 97.5, past the end).
  SampledAccumulator acc({{0.6, 0.95, 20}}, 3);
  acc.Add(7, {{0.5f, 0.5f}});
  acc.Add(7, {{1, 0}});
  acc.Add(9, {{0}});
  const std::vector<types::SampledAcceptance> r = acc.Finish(1000, 0);
  ASSERT_EQ(r.size(), 1u);
  ASSERT_TRUE(r[0].accept_length_ci.has_value());
  EXPECT_DOUBLE_EQ(r[0].accept_length_ci->lo, 1.0);
  EXPECT_DOUBLE_EQ(r[0].accept_length_ci->hi, 1.875);
}

TEST_F(SampledAcceptanceTest, BadSettingsAreNamed) {
  EXPECT_THAT(
      CheckSamplingSetting({-1, 1, 0}),
      ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                  "sampling 't=-1': temperature must be >= 0 (0 = greedy)"));
  EXPECT_THAT(
      CheckSamplingSetting({0.6, 1.5, 0}),
      ::dflash::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                  "sampling 't=0.6,p=1.5': top_p must be in (0, 1] (1 = off)"));
  EXPECT_TRUE(CheckSamplingSetting({0.6, 0.95, 20}).ok());
}

}  // namespace
}  // namespace dflash::eval
