// block_scorer's sampled-acceptance hook: for each drafted slot j of a
// block at anchor a it gathers the target's final hidden state at a + j - 1
// and stores the slot's alphas per setting; checked against SlotAlphas on
// rows gathered by hand, with absent slots and blocks without a final
// hidden state.
#include "eval/sampled_alphas.h"

#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "eval/sampling_distributions.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

class SampledAlphasTest : public ::testing::Test {
 protected:
  void SetUp() override {
    world_ = std::make_unique<dflash::testing::TinyWorld>(dflash::testing::MakeTinyWorld({}));
    auto drafter = model::DrafterModel::Create(world_->cfg, world_->weights);
    ASSERT_OK(drafter.status());
    drafter_ = std::make_unique<model::DrafterModel>(*std::move(drafter));
    target_ = world_->Target();
    at::manual_seed(2);
    final_ = at::randn({10, world_->spec.hidden});
    tokens_ = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  }

  std::unique_ptr<dflash::testing::TinyWorld> world_;
  std::unique_ptr<model::DrafterModel> drafter_;
  weights::TargetTensors target_;
  at::Tensor final_;
  std::vector<int64_t> tokens_;
};

TEST_F(SampledAlphasTest, EachSlotReadsTheFinalHiddenStateBeforeIt) {
  const int64_t J = 3, H = world_->spec.hidden;
  // Block 0 at anchor 2 (slots 1..3 exist); block 1 has no final hidden
  // state; block 2 at anchor 6 ends at 8 (slot 1 exists, 2 and 3 do not).
  const std::vector<BlockRequest> blocks = {
      {0, 2, 10, &tokens_, &final_}, {1, 4, 10, &tokens_, nullptr}, {2, 6, 8, &tokens_, &final_}};
  const at::Tensor h = at::randn({3 * J, H});
  std::vector<BlockScore> scores(3);
  scores[0].correct = {1, 0, 1};
  scores[1].correct = {1};
  scores[2].correct = {0};  // measured slots: the alphas follow them
  const std::vector<types::SamplingSetting> settings = {{1.0, 1.0, 0}, {0.0, 1.0, 0}};
  AddSampledAlphas(blocks, h, *drafter_, target_, settings, /*norm_applied=*/true, scores);

  // By hand: block 0's slots read rows 2, 3, 4; block 2's slot 1 row 6.
  SlotAlphaInputs in;
  in.drafter_hidden = at::cat({h.narrow(0, 0, 3), h.narrow(0, 6, 1)});
  in.target_hidden = final_.index_select(0, at::tensor(std::vector<int64_t>{2, 3, 4, 6}));
  in.norm_applied = true;
  const at::Tensor want = SlotAlphas(in, *drafter_, target_, settings);  // [4, 2]
  ASSERT_EQ(scores[0].alpha.size(), 2u);
  for (int64_t s = 0; s < 2; ++s) {
    ASSERT_EQ(scores[0].alpha[s].size(), 3u);
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_NEAR(scores[0].alpha[s][j], want[j][s].item<float>(), 1e-6) << s << " " << j;
    }
    ASSERT_EQ(scores[2].alpha[s].size(), 1u);
    EXPECT_NEAR(scores[2].alpha[s][0], want[3][s].item<float>(), 1e-6) << s;
  }
  EXPECT_TRUE(scores[1].alpha.empty());
}

TEST_F(SampledAlphasTest, NothingToDoWithoutBlocksOrFinalStates) {
  std::vector<BlockScore> none;
  AddSampledAlphas({}, at::zeros({0, 16}), *drafter_, target_, {{1.0, 1.0, 0}}, true, none);
  EXPECT_TRUE(none.empty());
  std::vector<BlockScore> one(1);
  one[0].correct = {1};
  AddSampledAlphas({{0, 1, 5, &tokens_, nullptr}}, at::zeros({3, 16}), *drafter_, target_,
                   {{1.0, 1.0, 0}}, true, one);
  EXPECT_TRUE(one[0].alpha.empty());
}

}  // namespace
}  // namespace dflash::eval
