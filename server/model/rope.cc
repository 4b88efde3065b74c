#include "model/rope.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dflash::model {
namespace {

constexpr double kPi = 3.14159265358979323846;

// theta^(-2i/d), i = 0..d/2-1.
std::vector<double> DefaultInvFreq(double theta, int64_t d) {
  std::vector<double> f(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) {
    f[i] = 1.0 / std::pow(theta, static_cast<double>(2 * i) / d);
  }
  return f;
}

// Llama 3.1: keep high frequencies, divide low ones by factor, interpolate
// smoothly between the two wavelength bounds.
void Llama3(const config::RopeConfig& r, std::vector<double>& f) {
  const double old_len = static_cast<double>(r.original_max_position_embeddings);
  const double low_wavelen = old_len / r.low_freq_factor;
  const double high_wavelen = old_len / r.high_freq_factor;
  for (double& x : f) {
    const double wavelen = 2 * kPi / x;
    if (wavelen < high_wavelen) continue;
    if (wavelen > low_wavelen) {
      x = x / r.factor;
      continue;
    }
    const double smooth =
        (old_len / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
    x = (1 - smooth) * x / r.factor + smooth * x;
  }
}

// YaRN: blend interpolated (1/factor) and extrapolated frequencies with a
// linear ramp over the correction range found from beta_fast / beta_slow.
void Yarn(const config::RopeConfig& r, int64_t d, std::vector<double>& f) {
  const double base = r.theta;
  const double orig = static_cast<double>(r.original_max_position_embeddings);
  auto correction_dim = [&](double rotations) {
    return (d * std::log(orig / (rotations * 2 * kPi))) / (2 * std::log(base));
  };
  double low = std::floor(correction_dim(r.beta_fast));
  double high = std::ceil(correction_dim(r.beta_slow));
  low = std::max(low, 0.0);
  high = std::min(high, static_cast<double>(d - 1));
  if (low == high) high += 0.001;
  for (int64_t i = 0; i < d / 2; ++i) {
    // HF computes the ramp in fp32; (i - low)/(high - low) is exact enough
    // in double and clamps the same way.
    double ramp = (static_cast<double>(i) - low) / (high - low);
    ramp = std::min(1.0, std::max(0.0, ramp));
    const double extrapolation_factor = 1.0 - ramp;
    const double extrapolation = f[i];
    const double interpolation = f[i] / r.factor;
    f[i] = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
  }
}

}  // namespace

absl::StatusOr<RopeTables> ComputeRope(const config::RopeConfig& rope, int64_t head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope head_dim must be positive and even; got ", head_dim));
  }
  if (!(rope.theta > 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope_theta must be greater than 1; got ", rope.theta));
  }
  if (rope.type != "default" && rope.type != "linear" && rope.type != "llama3" &&
      rope.type != "yarn") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown rope_type '", rope.type, "' (known: default, linear, llama3, yarn)"));
  }
  RopeTables t;
  t.inv_freq = DefaultInvFreq(rope.theta, head_dim);
  if (rope.type == "default") return t;
  if (!(rope.factor > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope factor must be positive; got ", rope.factor));
  }
  if (rope.type == "linear") {
    for (double& x : t.inv_freq) x /= rope.factor;
    return t;
  }
  if (rope.original_max_position_embeddings <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("rope type '", rope.type, "' needs original_max_position_embeddings > 0; got ",
                     rope.original_max_position_embeddings));
  }
  if (rope.type == "llama3") {
    Llama3(rope, t.inv_freq);
    return t;
  }
  if (rope.type == "yarn") {
    Yarn(rope, head_dim, t.inv_freq);
    t.attention_scaling = rope.attention_factor != 0.0
                              ? rope.attention_factor
                              : (rope.factor <= 1.0 ? 1.0 : 0.1 * std::log(rope.factor) + 1.0);
  }
  return t;
}

at::Tensor InvFreqTensor(const RopeTables& tables) {
  const int64_t n = static_cast<int64_t>(tables.inv_freq.size());
  at::Tensor f = at::empty({n}, at::TensorOptions().dtype(at::kFloat));
  float* p = f.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(tables.inv_freq[i]);
  return f;
}

std::pair<at::Tensor, at::Tensor> RopeCosSin(const at::Tensor& positions,
                                             const at::Tensor& inv_freq, double scaling,
                                             c10::ScalarType dtype) {
  // [..., 1] x [d/2] -> [..., d/2], fp32 product as HF's float matmul.
  at::Tensor angles = positions.to(at::kFloat).unsqueeze(-1) * inv_freq;
  at::Tensor emb = at::cat({angles, angles}, -1);
  at::Tensor cos = emb.cos();
  at::Tensor sin = emb.sin();
  if (scaling != 1.0) {
    cos = cos * scaling;
    sin = sin * scaling;
  }
  return {cos.to(dtype), sin.to(dtype)};
}

at::Tensor ApplyRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  at::Tensor x1 = x.narrow(-1, 0, half);
  at::Tensor x2 = x.narrow(-1, half, half);
  at::Tensor rotated = at::cat({-x2, x1}, -1);
  return x * cos + rotated * sin;
}

}  // namespace dflash::model
