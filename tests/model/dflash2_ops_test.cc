// DFlash 2's building blocks against a plain float64 reference written from
// dflash2-semantics.md §3 (loops, no torch ops): the grouped dynamic causal
// conv (both sides, block-local taps) and the candidate selector's scores,
// tie rule and greedy walk.
#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "model/candidate_selector.h"
#include "model/tensor_ops.h"

namespace dflash::model {
namespace {

// conv_side(y)[t, ch] = sum_tap (base[side, tap, ch] + D[t, side, tap, ch / gs]) * y[t - tap, ch]
// with D = h @ proj^T viewed [L, 2, K, G]; y[t - tap] = 0 before row 0.
std::vector<double> RefConv(const at::Tensor& y, const at::Tensor& h, const at::Tensor& base,
                            const at::Tensor& proj, int side, int64_t gs) {
  const int64_t L = y.size(0), H = y.size(1), K = base.size(1), G = H / gs;
  auto Y = y.accessor<double, 2>();
  auto Hh = h.accessor<double, 2>();
  auto Bk = base.accessor<double, 3>();
  auto P = proj.accessor<double, 2>();
  std::vector<double> out(L * H, 0.0);
  for (int64_t t = 0; t < L; ++t) {
    for (int64_t ch = 0; ch < H; ++ch) {
      double acc = 0;
      for (int64_t tap = 0; tap < K; ++tap) {
        if (t - tap < 0) continue;
        const int64_t row = (side * K + tap) * G + ch / gs;  // rows (side, tap, group)
        double d = 0;
        for (int64_t i = 0; i < H; ++i) d += P[row][i] * Hh[t][i];
        acc += (Bk[side][tap][ch] + d) * Y[t - tap][ch];
      }
      out[t * H + ch] = acc;
    }
  }
  return out;
}

TEST(DFlash2OpsTest, DynamicConvMatchesTheFloat64Reference) {
  at::manual_seed(7);
  const int64_t L = 6, H = 12, K = 3, gs = 4, G = H / gs;
  at::Tensor h = at::randn({1, L, H}, at::kDouble);
  at::Tensor y = at::randn({1, L, H}, at::kDouble);
  at::Tensor base = at::randn({2, K, H}, at::kDouble);
  at::Tensor proj = at::randn({2 * K * G, H}, at::kDouble) * 0.3;
  DynamicConv conv{base, proj, gs};
  auto [prepared, d1] = conv.Prepare(h);
  at::Tensor finished = conv.Finish(y, d1);
  const std::vector<double> want0 = RefConv(h[0], h[0], base, proj, 0, gs);
  const std::vector<double> want1 = RefConv(y[0], h[0], base, proj, 1, gs);
  double max_diff = 0;
  for (int64_t t = 0; t < L; ++t) {
    for (int64_t c = 0; c < H; ++c) {
      max_diff = std::max(max_diff, std::abs(prepared[0][t][c].item<double>() - want0[t * H + c]));
      max_diff = std::max(max_diff, std::abs(finished[0][t][c].item<double>() - want1[t * H + c]));
    }
  }
  EXPECT_LT(max_diff, 1e-12) << "max |diff| " << max_diff;
}

TEST(DFlash2OpsTest, ConvTapsStayInsideEachBlock) {
  at::manual_seed(3);
  const int64_t L = 4, H = 8, K = 2, gs = 2;
  at::Tensor base = at::randn({2, K, H}, at::kDouble);
  at::Tensor proj = at::randn({2 * K * (H / gs), H}, at::kDouble);
  at::Tensor a = at::randn({1, L, H}, at::kDouble), b = at::randn({1, L, H}, at::kDouble);
  DynamicConv conv{base, proj, gs};
  // Two blocks in one batch give what each gives alone: no tap crosses.
  at::Tensor both = conv.Prepare(at::cat({a, b}, 0)).first;
  EXPECT_TRUE(at::allclose(both[1], conv.Prepare(b).first[0], 0, 0));
  // Changing a later row never changes an earlier one (causal taps).
  at::Tensor a2 = a.clone();
  a2[0][3] += 1.0;
  EXPECT_TRUE(at::equal(conv.Prepare(a2).first[0].narrow(0, 0, 3),
                        conv.Prepare(a).first[0].narrow(0, 0, 3)));
}

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

}  // namespace
}  // namespace dflash::model
