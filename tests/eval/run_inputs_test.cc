// What both evaluation modes read from the options and each sample: the
// block size and sample count, the first response position, host copies of
// masks and tokens, which slots are scored under each option, and a scored
// block as the metrics see it.
#include "eval/run_inputs.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;

TEST(RunInputsTest, FirstResponseIsTheFirstMaskedPosition) {
  EXPECT_EQ(FirstResponse({0, 0, 1, 0, 1}), 2);
  EXPECT_EQ(FirstResponse({1}), 0);
  EXPECT_EQ(FirstResponse({0, 0}), -1);
  EXPECT_EQ(FirstResponse({}), -1);
}

TEST(RunInputsTest, HostCopiesConvertDtypes) {
  EXPECT_THAT(MaskOnHost(at::tensor(std::vector<int64_t>{0, 1, 1}).to(at::kBool)),
              ElementsAre(0, 1, 1));
  EXPECT_THAT(MaskOnHost(at::tensor(std::vector<int64_t>{1, 0})), ElementsAre(1, 0));
  // A non-contiguous view is read in its logical order.
  const at::Tensor ids = at::tensor(std::vector<int>{5, 6, 7, 8}).view({2, 2}).t().reshape({-1});
  EXPECT_THAT(TokensOnHost(ids), ElementsAre(5, 7, 6, 8));
  EXPECT_THAT(TokensOnHost(at::tensor(std::vector<int>{3, 4}).narrow(0, 1, 1)), ElementsAre(4));
}

// Every slot when asked for, or when sampled acceptance reads each slot's
// alpha; to the first miss in replay and for acceptance only.
TEST(RunInputsTest, ScoredPositionsFollowTheOptions) {
  types::EvalOptions o;
  o.mode = types::Mode::kAnchor;
  o.metrics = types::MetricSet::kAll;
  EXPECT_EQ(ScoredPositions(o), Positions::kAll);
  o.metrics = types::MetricSet::kAcceptance;
  EXPECT_EQ(ScoredPositions(o), Positions::kToFirstMiss);
  o.metrics = types::MetricSet::kAll;
  o.mode = types::Mode::kReplay;
  EXPECT_EQ(ScoredPositions(o), Positions::kToFirstMiss);
  o.full_positions = true;
  EXPECT_EQ(ScoredPositions(o), Positions::kAll);
  o.full_positions = false;
  o.sampling = {{0.6, 0.95, 20}};
  EXPECT_EQ(ScoredPositions(o), Positions::kAll);
}

TEST(RunInputsTest, OutcomeCarriesEveryVerdict) {
  BlockScore s;
  s.positions = 5;
  s.correct = {1, 0};
  s.cross_entropy = {0.5f, 1.5f};
  s.unary_correct = {1, 1};
  s.covered = {1, 0};
  s.tf_correct = {0, 1};
  s.near_ties = 2;
  s.labels_in_vocab = 4;
  const BlockOutcome o = Outcome(7, 12, std::move(s), 3);
  EXPECT_EQ(o.sample, 7);
  EXPECT_EQ(o.anchor, 12);
  EXPECT_EQ(o.accept_cap, 3);
  EXPECT_THAT(o.correct, ElementsAre(1, 0));
  EXPECT_THAT(o.cross_entropy, ElementsAre(0.5f, 1.5f));
  EXPECT_THAT(o.unary_correct, ElementsAre(1, 1));
  EXPECT_THAT(o.covered, ElementsAre(1, 0));
  EXPECT_THAT(o.tf_correct, ElementsAre(0, 1));
  EXPECT_EQ(o.near_ties, 2);
  EXPECT_EQ(o.positions, 5);
  EXPECT_EQ(o.labels_in_vocab, 4);
}

TEST(RunInputsTest, BlockSizeAndSampleCountFromTheOptions) {
  const dflash::testing::TinyWorld w = dflash::testing::MakeTinyWorld({});
  ASSERT_OK_AND_ASSIGN(model::DrafterModel drafter, model::DrafterModel::Create(w.cfg, w.weights));
  types::EvalOptions o;
  EXPECT_EQ(BlockSize(drafter, o), 4);  // the drafter's
  o.block_size = 3;
  EXPECT_EQ(BlockSize(drafter, o), 3);
  dflash::testing::TempDir dir;
  w.WriteDataset(dir.Join("data"));
  data::DatasetLoadOptions lo;
  lo.path = dir.Join("data");
  ASSERT_OK_AND_ASSIGN(data::EvalDataset d, data::EvalDataset::Load(lo));
  EXPECT_EQ(NumSamples(d, o), 4u);  // 0: all
  o.max_samples = 2;
  EXPECT_EQ(NumSamples(d, o), 2u);
  o.max_samples = 9;
  EXPECT_EQ(NumSamples(d, o), 4u);
}

}  // namespace
}  // namespace dflash::eval
