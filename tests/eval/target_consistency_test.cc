// The target-consistency check on a dataset written in the test whose final
// hidden states point the target at chosen tokens: the fraction counted by
// hand, the logits against a plain loop (with and without the final norm),
// each missing input and the refusal below the threshold, with exact messages.
#include "eval/target_consistency.h"

#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/torch_save_writer.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::StatusIs;

std::string Raw(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.nbytes());
}

class TargetConsistencyTest : public ::testing::Test {
 public:
  // The model's shape (members, not file constants: a folder's tests
  // compile as one unity batch, cmake/unity.cmake).
  static constexpr int64_t kV = 5, kH = 5;

 protected:
  // lm_head = 2 * identity and norm ones: row e_t (times any scale) gives
  // argmax t, with or without the norm.
  static weights::TargetTensors Target() {
    weights::TargetTensors t;
    t.lm_head = at::eye(kV) * 2;
    t.embed = t.lm_head;
    t.norm = at::ones({kH});
    t.vocab_size = kV;
    t.hidden_size = kH;
    return t;
  }

  // Two samples: tokens 0 1 2 3 4 (mask 0 0 1 1 1) and 4 3 2 (mask 1 1 1).
  // The final hidden row p points at t[p + 1], except sample 0's row 3.
  // Response rows: sample 0 p = 1, 2, 3 (one wrong), sample 1 p = 0, 1.
  data::EvalDataset Load(const std::string& final_json, int64_t hidden = kH) {
    dir_.WriteFile("d/dataset.json", R"({"hidden_size": )" + std::to_string(hidden) +
                                         R"(, "features": {"hidden_states": [1]})" + final_json +
                                         "}");
    const std::vector<std::vector<int64_t>> tokens = {{0, 1, 2, 3, 4}, {4, 3, 2}};
    const std::vector<std::vector<int64_t>> masks = {{0, 0, 1, 1, 1}, {1, 1, 1}};
    for (size_t s = 0; s < tokens.size(); ++s) {
      const int64_t L = static_cast<int64_t>(tokens[s].size());
      at::Tensor final = at::zeros({L, hidden});
      for (int64_t p = 0; p + 1 < L; ++p) {
        const int64_t want = s == 0 && p == 3 ? 0 : tokens[s][p + 1];
        if (want < hidden) final[p][want] = 3.0f;
      }
      dflash::testing::TorchSaveWriter w;
      w.Add("input_ids", "LongStorage", {L}, Raw(at::tensor(tokens[s])), 8)
          .Add("loss_mask", "LongStorage", {L}, Raw(at::tensor(masks[s])), 8)
          .Add("hidden_states", "FloatStorage", {L, hidden}, Raw(at::randn({L, hidden})), 4)
          .Add("final", "FloatStorage", {L, hidden}, Raw(final), 4);
      w.WriteTo(dir_.Join("d/data_" + std::to_string(s) + ".ckpt"));
    }
    data::DatasetLoadOptions o;
    o.name = "tiny";
    o.path = dir_.Join("d");
    absl::StatusOr<data::EvalDataset> d = data::EvalDataset::Load(o);
    EXPECT_OK(d.status());
    return *std::move(d);
  }

  dflash::testing::TempDir dir_;
};

constexpr char kBeforeNorm[] = R"(, "final_hidden_state": {"key": "final", "norm_applied": false})";
constexpr char kAfterNorm[] = R"(, "final_hidden_state": {"key": "final", "norm_applied": true})";

TEST_F(TargetConsistencyTest, CountsResponsePositionsThatReproduceTheNextToken) {
  const data::EvalDataset d = Load(kBeforeNorm);
  ASSERT_OK_AND_ASSIGN(types::TargetConsistency c, ComputeTargetConsistency(Target(), d));
  EXPECT_EQ(c.positions, 5);
  EXPECT_EQ(c.matches, 4);
  EXPECT_DOUBLE_EQ(c.fraction, 0.8);
  EXPECT_FALSE(c.norm_applied);
  // One logit row per slice gives the same counts.
  ASSERT_OK_AND_ASSIGN(c, ComputeTargetConsistency(Target(), d, /*max_logit_elements=*/1));
  EXPECT_EQ(c.matches, 4);
}

TEST_F(TargetConsistencyTest, NormAppliedNeedsNoResidentNorm) {
  const data::EvalDataset d = Load(kAfterNorm);
  weights::TargetTensors t = Target();
  t.norm = at::Tensor();
  ASSERT_OK_AND_ASSIGN(types::TargetConsistency c, ComputeTargetConsistency(t, d));
  EXPECT_TRUE(c.norm_applied);
  EXPECT_EQ(c.matches, 4);
}

TEST_F(TargetConsistencyTest, LogitsMatchTheLoopWithAndWithoutTheNorm) {
  at::manual_seed(3);
  weights::TargetTensors t = Target();
  t.lm_head = at::randn({kV, kH});
  t.norm = at::rand({kH}) + 0.5;
  t.norm_eps = 1e-6;
  const at::Tensor h = at::randn({2, kH});
  const at::Tensor normed = TargetLogits(t, h, /*norm_applied=*/false);
  const at::Tensor plain = TargetLogits(t, h, /*norm_applied=*/true);
  double max_diff = 0;
  for (int64_t r = 0; r < 2; ++r) {
    double ms = 0;
    for (int64_t i = 0; i < kH; ++i) ms += h[r][i].item<double>() * h[r][i].item<double>() / kH;
    for (int64_t v = 0; v < kV; ++v) {
      double with = 0, without = 0;
      for (int64_t i = 0; i < kH; ++i) {
        const double x = h[r][i].item<double>(), w = t.lm_head[v][i].item<double>();
        without += x * w;
        with += t.norm[i].item<double>() * x / std::sqrt(ms + 1e-6) * w;
      }
      max_diff = std::max(max_diff, std::abs(plain[r][v].item<double>() - without));
      max_diff = std::max(max_diff, std::abs(normed[r][v].item<double>() - with));
    }
  }
  EXPECT_LT(max_diff, 1e-5) << "max |diff| " << max_diff;
}

TEST_F(TargetConsistencyTest, MissingInputsAreNamed) {
  const auto code = absl::StatusCode::kFailedPrecondition;
  EXPECT_THAT(ComputeTargetConsistency(Target(), Load("")),
              StatusIs(code,
                       "dataset 'tiny' holds no final hidden state of the target; the target's "
                       "distribution needs one: declare it in dataset.json, e.g. "
                       "\"final_hidden_state\": {\"key\": \"hidden_state\", \"norm_applied\": "
                       "false}"));
  weights::TargetTensors t = Target();
  t.norm = at::Tensor();
  EXPECT_THAT(CheckTargetDistributionInputs(t, Load(kBeforeNorm)),
              StatusIs(code,
                       "dataset 'tiny' holds the final hidden state before the final norm "
                       "('final', norm_applied false) but the target's final norm is not "
                       "resident; load the target with its final norm (load-target "
                       "--final-norm)"));
  EXPECT_THAT(CheckTargetDistributionInputs(Target(), Load(kBeforeNorm, 4)),
              StatusIs(code, "dataset 'tiny' has hidden size 4; the target's is 5"));
  EXPECT_OK(CheckTargetDistributionInputs(Target(), Load(kBeforeNorm)));
}

TEST_F(TargetConsistencyTest, RefusalBelowTheThresholdNamesTheCauses) {
  types::TargetConsistency c;
  c.positions = 8;
  c.matches = 6;
  c.fraction = 0.75;
  c.norm_applied = true;
  EXPECT_OK(RequireTargetConsistency(c, 0.75, "t", "d"));
  EXPECT_THAT(RequireTargetConsistency(c, 0.9, "qwen", "gsm8k"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "target 'qwen' reproduces dataset 'gsm8k' at 75.0% of response positions "
                       "(6 of 8); this evaluation needs the target's distribution and at least "
                       "90.0%. Likely causes: the data was captured from another target; the "
                       "target's tensors were found under the wrong naming family; the final "
                       "hidden state was captured before, not after, the final norm (the "
                       "dataset says norm_applied true); or the responses were sampled rather "
                       "than greedy"));
  c.norm_applied = false;
  EXPECT_THAT(RequireTargetConsistency(c, 0.9, "qwen", "gsm8k"),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::HasSubstr("captured after, not before, the final norm (the "
                                            "dataset says norm_applied false)")));
  // No response position at all is never consistent.
  EXPECT_THAT(RequireTargetConsistency({}, 0.0, "t", "d").code(),
              absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace dflash::eval
