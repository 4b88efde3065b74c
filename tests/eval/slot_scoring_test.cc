// ScoreSlots and the pipelined StartPending / ScoreNextSlices on a tiny
// lm_head: drafts, cross entropy and the DFlash 2 selector path against
// plain loops over the logits, absent labels, and where kToFirstMiss stops.
#include "eval/slot_scoring.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/candidate_selector.h"
#include "types/eval_types.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;
using ::testing::ElementsAreArray;

constexpr int64_t kV = 7, kH = 3, kJ = 5;

class SlotScoringTest : public ::testing::Test {
 protected:
  void SetUp() override {
    at::manual_seed(5);
    head_ = at::randn({kV, kH});
    hidden_ = at::randn({2, kJ, kH});
  }

  // logits[b][j][v] of hidden . head, in double by plain loops.
  double Logit(int64_t b, int64_t j, int64_t v) const {
    double s = 0;
    for (int64_t i = 0; i < kH; ++i) {
      s += hidden_[b][j][i].item<double>() * head_[v][i].item<double>();
    }
    return s;
  }
  int64_t Argmax(int64_t b, int64_t j) const {
    int64_t best = 0;
    for (int64_t v = 1; v < kV; ++v) {
      if (Logit(b, j, v) > Logit(b, j, best)) best = v;
    }
    return best;
  }
  double CrossEntropy(int64_t b, int64_t j, int64_t label) const {
    double z = 0;
    for (int64_t v = 0; v < kV; ++v) z += std::exp(Logit(b, j, v));
    return std::log(z) - Logit(b, j, label);
  }
  int64_t Wrong(int64_t b, int64_t j) const { return (Argmax(b, j) + 1) % kV; }

  // Block 0: right, right, wrong, right, right. Block 1: right, wrong,
  // right, then absent (3 positions).
  at::Tensor Labels() const {
    at::Tensor l = at::empty({2, kJ}, at::kLong);
    for (int64_t j = 0; j < kJ; ++j) l[0][j] = j == 2 ? Wrong(0, j) : Argmax(0, j);
    for (int64_t j = 0; j < kJ; ++j) l[1][j] = j >= 3 ? -1 : (j == 1 ? Wrong(1, j) : Argmax(1, j));
    return l;
  }
  SlotInputs Inputs() const { return {Labels(), at::tensor({1, 2}, at::kLong), nullptr}; }

  at::Tensor head_, hidden_;
};

TEST_F(SlotScoringTest, AllPositionsMatchTheLoopArgmaxAndCrossEntropy) {
  const VocabProjector proj(head_, {}, 0);
  const std::vector<BlockScore> s =
      ScoreSlots(hidden_, Inputs(), proj, Positions::kAll, /*cross_entropy=*/true);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].positions, 5);
  EXPECT_THAT(s[0].correct, ElementsAre(1, 1, 0, 1, 1));
  EXPECT_EQ(s[0].labels_in_vocab, 5);
  EXPECT_EQ(s[1].positions, 3);
  EXPECT_THAT(s[1].correct, ElementsAre(1, 0, 1));
  EXPECT_EQ(s[1].labels_in_vocab, 3);
  const at::Tensor labels = Labels();
  double max_diff = 0;
  for (int64_t b = 0; b < 2; ++b) {
    ASSERT_EQ(s[b].cross_entropy.size(), s[b].correct.size());
    for (int64_t j = 0; j < s[b].measured(); ++j) {
      const double want = CrossEntropy(b, j, labels[b][j].item<int64_t>());
      max_diff = std::max(max_diff, std::abs(s[b].cross_entropy[j] - want));
    }
  }
  EXPECT_LT(max_diff, 1e-5) << "max |diff| " << max_diff;
  EXPECT_TRUE(s[0].unary_correct.empty());  // DFlash 1: no selector fields
  EXPECT_TRUE(s[0].alpha.empty());
}

TEST_F(SlotScoringTest, ToFirstMissStopsAfterTheSliceOfTheMiss) {
  const VocabProjector proj(head_, {}, 0);
  // Slices of 2: block 0 misses at slot 3 (slice 3-4), block 1 at slot 2.
  const std::vector<BlockScore> s =
      ScoreSlots(hidden_, Inputs(), proj, Positions::kToFirstMiss, false, /*slice_width=*/2);
  EXPECT_THAT(s[0].correct, ElementsAre(1, 1, 0, 1));
  EXPECT_THAT(s[1].correct, ElementsAre(1, 0));
  EXPECT_EQ(s[1].positions, 3);
  EXPECT_TRUE(s[0].cross_entropy.empty());  // not asked for
}

// The request's default slice (types/, which cannot include this header)
// is the scorer's.
TEST(SlotScoringDefaults, RequestSliceIsTheScorersSlice) {
  EXPECT_EQ(types::EvalOptions{}.first_miss_slice, kSliceWidth);
}

TEST_F(SlotScoringTest, BlockWithoutLabelsHasNoPositions) {
  const VocabProjector proj(head_, {}, 0);
  SlotInputs in = Inputs();
  in.labels[1].fill_(-1);
  const std::vector<BlockScore> s = ScoreSlots(hidden_, in, proj, Positions::kAll, false);
  EXPECT_EQ(s[1].positions, 0);
  EXPECT_EQ(s[1].measured(), 0);
  EXPECT_EQ(s[1].labels_in_vocab, 0);
  EXPECT_THAT(s[0].correct, ElementsAre(1, 1, 0, 1, 1));
}

TEST_F(SlotScoringTest, PendingSlicesGiveWhatToFirstMissGives) {
  const VocabProjector proj(head_, {}, 0);
  std::vector<PendingSlots> pending = StartPending(hidden_, at::Tensor(), Labels(), proj);
  ASSERT_EQ(pending.size(), 2u);
  EXPECT_EQ(pending[1].score.positions, 3);
  EXPECT_FALSE(pending[0].done());
  std::vector<PendingSlots*> items = {&pending[0], &pending[1]};
  ScoreNextSlices(items, proj, 2);
  EXPECT_THAT(pending[0].score.correct, ElementsAre(1, 1));
  EXPECT_THAT(pending[1].score.correct, ElementsAre(1, 0));
  EXPECT_FALSE(pending[0].done());
  EXPECT_TRUE(pending[1].done());  // a miss
  ScoreNextSlices(items, proj, 2);
  ScoreNextSlices(items, proj, 2);  // nothing left to score: no change
  EXPECT_THAT(pending[0].score.correct, ElementsAre(1, 1, 0, 1));
  EXPECT_THAT(pending[1].score.correct, ElementsAre(1, 0));
  EXPECT_TRUE(pending[0].done());
}

TEST_F(SlotScoringTest, PendingEndsAtTheLastPosition) {
  const VocabProjector proj(head_, {}, 0);
  at::Tensor labels = Labels();
  labels[0][2] = Argmax(0, 2);  // block 0 all right
  std::vector<PendingSlots> pending = StartPending(hidden_, at::Tensor(), labels, proj);
  std::vector<PendingSlots*> items = {&pending[0]};
  ScoreNextSlices(items, proj, 4);
  EXPECT_FALSE(pending[0].done());
  ScoreNextSlices(items, proj, 4);  // the one slot left
  EXPECT_THAT(pending[0].score.correct, ElementsAre(1, 1, 1, 1, 1));
  EXPECT_TRUE(pending[0].done());
}

// DFlash 2: the path walks the top-2 candidates of the loop logits with the
// selector; the unary chain is the argmax, covered is the label in the top 2.
TEST_F(SlotScoringTest, SelectorPathMatchesTheWalkOnLoopCandidates) {
  const VocabProjector proj(head_, {}, 0);
  model::SelectorWeights w;
  w.projection = at::randn({2, kH});
  w.predecessor = at::randn({kV, 2});
  w.successor = at::randn({kV, 2});
  w.top_k = 2;
  SlotInputs in = Inputs();
  in.selector = &w;
  // Candidates and their logits from the loops, sorted descending.
  at::Tensor unary = at::empty({2, kJ, 2}), cand = at::empty({2, kJ, 2}, at::kLong);
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t j = 0; j < kJ; ++j) {
      const int64_t first = Argmax(b, j);
      int64_t second = first == 0 ? 1 : 0;
      for (int64_t v = 0; v < kV; ++v) {
        if (v != first && Logit(b, j, v) > Logit(b, j, second)) second = v;
      }
      cand[b][j][0] = first;
      cand[b][j][1] = second;
      unary[b][j][0] = Logit(b, j, first);
      unary[b][j][1] = Logit(b, j, second);
    }
  }
  const model::SelectorWalk walk =
      model::WalkSelector(w, hidden_, unary, cand, in.anchors, in.labels);
  const std::vector<BlockScore> s = ScoreSlots(hidden_, in, proj, Positions::kAll, false);
  for (int64_t b = 0; b < 2; ++b) {
    SCOPED_TRACE(::testing::Message() << "block " << b);
    std::vector<uint8_t> correct, covered, tf;
    for (int64_t j = 0; j < s[b].positions; ++j) {
      const int64_t label = in.labels[b][j].item<int64_t>();
      correct.push_back(walk.path[b][j].item<int64_t>() == label);
      const bool cov =
          cand[b][j][0].item<int64_t>() == label || cand[b][j][1].item<int64_t>() == label;
      covered.push_back(cov);
      tf.push_back(cov && walk.teacher_forced[b][j].item<int64_t>() == label);
    }
    EXPECT_THAT(s[b].correct, ElementsAreArray(correct));
    EXPECT_THAT(s[b].covered, ElementsAreArray(covered));
    EXPECT_THAT(s[b].tf_correct, ElementsAreArray(tf));
  }
  EXPECT_THAT(s[0].unary_correct, ElementsAre(1, 1, 0, 1, 1));
  EXPECT_THAT(s[1].unary_correct, ElementsAre(1, 0, 1));
}

}  // namespace
}  // namespace dflash::eval
