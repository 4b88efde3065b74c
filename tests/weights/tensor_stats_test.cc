// Tensor statistics against plain loops in double (by hand, and across the
// 4M-element chunks they are merged over), NaN and Inf counted apart, and
// the bit-level finiteness check in every dtype a load holds.
#include "weights/tensor_stats.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::weights {
namespace {

TEST(TensorStatsTest, ValuesByHandWithNanAndInfLeftOut) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  ASSERT_OK_AND_ASSIGN(TensorStats s,
                       ComputeTensorStats(at::tensor({1.0f, nan, -2.0f, 3.0f, -inf, 6.0f, inf})));
  EXPECT_DOUBLE_EQ(s.mean, 2.0);
  EXPECT_DOUBLE_EQ(s.std, std::sqrt(8.5));  // (1 + 16 + 1 + 16) / 4
  EXPECT_DOUBLE_EQ(s.abs_max, 6.0);
  EXPECT_EQ(s.nan_count, 1);
  EXPECT_EQ(s.inf_count, 2);
  EXPECT_FALSE(s.all_zero);
}

TEST(TensorStatsTest, ZerosEmptyAndAllNan) {
  ASSERT_OK_AND_ASSIGN(TensorStats z, ComputeTensorStats(at::zeros({2, 3}, at::kBFloat16)));
  EXPECT_TRUE(z.all_zero);
  EXPECT_EQ(z.std, 0.0);
  ASSERT_OK_AND_ASSIGN(TensorStats e, ComputeTensorStats(at::zeros({0})));
  EXPECT_FALSE(e.all_zero);  // no elements: not "all zeros"
  EXPECT_EQ(e.mean, 0.0);
  EXPECT_EQ(e.std, 0.0);
  ASSERT_OK_AND_ASSIGN(TensorStats n,
                       ComputeTensorStats(at::full({3}, std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(n.nan_count, 3);
  EXPECT_FALSE(n.all_zero);
  EXPECT_EQ(n.mean, 0.0);
}

// 2^22 + 5 elements: two chunks of very different sizes and means, merged.
TEST(TensorStatsTest, ChunkMergeMatchesOnePassLoop) {
  const int64_t n = (int64_t{1} << 22) + 5;
  const at::Tensor t = at::arange(n, at::kLong).remainder(7).to(at::kFloat) - 2.5f;
  t.narrow(0, n - 5, 5).fill_(100.0f);
  double sum = 0, abs_max = 0;
  const float* p = t.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    sum += p[i];
    abs_max = std::max(abs_max, std::abs(static_cast<double>(p[i])));
  }
  const double mean = sum / n;
  double ss = 0;
  for (int64_t i = 0; i < n; ++i) ss += (p[i] - mean) * (p[i] - mean);
  ASSERT_OK_AND_ASSIGN(TensorStats s, ComputeTensorStats(t));
  // Both sum 4M doubles in different orders: equal to ~1e-12 relative.
  EXPECT_NEAR(s.mean, mean, 1e-10) << "diff " << s.mean - mean;
  EXPECT_NEAR(s.std, std::sqrt(ss / n), 1e-10) << "diff " << s.std - std::sqrt(ss / n);
  EXPECT_EQ(s.abs_max, abs_max);
}

// A NaN past the first 256-element step and one in the tail, per dtype.
TEST(TensorStatsTest, AllFiniteFindsEveryNonFiniteInEachDtype) {
  for (const at::ScalarType dt : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dt));
    at::Tensor t = at::randn({600}).to(dt);
    ASSERT_OK_AND_ASSIGN(bool ok, AllFinite(t));
    EXPECT_TRUE(ok);
    for (const int64_t pos : {int64_t{300}, int64_t{599}}) {
      for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
        at::Tensor u = t.clone();
        u[pos] = bad;
        ASSERT_OK_AND_ASSIGN(ok, AllFinite(u));
        EXPECT_FALSE(ok) << "at " << pos << " value " << bad;
      }
    }
  }
}

TEST(TensorStatsTest, AllFiniteOnOtherLayoutsAndIntegers) {
  at::Tensor t = at::ones({4, 3});
  t[3][0] = std::numeric_limits<float>::infinity();
  ASSERT_OK_AND_ASSIGN(bool ok, AllFinite(t.t()));  // not contiguous: at::isfinite
  EXPECT_FALSE(ok);
  ASSERT_OK_AND_ASSIGN(ok, AllFinite(at::ones({4, 3}).t()));
  EXPECT_TRUE(ok);
  ASSERT_OK_AND_ASSIGN(ok, AllFinite(at::tensor(std::vector<int64_t>{-1, 0, 1})));
  EXPECT_TRUE(ok);
  ASSERT_OK_AND_ASSIGN(ok, AllFinite(at::zeros({0})));
  EXPECT_TRUE(ok);
}

}  // namespace
}  // namespace dflash::weights
