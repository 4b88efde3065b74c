#!/usr/bin/python3
"""Plain reference of the DFlash drafter forward and its evaluation.

Written straight from shared/reference/dflash-semantics.md (§4 one draft
block, §5 the two evaluation modes) and dflash2-semantics.md (DFlash 2, the
current z-lab rules), one block at a time, no batching, so that the C++
service can be checked against it. Needs only torch (1.13 works).

  reference.py eval --drafter DIR --target DIR --dataset DIR \
      --mode anchor|replay [--anchors all|even] [--max-blocks N] \
      [--max-samples N] [--block-size B] [--max-new-tokens N] \
      [--semantics zlab-current|zlab-2025] [--json OUT]
  reference.py logits --drafter DIR --target DIR --dataset DIR \
      --blocks SAMPLE:ANCHOR[,SAMPLE:ANCHOR...] [--rows R] \
      [--semantics zlab-current|zlab-2025] [--json OUT]

Compute is float32 by default (--compute-dtype float64 for a tighter
baseline); stored bf16 weights are upcast.
"""

import argparse
import json
import math
import os
import re
import struct
import sys

import torch

# ---------------------------------------------------------------------------
# safetensors (written from the format spec; no package needed)
# ---------------------------------------------------------------------------

ST_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16,
    "BF16": torch.bfloat16, "I64": torch.int64, "I32": torch.int32,
    "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}
ST_NAMES = {v: k for k, v in ST_DTYPES.items()}


def read_safetensors_header(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n).decode("utf-8"))
    return n, header


def read_safetensors(path, names=None):
    """Returns {name: tensor} (all tensors, or only `names`)."""
    n, header = read_safetensors_header(path)
    out = {}
    with open(path, "rb") as f:
        for name, info in header.items():
            if name == "__metadata__" or (names is not None and name not in names):
                continue
            begin, end = info["data_offsets"]
            f.seek(8 + n + begin)
            buf = bytearray(f.read(end - begin))
            dtype = ST_DTYPES[info["dtype"]]
            if len(buf) == 0:
                t = torch.zeros(0, dtype=dtype)
            else:
                t = torch.frombuffer(buf, dtype=dtype)
            out[name] = t.reshape(info["shape"]).clone()
    return out


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: tensor}, written contiguously in dict order."""
    header = {}
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().contiguous().cpu()
        raw = t.view(torch.uint8).numpy().tobytes() if t.numel() else b""
        header[name] = {"dtype": ST_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
        blobs.append(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)  # keep the data 8-byte aligned
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    return 8 + len(text) + offset


# ---------------------------------------------------------------------------
# Drafter config and weights (§1)
# ---------------------------------------------------------------------------

SEMANTICS = ("zlab-current", "zlab-2025")
DEFAULT_SEMANTICS = "zlab-current"
# zlab-current: z-lab model.py at commit 10129599 (dflash2-semantics.md):
#   per-layer causality and two-sided windows inside the block, shortened last
#   blocks, the replay loop `while s + 1 < L'`, produced = min(n+1, L'-s-1).
# zlab-2025: the older rules (dflash-semantics.md §4-§5): every layer
#   bidirectional in the block, sliding layers hide context keys with
#   query - key >= W, full-length blocks, the replay loop `while s < L'`.


def check_semantics(semantics, family):
    if semantics not in SEMANTICS:
        raise ValueError("unknown semantics '%s' (one of %s)" % (semantics, ", ".join(SEMANTICS)))
    if family == "dflash2" and semantics == "zlab-2025":
        raise ValueError("semantics 'zlab-2025' predates DFlash 2; use zlab-current")


class DrafterConfig:
    def __init__(self, cfg):
        self.raw = cfg
        archs = cfg.get("architectures") or []
        self.family = "dflash2" if "DFlash2DraftModel" in archs else "dflash"
        self.hidden_size = int(cfg["hidden_size"])
        self.num_heads = int(cfg["num_attention_heads"])
        self.num_kv_heads = int(cfg.get("num_key_value_heads") or self.num_heads)
        self.head_dim = int(cfg.get("head_dim") or self.hidden_size // self.num_heads)
        self.intermediate_size = int(cfg["intermediate_size"])
        self.num_layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.attention_bias = bool(cfg.get("attention_bias", False))
        dc = cfg.get("dflash_config") or {}

        def draft_value(name, default=None):
            """z-lab's _draft_value: dflash_config[name], else top-level name, else default."""
            if name in dc:
                return dc[name]
            return cfg.get(name, default)

        def required(name):
            v = draft_value(name)
            if v is None:
                raise ValueError("config has no %s (looked in dflash_config, then top level)"
                                 % name)
            return v

        self.block_size = int(draft_value("block_size", 16))
        self.target_layer_ids = [int(x) for x in required("target_layer_ids")]
        self.mask_token_id = int(required("mask_token_id"))
        v = draft_value("input_embedding_scale")
        self.input_embedding_scale = 1.0 if v is None else float(v)
        v = draft_value("output_multiplier")
        self.output_multiplier = 1.0 if v is None else float(v)
        v = draft_value("final_logit_softcapping")
        self.softcap = float(v) if v is not None and float(v) > 0 else None
        types = cfg.get("layer_types") or ["full_attention"] * self.num_layers
        if len(types) != self.num_layers:
            raise ValueError("layer_types has %d entries; expected %d"
                             % (len(types), self.num_layers))
        for t in types:
            if t not in ("full_attention", "sliding_attention"):
                raise ValueError("unknown layer type '%s'" % t)
        self.layer_types = list(types)
        self.sliding = [t == "sliding_attention" for t in types]
        # zlab-2025 reads the window like this (0 = none) on every sliding layer.
        self.sliding_window = int(cfg.get("sliding_window") or 0)
        # zlab-current, per layer: causal = (sliding) unless top-level is_causal
        # is given; window = sliding_window on sliding layers, none on full
        # ones, none everywhere when top-level use_sliding_window is false.
        is_causal = cfg.get("is_causal")
        self.causal = [s if is_causal is None else bool(is_causal) for s in self.sliding]
        use_window = cfg.get("use_sliding_window", True)
        sw = cfg.get("sliding_window")
        self.window = []
        for s in self.sliding:
            if s and use_window is not False and sw is not None:
                if int(sw) <= 0:
                    raise ValueError("sliding_window %s must be positive" % sw)
                self.window.append(int(sw))
            else:
                self.window.append(None)
        self.vocab_size = cfg.get("vocab_size")
        if self.family == "dflash2":
            self.conv_kernel_size = int(required("conv_kernel_size"))
            self.conv_group_size = int(required("conv_group_size"))
            self.selector_rank = int(required("selector_rank"))
            self.selector_top_k = int(required("selector_top_k"))
            if self.conv_group_size <= 0 or self.hidden_size % self.conv_group_size:
                raise ValueError("conv_group_size %d must divide hidden_size %d"
                                 % (self.conv_group_size, self.hidden_size))
            if self.conv_kernel_size < 1 or self.selector_rank < 1 or self.selector_top_k < 1:
                raise ValueError("conv_kernel_size, selector_rank and selector_top_k must be >= 1")
        # RoPE: 5.x rope_parameters or 4.x rope_theta + rope_scaling.
        rp = cfg.get("rope_parameters")
        if rp:
            rope = dict(rp)
            rope.setdefault("rope_theta", cfg.get("rope_theta", 10000.0))
        else:
            rope = dict(cfg.get("rope_scaling") or {})
            rope["rope_theta"] = cfg.get("rope_theta", 10000.0)
        rope_type = rope.get("rope_type") or rope.get("type") or "default"
        if rope_type not in ("default", "linear", "llama3", "yarn"):
            raise ValueError("unknown rope_type '%s'" % rope_type)
        rope["rope_type"] = rope_type
        rope.setdefault("max_position_embeddings", cfg.get("max_position_embeddings"))
        self.rope = rope


PREFIXES = ("module.", "_orig_mod.", "_fsdp_wrapped_module.", "draft_model.", "model.")


def strip_prefixes(name):
    changed = True
    while changed:
        changed = False
        for p in PREFIXES:
            if name.startswith(p):
                name = name[len(p):]
                changed = True
    return name


def load_state_from_dir(path):
    """Tensors of a safetensors directory (single file or sharded with index)."""
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
        out = {}
        for shard in sorted(set(weight_map.values())):
            wanted = {k for k, v in weight_map.items() if v == shard}
            out.update(read_safetensors(os.path.join(path, shard), wanted))
        return out
    single = os.path.join(path, "model.safetensors")
    if os.path.isfile(single):
        return read_safetensors(single)
    raise FileNotFoundError("no model.safetensors(.index.json) in '%s'" % path)


def load_drafter_weights(path):
    """Drafter tensors with wrapper prefixes removed (§1)."""
    if os.path.isdir(path):
        st = [f for f in os.listdir(path) if f.endswith(".safetensors")]
        if st or os.path.isfile(os.path.join(path, "model.safetensors.index.json")):
            state = load_state_from_dir(path)
        else:
            pts = sorted(f for f in os.listdir(path) if f.endswith((".pt", ".pth", ".bin")))
            if not pts:
                raise FileNotFoundError("no drafter weights in '%s'" % path)
            state = torch.load(os.path.join(path, pts[0]), map_location="cpu")
    elif path.endswith(".safetensors"):
        state = read_safetensors(path)
    else:
        state = torch.load(path, map_location="cpu")
    if isinstance(state, dict):
        for key in ("model", "state_dict", "module"):
            if key in state and isinstance(state[key], dict):
                state = state[key]
                break
    return {strip_prefixes(k): v for k, v in state.items() if torch.is_tensor(v)}


# ---------------------------------------------------------------------------
# Target tensors (§2)
# ---------------------------------------------------------------------------

EMBED_NAMES = ["model.embed_tokens.weight", "model.language_model.embed_tokens.weight",
               "language_model.model.embed_tokens.weight"]
HEAD_NAMES = ["lm_head.weight", "language_model.lm_head.weight"]


def load_target(path):
    """Returns (embed [V, H_t], lm_head [V, H_t], tied)."""
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    tied = bool(cfg.get("tie_word_embeddings", False)) or \
        bool((cfg.get("text_config") or {}).get("tie_word_embeddings", False))
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
    else:
        _, header = read_safetensors_header(os.path.join(path, "model.safetensors"))
        weight_map = {k: "model.safetensors" for k in header if k != "__metadata__"}

    def get(names, required):
        for n in names:
            if n in weight_map:
                return read_safetensors(os.path.join(path, weight_map[n]), {n})[n]
        if required:
            raise KeyError("target tensor not found; tried %s" % names)
        return None

    embed = get(EMBED_NAMES, True)
    head = get(HEAD_NAMES, not tied)
    if head is None:
        head = embed
    return embed, head, tied


# ---------------------------------------------------------------------------
# Dataset (§3)
# ---------------------------------------------------------------------------

class Sample:
    def __init__(self, index, input_ids, loss_mask, features):
        self.index = index          # integer in the file name
        self.input_ids = input_ids  # [L] int64
        self.loss_mask = loss_mask  # [L] int64 0/1
        self.features = features    # [L, K*H_t], columns in target_layer_ids order


def list_capture_files(root):
    files = []
    for d, _, names in os.walk(root):
        for n in names:
            m = re.fullmatch(r"data_(\d+)\.ckpt", n)
            if m:
                files.append((int(m.group(1)), os.path.join(d, n)))
    files.sort()
    return files


def load_dataset(root, wanted_layers, max_samples=0, groups=None):
    """Loads capture files and gathers the columns of `wanted_layers`, in order.

    groups: {feature key: [layer ids]}; default from dataset.json.
    """
    manifest = {}
    mpath = os.path.join(root, "dataset.json")
    if os.path.isfile(mpath):
        with open(mpath) as f:
            manifest = json.load(f)
    if groups is None:
        groups = manifest.get("features")
    if not groups:
        raise ValueError("dataset '%s' declares no feature layers" % root)
    held = [l for ids in groups.values() for l in ids]
    missing = [l for l in wanted_layers if l not in held]
    if missing:
        raise ValueError("drafter needs layer %s; dataset holds %s"
                         % (", ".join(map(str, missing)), held))
    files = list_capture_files(root)
    if max_samples:
        files = files[:max_samples]
    samples = []
    for index, path in files:
        d = torch.load(path, map_location="cpu")
        ids = d["input_ids"].reshape(-1).long()
        mask = d["loss_mask"].reshape(-1).long()
        L = ids.shape[0]
        cols = []
        for l in wanted_layers:
            for key, layer_ids in groups.items():
                if l in layer_ids:
                    t = d[key]
                    if t.dim() == 3:
                        t = t[0]
                    h = t.shape[1] // len(layer_ids)
                    k = layer_ids.index(l)
                    cols.append(t[:L, k * h:(k + 1) * h])
                    break
        samples.append(Sample(index, ids, mask, torch.cat(cols, dim=1)))
    return samples


# ---------------------------------------------------------------------------
# The drafter forward (§4)
# ---------------------------------------------------------------------------

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


CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")


class Drafter:
    def __init__(self, path, embed, lm_head, compute_dtype=torch.float32):
        with open(os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                               "config.json")) as f:
            self.cfg = DrafterConfig(json.load(f))
        self.dtype = compute_dtype
        w = load_drafter_weights(path)
        # speculators' own vocabulary: lm_head [V_draft, H] with d2t (int64,
        # target id = draft index + d2t[index]); t2d is d2t's inverse.
        self.d2t = w.pop("d2t", None)
        w.pop("t2d", None)
        own_head = w.pop("lm_head.weight", None) if self.d2t is not None else None
        self.w = {k: v.to(compute_dtype) for k, v in w.items()}
        self.embed = embed.to(compute_dtype)
        self.lm_head = (lm_head if own_head is None else own_head).to(compute_dtype)
        self.inv_freq, self.rope_scale = rope_inv_freq(self.cfg.rope, self.cfg.head_dim)
        self.family = self.cfg.family
        # Switches for ablations (selfcheck): False = drafts are argmax(logits).
        self.use_selector = self.family == "dflash2"
        if self.family == "dflash2":
            self.check_dflash2_tensors()

    def check_dflash2_tensors(self):
        """Codebooks with or without '.weight'; every DFlash 2 tensor present, right shape."""
        c = self.cfg
        for name in CODEBOOKS:
            dotted = name + ".weight"
            if dotted in self.w:
                if name in self.w and not torch.equal(self.w[name], self.w[dotted]):
                    raise ValueError("both '%s' and '%s' present and different" % (name, dotted))
                self.w[name] = self.w.pop(dotted)
        H, K, G = c.hidden_size, c.conv_kernel_size, c.hidden_size // c.conv_group_size
        V = self.lm_head.shape[0]
        want = {"candidate_selector.hidden_projection.weight": [c.selector_rank, H],
                CODEBOOKS[0]: [V, c.selector_rank], CODEBOOKS[1]: [V, c.selector_rank]}
        for i in range(c.num_layers):
            for m in ("attention_conv", "mlp_conv"):
                p = "layers.%d.%s." % (i, m)
                want[p + "base_kernel"] = [2, K, H]
                want[p + "kernel_projection.weight"] = [2 * K * G, H]
        missing = [n for n in want if n not in self.w]
        if missing:
            raise KeyError("DFlash 2 drafter lacks %s" % ", ".join(missing))
        for n, shape in want.items():
            if list(self.w[n].shape) != shape:
                raise ValueError("%s has shape %s; expected %s" % (n, list(self.w[n].shape), shape))
        if c.vocab_size is not None and int(c.vocab_size) != V:
            raise ValueError("config vocab_size %s != target vocabulary %d" % (c.vocab_size, V))
        if c.selector_top_k > V:
            raise ValueError("selector_top_k %d > vocabulary %d" % (c.selector_top_k, V))

    def rope(self, x, pos):
        """x [T, heads, d], pos [T] int64."""
        angles = pos.float()[:, None] * self.inv_freq[None, :]    # fp32, as HF
        emb = torch.cat((angles, angles), dim=-1).to(self.dtype)  # [T, d]
        cos = (emb.cos() * self.rope_scale)[:, None, :]
        sin = (emb.sin() * self.rope_scale)[:, None, :]
        return x * cos + rotate_half(x) * sin

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].t()
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def context(self, feats):
        """ctx = RMSNorm_hidden_norm(c @ fc^T): [a, H]."""
        ctx = feats.to(self.dtype) @ self.w["fc.weight"].t()
        return rms_norm(ctx, self.w["hidden_norm.weight"], self.cfg.eps)

    def context_kv(self, i, ctx, pos):
        """Layer i's K/V for the context rows (RoPE applied): [a, nkv, d] x 2."""
        c = self.cfg
        p = "layers.%d.self_attn." % i
        k = self.linear(ctx, p + "k_proj").view(-1, c.num_kv_heads, c.head_dim)
        v = self.linear(ctx, p + "v_proj").view(-1, c.num_kv_heads, c.head_dim)
        k = rms_norm(k, self.w[p + "k_norm.weight"], c.eps)
        return self.rope(k, pos), v

    def visible(self, i, a, L, semantics):
        """Layer i's attention mask [L, a+L] (True = visible) for a block of L
        rows at anchor a; keys are the context 0..a-1 then the block a..a+L-1,
        all at absolute positions."""
        c = self.cfg
        q = torch.arange(a, a + L, dtype=torch.int64)[:, None]    # query positions
        k = torch.arange(0, a + L, dtype=torch.int64)[None, :]    # key positions
        vis = torch.ones(L, a + L, dtype=torch.bool)
        if semantics == "zlab-2025":
            # Bidirectional in the block; sliding layers hide context keys at
            # distance >= W (the block keys never).
            if c.sliding[i] and c.sliding_window > 0:
                vis &= ~((q - k >= c.sliding_window) & (k < a))
            return vis
        if c.causal[i]:
            vis &= k <= q
        W = c.window[i]
        if W is not None:
            vis &= q - k < W
            if not c.causal[i]:
                vis &= k - q < W
        return vis

    # DFlash 2: grouped dynamic causal conv (dflash2-semantics.md §3).
    def grouped_conv(self, y, dyn, base):
        """y [L, H]; dyn [L, K, G] dynamic coefficients; base [K, H].

        out[t, ch] = sum_tap (base[tap, ch] + dyn[t, tap, ch // gs]) * y[t - tap, ch],
        y[t - tap] = 0 before the block's first row. Per tap as z-lab: out +=
        base * y_shift, then out = addcmul(out, dyn, y_shift)."""
        L = y.shape[0]
        gs = self.cfg.conv_group_size
        out = torch.zeros_like(y)
        for tap in range(base.shape[0]):
            shifted = torch.zeros_like(y)
            if tap < L:
                shifted[tap:] = y[:L - tap]
            out = out + base[tap][None, :] * shifted
            d = dyn[:, tap, :].repeat_interleave(gs, dim=1)       # [L, H]: channel -> its group
            out = torch.addcmul(out, d, shifted)
        return out

    def conv_prepare(self, i, module, h):
        """(conv_0(h), D[:, 1]); D = (h @ kernel_projection^T) viewed [L, 2, K, G]."""
        c = self.cfg
        p = "layers.%d.%s." % (i, module)
        G = c.hidden_size // c.conv_group_size
        D = (h @ self.w[p + "kernel_projection.weight"].t()).view(
            h.shape[0], 2, c.conv_kernel_size, G)
        return self.grouped_conv(h, D[:, 0], self.w[p + "base_kernel"][0]), D[:, 1]

    def conv_finish(self, i, module, y, D1):
        return self.grouped_conv(y, D1, self.w["layers.%d.%s.base_kernel" % (i, module)][1])

    def hidden(self, feats, tokens_a, a, L, ctx_kv=None, semantics=DEFAULT_SEMANTICS):
        """Final-normed hidden states [L, H] of one block of L rows at anchor a.

        feats: c[0..a-1] [a, K*H_t]; tokens_a: t[a]. ctx_kv: optional
        precomputed per-layer context K/V (already sliced to a rows).
        """
        c = self.cfg
        check_semantics(semantics, self.family)
        nh, nkv, d = c.num_heads, c.num_kv_heads, c.head_dim
        conv = self.family == "dflash2"
        ids = torch.full((L,), c.mask_token_id, dtype=torch.int64)
        ids[0] = int(tokens_a)
        x = self.embed[ids] * c.input_embedding_scale             # [L, H]
        pos_blk = torch.arange(a, a + L, dtype=torch.int64)
        pos_ctx = torch.arange(0, a, dtype=torch.int64)
        ctx = self.context(feats) if ctx_kv is None else None     # [a, H]
        for i in range(c.num_layers):
            p = "layers.%d." % i
            y = rms_norm(x, self.w[p + "input_layernorm.weight"], c.eps)
            if conv:
                y, dyn_attn = self.conv_prepare(i, "attention_conv", y)
            q = self.linear(y, p + "self_attn.q_proj").view(L, nh, d)
            q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], c.eps)
            q = self.rope(q, pos_blk)
            kb = self.linear(y, p + "self_attn.k_proj").view(L, nkv, d)
            kb = rms_norm(kb, self.w[p + "self_attn.k_norm.weight"], c.eps)
            kb = self.rope(kb, pos_blk)
            vb = self.linear(y, p + "self_attn.v_proj").view(L, nkv, d)
            if ctx_kv is None:
                kc, vc = self.context_kv(i, ctx, pos_ctx)
            else:
                kc, vc = ctx_kv[i]
            k = torch.cat((kc, kb), dim=0)                        # [a+L, nkv, d]
            v = torch.cat((vc, vb), dim=0)
            rep = nh // nkv                                       # GQA
            k = k.repeat_interleave(rep, dim=1)                   # [a+L, nh, d]
            v = v.repeat_interleave(rep, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, k) * (d ** -0.5)  # [nh, L, a+L]
            vis = self.visible(i, a, L, semantics)
            if not bool(vis.all()):
                scores = scores.masked_fill(~vis[None], float("-inf"))
            probs = torch.softmax(scores.to(torch.promote_types(self.dtype, torch.float32)),
                                  dim=-1).to(self.dtype)
            attn = torch.einsum("hqk,khd->qhd", probs, v).reshape(L, nh * d)
            o = self.linear(attn, p + "self_attn.o_proj")
            if conv:
                o = self.conv_finish(i, "attention_conv", o, dyn_attn)
            x = x + o
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], c.eps)
            if conv:
                h, dyn_mlp = self.conv_prepare(i, "mlp_conv", h)
            gate = self.linear(h, p + "mlp.gate_proj")
            up = self.linear(h, p + "mlp.up_proj")
            f = self.linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
            if conv:
                f = self.conv_finish(i, "mlp_conv", f, dyn_mlp)
            x = x + f
        return rms_norm(x, self.w["norm.weight"], c.eps)

    def logits(self, h):
        """Unary logits of final-normed rows h [r, H]: lm_head, * output_multiplier,
        then c * tanh(logits / c) when final_logit_softcapping c > 0."""
        c = self.cfg
        logits = (h @ self.lm_head.t()) * c.output_multiplier
        if c.softcap is not None:
            logits = torch.tanh(logits / c.softcap) * c.softcap
        return logits

    def block(self, feats, tokens_a, a, L, rows=None, ctx_kv=None, semantics=DEFAULT_SEMANTICS):
        """Unary logits [rows, V] of the block of L rows at anchor a (rows default L-1)."""
        out = self.hidden(feats, tokens_a, a, L, ctx_kv, semantics)
        r = L - 1 if rows is None else rows
        return self.logits(out[1:1 + r])                          # [r, V]

    # DFlash 2 candidate selector (dflash2-semantics.md §3).
    def candidates(self, logits_row):
        """Top-k of one logits row: (ids [k], values [k]), larger first; equal
        logits in token-id order (a stable sort)."""
        vals, ids = torch.sort(logits_row, descending=True, stable=True)
        k = self.cfg.selector_top_k
        return ids[:k], vals[:k]

    def selector_scores(self, eta, cand, unary, pred):
        """S(pred, b) = U(b) + sum_r A[pred, r] * eta[r] * Bc[b, r] for b in cand: [k]."""
        A = self.w[CODEBOOKS[0]]
        Bc = self.w[CODEBOOKS[1]]
        return unary + (A[int(pred)] * eta) @ Bc[cand].t()

    @staticmethod
    def choose(cand, scores):
        """argmax over the candidates; exact ties go to the lower token id."""
        best = None
        for b, s in zip(cand.tolist(), scores.tolist()):
            if best is None or s > best[1] or (s == best[1] and b < best[0]):
                best = (b, s)
        return best[0]

    def propose(self, h, logits, token_a, labels=None):
        """The drafts of one block's slots j = 1..R, from final-normed rows h
        [R, H] (slots 1..R) and their unary logits [R, V].

        dflash: argmax(logits[j]). dflash2 (use_selector): the greedy walk
        p_1 = t_a, draft_j = argmax_{b in cand_j} S_j(p_j, b), p_{j+1} = draft_j.
        Returns {"drafts", "unary"} and for dflash2 also "candidates" (lists),
        "near_ties" (slots with top-1 - top-2 score < 1e-4, k >= 2) and, when
        labels [R] are given, "tf_correct" (gold predecessor: t[a+j-1]).
        """
        R = logits.shape[0]
        unary = [int(x) for x in logits.argmax(dim=-1).tolist()] if R else []
        if self.d2t is not None:
            if self.family == "dflash2":
                raise ValueError("a reduced draft vocabulary with DFlash 2 is not defined")
            unary = [i + int(self.d2t[i]) for i in unary]  # draft index -> target id
        out = {"drafts": list(unary), "unary": unary}
        if self.family != "dflash2":
            return out
        eta_all = h @ self.w["candidate_selector.hidden_projection.weight"].t()  # [R, r]
        cands, drafts, tf, near = [], [], [], 0
        pred = int(token_a)
        for j in range(R):
            cand, U = self.candidates(logits[j])
            cands.append([int(x) for x in cand.tolist()])
            scores = self.selector_scores(eta_all[j], cand, U, pred)
            if len(cands[-1]) >= 2:
                top = torch.sort(scores, descending=True).values
                if float(top[0] - top[1]) < 1e-4:
                    near += 1
            draft = self.choose(cand, scores)
            drafts.append(draft)
            if labels is not None:
                gold_pred = int(token_a) if j == 0 else int(labels[j - 1])
                tf_scores = self.selector_scores(eta_all[j], cand, U, gold_pred)
                tf.append(self.choose(cand, tf_scores) == int(labels[j]))
            pred = draft
        if self.use_selector:
            out["drafts"] = drafts
        out.update({"candidates": cands, "near_ties": near})
        if labels is not None:
            out["tf_correct"] = tf
        return out

    def sequence_kv(self, feats):
        """Per-layer context K/V for a whole sequence (slice [:a] for anchor a)."""
        ctx = self.context(feats)
        pos = torch.arange(ctx.shape[0], dtype=torch.int64)
        return [self.context_kv(i, ctx, pos) for i in range(self.cfg.num_layers)]


# ---------------------------------------------------------------------------
# Evaluation (dflash-semantics.md §5, dflash2-semantics.md §4-§5)
# ---------------------------------------------------------------------------

def eligible_anchors(mask):
    L = mask.shape[0]
    return [a for a in range(L - 1) if mask[a] == 1 and mask[a + 1] == 1]


def select_anchors(mask, strategy, max_blocks):
    """all: every eligible anchor (the first max_blocks when max_blocks > 0);
    even: eligible[floor(k*n/m)], k = 0..m-1, m = min(max_blocks, n)."""
    el = eligible_anchors(mask)
    n = len(el)
    if strategy == "all":
        return el[:max_blocks] if max_blocks > 0 else el
    if strategy == "even":
        m = min(max_blocks, n) if max_blocks > 0 else n
        return [el[(k * n) // m] for k in range(m)]
    raise ValueError("anchor strategy '%s' not supported by the reference" % strategy)


def leading_matches(correct):
    n = 0
    for c in correct:
        if not c:
            break
        n += 1
    return n


class Metrics:
    """Accumulates scored blocks. Every accept-length-like number is an
    "accept value": n + 1, or min(n + 1, cap) when the caller passes a cap
    (zlab-current replay: cap = L' - s - 1)."""

    def __init__(self, B, family="dflash"):
        self.B = B
        self.family = family
        self.counted = [0] * (B - 1)
        self.correct = [0] * (B - 1)
        self.accepted = [0] * (B - 1)
        self.cond_counted = [0] * (B - 1)
        self.hist = [0] * B
        self.blocks = 0
        self.tokens = 0
        self.accept_sum = 0
        self.per_sample = []
        # DFlash 2
        self.unary_correct = [0] * (B - 1)
        self.covered = [0] * (B - 1)
        self.tf_correct = [0] * (B - 1)
        self.unary_accept_sum = 0
        self.oracle_accept_sum = 0
        self.first_miss = {"all_accepted": 0, "coverage_miss": 0, "ranking_error": 0}
        self.near_ties = 0

    def begin_sample(self, index, L, P):
        self.per_sample.append({"sample_index": index, "blocks": 0, "accepted_total": 0,
                                "length": L, "first_response_position": P})

    @staticmethod
    def accept_value(n, cap):
        return n + 1 if cap is None else min(n + 1, cap)

    def add(self, blk, cap=None):
        """blk: score_block's dict (correct[j-1] for the positions j = 1.. that
        exist, and for dflash2 unary/covered/tf lists), or a plain list of
        correct flags (bench/baseline). Returns n."""
        if not isinstance(blk, dict):
            blk = {"correct": list(blk)}
        correct = blk["correct"]
        n = leading_matches(correct)
        for j in range(1, len(correct) + 1):
            self.counted[j - 1] += 1
            self.correct[j - 1] += int(correct[j - 1])
            if n >= j:
                self.accepted[j - 1] += 1
            if n >= j - 1:
                self.cond_counted[j - 1] += 1
        self.hist[n] += 1
        self.blocks += 1
        self.tokens += len(correct)
        value = self.accept_value(n, cap)
        self.accept_sum += value
        s = self.per_sample[-1]
        s["blocks"] += 1
        s["accepted_total"] += value
        if self.family == "dflash2":
            unary, covered, tf = blk["unary_correct"], blk["covered"], blk["tf_correct"]
            for j in range(1, len(correct) + 1):
                self.unary_correct[j - 1] += int(unary[j - 1])
                self.covered[j - 1] += int(covered[j - 1])
                self.tf_correct[j - 1] += int(covered[j - 1] and tf[j - 1])
            self.unary_accept_sum += self.accept_value(leading_matches(unary), cap)
            self.oracle_accept_sum += self.accept_value(leading_matches(covered), cap)
            if n == len(correct):
                self.first_miss["all_accepted"] += 1
            elif not covered[n]:
                self.first_miss["coverage_miss"] += 1
            else:
                self.first_miss["ranking_error"] += 1
            self.near_ties += blk["near_ties"]
        return n

    def result(self):
        def ratio(a, b):
            return a / b if b else 0.0

        positions = []
        for j in range(1, self.B):
            e = {
                "position": j,
                "counted": self.counted[j - 1],
                "correct": self.correct[j - 1],
                "accuracy": ratio(self.correct[j - 1], self.counted[j - 1]),
                "accepted": self.accepted[j - 1],
                "acceptance": ratio(self.accepted[j - 1], self.counted[j - 1]),
                "conditional_counted": self.cond_counted[j - 1],
                "conditional": ratio(self.accepted[j - 1], self.cond_counted[j - 1]),
            }
            if self.family == "dflash2":
                e.update({
                    "unary_correct": self.unary_correct[j - 1],
                    "unary_accuracy": ratio(self.unary_correct[j - 1], self.counted[j - 1]),
                    "covered": self.covered[j - 1],
                    "coverage": ratio(self.covered[j - 1], self.counted[j - 1]),
                    "tf_covered": self.covered[j - 1],
                    "tf_correct": self.tf_correct[j - 1],
                    "tf_accuracy": ratio(self.tf_correct[j - 1], self.covered[j - 1]),
                })
            positions.append(e)
        per_sample = []
        for s in self.per_sample:
            if s["blocks"] == 0:
                continue
            s = dict(s)
            s["mean_accept_length"] = s["accepted_total"] / s["blocks"]
            per_sample.append(s)
        tau = ratio(sum(s["mean_accept_length"] for s in per_sample), len(per_sample))
        r = {
            "accept_length_pooled": ratio(self.accept_sum, self.blocks),
            "tau": tau,
            "blocks": self.blocks,
            "samples": len(per_sample),
            "tokens_scored": self.tokens,
            "accepted_histogram": self.hist,
            "positions": positions,
            "per_sample": per_sample,
        }
        if self.family == "dflash2":
            r.update({
                "unary_accept_length_pooled": ratio(self.unary_accept_sum, self.blocks),
                "oracle_accept_length_pooled": ratio(self.oracle_accept_sum, self.blocks),
                "first_miss": dict(self.first_miss),
                "selector_near_ties": self.near_ties,
            })
        return r


def score_block(drafter, sample, a, B, end, semantics=DEFAULT_SEMANTICS):
    """Drafts one block at anchor a and compares positions a+j < end.

    zlab-2025: a full block of B rows, positions at or past `end` unscored.
    zlab-current: a block of Lb = min(B, end - a) rows (the positions that exist).
    Returns {"correct": [...], "drafts": [...]} (+ dflash2 lists), j = 1.. .
    """
    if a + 1 >= end:
        return {"correct": [], "drafts": [], "unary_correct": [], "covered": [],
                "tf_correct": [], "near_ties": 0}
    labels = sample.input_ids[a + 1:end]
    if semantics == "zlab-2025":
        rows = min(B - 1, end - 1 - a)
        h = drafter.hidden(sample.features[:a], sample.input_ids[a], a, B, semantics=semantics)
        logits = drafter.logits(h[1:B])[:rows]
        h = h[1:1 + rows]
    else:
        Lb = min(B, end - a)
        rows = Lb - 1
        h = drafter.hidden(sample.features[:a], sample.input_ids[a], a, Lb, semantics=semantics)
        h = h[1:Lb]
        logits = drafter.logits(h)
    labels = [int(x) for x in labels[:rows].tolist()]
    prop = drafter.propose(h, logits, sample.input_ids[a], labels)
    out = {"drafts": prop["drafts"],
           "correct": [d == t for d, t in zip(prop["drafts"], labels)],
           "unary_correct": [d == t for d, t in zip(prop["unary"], labels)]}
    if drafter.family == "dflash2":
        out["covered"] = [t in cand for t, cand in zip(labels, prop["candidates"])]
        out["tf_correct"] = prop["tf_correct"]
        out["near_ties"] = prop["near_ties"]
    return out


def block_correct(drafter, sample, a, B, limit, semantics="zlab-2025"):
    """correct[j-1] = (draft_j == t[a+j]) for j = 1.. with a+j < limit."""
    return score_block(drafter, sample, a, B, limit, semantics)["correct"]


def evaluate(drafter, samples, mode, anchors="all", max_blocks=0, block_size=0,
             max_new_tokens=0, semantics=DEFAULT_SEMANTICS):
    family = drafter.family
    check_semantics(semantics, family)
    B = block_size or drafter.cfg.block_size
    if B > drafter.cfg.block_size or B < 2:
        raise ValueError("block size %d; drafter's is %d" % (B, drafter.cfg.block_size))
    m = Metrics(B, family)
    for s in samples:
        L = s.input_ids.shape[0]
        resp = (s.loss_mask == 1).nonzero()
        P = int(resp[0]) if resp.numel() else L
        m.begin_sample(s.index, L, P)
        if mode == "anchor":
            for a in select_anchors(s.loss_mask, anchors, max_blocks):
                m.add(score_block(drafter, s, a, B, L, semantics))
        elif mode == "replay":
            Lp = min(L, P + max_new_tokens) if max_new_tokens > 0 else L
            pos, blocks = P, 0
            if semantics == "zlab-2025":
                # Older loop: record n + 1 while pos < L'.
                while pos < Lp and (max_blocks <= 0 or blocks < max_blocks):
                    n = m.add(score_block(drafter, s, pos, B, Lp, semantics))
                    blocks += 1
                    pos += n + 1
            else:
                # z-lab's current dflash_generate: shortened last block,
                # produced = min(n + 1, L' - s - 1), while s + 1 < L'.
                while pos + 1 < Lp and (max_blocks <= 0 or blocks < max_blocks):
                    cap = Lp - pos - 1
                    n = m.add(score_block(drafter, s, pos, B, Lp, semantics), cap)
                    blocks += 1
                    pos += min(n + 1, cap)
        else:
            raise ValueError("unknown mode '%s'" % mode)
    r = m.result()
    r.update({"mode": mode, "block_size": B})
    if mode == "anchor":
        r["anchors"] = anchors
    r.update({"semantics": semantics, "family": family})
    return r


# ---------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------

def parse_groups(items):
    if not items:
        return None
    groups = {}
    for it in items:
        key, ids = it.split("=", 1)
        groups[key] = [int(x) for x in ids.split(",") if x]
    return groups


def load_all(args):
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.compute_dtype]
    embed, head, _ = load_target(args.target)
    drafter = Drafter(args.drafter, embed, head, dtype)
    samples = load_dataset(args.dataset, drafter.cfg.target_layer_ids,
                           args.max_samples, parse_groups(args.features))
    return drafter, samples


def emit(obj, path):
    text = json.dumps(obj, indent=1)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)


def logits_entry(drafter, s, a, B, rows, semantics):
    """One block of the `logits` command. zlab-2025: a block of B rows;
    zlab-current: Lb = min(B, L - a) rows (L = the sample's length)."""
    L = B if semantics == "zlab-2025" else min(B, s.input_ids.shape[0] - a)
    if L < 2:
        raise ValueError("sample %d anchor %d: no slot to draft (block length %d)"
                         % (s.index, a, L))
    h = drafter.hidden(s.features[:a], s.input_ids[a], a, L, semantics=semantics)[1:L]
    logits = drafter.logits(h)
    e = {"sample": s.index, "anchor": a, "block_size": B, "block_length": L,
         "semantics": semantics, "drafts": logits.argmax(-1).tolist()}
    if drafter.family == "dflash2":
        prop = drafter.propose(h, logits, s.input_ids[a])
        e["selector_drafts"] = prop["drafts"]
        e["candidates"] = prop["candidates"]
    if rows:
        logits = logits[:rows]
        for key in ("drafts", "selector_drafts", "candidates"):
            if key in e:
                e[key] = e[key][:rows]
    e["logits"] = [[float(v) for v in row] for row in logits.tolist()]
    return e


def add_sampling(r, args, drafter, samples):
    """eval --sampling: the target consistency, sampled acceptance and the
    draft-length curve (decision_metrics.py) added to the result `r`."""
    import decision_metrics as dm
    if args.mode != "anchor":
        raise ValueError("--sampling needs --mode anchor")
    _, head, _ = load_target(args.target)
    norm, eps = dm.load_target_norm(args.target)
    norm_applied = dm.attach_final_hidden(args.dataset, samples)
    B = args.block_size or drafter.cfg.block_size
    r["target_consistency"] = dm.consistency(samples, head, norm, eps, norm_applied)
    r["draft_length_curve"] = dm.draft_length_curve(r["accepted_histogram"])
    r["sampling"] = dm.sampled_eval(drafter, samples, args.sampling, head, norm, eps,
                                    norm_applied, B, args.anchors, args.max_blocks,
                                    args.semantics, args.policy, not args.target_only_truncation)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("eval", "logits"):
        p = sub.add_parser(name)
        p.add_argument("--drafter", required=True)
        p.add_argument("--target", required=True)
        p.add_argument("--dataset", required=True)
        p.add_argument("--features", action="append",
                       help="KEY=IDS, e.g. hidden_states=1,3,5 (overrides dataset.json)")
        p.add_argument("--max-samples", type=int, default=0)
        p.add_argument("--block-size", type=int, default=0, help="0 = the drafter's")
        p.add_argument("--compute-dtype", choices=["float32", "float64"], default="float32")
        p.add_argument("--semantics", choices=list(SEMANTICS), default=DEFAULT_SEMANTICS,
                       help="zlab-current (default) or zlab-2025 (older rules; DFlash 1 only)")
        p.add_argument("--threads", type=int, default=1,
                       help="torch threads (default 1: fastest for these sizes on a busy box)")
        p.add_argument("--json", help="also write the JSON here")
    pe = sub.choices["eval"]
    pe.add_argument("--mode", choices=["anchor", "replay"], default="anchor")
    pe.add_argument("--anchors", choices=["all", "even"], default="all")
    pe.add_argument("--max-blocks", type=int, default=0, help="per sample; 0 = no limit")
    pe.add_argument("--max-new-tokens", type=int, default=0, help="replay; 0 = no limit")
    pe.add_argument("--sampling", action="append", default=[],
                    help="anchor mode: also sampled acceptance, t=T[,p=P][,k=K] (repeatable; "
                         "needs the dataset's final_hidden_state; decision_metrics.py)")
    pe.add_argument("--policy", action="append", default=[],
                    choices=["sample", "argmax", "selector", "match"],
                    help="with --sampling: score each setting under each policy (repeatable)")
    pe.add_argument("--target-only-truncation", action="store_true",
                    help="top-k/top-p truncate only the target's p (the vllm/sglang presets)")
    pl = sub.choices["logits"]
    pl.add_argument("--blocks", required=True, help="SAMPLE:ANCHOR[,...] (sample = file index)")
    pl.add_argument("--rows", type=int, default=0, help="logit rows per block; 0 = all")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    try:
        drafter, samples = load_all(args)
        check_semantics(args.semantics, drafter.family)
        if args.cmd == "eval":
            r = evaluate(drafter, samples, args.mode, args.anchors, args.max_blocks,
                         args.block_size, args.max_new_tokens, args.semantics)
            if args.sampling:
                add_sampling(r, args, drafter, samples)
            emit(r, args.json)
            return 0
        B = args.block_size or drafter.cfg.block_size
        by_index = {s.index: s for s in samples}
        out = []
        for item in args.blocks.split(","):
            si, a = (int(x) for x in item.split(":"))
            out.append(logits_entry(drafter, by_index[si], a, B, args.rows, args.semantics))
    except (ValueError, KeyError, FileNotFoundError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
