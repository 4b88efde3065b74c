// Hand-computed cases of docs/decision-metrics.md §2-§3: processed
// distributions, alpha, expected accept length, the accumulator's pooled and
// per-sample means, and the draft-length curve.
#include "eval/sampled_acceptance.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "eval/draft_length_curve.h"
#include "eval/sampling_distributions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::testing::DoubleEq;
using ::testing::ElementsAre;

class SampledAcceptanceTest : public ::testing::Test {
 protected:
  // logits log(4), log(2), log(1), log(1): probabilities 1/2, 1/4, 1/8, 1/8 at T = 1.
  static at::Tensor Logits() { return at::log(at::tensor({4.0f, 2.0f, 1.0f, 1.0f})).unsqueeze(0); }
  static std::vector<float> Row(const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
};

TEST_F(SampledAcceptanceTest, ProcessingFollowsTemperatureTopKTopP) {
  using ::testing::FloatNear;
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 1.0, 0})),
              ElementsAre(FloatNear(0.5, 1e-6), FloatNear(0.25, 1e-6), FloatNear(0.125, 1e-6),
                          FloatNear(0.125, 1e-6)));
  // top-k 2 keeps 1/2 and 1/4, renormalised: 2/3, 1/3.
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 1.0, 2})),
              ElementsAre(FloatNear(2.0 / 3, 1e-6), FloatNear(1.0 / 3, 1e-6), 0, 0));
  // top-p 0.7: mass above 1/4 is 1/2 < 0.7 (kept); above 1/8 is 3/4 (dropped).
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 0.7, 0})),
              ElementsAre(FloatNear(2.0 / 3, 1e-6), FloatNear(1.0 / 3, 1e-6), 0, 0));
  // top-p 0.5: the mass above 1/4 is exactly 0.5, not below it: only the first.
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 0.5, 0})), ElementsAre(1, 0, 0, 0));
  // T = 2: probabilities proportional to 2, sqrt 2, 1, 1.
  const double z = 2 + std::sqrt(2.0) + 2;
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {2.0, 1.0, 0})),
              ElementsAre(FloatNear(2 / z, 1e-6), FloatNear(std::sqrt(2.0) / z, 1e-6),
                          FloatNear(1 / z, 1e-6), FloatNear(1 / z, 1e-6)));
  // T = 0: one-hot argmax, top-k and top-p do not matter.
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {0.0, 0.5, 3})), ElementsAre(1, 0, 0, 0));
}

TEST_F(SampledAcceptanceTest, AlphaIsTheOverlapOfTheTwoDistributions) {
  // p = (1/2, 1/4, 1/8, 1/8); q = (1/4, 1/4, 1/2, 0): min = 1/4 + 1/4 + 1/8 + 0 = 5/8.
  const at::Tensor p = ProcessedProbs(Logits(), {1.0, 1.0, 0});
  const at::Tensor q = at::tensor({0.25f, 0.25f, 0.5f, 0.0f}).unsqueeze(0);
  EXPECT_FLOAT_EQ(at::minimum(p, q).sum().item<float>(), 0.625f);
}

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

TEST_F(SampledAcceptanceTest, DraftLengthCurveFromTheHistogram) {
  // B = 4: n = 0, 1, 2, 3 in 2, 1, 0, 1 blocks (pooled accept length (2+2+4)/4 = 2).
  // k = 1: (2*1 + 1*2 + 0 + 1*2) / 4 = 1.5; k = 2: (2 + 2 + 3) / 4 = 1.75; k = 3: 2.
  EXPECT_THAT(DraftLengthCurve({2, 1, 0, 1}), ElementsAre(1.5, 1.75, 2.0));
  EXPECT_TRUE(DraftLengthCurve({0, 0, 0}).empty());
}

TEST_F(SampledAcceptanceTest, BadSettingsAreNamed) {
  EXPECT_THAT(CheckSamplingSetting({-1, 1, 0}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "sampling 't=-1': temperature must be >= 0 (0 = greedy)"));
  EXPECT_THAT(CheckSamplingSetting({0.6, 1.5, 0}),
              testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                "sampling 't=0.6,p=1.5': top_p must be in (0, 1] (1 = off)"));
  EXPECT_TRUE(CheckSamplingSetting({0.6, 0.95, 20}).ok());
}

}  // namespace
}  // namespace dflash::eval
