// The sampling request's one rule (eval/sampling_policy.h): policies x
// settings, engine presets and their conventions, and every bad request
// with its exact message (the policies' alphas on hand-computed rows:
// sampling_distributions_test).
#include "eval/sampling_policy.h"

#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

types::EvalOptions WithSampling(std::vector<types::SamplingSetting> s,
                                std::vector<types::ProposalPolicy> p = {},
                                std::string engine = "") {
  types::EvalOptions o;
  o.sampling = std::move(s);
  o.policies = std::move(p);
  o.engine = std::move(engine);
  return o;
}

TEST(SamplingPolicyTest, EachSettingUnderEachPolicySettingMajor) {
  auto r = ResolveSampling(
      WithSampling({{0.7, 1, 0}, {1.0, 0.95, 20}},
                   {types::ProposalPolicy::kSample, types::ProposalPolicy::kArgmax}),
      false);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].policy, types::ProposalPolicy::kSample);
  EXPECT_EQ((*r)[1].policy, types::ProposalPolicy::kArgmax);
  EXPECT_EQ((*r)[1].temperature, 0.7);
  EXPECT_EQ((*r)[2].top_k, 20);
  EXPECT_TRUE((*r)[2].truncate_draft);
}

TEST(SamplingPolicyTest, DefaultIsTheDrafterOwnRule) {
  auto d1 = ResolveSampling(WithSampling({{0.7, 1, 0}}), false);
  auto d2 = ResolveSampling(WithSampling({{0.7, 1, 0}}), true);
  auto unknown = ResolveSampling(WithSampling({{0.7, 1, 0}}), std::nullopt);
  ASSERT_TRUE(d1.ok() && d2.ok() && unknown.ok());
  EXPECT_EQ((*d1)[0].policy, types::ProposalPolicy::kSample);
  EXPECT_EQ((*d2)[0].policy, types::ProposalPolicy::kSelector);
  EXPECT_EQ((*unknown)[0].policy, types::ProposalPolicy::kDefault);
}

TEST(SamplingPolicyTest, EnginePresetsSetPolicyAndConventions) {
  auto vllm = ResolveSampling(WithSampling({{1.0, 0.95, -1}}, {}, "vllm"), false);
  ASSERT_TRUE(vllm.ok()) << vllm.status();
  EXPECT_EQ((*vllm)[0].policy, types::ProposalPolicy::kArgmax);
  EXPECT_EQ((*vllm)[0].top_k, 0);  // -1 = off in vLLM's API
  EXPECT_FALSE((*vllm)[0].truncate_draft);
  EXPECT_EQ((*vllm)[0].engine, "vllm");
  auto zlab = ResolveSampling(WithSampling({{1.0, 1, 0}}, {}, "zlab"), true);
  ASSERT_TRUE(zlab.ok()) << zlab.status();
  EXPECT_EQ((*zlab)[0].policy, types::ProposalPolicy::kMatch);
  // An explicit policy wins over the preset's.
  auto both = ResolveSampling(
      WithSampling({{1.0, 1, 0}}, {types::ProposalPolicy::kSample}, "sglang"), false);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ((*both)[0].policy, types::ProposalPolicy::kSample);
  EXPECT_EQ((*both)[0].engine, "sglang");
}

TEST(SamplingPolicyTest, BadRequestsAreNamed) {
  const auto code = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(
      ResolveSampling(WithSampling({{0.7, 1, 0}}, {types::ProposalPolicy::kSelector}), false),
      StatusIs(code,
               "policy selector needs a DFlash 2 drafter (its candidate selector "
               "proposes); this drafter is DFlash 1: use sample, argmax or match"));
  EXPECT_THAT(ResolveSampling(WithSampling({{0.7, 1, 0}}, {}, "tgi"), false),
              StatusIs(code, "unknown engine 'tgi' (known: vllm, sglang, zlab)"));
  EXPECT_THAT(ResolveSampling(WithSampling({{0.7, 1, -1}}), false),
              StatusIs(code,
                       "sampling 't=0.7 policy=sample': top_k -1 is negative; 0 = off "
                       "(-1 = off only under --engine vllm or sglang)"));
  EXPECT_THAT(ResolveSampling(WithSampling({{0.7, 0.9, 0}}, {}, "zlab"), false),
              StatusIs(code, HasSubstr("engine zlab applies no top-p or top-k")));
  EXPECT_THAT(ResolveSampling(WithSampling({}, {types::ProposalPolicy::kArgmax}), false),
              StatusIs(code,
                       "a policy or engine applies to sampled acceptance: add a sampling "
                       "setting (e.g. --sampling t=0.7)"));
  EXPECT_THAT(ResolveSampling(WithSampling({{0.7, 1, 0}}, {types::ProposalPolicy::kArgmax,
                                                           types::ProposalPolicy::kArgmax}),
                              false),
              StatusIs(code, "policy argmax is given twice"));
  EXPECT_THAT(ResolveSampling(WithSampling({{-1, 1, 0}}), false),
              StatusIs(code,
                       "sampling 't=-1 policy=sample': temperature must be >= 0 (0 = "
                       "greedy)"));
  EXPECT_THAT(types::ParsePolicy("greedy"),
              StatusIs(code,
                       "unknown policy 'greedy' (known: sample, argmax, selector (DFlash "
                       "2), match)"));
}

}  // namespace
}  // namespace dflash::eval
