// File: tensor_stats.h
// Summary statistics of one weight tensor, computed in double precision in
// chunks (a 1e9-element embedding never becomes one 8 GB double tensor).
// mean / std (population, ddof = 0) / abs_max are over the finite values;
// NaN and Inf are counted, not averaged in.
#pragma once

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "weights/weight_report.h"

namespace dflash::weights {

// Any dtype, any device. Internal only if libtorch throws.
absl::StatusOr<TensorStats> ComputeTensorStats(const at::Tensor& t);

// True when no element is NaN or Inf. One pass over the bits in the tensor's
// own dtype (no conversion, no temporaries) for contiguous CPU f32 / f64 /
// f16 / bf16, the dtypes a load holds; other tensors go through
// at::isfinite. The load's check: stats are computed only when this fails.
absl::StatusOr<bool> AllFinite(const at::Tensor& t);

// AllFinite's bit test over `numel` contiguous host elements of `dtype`:
// true / false for f32, f64, f16, bf16 and integers (always finite);
// nullopt for the dtypes only at::isfinite handles (complex, fp8, ...).
std::optional<bool> AllFiniteBytes(const void* data, int64_t numel, c10::ScalarType dtype);

}  // namespace dflash::weights
