// Suite resolution and the macro average (docs/decision-metrics-stats.md §5),
// on hand-made results with hand-computed answers.
#include "core/suite_job.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

class SuiteJobTest : public ::testing::Test {};

TEST_F(SuiteJobTest, ResolvesCommaListsAndConfiguredSuites) {
  const SuiteMap suites = {{"reasoning", {"gsm8k", "math500"}}, {"d", {"x", "y"}}};
  const std::vector<std::string> resident = {"gsm8k", "math500", "d"};
  EXPECT_THAT(*ResolveSuite("gsm8k, math500", suites, resident), ElementsAre("gsm8k", "math500"));
  EXPECT_THAT(*ResolveSuite("reasoning", suites, resident), ElementsAre("gsm8k", "math500"));
  EXPECT_THAT(*ResolveSuite("gsm8k", suites, resident), IsEmpty());    // one dataset
  EXPECT_THAT(*ResolveSuite("d", suites, resident), IsEmpty());        // a resident dataset wins
  EXPECT_THAT(*ResolveSuite("unknown", suites, resident), IsEmpty());  // fails later, by name
  EXPECT_THAT(
      ResolveSuite("a,,b", suites, resident).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, "suite 'a,,b' has an empty dataset name"));
  EXPECT_THAT(
      ResolveSuite("a,b,a", suites, resident).status(),
      StatusIs(absl::StatusCode::kInvalidArgument, "suite 'a,b,a' names dataset 'a' twice"));
}

types::EvalResult Part(double accept, double tau, int64_t blocks, std::vector<double> acceptance) {
  types::EvalResult r;
  r.accept_length_pooled = accept;
  r.tau = tau;
  r.blocks = blocks;
  r.samples = 2;
  for (size_t j = 0; j < acceptance.size(); ++j) {
    types::PositionMetrics p;
    p.position = static_cast<int>(j + 1);
    p.counted = blocks;
    p.acceptance = acceptance[j];
    r.positions.push_back(p);
  }
  return r;
}

TEST_F(SuiteJobTest, MacroAverageIsTheUnweightedMeanOverDatasets) {
  // d1: 3.0 over 100 blocks, d2: 2.0 over 10: macro 2.5 (pooled would be 2.91).
  types::EvalResult m = MacroAverage(
      "d1,d2", {{"d1", Part(3.0, 2.8, 100, {0.8, 0.6})}, {"d2", Part(2.0, 2.2, 10, {0.4})}});
  EXPECT_EQ(m.suite, "d1,d2");
  EXPECT_DOUBLE_EQ(m.accept_length_pooled, 2.5);
  EXPECT_DOUBLE_EQ(m.tau, 2.5);
  EXPECT_EQ(m.blocks, 110);
  EXPECT_EQ(m.samples, 4);
  ASSERT_EQ(m.positions.size(), 2u);
  EXPECT_DOUBLE_EQ(m.positions[0].acceptance, 0.6);  // (0.8 + 0.4) / 2
  EXPECT_DOUBLE_EQ(m.positions[1].acceptance, 0.6);  // only d1 has j = 2
  EXPECT_EQ(m.positions[0].counted, 110);
  ASSERT_EQ(m.suite_results.size(), 2u);
  EXPECT_EQ(m.suite_results[1].dataset, "d2");
  EXPECT_FALSE(m.accept_length_ci.has_value());
}

}  // namespace
}  // namespace dflash::core
