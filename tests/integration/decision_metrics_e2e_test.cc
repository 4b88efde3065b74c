// Target consistency, sampled acceptance and the draft-length curve end to
// end (docs/decision-metrics.md): the real dflash-evald and dflash-eval on the
// tiny fixture's dataset-final (a final hidden state consistent with a greedy
// capture from `target`) and target-wronghead (a random lm_head), checked
// against the Python reference (tools/dflash_ref/decision_metrics.py).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"

namespace dflash {
namespace {

using ::dflash::testing::CommandResult;
using ::dflash::testing::ExpectNearEach;
using ::dflash::testing::ExpectSameMetrics;
using ::dflash::testing::RunReferenceEval;
using ::testing::HasSubstr;
using json = nlohmann::json;

class DecisionMetricsE2eTest : public testing::TinyServerTest {
 protected:
  static void SetUpTestSuite() {
    SetUpTinyServer({});
    ASSERT_EQ(Cli({"load-target", data_ + "/target", "--name", "tn", "--final-norm"}).exit_code, 0);
    ASSERT_EQ(
        Cli({"load-target", data_ + "/target-wronghead", "--name", "tw", "--final-norm"}).exit_code,
        0);
  }
};

TEST_F(DecisionMetricsE2eTest, LoadDatasetWithTargetPrintsTheConsistency) {
  CommandResult r =
      Cli({"load-dataset", data_ + "/dataset-final", "--name", "df1", "--target", "tn"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("target consistency with tn: 100.0% (221 of 221 response "
                               "positions where argmax(lm_head(final_norm h)) is the data's next "
                               "token)"));
  json normed =
      CliJson({"load-dataset", data_ + "/dataset-final-normed", "--name", "dfn", "--target", "tn"});
  EXPECT_EQ(normed["targetConsistency"]["fraction"].get<double>(), 1.0) << normed.dump();
  EXPECT_TRUE(normed["targetConsistency"]["normApplied"].get<bool>());
}

TEST_F(DecisionMetricsE2eTest, WrongLmHeadIsRefusedByData) {
  json loaded =
      CliJson({"load-dataset", data_ + "/dataset-final", "--name", "df2", "--target", "tw"});
  EXPECT_LT(loaded["targetConsistency"].value("fraction", 0.0), 0.05) << loaded.dump();
  CommandResult r = Cli({"eval", "--drafter", "m", "--dataset", "df2", "--target", "tw",
                         "--sampling", "t=0.6,p=0.95,k=20"});
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_THAT(
      r.err,
      HasSubstr("FAILED_PRECONDITION: target 'tw' reproduces dataset 'df2' at 0.0% of response "
                "positions (0 of 221); this evaluation needs the target's distribution and at "
                "least 90.0%. Likely causes: the data was captured from another target; the "
                "target's tensors were found under the wrong naming family; the final hidden "
                "state was captured after, not before, the final norm (the dataset says "
                "norm_applied false); or the responses were sampled rather than greedy"));
  // Greedy numbers need no target distribution: still allowed.
  EXPECT_EQ(Cli({"eval", "--drafter", "m", "--dataset", "df2", "--target", "tw"}).exit_code, 0);
}

TEST_F(DecisionMetricsE2eTest, DatasetWithoutFinalHiddenStateIsRefusedForSampling) {
  CommandResult r =
      Cli({"eval", "--drafter", "m", "--dataset", "d", "--target", "tn", "--sampling", "t=1"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("FAILED_PRECONDITION: dataset 'd' holds no final hidden state of "
                               "the target; the target's distribution needs one"));
}

TEST_F(DecisionMetricsE2eTest, SampledAcceptanceMatchesTheReferenceAndGreedyAtZero) {
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset-final", "--name", "df3"}).exit_code, 0);
  const std::vector<std::string> settings = {"--sampling",        "t=0",        "--sampling",
                                             "t=0.6,p=0.95,k=20", "--sampling", "t=1.0"};
  std::vector<std::string> args = {"eval",     "--drafter", "m",         "--dataset", "df3",
                                   "--target", "tn",        "--anchors", "all"};
  args.insert(args.end(), settings.begin(), settings.end());
  json got = CliJson(args);
  std::vector<std::string> ref_args = {"--mode", "anchor", "--anchors", "all"};
  ref_args.insert(ref_args.end(), settings.begin(), settings.end());
  json want = RunReferenceEval(data_, "drafter", "dataset-final", ref_args);
  ExpectSameMetrics(got, want);
  ASSERT_EQ(got["sampling"].size(), 3u) << got.dump();
  // T = 0 on a greedy capture is the greedy anchor-mode result, exactly.
  const json& greedy = got["sampling"][0];
  EXPECT_EQ(greedy["expectedAcceptLengthPooled"].get<double>(),
            got["acceptLengthPooled"].get<double>());
  EXPECT_DOUBLE_EQ(greedy["expectedTau"].get<double>(), got["tau"].get<double>());
  ExpectNearEach(greedy["draftLengthCurve"], got["draftLengthCurve"], 0, "T=0 curve");
  ExpectNearEach(got["draftLengthCurve"], want["draft_length_curve"], 1e-12, "greedy curve");
  for (size_t i = 0; i < 3; ++i) {
    const json& g = got["sampling"][i];
    const json& w = want["sampling"][i];
    EXPECT_NEAR(g["expectedAcceptLengthPooled"].get<double>(),
                w["expected_accept_length_pooled"].get<double>(), 1e-4)
        << i;
    EXPECT_NEAR(g["expectedTau"].get<double>(), w["expected_tau"].get<double>(), 1e-4) << i;
    ExpectNearEach(g["meanAlpha"], w["mean_alpha"], 1e-4, "mean alpha");
    ExpectNearEach(g["draftLengthCurve"], w["draft_length_curve"], 1e-4, "curve");
  }
  EXPECT_EQ(got["targetConsistency"]["fraction"].get<double>(), 1.0);
  // Human output: the sampled rows next to the greedy numbers.
  args.erase(args.end() - 4, args.end());
  args.push_back("--detail");
  CommandResult r = Cli(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sampled acceptance (expected; teacher-forced prefix"));
  EXPECT_THAT(r.out, HasSubstr("draft-length curve"));
}

TEST_F(DecisionMetricsE2eTest, Dflash2SampledAcceptanceMatchesTheReference) {
  ASSERT_EQ(Cli({"load-drafter", data_ + "/drafter2", "--name", "m2"}).exit_code, 0);
  ASSERT_EQ(Cli({"load-dataset", data_ + "/dataset2-final", "--name", "d2f"}).exit_code, 0);
  json got = CliJson({"eval", "--drafter", "m2", "--dataset", "d2f", "--target", "tn", "--anchors",
                      "all", "--sampling", "t=0", "--sampling", "t=0.7"});
  json want = RunReferenceEval(
      data_, "drafter2", "dataset2-final",
      {"--mode", "anchor", "--anchors", "all", "--sampling", "t=0", "--sampling", "t=0.7"});
  ExpectSameMetrics(got, want);
  ASSERT_EQ(got["sampling"].size(), 2u) << got.dump();
  EXPECT_EQ(got["sampling"][0]["expectedAcceptLengthPooled"].get<double>(),
            got["acceptLengthPooled"].get<double>());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NEAR(got["sampling"][i]["expectedAcceptLengthPooled"].get<double>(),
                want["sampling"][i]["expected_accept_length_pooled"].get<double>(), 1e-4);
    ExpectNearEach(got["sampling"][i]["meanAlpha"], want["sampling"][i]["mean_alpha"], 1e-4,
                   "mean alpha");
  }
}

}  // namespace
}  // namespace dflash
