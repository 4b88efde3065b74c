// A finished job's numbers as an acceptance curve (core/acceptance_curves.h):
// the greedy curve from the position counts, a sampled setting's from its
// expected rates, and each job or setting that has none, refused by name.
#include "core/acceptance_curves.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;

// B = 3, replay, 10 blocks: 8 reach position 2 and 4 accept both drafts.
types::JobRecord Job() {
  types::JobRecord j;
  j.id = "ev-1";
  j.state = types::JobState::kSucceeded;
  j.request.params.dataset = "chat";
  types::EvalResult r;
  r.block_size = 3;
  r.blocks = 10;
  r.samples = 2;
  r.mode = types::Mode::kReplay;
  r.semantics = "zlab-current";
  r.family = "DFlash 1";
  r.drafter_fingerprint = "h64:m";
  r.dataset_fingerprint = "h64:d";
  r.positions.resize(2);
  r.positions[0].accepted = 8;
  r.positions[1].accepted = 4;
  r.accepted_histogram = {2, 4, 4};
  r.accept_length_pooled = 2.2;  // = 1 + 0.8 + 0.4: no capped last step
  r.tau = 2.1;
  r.tau_ci = types::Interval{1.9, 2.3};
  j.result = r;
  return j;
}

TEST(AcceptanceCurvesTest, GreedyCurveFromThePositionCounts) {
  ASSERT_OK_AND_ASSIGN(served::AcceptanceCurve c, CurveFromJob(Job(), 0));
  EXPECT_EQ(c.label, "greedy");
  EXPECT_EQ(c.policy, "greedy");
  EXPECT_EQ(c.mode, "replay");
  EXPECT_EQ(c.job_id, "ev-1");
  EXPECT_EQ(c.dataset, "chat");
  EXPECT_EQ(c.block_size, 3);
  EXPECT_THAT(c.marginal, ElementsAre(0.8, 0.4));
  EXPECT_THAT(c.histogram, ElementsAre(0.2, 0.4, 0.4));
  EXPECT_DOUBLE_EQ(c.mean_accept_length, 2.2);
  EXPECT_EQ(c.mean_accept_length_per_request, 2.1);
  EXPECT_FALSE(c.mean_accept_length_ci.has_value());
  ASSERT_TRUE(c.per_request_ci.has_value());
  EXPECT_EQ(c.per_request_ci->lo, 1.9);
  EXPECT_TRUE(c.approximations.empty());
  EXPECT_THAT(served::CheckCurveInvariants(c), ::dflash::testing::IsOk());
}

TEST(AcceptanceCurvesTest, GreedyCurveSaysWhatItAssumes) {
  types::JobRecord j = Job();
  j.result->accept_length_pooled = 2.0;  // z-lab's capped last step
  ASSERT_OK_AND_ASSIGN(served::AcceptanceCurve c, CurveFromJob(j, 0));
  EXPECT_THAT(c.approximations,
              ElementsAre("replay: 1 + accepted/steps = 2.2; z-lab's loop records 2 (the last "
                          "step of a sample capped at the tokens left)"));
  j.result->mode = types::Mode::kAnchor;
  ASSERT_OK_AND_ASSIGN(c, CurveFromJob(j, 0));
  EXPECT_EQ(c.mode, "anchor");
  EXPECT_THAT(c.approximations,
              ElementsAre("anchor mode: blocks at chosen anchors of the data, not a decode"));
}

TEST(AcceptanceCurvesTest, SampledSettingCurve) {
  types::JobRecord j = Job();
  types::SampledAcceptance s;
  s.setting = {0.7, 0.95, 20, types::ProposalPolicy::kArgmax, true, "vllm"};
  s.marginal_accept = {0.6, 0.3};
  s.histogram = {0.4, 0.3, 0.3};
  s.expected_accept_length_pooled = 1.9;
  s.expected_tau = 1.8;
  s.accept_length_ci = types::Interval{1.7, 2.1};
  s.approximations = {"teacher-forced prefix"};
  j.result->sampling = {s};
  ASSERT_OK_AND_ASSIGN(served::AcceptanceCurve c, CurveFromJob(j, 1));
  EXPECT_EQ(c.label, "t=0.7,p=0.95,k=20 policy=argmax engine=vllm");
  EXPECT_EQ(c.policy, "argmax");
  EXPECT_EQ(c.engine, "vllm");
  EXPECT_EQ(c.temperature, 0.7);
  EXPECT_EQ(c.top_k, 20);
  EXPECT_THAT(c.marginal, ElementsAre(0.6, 0.3));
  EXPECT_EQ(c.mean_accept_length, 1.9);
  EXPECT_EQ(c.mean_accept_length_per_request, 1.8);
  ASSERT_TRUE(c.mean_accept_length_ci.has_value());
  EXPECT_EQ(c.mean_accept_length_ci->hi, 2.1);
  EXPECT_THAT(c.approximations, ElementsAre("teacher-forced prefix"));
  EXPECT_EQ(c.dataset_fingerprint, "h64:d");
}

TEST(AcceptanceCurvesTest, JobsAndSettingsWithoutACurveAreRefused) {
  types::JobRecord j = Job();
  j.state = types::JobState::kRunning;
  EXPECT_THAT(CurveFromJob(j, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq(std::string("job ev-1 is RUNNING; it needs a SUCCEEDED result"))));
  j = Job();
  j.result->suite = "chat,code";
  j.result->suite_results.resize(2);
  EXPECT_THAT(CurveFromJob(j, 0),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq(std::string("job ev-1 is a suite (chat,code); its top line is a macro "
                                      "average: evaluate each dataset in its own job"))));
  j = Job();
  j.result->sampling.resize(1);
  j.result->sampling[0].setting.temperature = 0.7;
  for (int setting : {2, -1}) {
    EXPECT_THAT(CurveFromJob(j, setting), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   Eq("setting " + std::to_string(setting) +
                                                      ": job ev-1 has 0 (greedy), 1 (t=0.7)")));
  }
  // Sampled numbers from before the marginal rates were kept.
  EXPECT_THAT(CurveFromJob(j, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq(std::string("job ev-1 was stored before marginal acceptance was kept; "
                                      "resubmit it (dflash-eval resubmit ev-1)"))));
}

}  // namespace
}  // namespace dflash::core
