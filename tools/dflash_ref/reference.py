#!/usr/bin/python3
"""Plain reference of the DFlash drafter forward and its evaluation.

Written straight from shared/reference/dflash-semantics.md (§4 one draft
block, §5 the two evaluation modes), one block at a time, no batching, so that
the C++ service can be checked against it. Needs only torch (1.13 works).

  reference.py eval --drafter DIR --target DIR --dataset DIR \
      --mode anchor|replay [--anchors all|even] [--max-blocks N] \
      [--max-samples N] [--block-size B] [--max-new-tokens N] [--json OUT]
  reference.py logits --drafter DIR --target DIR --dataset DIR \
      --blocks SAMPLE:ANCHOR[,SAMPLE:ANCHOR...] [--rows R] [--json OUT]

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

class DrafterConfig:
    def __init__(self, cfg):
        self.raw = cfg
        self.hidden_size = int(cfg["hidden_size"])
        self.num_heads = int(cfg["num_attention_heads"])
        self.num_kv_heads = int(cfg.get("num_key_value_heads") or self.num_heads)
        self.head_dim = int(cfg.get("head_dim") or self.hidden_size // self.num_heads)
        self.intermediate_size = int(cfg["intermediate_size"])
        self.num_layers = int(cfg["num_hidden_layers"])
        self.eps = float(cfg.get("rms_norm_eps", 1e-6))
        self.attention_bias = bool(cfg.get("attention_bias", False))
        dc = cfg.get("dflash_config") or {}
        self.block_size = int(cfg.get("block_size") or dc.get("block_size") or 16)
        if "target_layer_ids" not in dc:
            raise ValueError("config has no dflash_config.target_layer_ids")
        self.target_layer_ids = [int(x) for x in dc["target_layer_ids"]]
        self.mask_token_id = int(dc["mask_token_id"])
        types = cfg.get("layer_types") or ["full_attention"] * self.num_layers
        if len(types) != self.num_layers:
            raise ValueError("layer_types has %d entries; expected %d"
                             % (len(types), self.num_layers))
        for t in types:
            if t not in ("full_attention", "sliding_attention"):
                raise ValueError("unknown layer type '%s'" % t)
        self.sliding = [t == "sliding_attention" for t in types]
        self.sliding_window = int(cfg.get("sliding_window") or 0)
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


class Drafter:
    def __init__(self, path, embed, lm_head, compute_dtype=torch.float32):
        with open(os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                               "config.json")) as f:
            self.cfg = DrafterConfig(json.load(f))
        self.dtype = compute_dtype
        w = load_drafter_weights(path)
        self.w = {k: v.to(compute_dtype) for k, v in w.items()}
        self.embed = embed.to(compute_dtype)
        self.lm_head = lm_head.to(compute_dtype)
        self.inv_freq, self.rope_scale = rope_inv_freq(self.cfg.rope, self.cfg.head_dim)

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

    def block(self, feats, tokens_a, a, B, rows=None, ctx_kv=None):
        """Logits [rows, V] for one block at anchor a (rows default B-1).

        feats: c[0..a-1] [a, K*H_t]; tokens_a: t[a]. ctx_kv: optional
        precomputed per-layer context K/V (already sliced to a rows).
        """
        c = self.cfg
        nh, nkv, d = c.num_heads, c.num_kv_heads, c.head_dim
        ids = torch.full((B,), c.mask_token_id, dtype=torch.int64)
        ids[0] = int(tokens_a)
        x = self.embed[ids]                                       # [B, H]
        pos_blk = torch.arange(a, a + B, dtype=torch.int64)
        pos_ctx = torch.arange(0, a, dtype=torch.int64)
        ctx = self.context(feats) if ctx_kv is None else None     # [a, H]
        # Mask [B, a+B]: block queries see all block keys and context keys
        # except, on sliding layers, context keys at distance >= W.
        dist = pos_blk[:, None] - pos_ctx[None, :]                # [B, a]
        for i in range(c.num_layers):
            p = "layers.%d." % i
            y = rms_norm(x, self.w[p + "input_layernorm.weight"], c.eps)
            q = self.linear(y, p + "self_attn.q_proj").view(B, nh, d)
            q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], c.eps)
            q = self.rope(q, pos_blk)
            kb = self.linear(y, p + "self_attn.k_proj").view(B, nkv, d)
            kb = rms_norm(kb, self.w[p + "self_attn.k_norm.weight"], c.eps)
            kb = self.rope(kb, pos_blk)
            vb = self.linear(y, p + "self_attn.v_proj").view(B, nkv, d)
            if ctx_kv is None:
                kc, vc = self.context_kv(i, ctx, pos_ctx)
            else:
                kc, vc = ctx_kv[i]
            k = torch.cat((kc, kb), dim=0)                        # [a+B, nkv, d]
            v = torch.cat((vc, vb), dim=0)
            rep = nh // nkv                                       # GQA
            k = k.repeat_interleave(rep, dim=1)                   # [a+B, nh, d]
            v = v.repeat_interleave(rep, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, k) * (d ** -0.5)  # [nh, B, a+B]
            if c.sliding[i] and c.sliding_window > 0 and a > 0:
                masked = torch.cat((dist >= c.sliding_window,
                                    torch.zeros(B, B, dtype=torch.bool)), dim=1)
                scores = scores.masked_fill(masked[None], float("-inf"))
            probs = torch.softmax(scores.to(torch.promote_types(self.dtype, torch.float32)),
                                  dim=-1).to(self.dtype)
            attn = torch.einsum("hqk,khd->qhd", probs, v).reshape(B, nh * d)
            x = x + self.linear(attn, p + "self_attn.o_proj")
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], c.eps)
            gate = self.linear(h, p + "mlp.gate_proj")
            up = self.linear(h, p + "mlp.up_proj")
            x = x + self.linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
        out = rms_norm(x, self.w["norm.weight"], c.eps)
        r = B - 1 if rows is None else rows
        return out[1:1 + r] @ self.lm_head.t()                   # [r, V]

    def sequence_kv(self, feats):
        """Per-layer context K/V for a whole sequence (slice [:a] for anchor a)."""
        ctx = self.context(feats)
        pos = torch.arange(ctx.shape[0], dtype=torch.int64)
        return [self.context_kv(i, ctx, pos) for i in range(self.cfg.num_layers)]


# ---------------------------------------------------------------------------
# Evaluation (§5)
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
    def __init__(self, B):
        self.B = B
        self.counted = [0] * (B - 1)
        self.correct = [0] * (B - 1)
        self.accepted = [0] * (B - 1)
        self.cond_counted = [0] * (B - 1)
        self.hist = [0] * B
        self.blocks = 0
        self.tokens = 0
        self.accept_sum = 0
        self.per_sample = []

    def begin_sample(self, index, L, P):
        self.per_sample.append({"sample_index": index, "blocks": 0, "accepted_total": 0,
                                "length": L, "first_response_position": P})

    def add(self, correct):
        """correct[j-1] for the positions j = 1.. that exist."""
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
        self.accept_sum += n + 1
        s = self.per_sample[-1]
        s["blocks"] += 1
        s["accepted_total"] += n + 1
        return n

    def result(self):
        def ratio(a, b):
            return a / b if b else 0.0

        positions = []
        for j in range(1, self.B):
            positions.append({
                "position": j,
                "counted": self.counted[j - 1],
                "correct": self.correct[j - 1],
                "accuracy": ratio(self.correct[j - 1], self.counted[j - 1]),
                "accepted": self.accepted[j - 1],
                "acceptance": ratio(self.accepted[j - 1], self.counted[j - 1]),
                "conditional_counted": self.cond_counted[j - 1],
                "conditional": ratio(self.accepted[j - 1], self.cond_counted[j - 1]),
            })
        per_sample = []
        for s in self.per_sample:
            if s["blocks"] == 0:
                continue
            s = dict(s)
            s["mean_accept_length"] = s["accepted_total"] / s["blocks"]
            per_sample.append(s)
        tau = ratio(sum(s["mean_accept_length"] for s in per_sample), len(per_sample))
        return {
            "accept_length_pooled": ratio(self.accept_sum, self.blocks),
            "tau": tau,
            "blocks": self.blocks,
            "samples": len(per_sample),
            "tokens_scored": self.tokens,
            "accepted_histogram": self.hist,
            "positions": positions,
            "per_sample": per_sample,
        }


def block_correct(drafter, sample, a, B, limit):
    """correct[j-1] = (draft_j == t[a+j]) for j = 1.. with a+j < limit."""
    if a + 1 >= limit:
        return []
    rows = min(B - 1, limit - 1 - a)
    logits = drafter.block(sample.features[:a], sample.input_ids[a], a, B)[:rows]
    drafts = logits.argmax(dim=-1)
    labels = sample.input_ids[a + 1:a + 1 + rows]
    return [bool(x) for x in (drafts == labels).tolist()]


def evaluate(drafter, samples, mode, anchors="all", max_blocks=0, block_size=0,
             max_new_tokens=0):
    B = block_size or drafter.cfg.block_size
    if B > drafter.cfg.block_size or B < 2:
        raise ValueError("block size %d; drafter's is %d" % (B, drafter.cfg.block_size))
    m = Metrics(B)
    for s in samples:
        L = s.input_ids.shape[0]
        resp = (s.loss_mask == 1).nonzero()
        P = int(resp[0]) if resp.numel() else L
        m.begin_sample(s.index, L, P)
        if mode == "anchor":
            for a in select_anchors(s.loss_mask, anchors, max_blocks):
                m.add(block_correct(drafter, s, a, B, L))
        elif mode == "replay":
            Lp = min(L, P + max_new_tokens) if max_new_tokens > 0 else L
            pos, blocks = P, 0
            while pos < Lp and (max_blocks <= 0 or blocks < max_blocks):
                n = m.add(block_correct(drafter, s, pos, B, Lp))
                blocks += 1
                pos += n + 1
        else:
            raise ValueError("unknown mode '%s'" % mode)
    r = m.result()
    r.update({"mode": mode, "block_size": B})
    if mode == "anchor":
        r["anchors"] = anchors
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
        p.add_argument("--json", help="also write the JSON here")
    pe = sub.choices["eval"]
    pe.add_argument("--mode", choices=["anchor", "replay"], default="anchor")
    pe.add_argument("--anchors", choices=["all", "even"], default="all")
    pe.add_argument("--max-blocks", type=int, default=0, help="per sample; 0 = no limit")
    pe.add_argument("--max-new-tokens", type=int, default=0, help="replay; 0 = no limit")
    pl = sub.choices["logits"]
    pl.add_argument("--blocks", required=True, help="SAMPLE:ANCHOR[,...] (sample = file index)")
    pl.add_argument("--rows", type=int, default=0, help="logit rows per block; 0 = B-1")
    args = ap.parse_args(argv)

    try:
        drafter, samples = load_all(args)
    except (ValueError, KeyError, FileNotFoundError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    if args.cmd == "eval":
        r = evaluate(drafter, samples, args.mode, args.anchors, args.max_blocks,
                     args.block_size, args.max_new_tokens)
        emit(r, args.json)
        return 0
    B = args.block_size or drafter.cfg.block_size
    by_index = {s.index: s for s in samples}
    out = []
    for item in args.blocks.split(","):
        si, a = (int(x) for x in item.split(":"))
        s = by_index[si]
        logits = drafter.block(s.features[:a], s.input_ids[a], a, B)
        if args.rows:
            logits = logits[:args.rows]
        out.append({"sample": si, "anchor": a, "block_size": B,
                    "drafts": logits.argmax(-1).tolist(),
                    "logits": [[float(v) for v in row] for row in logits.tolist()]})
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
