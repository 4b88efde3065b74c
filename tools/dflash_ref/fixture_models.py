"""The fixture's models: random drafter weights (DFlash 1 and DFlash 2) and
target tensors, and their writers (a drafter directory, the target in three
namings: sharded Qwen3, Qwen3.6's nested text model, tied; a target with a
wrong lm_head). Weights are scaled so activations stay O(1)."""

import json
import os

import torch

from fixture_configs import DFLASH2, LAYERS, NUM_TARGET_LAYERS
from safetensors_io import write_safetensors


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
    write_safetensors(os.path.join(path, "model.safetensors"), w, {"format": "pt"})


def write_sharded(path, config, shards):
    """shards: [(file, {name: tensor})]; writes config.json + index."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    weight_map, total = {}, 0
    for fname, tensors in shards:
        write_safetensors(os.path.join(path, fname), tensors, {"format": "pt"})
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


def write_wrong_head_target(out, s, t, dtype_name, g):
    """target-wronghead: the target with a random lm_head of the same shape
    (the consistency check must refuse it)."""
    t2 = dict(t, head=(torch.randn(s["V"], s["H"], generator=g) / s["H"] ** 0.5).to(t["head"].dtype))
    tmp = os.path.join(out, ".wronghead")
    write_targets(tmp, s, t2, dtype_name, False)
    os.replace(os.path.join(tmp, "target"), os.path.join(out, "target-wronghead"))
    os.rmdir(tmp)


def write_drafter_pt(path, cfg, w):
    """The same drafter as a training checkpoint: .pt with a wrapper prefix,
    optimizer state and step (the loader strips and skips them)."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    torch.save({"model": {"module." + k: v.clone() for k, v in w.items()},
                "optimizer": {"state": {}, "param_groups": [{"lr": 6e-4, "betas": [0.9, 0.95]}]},
                "step": 1234}, os.path.join(path, "checkpoint.pt"))
