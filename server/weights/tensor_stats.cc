#include "weights/tensor_stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include <ATen/ATen.h>

#include "common/torch_guard.h"

namespace dflash::weights {
namespace {

constexpr int64_t kChunk = int64_t{1} << 22;

TensorStats ComputeUnguarded(const at::Tensor& t) {
  TensorStats s;
  const at::Tensor flat = t.reshape({-1});
  const int64_t n = flat.numel();
  double count = 0, mean = 0, m2 = 0, abs_max = 0;
  bool any_nonzero = false;
  for (int64_t off = 0; off < n; off += kChunk) {
    at::Tensor c = flat.slice(0, off, std::min(n, off + kChunk)).to(at::kDouble);
    const int64_t nans = c.isnan().sum().item<int64_t>();
    const int64_t infs = c.isinf().sum().item<int64_t>();
    s.nan_count += nans;
    s.inf_count += infs;
    if (nans + infs > 0) {
      any_nonzero = true;
      c = c.masked_select(c.isfinite());
    }
    const int64_t k = c.numel();
    if (k == 0) continue;
    if (!any_nonzero) any_nonzero = c.ne(0).any().item<bool>();
    const double cm = c.mean().item<double>();
    const double cm2 = (c - cm).square().sum().item<double>();
    abs_max = std::max(abs_max, c.abs().max().item<double>());
    // Chan et al.'s pairwise merge of (count, mean, M2).
    const double delta = cm - mean;
    const double total = count + static_cast<double>(k);
    mean += delta * static_cast<double>(k) / total;
    m2 += cm2 + delta * delta * count * static_cast<double>(k) / total;
    count = total;
  }
  s.mean = mean;
  s.std = count > 0 ? std::sqrt(m2 / count) : 0;
  s.abs_max = abs_max;
  s.all_zero = n > 0 && !any_nonzero;
  return s;
}

// NaN and Inf are the values whose exponent bits are all ones.
template <typename Bits, Bits kExponent>
bool AllFiniteBits(const void* data, int64_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  constexpr int64_t kStep = 256;  // elements per early-exit check
  int64_t i = 0;
  for (; i + kStep <= n; i += kStep) {
    // Branch-free inside, per-element loads into an accumulator of the
    // element's own width: the form GCC vectorises without widening (bf16
    // in L2: 17 GB/s, against 12 GB/s into an unsigned and 4 GB/s into a bool).
    Bits bad = 0;
    for (int64_t j = 0; j < kStep; ++j) {
      Bits w;
      std::memcpy(&w, p + (i + j) * sizeof(Bits), sizeof(Bits));
      bad |= static_cast<Bits>((w & kExponent) == kExponent);
    }
    if (bad != 0) return false;
  }
  for (; i < n; ++i) {
    Bits w;
    std::memcpy(&w, p + i * sizeof(Bits), sizeof(w));
    if ((w & kExponent) == kExponent) return false;
  }
  return true;
}

bool AllFiniteUnguarded(const at::Tensor& t) {
  if (t.device().is_cpu() && t.is_contiguous()) {
    if (std::optional<bool> finite = AllFiniteBytes(t.data_ptr(), t.numel(), t.scalar_type())) {
      return *finite;
    }
  } else if (!at::isFloatingType(t.scalar_type()) && !at::isComplexType(t.scalar_type())) {
    return true;  // integers are always finite
  }
  return at::isfinite(t).all().item<bool>();
}

}  // namespace

std::optional<bool> AllFiniteBytes(const void* data, int64_t numel, c10::ScalarType dtype) {
  switch (dtype) {
    case at::kFloat: return AllFiniteBits<uint32_t, 0x7f800000u>(data, numel);
    case at::kDouble: return AllFiniteBits<uint64_t, 0x7ff0000000000000ull>(data, numel);
    case at::kHalf: return AllFiniteBits<uint16_t, 0x7c00>(data, numel);
    case at::kBFloat16: return AllFiniteBits<uint16_t, 0x7f80>(data, numel);
    default: break;
  }
  if (!at::isFloatingType(dtype) && !at::isComplexType(dtype)) return true;  // integers
  return std::nullopt;
}

absl::StatusOr<bool> AllFinite(const at::Tensor& t) {
  return TorchGuard("checking for NaN/Inf", [&] { return AllFiniteUnguarded(t); });
}

absl::StatusOr<TensorStats> ComputeTensorStats(const at::Tensor& t) {
  return TorchGuard("computing tensor statistics", [&] { return ComputeUnguarded(t); });
}

}  // namespace dflash::weights
