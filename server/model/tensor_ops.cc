#include "model/tensor_ops.h"

#include <ATen/ATen.h>

namespace dflash::model {
namespace {

// sum over taps of (base[tap] + d[:, :, tap]) * y[t - tap], grouped:
// y [nb, L, H], base [K, H], d [nb, L, K, G].
at::Tensor Convolve(const at::Tensor& y, const at::Tensor& base, const at::Tensor& d,
                    int64_t group_size) {
  const int64_t nb = y.size(0), L = y.size(1), H = y.size(2);
  const int64_t G = H / group_size, K = base.size(0);
  at::Tensor blocks = y.view({nb, L, G, group_size});
  at::Tensor out = at::zeros_like(blocks);
  for (int64_t tap = 0; tap < K; ++tap) {
    at::Tensor values;
    if (tap == 0) {
      values = blocks;
    } else if (tap >= L) {
      values = at::zeros_like(blocks);
    } else {
      values = at::cat(
          {at::zeros({nb, tap, G, group_size}, blocks.options()), blocks.narrow(1, 0, L - tap)}, 1);
    }
    at::Tensor kernel = base[tap].view({1, 1, G, group_size}).to(y.scalar_type());
    out = out + kernel * values;
    out = at::addcmul(out, d.select(2, tap).unsqueeze(-1), values);
  }
  return out.view({nb, L, H});
}

}  // namespace

at::Tensor RmsNorm(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor h = x.to(at::kFloat);
  at::Tensor var = h.pow(2).mean(-1, /*keepdim=*/true);
  h = h * at::rsqrt(var + eps);
  return w * h.to(x.scalar_type());
}

at::Tensor Linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
}

std::pair<at::Tensor, at::Tensor> DynamicConv::Prepare(const at::Tensor& h) const {
  const int64_t nb = h.size(0), L = h.size(1), H = h.size(2);
  const int64_t K = base_kernel.size(1), G = H / group_size;
  at::Tensor d = at::linear(h, projection).view({nb, L, 2, K, G});  // rows (side, tap, group)
  return {Convolve(h, base_kernel[0], d.select(2, 0), group_size), d.select(2, 1)};
}

at::Tensor DynamicConv::Finish(const at::Tensor& y, const at::Tensor& d1) const {
  return Convolve(y, base_kernel[1], d1, group_size);
}

}  // namespace dflash::model
