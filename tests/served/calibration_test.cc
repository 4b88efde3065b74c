// A served run against the job that predicted it (served/calibration.h): the
// same numbers are "within" with ratio 1, halved ones are "off" and say
// where; a different K is an error; the record round-trips through JSON.
#include "served/calibration.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::served {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::DoubleEq;
using ::testing::HasSubstr;

// B = 4, replay, argmax under vLLM's rule: marginal 0.9, 0.7, 0.4.
AcceptanceCurve VllmArgmaxCurve() {
  AcceptanceCurve c;
  c.label = "t=0.7 policy=argmax engine=vllm";
  c.policy = "argmax";
  c.engine = "vllm";
  c.block_size = 4;
  c.blocks = 100;
  c.samples = 5;
  c.mode = "replay";
  c.job_id = "job-1";
  c.marginal = {0.9, 0.7, 0.4};
  c.histogram = {0.1, 0.2, 0.3, 0.4};
  c.mean_accept_length = 3.0;
  c.mean_accept_length_per_request = 2.9;
  return c;
}

ServedCounters Vllm(std::vector<int64_t> per_pos) {
  ServedCounters s;
  s.source = "vllm";
  s.weighting = "step";
  s.steps = 100;
  s.num_speculative_tokens = 3;
  for (int64_t n : per_pos) {
    s.accepted_per_position.push_back(n);
    s.served_marginal.push_back(n / 100.0);
    s.accepted_tokens += n;
  }
  s.accept_length = 1 + s.accepted_tokens / 100.0;
  return s;
}

TEST(Calibrate, SameNumbersAreWithin) {
  auto c = Calibrate(VllmArgmaxCurve(), Vllm({90, 70, 40}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->verdict, "within");
  EXPECT_THAT(c->ratio, DoubleEq(1.0));
  EXPECT_TRUE(c->likely_causes.empty());
  ASSERT_EQ(c->positions.size(), 3u);
  EXPECT_THAT(*c->positions[1].ratio, DoubleEq(1.0));
  EXPECT_THAT(*c->positions[2].served_conditional, DoubleEq(0.4 / 0.7));
  EXPECT_THAT(c->text, HasSubstr("ratio 1.000"));
  EXPECT_THAT(c->text, HasSubstr("verdict: within"));
}

TEST(Calibrate, LaterPositionsOffSaysWhere) {
  auto c = Calibrate(VllmArgmaxCurve(), Vllm({90, 35, 20}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->verdict, "off");
  EXPECT_THAT(c->ratio, DoubleEq(2.45 / 3.0));
  ASSERT_FALSE(c->likely_causes.empty());
  EXPECT_THAT(c->likely_causes.back(), HasSubstr("positions 1..1 agree and position 2 parts"));
}

TEST(Calibrate, PolicyAndGreedyMismatchesAreNamed) {
  AcceptanceCurve sample = VllmArgmaxCurve();
  sample.policy = "sample";
  auto c = Calibrate(sample, Vllm({45, 35, 20}));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->likely_causes.front(),
              "the job's numbers are policy=sample; vllm proposes and verifies as policy=argmax "
              "(submit with --engine vllm)");
  EXPECT_THAT(c->likely_causes.back(), HasSubstr("already off at draft position 1"));
}

TEST(Calibrate, RequestWeightingUsesTauAndItsInterval) {
  AcceptanceCurve curve = VllmArgmaxCurve();
  curve.per_request_ci = Range{2.7, 3.2};
  ServedCounters z;
  z.source = "zlab";
  z.weighting = "request";
  z.accept_length = 3.1;  // 6.9% above 2.9, inside the interval
  auto c = Calibrate(curve, z);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->predicted_accept_length, DoubleEq(2.9));
  EXPECT_EQ(c->verdict, "within");
}

TEST(Calibrate, DifferentDraftCountIsAnError) {
  ServedCounters s = Vllm({90, 70, 40});
  s.num_speculative_tokens = 7;
  EXPECT_THAT(Calibrate(VllmArgmaxCurve(), s).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "vllm verified 7 draft tokens per step but job job-1 has block size 4 (3 "
                       "drafts per step): serve with num_speculative_tokens=3 or evaluate with "
                       "that block size"));
}

TEST(Calibrate, BrokenCurveIsOurBug) {
  AcceptanceCurve c = VllmArgmaxCurve();
  c.marginal = {0.5, 0.7, 0.4};
  c.mean_accept_length = 2.6;
  EXPECT_THAT(Calibrate(c, Vllm({90, 70, 40})).status(),
              StatusIs(absl::StatusCode::kInternal,
                       HasSubstr("marginal[1] = 0.7 exceeds marginal[0] = 0.5")));
}

TEST(CalibrationJson, RoundTrips) {
  auto c = Calibrate(VllmArgmaxCurve(), Vllm({90, 35, 20}));
  ASSERT_TRUE(c.ok());
  c->created = "2026-12-03T08:00:00Z";
  auto back = CalibrationFromJson(CalibrationToJson(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(CalibrationToJson(*back), CalibrationToJson(*c));
  EXPECT_THAT(CalibrationFromJson(nlohmann::json{{"source", "vllm"}}).status(),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("stored calibration:")));
}
}  // namespace
}  // namespace dflash::served
