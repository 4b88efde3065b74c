// The --sampling spec parser and the decision metrics in words.
#include "client/format_decision.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::client {
namespace {

using ::testing::HasSubstr;

class FormatDecisionTest : public ::testing::Test {};

TEST_F(FormatDecisionTest, ParsesSamplingSpecs) {
  absl::StatusOr<pb::SamplingSetting> s = ParseSamplingSpec("t=0.6,p=0.95,k=20");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->temperature(), 0.6);
  EXPECT_DOUBLE_EQ(s->top_p(), 0.95);
  EXPECT_EQ(s->top_k(), 20);
  s = ParseSamplingSpec("k=5,t=0");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->temperature(), 0);
  EXPECT_EQ(s->top_k(), 5);
  EXPECT_EQ(s->top_p(), 0);  // unset: off
}

TEST_F(FormatDecisionTest, BadSpecsAreNamed) {
  EXPECT_EQ(ParseSamplingSpec("p=0.9").status().message(),
            "--sampling 'p=0.9': missing t=TEMPERATURE (expected e.g. t=0.6,p=0.95,k=20 or t=0)");
  EXPECT_THAT(std::string(ParseSamplingSpec("t=1,x=2").status().message()),
              HasSubstr("unknown key 'x' (t, p or k)"));
  EXPECT_THAT(std::string(ParseSamplingSpec("t=1,k=2.5").status().message()),
              HasSubstr("top-k must be a whole number"));
}

// Ranges and engine conventions are the server's one rule
// (tests/eval/sampling_policy_test.cc): the client passes them on.
TEST_F(FormatDecisionTest, RangesAreLeftToTheServer) {
  auto s = ParseSamplingSpec("t=-1,p=1.5,k=-1");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->temperature(), -1);
  EXPECT_EQ(s->top_p(), 1.5);
  EXPECT_EQ(s->top_k(), -1);
  EXPECT_THAT(std::string(ParseSamplingSpec("t").status().message()),
              HasSubstr("'t' is not KEY=VALUE"));
}

TEST_F(FormatDecisionTest, PrintsConsistencyCurveAndSampledRows) {
  pb::TargetConsistency c;
  c.set_positions(221);
  c.set_matches(220);
  c.set_fraction(220.0 / 221);
  EXPECT_EQ(FormatTargetConsistency(c, "t"),
            "target consistency with t: 99.5% (220 of 221 response positions where "
            "argmax(lm_head(final_norm h)) is the data's next token)\n");
  pb::EvalResult r;
  EXPECT_EQ(FormatDecisionMetrics(r), "");
  r.set_accept_length_pooled(2.0);
  r.set_tau(1.9);
  for (double v : {1.5, 1.75, 2.0}) r.add_draft_length_curve(v);
  pb::SampledAcceptance* s = r.add_sampling();
  s->mutable_setting()->set_temperature(0.6);
  s->mutable_setting()->set_top_k(20);
  s->set_expected_accept_length_pooled(1.25);
  s->set_expected_tau(1.2);
  s->add_mean_alpha(0.2);
  s->add_draft_length_curve(1.2);
  const std::string out = FormatDecisionMetrics(r);
  EXPECT_THAT(out, HasSubstr("  1:1.500 2:1.750 3:2.000\n"));
  EXPECT_THAT(out, HasSubstr("teacher-forced prefix, positions as independent draws"));
  EXPECT_THAT(out,
              HasSubstr("  greedy                                 2.000         1.900   (greedy, "
                        "measured)\n"));
  EXPECT_THAT(out,
              HasSubstr("  t=0.6,k=20                             1.250         1.200   0.200\n"));
}

}  // namespace
}  // namespace dflash::client
