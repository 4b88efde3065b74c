// The drafter's building blocks: RmsNorm and Linear against plain loops,
// and DFlash 2's grouped dynamic causal conv against a float64 reference
// written from dflash2-semantics.md §3 (loops, no torch ops): both sides,
// block-local taps.
#include "model/tensor_ops.h"

#include <cmath>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"

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

// x * w / sqrt(mean(x^2) + eps) per row, in double.
TEST(TensorOpsTest, RmsNormMatchesTheLoop) {
  const at::Tensor x = at::tensor({1.0f, -2.0f, 3.0f, 0.5f, 0.0f, -1.0f}).view({2, 3});
  const at::Tensor w = at::tensor({0.5f, 1.0f, 2.0f});
  const double eps = 1e-6;
  const at::Tensor y = RmsNorm(x, w, eps);
  ASSERT_EQ(y.sizes(), x.sizes());
  double max_diff = 0;
  for (int64_t r = 0; r < 2; ++r) {
    double ms = 0;
    for (int64_t c = 0; c < 3; ++c) ms += std::pow(x[r][c].item<double>(), 2) / 3;
    for (int64_t c = 0; c < 3; ++c) {
      const double want = w[c].item<double>() * x[r][c].item<double>() / std::sqrt(ms + eps);
      max_diff = std::max(max_diff, std::abs(y[r][c].item<double>() - want));
    }
  }
  EXPECT_LT(max_diff, 1e-6) << "max |diff| " << max_diff;
}

// The statistics are fp32 even for bf16 input; the result is bf16.
TEST(TensorOpsTest, RmsNormKeepsTheInputDtype) {
  const at::Tensor x = at::tensor({3.0f, 4.0f}).view({1, 2});
  const at::Tensor y = RmsNorm(x.to(at::kBFloat16), at::ones({2}, at::kBFloat16), 0.0);
  EXPECT_EQ(y.scalar_type(), at::kBFloat16);
  // rms = sqrt((9 + 16) / 2) = 3.5355: 0.8485, 1.1314 (bf16 rounds to 1/128).
  EXPECT_NEAR(y[0][0].item<float>(), 3.0 / std::sqrt(12.5), 1.0 / 128);
  EXPECT_NEAR(y[0][1].item<float>(), 4.0 / std::sqrt(12.5), 1.0 / 128);
}

TEST(TensorOpsTest, LinearWithAndWithoutBias) {
  const at::Tensor x = at::tensor({1.0f, 2.0f}).view({1, 2});
  const at::Tensor w = at::tensor({1.0f, 0.0f, 3.0f, -1.0f, 0.5f, 0.5f}).view({3, 2});
  // x @ w^T = (1, 1, 1.5).
  EXPECT_TRUE(at::equal(Linear(x, w), at::tensor({1.0f, 1.0f, 1.5f}).view({1, 3})));
  EXPECT_TRUE(at::equal(Linear(x, w, at::tensor({1.0f, 2.0f, 3.0f})),
                        at::tensor({2.0f, 3.0f, 4.5f}).view({1, 3})));
}

}  // namespace
}  // namespace dflash::model
