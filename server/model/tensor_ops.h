// File: tensor_ops.h
// The drafter's small building blocks, one definition each: HF's
// Qwen3RMSNorm, a linear layer with an optional bias, and DFlash 2's
// grouped dynamic causal convolution (dflash2-semantics §3).
#pragma once

#include <cstdint>
#include <utility>

#include <ATen/core/Tensor.h>

namespace dflash::model {

// fp32 statistics, cast back to x's dtype, then weight * x.
at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps);

// x @ w^T (+ b when defined).
at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b = {});

// One grouped dynamic conv module over blocks of rows: h, y [nb, L, H];
// base_kernel [2, K, H] ([side, tap, channel]); projection [2*K*G, H].
// Taps reach back within a block only (rows before its first are zero).
// Per tap, as z-lab adds them: out += base * y_shifted; out += D * y_shifted.
struct DynamicConv {
  const at::Tensor& base_kernel;
  const at::Tensor& projection;
  int64_t group_size;

  // (conv_0(h), D_1): side 0 applied to h, and side 1's coefficients
  // [nb, L, K, G], both from prepare's input h.
  std::pair<at::Tensor, at::Tensor> Prepare(const at::Tensor& h) const;
  // conv_1(y) with the coefficients Prepare returned.
  at::Tensor Finish(const at::Tensor& y, const at::Tensor& d1) const;
};

}  // namespace dflash::model
