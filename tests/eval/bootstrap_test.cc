// The bootstrap intervals (docs/decision-metrics-stats.md) on tiny hand-made
// cases: identical samples give zero-width intervals, a point estimate by
// hand, and a 3-sample case whose intervals tools/dflash_ref/bootstrap.py
// computes independently (the numbers below are its output).
#include "eval/bootstrap.h"

#include <cmath>
#include <vector>

#include "eval/metrics.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

types::SampleSummary Sample(int64_t index, int64_t blocks, int64_t accepted_total,
                            std::vector<int64_t> counted, std::vector<int64_t> correct,
                            std::vector<int64_t> accepted, std::vector<int64_t> conditional) {
  types::SampleSummary s;
  s.sample_index = index;
  s.blocks = blocks;
  s.accepted_total = accepted_total;
  s.counted = std::move(counted);
  s.correct = std::move(correct);
  s.accepted = std::move(accepted);
  s.conditional_counted = std::move(conditional);
  return s;
}

// tools/dflash_ref/bootstrap.py's case (docs/decision-metrics-stats.md):
// sample 3 has no block and is no resampling unit.
types::EvalResult CaseA() {
  types::EvalResult r;
  r.dataset_fingerprint = "ds";
  r.positions.resize(2);
  r.per_sample = {Sample(0, 2, 5, {2, 2}, {2, 1}, {2, 1}, {2, 2}),
                  Sample(1, 1, 1, {1, 1}, {0, 1}, {0, 0}, {1, 0}),
                  Sample(2, 3, 6, {3, 2}, {2, 1}, {2, 1}, {3, 2}),
                  Sample(3, 0, 0, {0, 0}, {0, 0}, {0, 0}, {0, 0})};
  return r;
}

types::EvalResult CaseB() {
  types::EvalResult r = CaseA();
  r.per_sample = {Sample(0, 2, 6, {2, 2}, {2, 2}, {2, 2}, {2, 2}),
                  Sample(1, 1, 2, {1, 1}, {1, 0}, {1, 0}, {1, 1}),
                  Sample(2, 3, 9, {3, 3}, {3, 3}, {3, 3}, {3, 3}),
                  Sample(3, 0, 0, {0, 0}, {0, 0}, {0, 0}, {0, 0})};
  return r;
}

class BootstrapTest : public ::testing::Test {};

TEST_F(BootstrapTest, PointEstimatesByHand) {
  const types::EvalResult a = CaseA();
  const std::vector<const types::SampleSummary*> u = Units(a);
  ASSERT_EQ(u.size(), 3u);  // sample 3 has no block
  const std::vector<double> v = MetricValues(AllMetrics(2), u, {1, 1, 1});
  // accept length = (5 + 1 + 6) / (2 + 1 + 3) = 2; tau = (2.5 + 1 + 2) / 3.
  EXPECT_DOUBLE_EQ(v[0], 2.0);
  EXPECT_DOUBLE_EQ(v[1], 5.5 / 3);
  // j = 1: accuracy 4/6, acceptance 4/6, conditional 4/6; j = 2: 3/5, 2/5, 2/4.
  EXPECT_DOUBLE_EQ(v[2], 4.0 / 6);
  EXPECT_DOUBLE_EQ(v[3], 4.0 / 6);
  EXPECT_DOUBLE_EQ(v[4], 4.0 / 6);
  EXPECT_DOUBLE_EQ(v[5], 3.0 / 5);
  EXPECT_DOUBLE_EQ(v[6], 2.0 / 5);
  EXPECT_DOUBLE_EQ(v[7], 2.0 / 4);
  // Weights 0, 2, 0 (sample 1 drawn twice): acceptance[1] = 0/2, conditional[2] undefined.
  const std::vector<double> w = MetricValues(AllMetrics(2), u, {0, 2, 0});
  EXPECT_DOUBLE_EQ(w[0], 1.0);
  EXPECT_DOUBLE_EQ(w[3], 0.0);
  EXPECT_TRUE(std::isnan(w[7]));
}

TEST_F(BootstrapTest, IdenticalSamplesGiveZeroWidth) {
  types::EvalResult r;
  r.positions.resize(1);
  for (int i = 0; i < 5; ++i) r.per_sample.push_back(Sample(i, 2, 5, {2}, {1}, {1}, {2}));
  types::EvalOptions o;
  AddIntervals(o, &r);
  ASSERT_TRUE(r.accept_length_ci.has_value());
  EXPECT_EQ(r.ci_resamples, 1000);
  EXPECT_DOUBLE_EQ(r.accept_length_ci->lo, 2.5);
  EXPECT_DOUBLE_EQ(r.accept_length_ci->hi, 2.5);
  EXPECT_DOUBLE_EQ(r.tau_ci->lo, 2.5);
  EXPECT_DOUBLE_EQ(r.positions[0].accuracy_ci->lo, 0.5);
  EXPECT_DOUBLE_EQ(r.positions[0].accuracy_ci->hi, 0.5);
  EXPECT_DOUBLE_EQ(r.positions[0].conditional_ci->hi, 0.5);
}

TEST_F(BootstrapTest, NoneLeavesNoIntervals) {
  types::EvalResult r = CaseA();
  types::EvalOptions o;
  o.ci = types::CiMethod::kNone;
  AddIntervals(o, &r);
  EXPECT_FALSE(r.accept_length_ci.has_value());
  EXPECT_FALSE(r.positions[0].accuracy_ci.has_value());
  EXPECT_EQ(r.ci_resamples, 0);
}

TEST_F(BootstrapTest, MatchesPythonReference) {
  // python3 tools/dflash_ref/bootstrap.py case.json, resamples 1000, seed 7.
  types::EvalResult r = CaseA();
  const auto ci = BootstrapIntervals(AllMetrics(2), Units(r), 1000, 7);
  const std::vector<std::pair<double, double>> want = {{1.0, 2.5}, {1.0, 2.5}, {0.0, 1.0},
                                                       {0.0, 1.0}, {0.0, 1.0}, {0.5, 1.0},
                                                       {0.0, 0.5}, {0.5, 0.5}};
  ASSERT_EQ(ci.size(), want.size());
  for (size_t m = 0; m < want.size(); ++m) {
    ASSERT_TRUE(ci[m].has_value()) << m;
    EXPECT_NEAR(ci[m]->lo, want[m].first, 1e-12) << MetricName(AllMetrics(2)[m]);
    EXPECT_NEAR(ci[m]->hi, want[m].second, 1e-12) << MetricName(AllMetrics(2)[m]);
  }
}

TEST_F(BootstrapTest, PairedMatchesPythonReference) {
  const types::EvalResult a = CaseA(), b = CaseB();
  ASSERT_OK_AND_ASSIGN(PairedUnits p, PairSamples(a, "ev-a", b, "ev-b"));
  const auto ci = PairedIntervals(AllMetrics(2), p.a, p.b, 1000, 7);
  const std::vector<std::pair<double, double>> want = {{0.5, 1.0}, {0.5, 1.0}, {0.0, 1.0},
                                                       {0.0, 1.0}, {0.0, 1.0}, {-1.0, 0.5},
                                                       {0.0, 0.5}, {0.0, 0.5}};
  for (size_t m = 0; m < want.size(); ++m) {
    ASSERT_TRUE(ci[m].has_value()) << m;
    EXPECT_NEAR(ci[m]->lo, want[m].first, 1e-12) << MetricName(AllMetrics(2)[m]);
    EXPECT_NEAR(ci[m]->hi, want[m].second, 1e-12) << MetricName(AllMetrics(2)[m]);
  }
  EXPECT_STREQ(DifferenceVerdict(ci[0]), "better");  // accept length: every sample gained
  EXPECT_STREQ(DifferenceVerdict(ci[5]), "no detectable difference");
  EXPECT_STREQ(DifferenceVerdict(types::Interval{-0.3, -0.1}), "worse");
}

TEST_F(BootstrapTest, PairedIdenticalResultsGiveZero) {
  const types::EvalResult a = CaseA();
  ASSERT_OK_AND_ASSIGN(PairedUnits p, PairSamples(a, "ev-a", a, "ev-a2"));
  for (const auto& ci : PairedIntervals(AllMetrics(2), p.a, p.b, 200, 1)) {
    ASSERT_TRUE(ci.has_value());
    EXPECT_EQ(ci->lo, 0.0);
    EXPECT_EQ(ci->hi, 0.0);
  }
}

TEST_F(BootstrapTest, PairingRefusals) {
  types::EvalResult a = CaseA(), b = CaseB();
  b.dataset_fingerprint = "other";
  EXPECT_THAT(PairSamples(a, "ev-a", b, "ev-b").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "cannot pair ev-a and ev-b: they were scored on different datasets (ds vs "
                       "other)"));
  b = CaseB();
  b.per_sample.erase(b.per_sample.begin());  // b lacks sample 0
  b.per_sample[2].blocks = 1;                // and has sample 3
  EXPECT_THAT(PairSamples(a, "ev-a", b, "ev-b").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "cannot pair ev-a and ev-b: they scored different samples (only ev-a: [0]; "
                       "only ev-b: [3]); compare jobs with the same max_samples on the same "
                       "dataset"));
  b = CaseB();
  for (types::SampleSummary& s : b.per_sample) s.counted.clear();
  EXPECT_THAT(PairSamples(a, "ev-a", b, "ev-b").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("cannot pair ev-b: its record has no per-sample counts")));
}

TEST_F(BootstrapTest, ParseMetric) {
  EXPECT_EQ(ParseMetric("tau", 3)->kind, MetricKind::kTau);
  EXPECT_EQ(ParseMetric("accept_length", 3)->kind, MetricKind::kAcceptLength);
  EXPECT_EQ(ParseMetric("acceptance[3]", 3)->position, 3);
  EXPECT_EQ(MetricName(*ParseMetric("conditional[2]", 3)), "conditional[2]");
  EXPECT_THAT(ParseMetric("acceptance[4]", 3).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "metric 'acceptance[4]' is not accept_length, tau, accuracy[j], "
                       "acceptance[j] or conditional[j] with j in 1..3"));
  EXPECT_FALSE(ParseMetric("acceptance", 3).ok());
  EXPECT_FALSE(ParseMetric("taux", 3).ok());
}

TEST_F(BootstrapTest, AccumulatorKeepsPerSampleCounts) {
  MetricsAccumulator acc(3);  // B = 3: positions j = 1, 2
  acc.BeginSample(0, 10, 2);
  BlockOutcome b;
  b.sample = 0;
  b.correct = {1, 0};  // n = 1
  acc.Add(b);
  b.correct = {0, 1};  // n = 0
  acc.Add(b);
  const types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  ASSERT_EQ(r.per_sample.size(), 1u);
  const types::SampleSummary& s = r.per_sample[0];
  EXPECT_EQ(s.accepted_total, 3);
  EXPECT_EQ(s.counted, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.correct, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(s.accepted, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(s.conditional_counted, (std::vector<int64_t>{2, 1}));
}

}  // namespace
}  // namespace dflash::eval
