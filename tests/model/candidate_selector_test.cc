// DFlash 2's candidate selector against a plain float64 reference written
// from dflash2-semantics.md §3 (loops, no torch ops): its scores, tie rule
// and greedy walk, and the near ties it reports.
#include "model/candidate_selector.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"

namespace dflash::model {
namespace {

TEST(DFlash2OpsTest, SelectorScoresWalkAndTieRuleMatchTheFloat64Reference) {
  at::manual_seed(11);
  const int64_t V = 20, r = 5, H = 6, k = 4, nb = 3, J = 4;
  SelectorWeights w;
  w.projection = at::randn({r, H});
  w.predecessor = at::randn({V, r});
  w.successor = at::randn({V, r});
  w.top_k = k;
  at::Tensor hidden = at::randn({nb, J, H});
  at::Tensor unary = at::randn({nb, J, k});
  at::Tensor cand = at::randint(0, V, {nb, J, k}, at::kLong);
  at::Tensor anchors = at::randint(0, V, {nb}, at::kLong);
  at::Tensor labels = at::randint(0, V, {nb, J}, at::kLong);
  SelectorWalk walk = WalkSelector(w, hidden, unary, cand, anchors, labels);

  // float64 reference of §3, one block and one slot at a time.
  const at::Tensor hd = hidden.to(at::kDouble), pd = w.projection.to(at::kDouble);
  const at::Tensor A = w.predecessor.to(at::kDouble), Bc = w.successor.to(at::kDouble);
  auto choose = [&](int64_t b, int64_t j, int64_t pred) {
    double best = -INFINITY;
    int64_t best_id = -1;
    for (int64_t c = 0; c < k; ++c) {
      const int64_t id = cand[b][j][c].item<int64_t>();
      double s = unary[b][j][c].item<double>();
      for (int64_t q = 0; q < r; ++q) {
        double eta = 0;
        for (int64_t i = 0; i < H; ++i) eta += pd[q][i].item<double>() * hd[b][j][i].item<double>();
        s += A[pred][q].item<double>() * eta * Bc[id][q].item<double>();
      }
      if (s > best + 1e-9 || (std::abs(s - best) <= 1e-9 && id < best_id)) {
        best = s;
        best_id = id;
      }
    }
    return best_id;
  };
  for (int64_t b = 0; b < nb; ++b) {
    int64_t pred = anchors[b].item<int64_t>();
    for (int64_t j = 0; j < J; ++j) {
      const int64_t want = choose(b, j, pred);
      EXPECT_EQ(walk.path[b][j].item<int64_t>(), want) << "block " << b << " slot " << j;
      const int64_t gold = j == 0 ? anchors[b].item<int64_t>() : labels[b][j - 1].item<int64_t>();
      EXPECT_EQ(walk.teacher_forced[b][j].item<int64_t>(), choose(b, j, gold));
      pred = want;
    }
  }
  // Exact ties go to the lower token id.
  at::Tensor scores = at::tensor(std::vector<float>{1.0f, 3.0f, 3.0f, 2.0f}).view({1, 4});
  at::Tensor ids = at::tensor(std::vector<int64_t>{5, 9, 4, 1}).view({1, 4});
  EXPECT_EQ(ChooseCandidate(scores, ids).item<int64_t>(), 4);
}

// S = U + sum_r A[p, r] eta[r] Bc[b, r], one row by hand: eta = (1, 2).
TEST(CandidateSelectorTest, ScoresByHand) {
  SelectorWeights w;
  w.predecessor = at::tensor({0.0f, 0.0f, 1.0f, -1.0f, 2.0f, 0.5f}).view({3, 2});
  w.successor = at::tensor({1.0f, 1.0f, 0.0f, 2.0f, 3.0f, 0.0f}).view({3, 2});
  w.top_k = 2;
  const at::Tensor eta = at::tensor({1.0f, 2.0f}).view({1, 2});
  const at::Tensor unary = at::tensor({0.5f, 0.25f}).view({1, 2});
  const at::Tensor cand = at::tensor({int64_t{1}, int64_t{2}}).view({1, 2});
  // p = 1: A eta = (1, -2); Bc[1] = (0, 2): -4; Bc[2] = (3, 0): 3.
  const at::Tensor s = SelectorScores(w, eta, at::tensor({int64_t{1}}), unary, cand);
  EXPECT_FLOAT_EQ(s[0][0].item<float>(), 0.5f - 4.0f);
  EXPECT_FLOAT_EQ(s[0][1].item<float>(), 0.25f + 3.0f);
  EXPECT_EQ(ChooseCandidate(s, cand).item<int64_t>(), 2);
  // p = 0: A = 0, the unary logits decide.
  const at::Tensor s0 = SelectorScores(w, eta, at::tensor({int64_t{0}}), unary, cand);
  EXPECT_EQ(ChooseCandidate(s0, cand).item<int64_t>(), 1);
}

// Two candidates with the same unary logit and no selector term: a near tie
// (exact), chosen by the lower id; with k = 1 there is never a near tie.
TEST(CandidateSelectorTest, NearTiesAreReported) {
  SelectorWeights w;
  w.projection = at::zeros({1, 2});
  w.predecessor = at::zeros({4, 1});
  w.successor = at::zeros({4, 1});
  w.top_k = 2;
  const at::Tensor hidden = at::zeros({1, 2, 2});
  const at::Tensor unary = at::tensor({1.0f, 1.0f, 2.0f, 1.0f}).view({1, 2, 2});
  const at::Tensor cand = at::tensor(std::vector<int64_t>{3, 2, 0, 1}).view({1, 2, 2});
  const at::Tensor anchors = at::tensor({int64_t{0}});
  const at::Tensor labels = at::tensor(std::vector<int64_t>{2, -1}).view({1, 2});
  SelectorWalk walk = WalkSelector(w, hidden, unary, cand, anchors, labels);
  EXPECT_EQ(walk.path[0][0].item<int64_t>(), 2);
  EXPECT_EQ(walk.path[0][1].item<int64_t>(), 0);
  EXPECT_TRUE(walk.near_tie[0][0].item<bool>());
  EXPECT_FALSE(walk.near_tie[0][1].item<bool>());
  w.top_k = 1;
  walk = WalkSelector(w, hidden, unary.narrow(2, 0, 1), cand.narrow(2, 0, 1), anchors, labels);
  EXPECT_EQ(walk.path[0][0].item<int64_t>(), 3);
  EXPECT_FALSE(walk.near_tie[0][0].item<bool>());
}

}  // namespace
}  // namespace dflash::model
