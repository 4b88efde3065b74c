// Paired differences and the regression gate (core/compare_stats.h) on
// hand-made results whose samples are all alike, so every resample gives the
// same value and each interval is the point difference itself: each verdict,
// each refusal, and the slice floor, with their exact text.
#include "core/compare_stats.h"

#include <optional>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;
using types::EvalResult;
using types::JobRecord;

// B = 2 (one position), four samples of two blocks each, every sample with
// `accepted_total` (sum of n + 1) and `hits` first drafts accepted.
EvalResult Result(int64_t accepted_total, int64_t hits, int64_t conditional_counted = 2) {
  EvalResult r;
  r.dataset_fingerprint = "h64:d";
  r.positions.resize(1);
  for (int64_t i = 0; i < 4; ++i) {
    types::SampleSummary s;
    s.sample_index = i;
    s.blocks = 2;
    s.accepted_total = accepted_total;
    s.counted = {2};
    s.correct = {hits};
    s.accepted = {hits};
    s.conditional_counted = {conditional_counted};
    r.per_sample.push_back(s);
  }
  return r;
}

JobRecord Job(const std::string& id, EvalResult r) {
  JobRecord j;
  j.id = id;
  j.state = types::JobState::kSucceeded;
  j.request.step = 3;
  j.result = std::move(r);
  return j;
}

// accept_length = tau = 3/2 against 4/2; each rate 1/2 against 2/2.
TEST(CompareStatsTest, PairedDifferencesOfEveryMetric) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<MetricDifference> d,
      PairedDifferences({Job("ev-a", Result(3, 1)), Job("ev-b", Result(4, 2))}, 200, 7));
  std::vector<std::string> names;
  for (const MetricDifference& m : d) {
    names.push_back(m.metric);
    EXPECT_EQ(m.job_index, 1);
    EXPECT_EQ(m.delta, 0.5) << m.metric;
    ASSERT_TRUE(m.delta_ci.has_value()) << m.metric;
    EXPECT_EQ(m.delta_ci->lo, 0.5);
    EXPECT_EQ(m.delta_ci->hi, 0.5);
    EXPECT_TRUE(m.excludes_zero);
    EXPECT_EQ(m.verdict, "better");
  }
  EXPECT_THAT(names, ::testing::ElementsAre("accept_length", "tau", "accuracy[1]", "acceptance[1]",
                                            "conditional[1]"));
  EXPECT_EQ(d[0].reference_value, 1.5);
  EXPECT_EQ(d[0].value, 2.0);
}

TEST(CompareStatsTest, UndefinedMetricsAndTooFewJobs) {
  // No block reached the conditional's denominator in the second job.
  ASSERT_OK_AND_ASSIGN(
      std::vector<MetricDifference> d,
      PairedDifferences({Job("ev-a", Result(3, 1)), Job("ev-b", Result(3, 1, 0))}, 50, 1));
  EXPECT_EQ(d.back().metric, "conditional[1]");
  EXPECT_EQ(d.back().verdict, "undefined");
  EXPECT_FALSE(d.back().delta_ci.has_value());
  EXPECT_EQ(d.front().verdict, "no detectable difference");  // delta 0: [0, 0]
  ASSERT_OK_AND_ASSIGN(d, PairedDifferences({Job("ev-a", Result(3, 1))}, 50, 1));
  EXPECT_TRUE(d.empty());
}

TEST(CompareStatsTest, UnpairableJobsAreFailedPrecondition) {
  EvalResult other = Result(4, 2);
  other.dataset_fingerprint = "h64:e";
  EXPECT_THAT(PairedDifferences({Job("ev-a", Result(3, 1)), Job("ev-b", other)}, 50, 1),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq(std::string("cannot pair ev-a and ev-b: they were scored on different "
                                      "datasets (h64:d vs h64:e)"))));
}

TEST(CompareStatsTest, WorstSliceIsTheLargestDropInBoth) {
  EvalResult now = Result(3, 1), ref = Result(3, 1);
  EXPECT_FALSE(WorstSlice(now, ref).has_value());
  now.slices = {{"lang", "en", 2, 4, 1.8}, {"lang", "de", 2, 4, 2.0}, {"lang", "fr", 2, 4, 1.0}};
  ref.slices = {{"lang", "en", 2, 4, 2.4}, {"lang", "de", 2, 4, 1.5}, {"topic", "fr", 2, 4, 3.0}};
  const std::optional<SliceDrop> drop = WorstSlice(now, ref);
  ASSERT_TRUE(drop.has_value());
  EXPECT_EQ(drop->slice, "lang=en");
  EXPECT_EQ(drop->value, 1.8);
  EXPECT_EQ(drop->reference_value, 2.4);
  EXPECT_DOUBLE_EQ(drop->delta, -0.6);
}

class GateVerdictTest : public ::testing::Test {
 protected:
  GateVerdictTest() : job_(Job("ev-1", Result(3, 1))) {
    job_.request.gate.reference = "previous";
    job_.request.gate.metric = "tau";
  }
  types::GateVerdict Verdict(const absl::StatusOr<std::optional<JobRecord>>& found) {
    return GateVerdictFor(job_, *job_.result, found, "no earlier job of run r");
  }
  JobRecord job_;
};

TEST_F(GateVerdictTest, PassAndWorseSayWhy) {
  types::GateVerdict v = Verdict(std::optional<JobRecord>(Job("ev-0", Result(2, 0))));
  EXPECT_EQ(v.verdict, "pass");
  EXPECT_EQ(v.reference_job, "ev-0");
  EXPECT_EQ(v.text,
            "gate: pass against ev-0 (step 3) on tau: 1.5 vs 1, delta 0.5, 95% interval [0.5, "
            "0.5] does not lie below zero");
  job_.request.gate.min_delta = 0.1;
  v = Verdict(std::optional<JobRecord>(Job("ev-0", Result(4, 2))));
  EXPECT_EQ(v.verdict, "worse");
  EXPECT_EQ(v.delta, -0.5);
  EXPECT_EQ(v.text,
            "gate: WORSE than ev-0 (step 3) on tau: 1.5 vs 2, delta -0.5, 95% interval [-0.5, "
            "-0.5] lies below -0.1");
  // Within the allowed drop: a pass.
  job_.request.gate.min_delta = 0.5;
  EXPECT_EQ(Verdict(std::optional<JobRecord>(Job("ev-0", Result(4, 2)))).verdict, "pass");
}

TEST_F(GateVerdictTest, NoReferenceIsAPassThatSaysWhy) {
  const types::GateVerdict v = Verdict(std::optional<JobRecord>());
  EXPECT_EQ(v.verdict, "no reference");
  EXPECT_EQ(v.text, "gate: pass (no reference: no earlier job of run r)");
}

TEST_F(GateVerdictTest, EachUndecidableCaseIsAnErrorVerdict) {
  auto error_text = [&](const absl::StatusOr<std::optional<JobRecord>>& found) {
    const types::GateVerdict v = Verdict(found);
    EXPECT_EQ(v.verdict, "error");
    return v.text;
  };
  EXPECT_EQ(error_text(absl::NotFoundError("job ev-9 not found")),
            "gate: cannot decide: NOT_FOUND: job ev-9 not found");
  const std::optional<JobRecord> ref = Job("ev-0", Result(2, 0));
  job_.request.gate.metric = "bogus";
  EXPECT_EQ(error_text(ref),
            "gate: cannot decide: metric 'bogus' is not accept_length, tau, accuracy[j], "
            "acceptance[j] or conditional[j] with j in 1..1");
  // A metric at a position the reference does not have.
  job_.request.gate.metric = "accuracy[2]";
  job_.result->positions.resize(2);
  EXPECT_EQ(error_text(ref),
            "gate: cannot decide: reference ev-0 has only 1 positions; metric "
            "is accuracy[2]");
  job_.result->positions.resize(1);
  job_.request.gate.metric = "conditional[1]";
  const std::optional<JobRecord> none_reached = Job("ev-0", Result(2, 0, 0));
  job_.result = Result(3, 1, 0);
  EXPECT_EQ(error_text(none_reached),
            "gate: cannot decide: metric conditional[1] is undefined on the samples");
  job_.request.gate.metric = "tau";
  job_.result->dataset_fingerprint = "h64:e";
  EXPECT_EQ(error_text(ref),
            "gate: cannot decide: cannot pair ev-0 and ev-1 (this job): they were scored on "
            "different datasets (h64:d vs h64:e)");
}

TEST_F(GateVerdictTest, SliceFloorFailsOnTheWorstSlice) {
  job_.request.gate.has_floor = true;
  job_.request.gate.floor = 0.5;
  JobRecord ref = Job("ev-0", Result(2, 0));
  types::GateVerdict v = Verdict(std::optional<JobRecord>(ref));
  EXPECT_EQ(v.verdict, "pass");
  EXPECT_THAT(v.text, ::testing::EndsWith("; slice floor: no slice is in both results"));
  job_.result->slices = {{"lang", "en", 2, 4, 1.8}};
  ref.result->slices = {{"lang", "en", 2, 4, 2.4}};
  v = Verdict(std::optional<JobRecord>(ref));
  EXPECT_EQ(v.verdict, "worse");
  EXPECT_EQ(v.worst_slice, "lang=en");
  EXPECT_THAT(v.text, ::testing::EndsWith("; worst slice lang=en: accept length 1.8 vs 2.4, "
                                          "delta -0.6, FELL BY MORE THAN the floor 0.5"));
  job_.request.gate.floor = 0.7;
  v = Verdict(std::optional<JobRecord>(ref));
  EXPECT_EQ(v.verdict, "pass");
  EXPECT_THAT(v.text, ::testing::EndsWith(", within the floor 0.7"));
}

}  // namespace
}  // namespace dflash::core
