#!/usr/bin/python3
"""Generates a small, self-consistent DFlash evaluation fixture.

  make_fixture.py OUT --size tiny|small|medium|bench [--seed S] [--dtype fp32|bf16]
                  [--expected all|replay|none] [--threads 1|2]

Writes OUT/target, OUT/target-qwen36, OUT/target-tied, OUT/drafter,
OUT/drafter-pt, OUT/dataset, OUT/dataset-4layers, OUT/dataset-split and
OUT/expected/{anchor_all,replay}.json (reference.py zlab-2025 results on
OUT/drafter + OUT/target + OUT/dataset, written exactly as before, without the
"semantics"/"family" keys) and OUT/expected/{logits,logits_tied}.json (a few
blocks' logits with OUT/target and OUT/target-tied, zlab-2025). The response
tokens are the reference drafter's own draft_1 (probability 0.85) or random,
so the metrics are non-trivial.

tiny and small also write the current z-lab spellings and rules:
OUT/drafter-v1new + OUT/dataset-v1new (DFlash 1, draft keys at top level,
embedding scale, output multiplier, softcap, a window shorter than the block),
OUT/drafter2 + OUT/drafter2-dotweight + OUT/dataset2 (DFlash 2), and
OUT/expected/current/, OUT/expected/v1new/, OUT/expected/v1new/2025/,
OUT/expected/dflash2/ ({anchor_all,replay}.json each). medium and bench
write only target, drafter, drafter-pt and dataset, as before.
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402
import decision_metrics as dm  # noqa: E402

SIZES = {
    #         H    V      nh nkv d   I     n  W    B   samples L range
    "tiny":   dict(H=32, V=128, nh=4, nkv=2, d=16, I=64, n=2, W=24, B=8,
                   samples=6, L=(40, 64)),
    "small":  dict(H=64, V=512, nh=4, nkv=2, d=32, I=128, n=3, W=48, B=16,
                   samples=16, L=(96, 160)),
    "medium": dict(H=512, V=32000, nh=8, nkv=4, d=64, I=1408, n=3, W=256, B=16,
                   samples=64, L=(512, 1024)),
    # bench/: medium's shapes with 2 layers and long prompts (P ~ 60-70 % of
    # L), so the drafter-made responses take ~1 min to generate on 2 cores.
    "bench":  dict(H=512, V=32000, nh=8, nkv=4, d=64, I=1408, n=2, W=256, B=16,
                   samples=64, L=(512, 640), prompt=(0.6, 0.1)),
}
BENCH_SIZES = ("medium", "bench")  # write only target, drafter(-pt), dataset
LAYERS = [1, 3, 5, 7, 9]
NUM_TARGET_LAYERS = 12
CHUNK = 8          # capture files per rows_<a>-<b> directory
P_DRAFT = 0.85     # probability that a response token is the drafter's draft_1
MASK_SCALE = 1.0   # default mask embedding norm relative to other rows: shapes
                   # how much deeper block positions agree (larger = more)


def layer_types(n):
    return ["sliding_attention"] * (n - 1) + ["full_attention"]


def drafter_config(s, dtype):
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": s["H"],
        "num_attention_heads": s["nh"],
        "num_key_value_heads": s["nkv"],
        "head_dim": s["d"],
        "intermediate_size": s["I"],
        "num_hidden_layers": s["n"],
        "layer_types": layer_types(s["n"]),
        "sliding_window": s["W"],
        "use_sliding_window": True,
        "max_window_layers": s["n"],
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "rope_scaling": None,
        "max_position_embeddings": 4096,
        "attention_bias": False,
        "hidden_act": "silu",
        "block_size": s["B"],
        "dflash_config": {"target_layer_ids": LAYERS, "mask_token_id": s["V"] - 1},
        "num_target_layers": NUM_TARGET_LAYERS,
        "vocab_size": s["V"],
        "tie_word_embeddings": False,
        "torch_dtype": dtype,
    }


# drafter-v1new: a DFlash 1 drafter in the current z-lab spelling (draft keys
# at top level, no dflash_config), with input_embedding_scale, output_multiplier,
# final_logit_softcapping, no is_causal (sliding layers causal in the block) and
# a window shorter than the block, so every rule of zlab-current shows.
V1NEW = dict(input_embedding_scale=2.0, output_multiplier=0.5, final_logit_softcapping=3.0,
             window_below_block=3, seed_offset=1001)
# drafter2: DFlash 2 (per size: conv group size, selector rank and top-k).
DFLASH2 = dict(conv_kernel_size=2, input_embedding_scale=1.5, output_multiplier=0.7,
               final_logit_softcapping=2.0, seed_offset=2002,
               tiny=dict(gs=8, rank=8, top_k=4), small=dict(gs=16, rank=16, top_k=8))


def v1new_config(s, dtype):
    cfg = drafter_config(s, dtype)
    del cfg["dflash_config"]
    cfg.update({
        "block_size": s["B"],
        "target_layer_ids": LAYERS,
        "mask_token_id": s["V"] - 1,
        "sliding_window": s["B"] - V1NEW["window_below_block"],
        "input_embedding_scale": V1NEW["input_embedding_scale"],
        "output_multiplier": V1NEW["output_multiplier"],
        "final_logit_softcapping": V1NEW["final_logit_softcapping"],
    })
    return cfg


def dflash2_config(s, size, dtype):
    """transformers 5.x spelling (rope_parameters, dtype), draft keys in
    dflash_config, every layer sliding, is_causal false."""
    k = DFLASH2[size]
    cfg = drafter_config(s, dtype)
    for key in ("torch_dtype", "rope_theta", "rope_scaling", "block_size"):
        del cfg[key]
    cfg.update({
        "architectures": ["DFlash2DraftModel"],
        "layer_types": ["sliding_attention"] * s["n"],
        "is_causal": False,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "dtype": dtype,
        "dflash_config": {
            "block_size": s["B"],
            "target_layer_ids": LAYERS,
            "mask_token_id": s["V"] - 1,
            "conv_kernel_size": DFLASH2["conv_kernel_size"],
            "conv_group_size": k["gs"],
            "selector_rank": k["rank"],
            "selector_top_k": k["top_k"],
            "input_embedding_scale": DFLASH2["input_embedding_scale"],
            "output_multiplier": DFLASH2["output_multiplier"],
            "final_logit_softcapping": DFLASH2["final_logit_softcapping"],
        },
    })
    return cfg


def make_dflash2_weights(s, size, g):
    """DFlash 1 weights + convs near identity (base tap 0 ~ 1 + noise, other
    taps ~ noise, small kernel projections) + a selector whose low-rank term
    is about as large as the spread of the unary logits among the top-k."""
    k = DFLASH2[size]
    H, V, K, r = s["H"], s["V"], DFLASH2["conv_kernel_size"], k["rank"]
    G = H // k["gs"]
    w = make_drafter_weights(s, g)
    for i in range(s["n"]):
        for m in ("attention_conv", "mlp_conv"):
            p = "layers.%d.%s." % (i, m)
            base = 0.15 * torch.randn(2, K, H, generator=g)
            base[:, 0] += 1.0
            w[p + "base_kernel"] = base
            w[p + "kernel_projection.weight"] = 0.15 * torch.randn(2 * K * G, H, generator=g) / H ** 0.5
    w["candidate_selector.hidden_projection.weight"] = torch.randn(r, H, generator=g) / H ** 0.5
    sigma = (0.3 / r ** 0.5) ** 0.5  # selector term std ~ 0.3
    w["candidate_selector.predecessor_codebook"] = sigma * torch.randn(V, r, generator=g)
    w["candidate_selector.successor_codebook"] = sigma * torch.randn(V, r, generator=g)
    return w


def write_drafter(path, cfg, w):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    ref.write_safetensors(os.path.join(path, "model.safetensors"), w, {"format": "pt"})


def make_drafter_weights(s, g):
    H, nh, nkv, d, I, K = s["H"], s["nh"], s["nkv"], s["d"], s["I"], len(LAYERS)

    def lin(out, inp):  # std 1/sqrt(fan_in): activations stay O(1)
        return torch.randn(out, inp, generator=g) / inp ** 0.5

    def norm(n):
        return 1.0 + 0.05 * torch.randn(n, generator=g)

    w = {"fc.weight": lin(H, K * H), "hidden_norm.weight": norm(H)}
    for i in range(s["n"]):
        p = "layers.%d." % i
        w[p + "input_layernorm.weight"] = norm(H)
        w[p + "self_attn.q_proj.weight"] = lin(nh * d, H)
        w[p + "self_attn.k_proj.weight"] = lin(nkv * d, H)
        w[p + "self_attn.v_proj.weight"] = lin(nkv * d, H)
        w[p + "self_attn.o_proj.weight"] = lin(H, nh * d)
        w[p + "self_attn.q_norm.weight"] = norm(d)
        w[p + "self_attn.k_norm.weight"] = norm(d)
        w[p + "post_attention_layernorm.weight"] = norm(H)
        w[p + "mlp.gate_proj.weight"] = lin(I, H)
        w[p + "mlp.up_proj.weight"] = lin(I, H)
        w[p + "mlp.down_proj.weight"] = lin(H, I)
    w["norm.weight"] = norm(H)
    return w


def make_target_weights(s, g, mask_scale):
    H, V = s["H"], s["V"]
    embed = torch.randn(V, H, generator=g)
    embed[V - 1] *= mask_scale
    head = torch.randn(V, H, generator=g) / H ** 0.5
    head[V - 1] = 0.0  # the mask token is (practically) never drafted
    return {"embed": embed, "head": head, "norm": 1.0 + 0.05 * torch.randn(H, generator=g),
            "up": torch.randn(2 * H, H, generator=g) * 0.02,
            "q": torch.randn(H, H, generator=g) * 0.02}


def write_sharded(path, config, shards):
    """shards: [(file, {name: tensor})]; writes config.json + index."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    weight_map, total = {}, 0
    for fname, tensors in shards:
        ref.write_safetensors(os.path.join(path, fname), tensors, {"format": "pt"})
        for k, t in tensors.items():
            weight_map[k] = fname
            total += t.numel() * t.element_size()
    if len(shards) > 1 or shards[0][0] != "model.safetensors":
        with open(os.path.join(path, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=1)


def write_targets(out, s, t, dtype_name, variants):
    H, V = s["H"], s["V"]
    base = {"hidden_size": H, "vocab_size": V, "num_hidden_layers": NUM_TARGET_LAYERS,
            "intermediate_size": 2 * H, "num_attention_heads": s["nh"],
            "num_key_value_heads": s["nkv"], "head_dim": s["d"], "rms_norm_eps": 1e-6,
            "rope_theta": 1000000.0, "max_position_embeddings": 4096}
    qwen3 = dict(base, architectures=["Qwen3ForCausalLM"], model_type="qwen3",
                 tie_word_embeddings=False, torch_dtype=dtype_name)
    write_sharded(os.path.join(out, "target"), qwen3, [
        ("model-00001-of-00002.safetensors", {
            "model.embed_tokens.weight": t["embed"],
            "model.layers.0.mlp.up_proj.weight": t["up"],
            "model.layers.0.self_attn.q_proj.weight": t["q"]}),
        ("model-00002-of-00002.safetensors", {
            "lm_head.weight": t["head"], "model.norm.weight": t["norm"]}),
    ])
    if not variants:
        return
    qwen36 = {"architectures": ["Qwen3_5ForConditionalGeneration"], "model_type": "qwen3_5",
              "tie_word_embeddings": False, "torch_dtype": dtype_name,
              "text_config": dict(base, model_type="qwen3_5_text", tie_word_embeddings=False),
              "vision_config": {"hidden_size": 16, "depth": 1}}
    write_sharded(os.path.join(out, "target-qwen36"), qwen36, [
        ("model-00001-of-00002.safetensors", {
            "model.language_model.embed_tokens.weight": t["embed"],
            "model.language_model.layers.0.mlp.up_proj.weight": t["up"],
            "model.visual.patch_embed.proj.weight": t["q"][:16]}),
        ("model-00002-of-00002.safetensors", {
            "lm_head.weight": t["head"], "model.language_model.norm.weight": t["norm"]}),
    ])
    tied = dict(qwen3, tie_word_embeddings=True)
    write_sharded(os.path.join(out, "target-tied"), tied, [
        ("model.safetensors", {
            "model.embed_tokens.weight": t["embed"],
            "model.layers.0.mlp.up_proj.weight": t["up"],
            "model.norm.weight": t["norm"]}),
    ])


def first_logits_batched(dr, ids_a, a, B, kv):
    """draft_1 logits [S, V] of S blocks at the same anchor a (a batched copy
    of reference.Drafter.block for fixture speed; selfcheck compares them).

    ids_a [S]: anchor tokens; kv: per layer (k, v) [S, >=a, nkv, d], RoPE'd.
    """
    c = dr.cfg
    S, nh, nkv, d = ids_a.shape[0], c.num_heads, c.num_kv_heads, c.head_dim
    rep = nh // nkv
    ids = torch.full((S, B), c.mask_token_id, dtype=torch.int64)
    ids[:, 0] = ids_a
    x = dr.embed[ids]                                             # [S, B, H]
    pos_blk = torch.arange(a, a + B, dtype=torch.int64)
    far = (pos_blk[:, None] - torch.arange(a)[None, :]) >= c.sliding_window  # [B, a]
    for i in range(c.num_layers):
        p = "layers.%d." % i
        y = ref.rms_norm(x, dr.w[p + "input_layernorm.weight"], c.eps)
        q = dr.linear(y, p + "self_attn.q_proj").view(S, B, nh, d)
        q = dr.rope(ref.rms_norm(q, dr.w[p + "self_attn.q_norm.weight"], c.eps), pos_blk)
        kb = dr.linear(y, p + "self_attn.k_proj").view(S, B, nkv, d)
        kb = dr.rope(ref.rms_norm(kb, dr.w[p + "self_attn.k_norm.weight"], c.eps), pos_blk)
        vb = dr.linear(y, p + "self_attn.v_proj").view(S, B, nkv, d)
        k = torch.cat((kv[i][0][:, :a], kb), dim=1)               # [S, a+B, nkv, d]
        v = torch.cat((kv[i][1][:, :a], vb), dim=1)
        q = q.view(S, B, nkv, rep, d)                             # head h -> kv h // rep
        scores = torch.einsum("sqgrd,skgd->sgrqk", q, k) * (d ** -0.5)
        if c.sliding[i] and c.sliding_window > 0:
            mask = torch.cat((far, torch.zeros(B, B, dtype=torch.bool)), dim=1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        attn = torch.einsum("sgrqk,skgd->sqgrd", probs, v).reshape(S, B, nh * d)
        x = x + dr.linear(attn, p + "self_attn.o_proj")
        h = ref.rms_norm(x, dr.w[p + "post_attention_layernorm.weight"], c.eps)
        x = x + dr.linear(torch.nn.functional.silu(dr.linear(h, p + "mlp.gate_proj")) *
                          dr.linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    out = ref.rms_norm(x, dr.w["norm.weight"], c.eps)[:, 1]      # [S, H]
    return out @ dr.lm_head.t()


def draw_samples(s, g, stored_dtype):
    """Per sample: [index, ids, P, features, coins]: length L, first response
    position P, features N(0, 1), random ids (never the mask id V-1) and the
    coins (True: the response token at that position takes draft_1)."""
    V, KH = s["V"], len(LAYERS) * s["H"]
    samples = []
    for i in range(s["samples"]):
        L = int(torch.randint(s["L"][0], s["L"][1] + 1, (1,), generator=g))
        p0, p1 = s.get("prompt", (0.2, 0.1))
        P = max(2, int(round(L * (p0 + p1 * float(torch.rand(1, generator=g))))))
        feats = torch.randn(L, KH, generator=g).to(stored_dtype)
        ids = torch.randint(0, V - 1, (L,), generator=g)  # never the mask id
        coins = torch.rand(L, generator=g) < P_DRAFT      # True: take draft_1
        samples.append([i, ids, P, feats, coins])
    return samples


def with_masks(samples):
    out = []
    for i, ids, P, feats, _ in samples:
        mask = torch.zeros(ids.shape[0], dtype=torch.int64)
        mask[P:] = 1
        out.append((i, ids, mask, feats))
    return out


def generate_samples_plain(s, drafter, g, semantics="zlab-current"):
    """Like generate_samples, one block at a time with reference.py's own
    forward (cached context K/V): t[p] = draft_1 of the block at anchor p-1
    (block length min(B, L - (p-1)) under zlab-current) with probability
    0.85; for a DFlash 2 drafter draft_1 is the selector's first choice."""
    B = drafter.cfg.block_size
    mask_id = drafter.cfg.mask_token_id
    samples = draw_samples(s, g, drafter.stored_dtype)
    for x in samples:
        _, ids, P, feats, coins = x
        L = ids.shape[0]
        kv = drafter.sequence_kv(feats.to(drafter.dtype))
        for p in range(P + 1, L):
            a = p - 1
            Lb = B if semantics == "zlab-2025" else min(B, L - a)
            h = drafter.hidden(None, ids[a], a, Lb, ctx_kv=[(k[:a], v[:a]) for k, v in kv],
                               semantics=semantics)[1:2]
            d1 = drafter.propose(h, drafter.logits(h), ids[a])["drafts"][0]
            if bool(coins[p]) and d1 != mask_id:
                ids[p] = d1
    return with_masks(samples)


def generate_samples(s, drafter, g, batch=16, responses="drafter"):
    """Token ids, loss masks and features; response tokens follow the drafter.

    All random draws come first (per sample), then the response tokens are
    filled position by position, sequences of similar length in lockstep.
    """
    V, B = s["V"], s["B"]
    samples = draw_samples(s, g, drafter.stored_dtype)
    order = sorted(range(len(samples)), key=lambda j: samples[j][1].shape[0])
    if responses == "random":  # seconds instead of minutes; accept length ~1
        order = []
    for c0 in range(0, len(order), batch):
        group = [samples[j] for j in order[c0:c0 + batch]]
        Lmax = max(x[1].shape[0] for x in group)
        kv = None
        for x in group:  # per-layer context K/V, padded to Lmax
            one = drafter.sequence_kv(x[3])
            if kv is None:
                kv = [[torch.zeros((len(group), Lmax) + t.shape[1:]) for t in pair]
                      for pair in one]
            row = group.index(x)
            for layer, (k, v) in enumerate(one):
                kv[layer][0][row, :k.shape[0]] = k
                kv[layer][1][row, :v.shape[0]] = v
        ids = torch.zeros(len(group), Lmax, dtype=torch.int64)
        for row, x in enumerate(group):
            ids[row, :x[1].shape[0]] = x[1]
        for p in range(min(x[2] for x in group) + 1, Lmax):
            act = [row for row, x in enumerate(group) if x[2] + 1 <= p < x[1].shape[0]]
            drafts = first_logits_batched(drafter, ids[:, p - 1], p - 1, B, kv).argmax(-1)
            for row in act:
                x = group[row]
                if bool(x[4][p]) and int(drafts[row]) != V - 1:
                    ids[row, p] = drafts[row]
        for row, x in enumerate(group):
            x[1] = ids[row, :x[1].shape[0]].clone()
    return with_masks(samples)


def write_dataset(path, samples, H, groups, split):
    """split: feature key -> (first column layer index, count)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "dataset.json"), "w") as f:
        json.dump({"name": "demo", "hidden_size": H, "features": groups}, f, indent=1)
    n = len(samples)
    for i, ids, mask, feats in samples:
        start = (i // CHUNK) * CHUNK
        d = os.path.join(path, "rows_%d-%d" % (start, min(start + CHUNK, n)))
        os.makedirs(d, exist_ok=True)
        obj = {"input_ids": ids.clone(), "loss_mask": mask.clone()}
        for key, (first, count) in split.items():
            obj[key] = feats[:, first * H:(first + count) * H].clone()
        torch.save(obj, os.path.join(d, "data_%d.ckpt" % i))


def write_final_dataset(path, samples, H, t, norm_applied, g):
    """The main layout plus the target's final hidden state under key
    'final_hidden' (docs/decision-metrics.md §1), made consistent with a greedy
    capture from the target's lm_head and final norm `t`."""
    write_dataset(path, samples, H, {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
    with open(os.path.join(path, "dataset.json")) as f:
        manifest = json.load(f)
    manifest["final_hidden_state"] = {"key": "final_hidden", "norm_applied": norm_applied}
    with open(os.path.join(path, "dataset.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    n = len(samples)
    for i, ids, mask, _ in samples:
        start = (i // CHUNK) * CHUNK
        f = os.path.join(path, "rows_%d-%d" % (start, min(start + CHUNK, n)), "data_%d.ckpt" % i)
        obj = torch.load(f)
        obj["final_hidden"] = dm.make_final_hidden(ids, mask, t["head"], t["norm"], 1e-6,
                                                   norm_applied, g).to(t["head"].dtype)
        torch.save(obj, f)


def write_wrong_head_target(out, s, t, dtype_name, g):
    """target-wronghead: the target with a random lm_head of the same shape
    (the consistency check must refuse it)."""
    t2 = dict(t, head=(torch.randn(s["V"], s["H"], generator=g) / s["H"] ** 0.5).to(t["head"].dtype))
    tmp = os.path.join(out, ".wronghead")
    write_targets(tmp, s, t2, dtype_name, False)
    os.replace(os.path.join(tmp, "target"), os.path.join(out, "target-wronghead"))
    os.rmdir(tmp)


def logit_checks(drafter, samples):
    """Logits of a few blocks (first, a middle and the last anchor of the first
    two samples; at most 7 rows), in reference.py's `logits` format."""
    out = []
    B = drafter.cfg.block_size
    for s in samples[:2]:
        el = ref.eligible_anchors(s.loss_mask)
        for a in sorted({el[0], el[len(el) // 2], el[-1]}):
            logits = drafter.block(s.features[:a], s.input_ids[a], a, B,
                                   semantics="zlab-2025")[:7]
            out.append({"sample": s.index, "anchor": a, "block_size": B,
                        "drafts": logits.argmax(-1).tolist(),
                        "logits": [[float(v) for v in row] for row in logits.tolist()]})
    return out


def write_result(path, r, lines, out):
    """Writes one expected result and adds its summary line."""
    with open(path, "w") as f:
        json.dump(r, f, indent=1)
        f.write("\n")
    acc = [round(p["accuracy"], 3) for p in r["positions"][:4]]
    lines.append("  %-29s blocks %5d  accept length (pooled, +1 bonus) %.3f"
                 "  tau %.3f  accuracy[1..4] %s"
                 % (os.path.relpath(path, out), r["blocks"], r["accept_length_pooled"],
                    r["tau"], acc))
    if r.get("family") == "dflash2":
        un = [round(p["unary_accuracy"], 3) for p in r["positions"][:4]]
        cov = [round(p["coverage"], 3) for p in r["positions"][:4]]
        tf = [round(p["tf_accuracy"], 3) for p in r["positions"][:4]]
        fm = r["first_miss"]
        lines.append("  %-29s unary accept length %.3f, top-k oracle %.3f; first miss: "
                     "all accepted %d, coverage %d, ranking %d; near ties %d"
                     % ("", r["unary_accept_length_pooled"], r["oracle_accept_length_pooled"],
                        fm["all_accepted"], fm["coverage_miss"], fm["ranking_error"],
                        r["selector_near_ties"]))
        lines.append("  %-29s unary accuracy[1..4] %s  coverage %s  tf accuracy %s"
                     % ("", un, cov, tf))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--expected", choices=["all", "replay", "none"], default=None,
                    help="which expected results to compute (default: all; none for medium)")
    ap.add_argument("--responses", choices=["drafter", "random"], default="drafter",
                    help="response tokens: the drafter's draft_1 (p=0.85) or all random")
    ap.add_argument("--mask-scale", type=float, default=MASK_SCALE,
                    help="mask embedding scale; larger makes deeper positions agree more")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 or 2; default 1)")
    args = ap.parse_args(argv)
    expected = args.expected or ("none" if args.size in BENCH_SIZES else "all")
    t0 = time.time()
    # One thread: these tensors are tiny, and on a busy 2-core machine two
    # OpenMP threads run 10-40x slower than one (same numbers either way).
    torch.set_num_threads(max(1, min(args.threads, 2)))
    s = SIZES[args.size]
    g = torch.Generator().manual_seed(args.seed)
    sdtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    dtype_name = "bfloat16" if args.dtype == "bf16" else "float32"
    out = args.out
    os.makedirs(out, exist_ok=True)

    # Weights, rounded to the stored dtype before anything uses them.
    w = {k: v.to(sdtype) for k, v in make_drafter_weights(s, g).items()}
    t = {k: v.to(sdtype) for k, v in make_target_weights(s, g, args.mask_scale).items()}
    # medium (benchmarks) writes only target, drafter and dataset.
    variants = args.size not in BENCH_SIZES
    write_targets(out, s, t, dtype_name, variants)
    cfg = drafter_config(s, dtype_name)
    ddir = os.path.join(out, "drafter")
    os.makedirs(ddir, exist_ok=True)
    with open(os.path.join(ddir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    ref.write_safetensors(os.path.join(ddir, "model.safetensors"), w, {"format": "pt"})
    pdir = os.path.join(out, "drafter-pt")
    os.makedirs(pdir, exist_ok=True)
    with open(os.path.join(pdir, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    torch.save({"model": {"module." + k: v.clone() for k, v in w.items()},
                "optimizer": {"state": {}, "param_groups": [{"lr": 6e-4, "betas": [0.9, 0.95]}]},
                "step": 1234}, os.path.join(pdir, "checkpoint.pt"))

    drafter = ref.Drafter(ddir, t["embed"], t["head"])
    drafter.stored_dtype = sdtype
    samples = generate_samples(s, drafter, g, responses=args.responses)
    H = s["H"]
    write_dataset(os.path.join(out, "dataset"), samples, H,
                  {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
    if variants:
        write_dataset(os.path.join(out, "dataset-4layers"), samples, H,
                      {"hidden_states": LAYERS[:4]}, {"hidden_states": (0, 4)})
        write_dataset(os.path.join(out, "dataset-split"), samples, H,
                      {"aux_hidden_state": LAYERS[:4], "hidden_state": LAYERS[4:]},
                      {"aux_hidden_state": (0, 4), "hidden_state": (4, 1)})
    # The current z-lab spellings and rules (tiny and small only): a DFlash 1
    # drafter in the new config style and a DFlash 2 drafter, each with its
    # own weights (own seeds) and its own dataset; the draws above are untouched.
    extra = []  # (drafter dir, dataset dir, expected subdir, [semantics])
    if variants:
        size = args.size if args.size in DFLASH2 else "small"
        g1 = torch.Generator().manual_seed(args.seed + V1NEW["seed_offset"])
        w1 = {k: v.to(sdtype) for k, v in make_drafter_weights(s, g1).items()}
        v1dir = os.path.join(out, "drafter-v1new")
        write_drafter(v1dir, v1new_config(s, dtype_name), w1)
        v1 = ref.Drafter(v1dir, t["embed"], t["head"])
        v1.stored_dtype = sdtype
        write_dataset(os.path.join(out, "dataset-v1new"),
                      generate_samples_plain(s, v1, g1), H,
                      {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
        # The final hidden state (own generator: the draws above are untouched).
        gf = torch.Generator().manual_seed(args.seed + 777)
        write_final_dataset(os.path.join(out, "dataset-final"), samples, H, t, False, gf)
        write_final_dataset(os.path.join(out, "dataset-final-normed"), samples, H, t, True, gf)
        write_wrong_head_target(out, s, t, dtype_name, gf)
        g2 = torch.Generator().manual_seed(args.seed + DFLASH2["seed_offset"])
        w2 = {k: v.to(sdtype) for k, v in make_dflash2_weights(s, size, g2).items()}
        d2dir = os.path.join(out, "drafter2")
        cfg2 = dflash2_config(s, size, dtype_name)
        write_drafter(d2dir, cfg2, w2)
        write_drafter(os.path.join(out, "drafter2-dotweight"), cfg2,
                      {(k + ".weight" if k in ref.CODEBOOKS else k): v for k, v in w2.items()})
        d2 = ref.Drafter(d2dir, t["embed"], t["head"])
        d2.stored_dtype = sdtype
        samples2 = generate_samples_plain(s, d2, g2)
        write_dataset(os.path.join(out, "dataset2"), samples2, H,
                      {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
        write_final_dataset(os.path.join(out, "dataset2-final"), samples2, H, t, False, gf)
        extra = [(ddir, "dataset", "current", ["zlab-current"]),
                 (v1dir, "dataset-v1new", "v1new", ["zlab-current", "zlab-2025"]),
                 (d2dir, "dataset2", "dflash2", ["zlab-current"])]
    t_gen = time.time() - t0

    lines = []
    if expected != "none":
        edir = os.path.join(out, "expected")
        os.makedirs(edir, exist_ok=True)
        loaded = ref.load_dataset(os.path.join(out, "dataset"), LAYERS)
        tied = ref.Drafter(ddir, t["embed"], t["embed"])
        for fname, dr in (("logits.json", drafter), ("logits_tied.json", tied)):
            with open(os.path.join(edir, fname), "w") as f:
                json.dump(logit_checks(dr, loaded), f)
                f.write("\n")
        runs = [("replay", "replay.json")]
        if expected == "all":
            runs.insert(0, ("anchor", "anchor_all.json"))
        # The files of before: zlab-2025 results, written exactly as before
        # (without the "semantics"/"family" keys every other result carries).
        for mode, fname in runs:
            r = ref.evaluate(drafter, loaded, mode, "all", semantics="zlab-2025")
            del r["semantics"], r["family"]
            write_result(os.path.join(edir, fname), r, lines, out)
        for dpath, dsname, sub, sems in extra:
            dr = ref.Drafter(dpath, t["embed"], t["head"])
            ds = loaded if dsname == "dataset" else \
                ref.load_dataset(os.path.join(out, dsname), dr.cfg.target_layer_ids)
            for sem in sems:
                rel = os.path.join(sub, "2025") if sem == "zlab-2025" and sub == "v1new" else sub
                os.makedirs(os.path.join(edir, rel), exist_ok=True)
                for mode, fname in runs:
                    r = ref.evaluate(dr, ds, mode, "all", semantics=sem)
                    write_result(os.path.join(edir, rel, fname), r, lines, out)
    total = time.time() - t0
    Ls = [int(x[1].shape[0]) for x in samples]
    print("fixture '%s' (%s, %s, seed %d) in %s" % (args.size, dtype_name, expected,
                                                     args.seed, out))
    print("  drafter: H=%d, %d/%d heads x %d, I=%d, %d layers %s, W=%d, B=%d, mask %d"
          % (H, s["nh"], s["nkv"], s["d"], s["I"], s["n"], layer_types(s["n"]),
             s["W"], s["B"], s["V"] - 1))
    print("  target: V=%d, H=%d (%s)" % (s["V"], H, "target, target-qwen36, target-tied"
                                          if variants else "target"))
    print("  dataset: %d samples, L %d..%d, layers %s (%s)"
          % (len(samples), min(Ls), max(Ls), LAYERS,
             "dataset, dataset-4layers, dataset-split" if variants else "dataset"))
    if variants:
        k = DFLASH2[size]
        print("  drafter-v1new: top-level draft keys, W=%d (< B), embedding scale %g, output "
              "multiplier %g, softcap %g; dataset-v1new (zlab-current draft_1)"
              % (s["B"] - V1NEW["window_below_block"], V1NEW["input_embedding_scale"],
                 V1NEW["output_multiplier"], V1NEW["final_logit_softcapping"]))
        print("  drafter2 (+ drafter2-dotweight): DFlash 2, conv K=%d gs=%d (G=%d), selector "
              "rank %d top-%d, all sliding W=%d, is_causal false, embedding scale %g, output "
              "multiplier %g, softcap %g; dataset2 (selector draft_1)"
              % (DFLASH2["conv_kernel_size"], k["gs"], H // k["gs"], k["rank"], k["top_k"],
                 s["W"], DFLASH2["input_embedding_scale"], DFLASH2["output_multiplier"],
                 DFLASH2["final_logit_softcapping"]))
    for line in lines:
        print(line)
    print("  time: generation %.1fs, total %.1fs" % (t_gen, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
