// The processed distributions and DFlash 1's alphas of speculative sampling
// (docs/decision-metrics.md §2, docs/served-acceptance.md §2) on
// hand-computed rows: temperature, top-k, top-p and their ties, each policy.
#include "eval/sampling_distributions.h"

#include <ATen/ATen.h>

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;

class SamplingDistributionsTest : public ::testing::Test {
 protected:
  // logits log(4), log(2), log(1), log(1): probabilities 1/2, 1/4, 1/8, 1/8 at T = 1.
  static at::Tensor Logits() { return at::log(at::tensor({4.0f, 2.0f, 1.0f, 1.0f})).unsqueeze(0); }
  static std::vector<float> Row(const at::Tensor& t) {
    at::Tensor c = t.contiguous();
    return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
  }
};

TEST_F(SamplingDistributionsTest, ProcessingFollowsTemperatureTopKTopP) {
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

TEST_F(SamplingDistributionsTest, AlphaIsTheOverlapOfTheTwoDistributions) {
  // p = (1/2, 1/4, 1/8, 1/8); q = (1/4, 1/4, 1/2, 0): min = 1/4 + 1/4 + 1/8 + 0 = 5/8.
  const at::Tensor p = ProcessedProbs(Logits(), {1.0, 1.0, 0});
  const at::Tensor q = at::tensor({0.25f, 0.25f, 0.5f, 0.0f}).unsqueeze(0);
  EXPECT_FLOAT_EQ(at::minimum(p, q).sum().item<float>(), 0.625f);
}

TEST_F(SamplingDistributionsTest, TopKKeepsEveryTieOfTheKth) {
  // top-k 3 with 1/8 twice at rank 3: both kept, nothing renormalised away.
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 1.0, 3})),
              ElementsAre(FloatNear(0.5, 1e-6), FloatNear(0.25, 1e-6), FloatNear(0.125, 1e-6),
                          FloatNear(0.125, 1e-6)));
  // top-k at or past V is off.
  EXPECT_THAT(Row(ProcessedProbs(Logits(), {1.0, 1.0, 9})),
              ElementsAre(FloatNear(0.5, 1e-6), FloatNear(0.25, 1e-6), FloatNear(0.125, 1e-6),
                          FloatNear(0.125, 1e-6)));
}

TEST_F(SamplingDistributionsTest, TopKThenTopPOnEachRow) {
  // Row 0 as above; row 1 reversed. top-k 2 first gives 2/3, 1/3; top-p 0.6
  // then keeps 2/3 alone (the mass above 1/3 is 2/3). Top-p first would
  // keep 1/2 and 1/4, and top-k 2 both of them.
  const at::Tensor logits = at::cat({Logits(), Logits().flip(-1)}, 0);
  EXPECT_THAT(Row(ProcessedProbs(logits, {1.0, 0.6, 2})), ElementsAre(1, 0, 0, 0, 0, 0, 0, 1));
}

TEST_F(SamplingDistributionsTest, GreedyTiesGoToTheLowestId) {
  const at::Tensor tied = at::tensor({1.0f, 3.0f, 3.0f, 2.0f}).unsqueeze(0);
  EXPECT_THAT(Row(ProcessedProbs(tied, {0.0, 1.0, 0})), ElementsAre(0, 1, 0, 0));
}

TEST_F(SamplingDistributionsTest, DoubleLogitsAreProcessedInFp32) {
  // T = 1/2 squares the ratios: (16, 4, 1, 1) / 22.
  const at::Tensor p = ProcessedProbs(Logits().to(at::kDouble), {0.5, 1.0, 0});
  EXPECT_EQ(p.scalar_type(), at::kFloat);
  EXPECT_THAT(Row(p), ElementsAre(FloatNear(16.0 / 22, 1e-6), FloatNear(4.0 / 22, 1e-6),
                                  FloatNear(1.0 / 22, 1e-6), FloatNear(1.0 / 22, 1e-6)));
}

class PolicyAlphaTest : public ::testing::Test {
 protected:
  // The target's p = (1/2, 1/4, 1/8, 1/8) at T = 1; the drafter's q =
  // (1/4, 1/4, 1/2, 0).
  static at::Tensor TargetLogits() {
    return at::log(at::tensor({4.0f, 2.0f, 1.0f, 1.0f})).unsqueeze(0);
  }
  static at::Tensor DraftLogits() {
    return at::log(at::tensor({1.0f, 1.0f, 2.0f, 0.0f})).unsqueeze(0);
  }
  static double Alpha(types::SamplingSetting s) {
    const at::Tensor p = ProcessedProbs(TargetLogits(), s);
    return Dflash1Alpha(p, DraftLogits(), s).item<float>();
  }
};

TEST_F(PolicyAlphaTest, HandComputedAtTemperatureOne) {
  types::SamplingSetting s{1.0, 1.0, 0, types::ProposalPolicy::kSample};
  EXPECT_NEAR(Alpha(s), 5.0 / 8, 1e-6);  // 1/4 + 1/4 + 1/8 + 0
  s.policy = types::ProposalPolicy::kArgmax;
  EXPECT_NEAR(Alpha(s), 1.0 / 8, 1e-6);  // p(argmax q = 2)
  s.policy = types::ProposalPolicy::kMatch;
  EXPECT_NEAR(Alpha(s), 1.0 / 4, 1e-6);  // 1/8 + 1/16 + 1/16 + 0
}

TEST_F(PolicyAlphaTest, TopPTruncatesBothOrTheTargetOnly) {
  // top-p 0.5: p = (1, 0, 0, 0); q truncated too = (0, 0, 1, 0).
  types::SamplingSetting s{1.0, 0.5, 0, types::ProposalPolicy::kSample};
  EXPECT_NEAR(Alpha(s), 0.0, 1e-6);
  s.truncate_draft = false;  // q stays (1/4, 1/4, 1/2, 0)
  EXPECT_NEAR(Alpha(s), 1.0 / 4, 1e-6);
  s.policy = types::ProposalPolicy::kMatch;
  EXPECT_NEAR(Alpha(s), 1.0 / 4, 1e-6);
  s.policy = types::ProposalPolicy::kArgmax;
  EXPECT_NEAR(Alpha(s), 0.0, 1e-6);
}

TEST_F(PolicyAlphaTest, AtTemperatureZeroEveryPolicyIsTheGreedyMatch) {
  for (types::ProposalPolicy p : {types::ProposalPolicy::kSample, types::ProposalPolicy::kArgmax,
                                  types::ProposalPolicy::kMatch}) {
    // Target argmax 0, draft argmax 2: no match; then a drafter that agrees.
    types::SamplingSetting s{0.0, 1.0, 0, p};
    EXPECT_EQ(Alpha(s), 0.0) << static_cast<int>(p);
    const at::Tensor agree = at::log(at::tensor({3.0f, 1.0f, 2.0f, 0.0f})).unsqueeze(0);
    EXPECT_EQ(Dflash1Alpha(ProcessedProbs(TargetLogits(), s), agree, s).item<float>(), 1.0f);
  }
}

TEST_F(PolicyAlphaTest, DefaultPolicyIsSampling) {
  EXPECT_NEAR(Alpha({1.0, 1.0, 0, types::ProposalPolicy::kDefault}), 5.0 / 8, 1e-6);
}

TEST_F(PolicyAlphaTest, RowsAreScoredApart) {
  // Row 1: the drafter's q equals the target's p, so sampling accepts surely
  // and matching gives sum p^2 = 1/4 + 1/16 + 2/64 = 11/32.
  const types::SamplingSetting s{1.0, 1.0, 0, types::ProposalPolicy::kSample};
  const at::Tensor p = ProcessedProbs(at::cat({TargetLogits(), TargetLogits()}, 0), s);
  const at::Tensor q = at::cat({DraftLogits(), TargetLogits()}, 0);
  const at::Tensor a = Dflash1Alpha(p, q, s);
  EXPECT_NEAR(a[0].item<float>(), 5.0 / 8, 1e-6);
  EXPECT_NEAR(a[1].item<float>(), 1.0, 1e-6);
  types::SamplingSetting m = s;
  m.policy = types::ProposalPolicy::kMatch;
  EXPECT_NEAR(Dflash1Alpha(p, q, m)[1].item<float>(), 11.0 / 32, 1e-6);
}

}  // namespace
}  // namespace dflash::eval
