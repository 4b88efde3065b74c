// BlockScorer on the tiny world: blocks of several sequences in one call,
// truncated blocks (positions past `end` neither compared nor returned),
// zlab-current's shortened blocks against the reference drafter run on the
// shortened block, cross-entropy against the reference logits, and the
// chunk-size arithmetic.
#include "eval/block_scorer.h"

#include <memory>
#include <vector>

#include <ATen/ATen.h>

#include "data/eval_dataset.h"
#include "eval/reference_walk.h"
#include "eval/tiny_eval_world.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

using ::dflash::eval::testing::RefBlock;
using ::dflash::eval::testing::ReferenceDrafts;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TinyWorld;
using ::testing::ElementsAre;
using types::Semantics;

class BlockScorerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = testing::LoadTinyEvalWorld(4);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    all_ = loaded->release();
    world_ = all_->world.get();
    dataset_ = all_->dataset.get();
    drafter_ = all_->drafter.get();
    target_ = all_->target.get();
    ref_ = all_->ref.get();
  }
  static void TearDownTestSuite() { delete all_; }

  static BlockScorer Scorer(Semantics s, int64_t budget = 64ll << 20, int64_t B = 4) {
    return BlockScorer(*drafter_, *target_, *dataset_, B, budget, s);
  }
  static BlockRequest Req(int64_t seq_in_cache, size_t sample, int64_t anchor, int64_t end) {
    return BlockRequest{seq_in_cache, anchor, end, &world_->tokens[sample]};
  }

  // The expected correct flags and cross-entropies of one block.
  static void ExpectBlock(const BlockScore& got, size_t sample, int64_t anchor, int64_t end,
                          int64_t len) {
    SCOPED_TRACE(::testing::Message() << "sample " << sample << " anchor " << anchor);
    const RefBlock& rb = ref_->Block(sample, anchor, len);
    ASSERT_GT(rb.min_margin, 1e-3);
    const size_t m = static_cast<size_t>(std::max<int64_t>(0, std::min(len, end - anchor) - 1));
    ASSERT_EQ(got.correct.size(), m);
    ASSERT_EQ(got.cross_entropy.size(), m);
    for (size_t j = 1; j <= m; ++j) {
      const int64_t label = world_->tokens[sample][anchor + j];
      EXPECT_EQ(got.correct[j - 1], rb.drafts[j - 1] == label) << "j " << j;
      const std::vector<double>& lg = rb.logits[j - 1];
      double mx = lg[0];
      for (double x : lg) mx = std::max(mx, x);
      double z = 0;
      for (double x : lg) z += std::exp(x - mx);
      EXPECT_NEAR(got.cross_entropy[j - 1], mx + std::log(z) - lg[label], 1e-4) << "j " << j;
    }
    EXPECT_TRUE(got.unary_correct.empty());  // DFlash 1: no selector metrics
    EXPECT_TRUE(got.covered.empty());
    EXPECT_EQ(got.near_ties, 0);
  }

  static TinyWorld* world_;
  static testing::TinyEvalWorld* all_;  // owns what the pointers below show
  static data::EvalDataset* dataset_;
  static model::DrafterModel* drafter_;
  static weights::TargetTensors* target_;
  static ReferenceDrafts* ref_;
};

TinyWorld* BlockScorerTest::world_ = nullptr;
testing::TinyEvalWorld* BlockScorerTest::all_ = nullptr;
data::EvalDataset* BlockScorerTest::dataset_ = nullptr;
model::DrafterModel* BlockScorerTest::drafter_ = nullptr;
weights::TargetTensors* BlockScorerTest::target_ = nullptr;
ReferenceDrafts* BlockScorerTest::ref_ = nullptr;

TEST_F(BlockScorerTest, EncodeSamplesPadsToTheLongest) {
  const BlockScorer scorer = Scorer(Semantics::kZlabCurrent);
  ASSERT_OK_AND_ASSIGN(model::ContextCache ctx, scorer.EncodeSamples({3, 1}));
  EXPECT_THAT(ctx.lengths, ElementsAre(17, 11));
  EXPECT_EQ(ctx.max_len, 17);
  ASSERT_EQ(ctx.k.size(), 2u);                              // one per drafter layer
  EXPECT_THAT(ctx.k[0].sizes(), ElementsAre(2, 1, 17, 8));  // [S, nkv, max_len, d]
}

TEST_F(BlockScorerTest, ScoresBlocksOfSeveralSequencesUnderZlab2025) {
  const BlockScorer scorer = Scorer(Semantics::kZlab2025);
  ASSERT_OK_AND_ASSIGN(model::ContextCache ctx, scorer.EncodeSamples({0, 3}));
  // Sample 0 (L = 14), sample 3 (L = 17); full blocks, truncated ones, one
  // at L - 1 (nothing to compare) and one cut by a shorter end (L').
  const std::vector<BlockRequest> blocks = {Req(0, 0, 3, 14),  Req(1, 3, 5, 17), Req(0, 0, 12, 14),
                                            Req(1, 3, 16, 17), Req(1, 3, 7, 9),  Req(0, 0, 0, 14)};
  ASSERT_OK_AND_ASSIGN(std::vector<BlockScore> got,
                       scorer.Score(blocks, ctx, CrossEntropy::kCompute));
  ASSERT_EQ(got.size(), blocks.size());
  const std::vector<size_t> sample = {0, 3, 0, 3, 3, 0};
  for (size_t b = 0; b < blocks.size(); ++b) {
    // zlab-2025: every block has B slots, whatever its end.
    ExpectBlock(got[b], sample[b], blocks[b].anchor, blocks[b].end, 4);
  }
  EXPECT_EQ(got[2].correct.size(), 1u);
  EXPECT_TRUE(got[3].correct.empty());
  EXPECT_EQ(got[4].correct.size(), 1u);
}

TEST_F(BlockScorerTest, ZlabCurrentShortensTheLastBlocks) {
  const BlockScorer scorer = Scorer(Semantics::kZlabCurrent);
  ASSERT_OK_AND_ASSIGN(model::ContextCache ctx, scorer.EncodeSamples({0}));
  const std::vector<BlockRequest> blocks = {Req(0, 0, 5, 14), Req(0, 0, 11, 14), Req(0, 0, 12, 14),
                                            Req(0, 0, 6, 8)};
  ASSERT_OK_AND_ASSIGN(std::vector<BlockScore> got,
                       scorer.Score(blocks, ctx, CrossEntropy::kCompute));
  // Lengths min(B, end - a): 4, 3, 2, 2; the reference runs the same
  // shortened block (its slots see only each other).
  ExpectBlock(got[0], 0, 5, 14, 4);
  ExpectBlock(got[1], 0, 11, 14, 3);
  ExpectBlock(got[2], 0, 12, 14, 2);
  ExpectBlock(got[3], 0, 6, 8, 2);
}

TEST_F(BlockScorerTest, CrossEntropySkippedWhenNotAsked) {
  const BlockScorer scorer = Scorer(Semantics::kZlabCurrent);
  ASSERT_OK_AND_ASSIGN(model::ContextCache ctx, scorer.EncodeSamples({0}));
  ASSERT_OK_AND_ASSIGN(std::vector<BlockScore> got,
                       scorer.Score({Req(0, 0, 3, 14)}, ctx, CrossEntropy::kSkip));
  EXPECT_EQ(got[0].correct.size(), 3u);
  EXPECT_TRUE(got[0].cross_entropy.empty());
}

// A context projected only up to the blocks' anchors gives the same scores
// as the whole context.
TEST_F(BlockScorerTest, TrimmedContextGivesTheSameScores) {
  for (Semantics sem : {Semantics::kZlabCurrent, Semantics::kZlab2025}) {
    const BlockScorer scorer = Scorer(sem);
    ASSERT_OK_AND_ASSIGN(model::ContextCache whole, scorer.EncodeSamples({0, 3}));
    const std::vector<int64_t> needed = {5, 7};
    ASSERT_OK_AND_ASSIGN(model::ContextCache cut, scorer.EncodeSamples({0, 3}, &needed));
    EXPECT_THAT(cut.lengths, ElementsAre(5, 7));
    EXPECT_EQ(cut.max_len, 7);
    const std::vector<BlockRequest> blocks = {Req(0, 0, 3, 14), Req(0, 0, 5, 14), Req(1, 3, 7, 17),
                                              Req(1, 3, 0, 17)};
    ASSERT_OK_AND_ASSIGN(auto a, scorer.Score(blocks, whole, CrossEntropy::kCompute));
    ASSERT_OK_AND_ASSIGN(auto b, scorer.Score(blocks, cut, CrossEntropy::kCompute));
    for (size_t i = 0; i < blocks.size(); ++i) {
      EXPECT_EQ(a[i].correct, b[i].correct) << i;
      ASSERT_EQ(a[i].cross_entropy.size(), b[i].cross_entropy.size());
      for (size_t j = 0; j < a[i].cross_entropy.size(); ++j) {
        EXPECT_NEAR(a[i].cross_entropy[j], b[i].cross_entropy[j], 1e-5);
      }
    }
    // A block past the projected context is refused, not read out of bounds.
    EXPECT_THAT(scorer.Score({Req(0, 0, 6, 14)}, cut, CrossEntropy::kSkip),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         "block 0 has anchor 6; sequence 0 has 5 context positions"));
  }
}

// Scored to the first miss, a block's verdicts are the full computation's
// up to the end of the slice holding its first miss.
TEST_F(BlockScorerTest, ToFirstMissStopsAfterTheSliceOfTheMiss) {
  const BlockScorer scorer = Scorer(Semantics::kZlabCurrent);
  ASSERT_OK_AND_ASSIGN(model::ContextCache ctx, scorer.EncodeSamples({0, 3}));
  std::vector<BlockRequest> blocks;
  for (int64_t a = 3; a < 13; ++a) blocks.push_back(Req(0, 0, a, 14));
  for (int64_t a = 5; a < 16; ++a) blocks.push_back(Req(1, 3, a, 17));
  ASSERT_OK_AND_ASSIGN(auto full, scorer.Score(blocks, ctx, CrossEntropy::kSkip));
  int64_t cut_short = 0;
  for (int64_t slice : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(
        auto cut, scorer.Score(blocks, ctx, CrossEntropy::kSkip, Positions::kToFirstMiss, slice));
    for (size_t i = 0; i < blocks.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "block " << i << " slice " << slice);
      const std::vector<uint8_t>& f = full[i].correct;
      EXPECT_EQ(cut[i].positions, static_cast<int64_t>(f.size()));
      size_t miss = 0;
      while (miss < f.size() && f[miss]) ++miss;
      const size_t want =
          miss == f.size() ? f.size() : std::min(f.size(), (miss / slice + 1) * slice);
      ASSERT_EQ(cut[i].correct.size(), want);
      EXPECT_TRUE(std::equal(f.begin(), f.begin() + want, cut[i].correct.begin()));
      cut_short += want < f.size();
    }
  }
  EXPECT_GT(cut_short, 0);  // the test would prove little if no block stopped early
}

// per block: heads x B x (context + B) score elements (logits have their
// own budget); here heads 2, B 4.
TEST_F(BlockScorerTest, BlocksPerChunkFollowsTheBudget) {
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 1000).BlocksPerChunk(10), 1000 / 112);
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 1000).BlocksPerChunk(0), 1000 / 32);
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 1).BlocksPerChunk(10), 1);
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 0).BlocksPerChunk(10), 1);
  // Groups: the longest sample (17) decides, at most 256 sequences.
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 1000).SequencesPerGroup(), 1000 / (2 * 4 * 21));
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent).SequencesPerGroup(), 256);
  EXPECT_EQ(Scorer(Semantics::kZlabCurrent, 1000, 2).block_size(), 2);
}

}  // namespace
}  // namespace dflash::eval
