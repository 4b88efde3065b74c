// Profiles an engine reads back (served/serving_profile.h): Model-Optimizer's
// schema fields and its own two checks, vLLM's synthetic sampler keys,
// SGLang's simulated length; unknown formats and empty jobs named.
#include "served/serving_profile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "test_util/status_matchers.h"

namespace dflash::served {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

AcceptanceCurve GreedyCurve() {
  AcceptanceCurve c;
  c.label = "greedy";
  c.policy = "greedy";
  c.block_size = 4;
  c.blocks = 10;
  c.samples = 2;
  c.job_id = "job-9";
  c.dataset = "gsm8k";
  c.marginal = {0.8, 0.5, 0.0};
  c.histogram = {0.2, 0.3, 0.5, 0.0};
  c.mean_accept_length = 2.3;
  c.mean_accept_length_per_request = 2.25;
  return c;
}

TEST(ServingProfile, ModelOptSchema) {
  auto text = ExportProfile(GreedyCurve(), ProfileFormat::kModelOpt);
  ASSERT_TRUE(text.ok()) << text.status();
  nlohmann::json j = nlohmann::json::parse(*text);
  EXPECT_EQ(j["schema_version"], "1.0");
  EXPECT_EQ(j["num_speculative_tokens"], 3);
  EXPECT_EQ(j["marginal_accept_rates"], nlohmann::json({0.8, 0.5, 0.0}));
  EXPECT_EQ(j["conditional_accept_rates"], nlohmann::json({0.8, 0.625, 0.0}));
  EXPECT_EQ(j["mean_accept_length"], 2.3);
  EXPECT_EQ(j["mean_accept_length_per_request"], 2.25);
  EXPECT_EQ(j["acceptance_length_histogram"]["1"], 0.2);
  EXPECT_EQ(j["accept_length_by_k"]["3"], 2.3);
  EXPECT_EQ(j["validation"]["mean_consistency"]["passed"], true);
  EXPECT_EQ(j["measurement_conditions"]["dataset"], "gsm8k");
}

TEST(ServingProfile, VllmAndSglang) {
  auto v = ExportProfile(GreedyCurve(), ProfileFormat::kVllm);
  ASSERT_TRUE(v.ok());
  nlohmann::json j = nlohmann::json::parse(*v);
  EXPECT_EQ(j["rejection_sample_method"], "synthetic");
  EXPECT_EQ(j["synthetic_acceptance_rates"], nlohmann::json({0.8, 0.5, 0.0}));
  EXPECT_EQ(j["num_speculative_tokens"], 3);
  auto s = ExportProfile(GreedyCurve(), ProfileFormat::kSglang);
  ASSERT_TRUE(s.ok());
  EXPECT_THAT(*s, HasSubstr("SGLANG_SIMULATE_ACC_LEN=2.300000\n"));
}

TEST(ServingProfile, Errors) {
  EXPECT_THAT(ParseProfileFormat("eagle").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "unknown profile format 'eagle' (known: modelopt, vllm, sglang)"));
  AcceptanceCurve empty = GreedyCurve();
  empty.blocks = 0;
  EXPECT_THAT(ExportProfile(empty, ProfileFormat::kVllm).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "job job-9 measured no blocks: there is no acceptance to export"));
  AcceptanceCurve wrong = GreedyCurve();
  wrong.mean_accept_length = 2.4;
  EXPECT_THAT(ExportProfile(wrong, ProfileFormat::kModelOpt).status(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("1 + sum(marginal) = 2.3 but the mean accept length is 2.4")));
}

}  // namespace
}  // namespace dflash::served
