"""The two numeric building blocks of the forward, HF Qwen3's RMSNorm and
RoPE (default, linear, llama3 and yarn inverse frequencies); shared by the
drafter, the fixture's batched forward and the decision metrics."""

import math

import torch

def rms_norm(x, weight, eps):
    """HF Qwen3RMSNorm: normalise in float32 (or wider), cast back, scale."""
    dtype = x.dtype
    h = x.to(torch.promote_types(dtype, torch.float32))
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return weight * h.to(dtype)


def rope_inv_freq(rope, d):
    """inv_freq [d/2] in float32 and the attention scaling of cos/sin."""
    theta = float(rope.get("rope_theta", 10000.0))
    exps = torch.arange(0, d, 2, dtype=torch.int64).float() / d
    inv_freq = 1.0 / (theta ** exps)
    kind = rope["rope_type"]
    scale = 1.0
    if kind == "linear":
        inv_freq = inv_freq / float(rope["factor"])
    elif kind == "llama3":
        factor = float(rope["factor"])
        low = float(rope.get("low_freq_factor", 1.0))
        high = float(rope.get("high_freq_factor", 4.0))
        old = float(rope["original_max_position_embeddings"])
        low_wl, high_wl = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        llama = torch.where(wavelen > low_wl, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        inv_freq = torch.where(medium, smoothed, llama)
    elif kind == "yarn":
        factor = float(rope["factor"])
        old = float(rope.get("original_max_position_embeddings")
                    or rope.get("max_position_embeddings"))
        beta_fast = float(rope.get("beta_fast") or 32.0)
        beta_slow = float(rope.get("beta_slow") or 1.0)
        scale = rope.get("attention_factor")
        if scale is None:
            scale = 0.1 * math.log(factor) + 1.0 if factor > 1 else 1.0

        def corr_dim(rot):
            return (d * math.log(old / (rot * 2 * math.pi))) / (2 * math.log(theta))

        lo = max(math.floor(corr_dim(beta_fast)), 0)
        hi = min(math.ceil(corr_dim(beta_slow)), d - 1)
        if lo == hi:
            hi += 0.001
        ramp = torch.clamp((torch.arange(d // 2, dtype=torch.float32) - lo) / (hi - lo), 0, 1)
        extrap = 1 - ramp
        pos_freqs = theta ** exps
        inv_freq = (1.0 / (factor * pos_freqs)) * (1 - extrap) + (1.0 / pos_freqs) * extrap
    return inv_freq, float(scale)


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)
