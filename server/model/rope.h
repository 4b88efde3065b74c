// File: rope.h
// Rotary position embedding tables for the RoPE types HF transformers ships
// as _compute_{default,linear_scaling,llama3,yarn}_parameters. inv_freq is
// computed in double and stored as fp32; angles are formed in fp32 even for
// bf16 models (dflash-semantics §4: bf16 angles move whole radians).
//
//   ASSIGN_OR_RETURN(RopeTables t, ComputeRope(cfg.rope, cfg.head_dim));
//   auto [cos, sin] = RopeCosSin(positions, t, at::kBFloat16);  // [..., d]
//   q = ApplyRope(q, cos, sin);
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "config/drafter_config.h"

namespace dflash::model {

struct RopeTables {
  std::vector<double> inv_freq;    // [d/2], exact values before the fp32 cast
  double attention_scaling = 1.0;  // yarn's mscale; multiplies cos and sin
};

// InvalidArgument on an unknown type or unusable parameters.
absl::StatusOr<RopeTables> ComputeRope(const config::RopeConfig& rope, int64_t head_dim);

// inv_freq as an fp32 CPU tensor [d/2].
at::Tensor InvFreqTensor(const RopeTables& tables);

// positions: integer tensor of any shape [...]; inv_freq: fp32 [d/2] on the
// same device. Returns cos, sin of shape [..., d] (halves duplicated), scaled
// by `scaling` in fp32 and then cast to `dtype`.
std::pair<at::Tensor, at::Tensor> RopeCosSin(const at::Tensor& positions,
                                             const at::Tensor& inv_freq, double scaling,
                                             c10::ScalarType dtype);

// x * cos + rotate_half(x) * sin, rotate_half(x) = [-x2, x1]. cos/sin must
// broadcast against x (e.g. [..., 1, d] for x [..., heads, d]).
at::Tensor ApplyRope(const at::Tensor& x, const at::Tensor& cos, const at::Tensor& sin);

}  // namespace dflash::model
