// RoPE tables against values from HF transformers' formulas
// (_compute_{default,linear_scaling,llama3,yarn}_parameters, evaluated in
// fp32 with torch 1.13 as transformers does), and the rotation itself.
#include "model/rope.h"

#include <cmath>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::model {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

const std::vector<int> kIdx = {0, 1, 5, 17, 31, 40, 48, 63};

void ExpectInvFreq(const config::RopeConfig& rope, const std::vector<double>& want) {
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(rope, 128));
  at::Tensor f = InvFreqTensor(t);
  ASSERT_EQ(f.size(0), 64);
  double worst = 0;
  for (size_t i = 0; i < kIdx.size(); ++i) {
    const double got = f[kIdx[i]].item<float>();
    const double rel = std::abs(got - want[i]) / want[i];
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-6) << rope.type << " inv_freq[" << kIdx[i] << "] = " << got << "; want "
                         << want[i];
  }
  std::printf("[ %s ] max rel diff of inv_freq vs transformers %.3g\n", rope.type.c_str(), worst);
}

TEST(RopeTest, DefaultMatchesTransformers) {
  config::RopeConfig r;
  r.theta = 1e6;
  ExpectInvFreq(r, {1.000000000e+00, 8.058422208e-01, 3.398208320e-01, 2.548296750e-02,
                    1.240937854e-03, 1.778279402e-04, 3.162277426e-05, 1.240937763e-06});
}

TEST(RopeTest, LinearMatchesTransformers) {
  config::RopeConfig r;
  r.type = "linear";
  r.theta = 1e6;
  r.factor = 4.0;
  ExpectInvFreq(r, {2.500000000e-01, 2.014605552e-01, 8.495520800e-02, 6.370741874e-03,
                    3.102344635e-04, 4.445698505e-05, 7.905693565e-06, 3.102344408e-07});
}

TEST(RopeTest, Llama3MatchesTransformers) {
  config::RopeConfig r;  // Llama 3.1's published values
  r.type = "llama3";
  r.theta = 500000.0;
  r.factor = 8.0;
  r.low_freq_factor = 1.0;
  r.high_freq_factor = 4.0;
  r.original_max_position_embeddings = 8192;
  ExpectInvFreq(r, {1.000000000e+00, 8.146172166e-01, 3.587302268e-01, 3.063452058e-02,
                    8.567514597e-04, 3.428102355e-05, 6.647869668e-06, 3.068925878e-07});
}

TEST(RopeTest, YarnMatchesTransformers) {
  config::RopeConfig r;  // Qwen's long-context setting
  r.type = "yarn";
  r.theta = 1e6;
  r.factor = 4.0;
  r.original_max_position_embeddings = 32768;
  ExpectInvFreq(r, {1.000000000e+00, 8.058422208e-01, 3.398208320e-01, 2.548296750e-02,
                    8.029597811e-04, 4.445698505e-05, 7.905693565e-06, 3.102344408e-07});
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(r, 128));
  EXPECT_NEAR(t.attention_scaling, 1.1386294361119891, 1e-15);
  r.attention_factor = 1.5;
  ASSERT_OK_AND_ASSIGN(t, ComputeRope(r, 128));
  EXPECT_EQ(t.attention_scaling, 1.5);
}

TEST(RopeTest, Errors) {
  config::RopeConfig r;
  r.type = "dynamic";
  EXPECT_THAT(ComputeRope(r, 8), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("unknown rope_type 'dynamic' (known: default, "
                                                    "linear, llama3, yarn)")));
  r.type = "llama3";
  r.factor = 8.0;
  EXPECT_THAT(ComputeRope(r, 8), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("needs original_max_position_embeddings > 0")));
  EXPECT_THAT(ComputeRope(config::RopeConfig{}, 7),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("head_dim must be positive and even; got 7")));
}

// Every refusal with its exact message, in the order they are checked.
TEST(RopeTest, ErrorsAreExact) {
  const auto bad = [](const config::RopeConfig& r, int64_t d, const std::string& msg) {
    EXPECT_THAT(ComputeRope(r, d), StatusIs(absl::StatusCode::kInvalidArgument, msg));
  };
  config::RopeConfig r;
  bad(r, 0, "rope head_dim must be positive and even; got 0");
  r.theta = 1.0;
  bad(r, 8, "rope_theta must be greater than 1; got 1");
  r.type = "dynamic";  // theta first
  bad(r, 8, "rope_theta must be greater than 1; got 1");
  r.theta = 1e4;
  bad(r, 8, "unknown rope_type 'dynamic' (known: default, linear, llama3, yarn)");
  r.type = "linear";
  r.factor = 0.0;
  bad(r, 8, "rope factor must be positive; got 0");
  r.type = "yarn";
  r.factor = 2.0;
  r.original_max_position_embeddings = -1;
  bad(r, 8, "rope type 'yarn' needs original_max_position_embeddings > 0; got -1");
  // The default type reads no factor.
  r.type = "default";
  r.factor = 0.0;
  EXPECT_OK(ComputeRope(r, 8));
}

// theta^(-2i/d) and its linear scaling, by hand for d = 4, theta = 100.
TEST(RopeTest, DefaultAndLinearByHand) {
  config::RopeConfig r;
  r.theta = 100.0;
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(r, 4));
  EXPECT_THAT(t.inv_freq, ::testing::ElementsAre(1.0, ::testing::DoubleNear(0.1, 1e-15)));
  EXPECT_EQ(t.attention_scaling, 1.0);
  r.type = "linear";
  r.factor = 2.0;
  ASSERT_OK_AND_ASSIGN(t, ComputeRope(r, 4));
  EXPECT_THAT(t.inv_freq, ::testing::ElementsAre(0.5, ::testing::DoubleNear(0.05, 1e-15)));
}

// Yarn without a factor above 1 keeps attention unscaled.
TEST(RopeTest, YarnScalingIsOneAtFactorOne) {
  config::RopeConfig r;
  r.type = "yarn";
  r.theta = 1e4;
  r.factor = 1.0;
  r.original_max_position_embeddings = 4096;
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(r, 8));
  EXPECT_EQ(t.attention_scaling, 1.0);
  // factor 1: interpolation equals extrapolation, the default table.
  config::RopeConfig d;
  d.theta = 1e4;
  ASSERT_OK_AND_ASSIGN(RopeTables want, ComputeRope(d, 8));
  for (size_t i = 0; i < want.inv_freq.size(); ++i) {
    EXPECT_DOUBLE_EQ(t.inv_freq[i], want.inv_freq[i]) << i;
  }
}

TEST(RopeTest, RotatesHalvesWithScaledCosSin) {
  config::RopeConfig r;
  r.theta = 100.0;  // d = 4: inv_freq = [1, 0.1]
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(r, 4));
  auto [cos, sin] = RopeCosSin(at::tensor({int64_t{1}}), InvFreqTensor(t), 2.0, at::kFloat);
  ASSERT_EQ(cos.sizes(), (std::vector<int64_t>{1, 4}));
  at::Tensor x = at::tensor({1.f, 2.f, 3.f, 4.f}).view({1, 4});
  at::Tensor y = ApplyRope(x, cos, sin);
  const double c1 = 2 * std::cos(1.0), s1 = 2 * std::sin(1.0);
  const double c2 = 2 * std::cos(0.1), s2 = 2 * std::sin(0.1);
  const std::vector<double> want = {1 * c1 - 3 * s1, 2 * c2 - 4 * s2, 3 * c1 + 1 * s1,
                                    4 * c2 + 2 * s2};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(y[0][i].item<float>(), want[i], 1e-6);
}

// Angles are formed in fp32 and only cos/sin are rounded to the model dtype.
TEST(RopeTest, Bf16KeepsFp32Angles) {
  config::RopeConfig r;
  r.theta = 1e6;
  ASSERT_OK_AND_ASSIGN(RopeTables t, ComputeRope(r, 128));
  at::Tensor inv = InvFreqTensor(t);
  auto [cos, sin] = RopeCosSin(at::tensor({int64_t{3000}}), inv, 1.0, at::kBFloat16);
  at::Tensor angles = at::tensor({3000.f}).unsqueeze(-1) * inv;
  at::Tensor want = at::cat({angles, angles}, -1).cos().to(at::kBFloat16);
  EXPECT_TRUE(at::equal(cos, want));
  // Rounding inv_freq to bf16 first would move these angles by radians.
  at::Tensor bad = (at::tensor({3000.f}).unsqueeze(-1) * inv.to(at::kBFloat16).to(at::kFloat));
  EXPECT_GT((bad - angles).abs().max().item<float>(), 1.0f);
}

}  // namespace
}  // namespace dflash::model
