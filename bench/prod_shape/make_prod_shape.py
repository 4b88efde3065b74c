#!/usr/bin/python3
"""Writes a random-weight DFlash 2 drafter with the shapes of the released
config (../shared/reference/dflash2-semantics.md section 1), a bf16 target of
the same vocabulary (embed_tokens + lm_head) and a small cached-hidden-state
dataset, streaming: tensor by tensor, in row chunks, so the generator never
holds more than one chunk (<= 64 MiB of fp32) of the ~11 GB it writes.

  make_prod_shape.py OUT [--scale full|small] [--seed S] [--samples N] [--tokens L]
  make_prod_shape.py --dry-run [--scale full|small]   # tensor list and byte totals only

OUT/drafter   config.json + model.safetensors (bf16), DFlash2DraftModel
OUT/target    config.json + 2 shards + index (bf16): model.embed_tokens.weight,
              lm_head.weight, model.norm.weight
OUT/dataset   dataset.json + rows_0-N/data_i.ckpt (torch.save: input_ids,
              loss_mask, hidden_states [L, 5 H] bf16), the format of
              tools/dflash_ref/make_fixture.py (its writer is reused)
OUT/manifest.json  shapes, tensor bytes and file bytes of each folder

Weights are N(0, 1/fan_in) for linears, 1 + 0.05 N for norms, convs near
identity and a small selector, as make_fixture.py's DFlash 2 drafter, so the
forward stays finite in bf16; the values mean nothing (accept length ~1).
Used by bench/prod_shape/run.sh (not by CI).
"""

import argparse
import hashlib
import json
import os
import struct
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "dflash_ref"))

# The released DFlash 2 config (dflash2-semantics.md section 1). The page
# prints output_multiplier as 0.196...; 1/sqrt(26) = sqrt(256 / 6656) =
# 0.19611..., which it matches (the exact value does not change any shape).
SCALES = {
    "full": dict(H=6656, I=19968, nh=32, nkv=8, d=128, n=5, W=2048, B=16, K=2, gs=16,
                 r=256, k=16, V=202048, layers=[1, 13, 25, 37, 49], target_layers=64,
                 output_multiplier=0.19611613513818404, softcap=20.0),
    # The same code path at reduced shapes (runs end to end in well under a minute).
    "small": dict(H=512, I=1536, nh=8, nkv=2, d=64, n=5, W=2048, B=16, K=2, gs=16,
                  r=64, k=16, V=8192, layers=[1, 13, 25, 37, 49], target_layers=64,
                  output_multiplier=0.19611613513818404, softcap=20.0),
    # In between (~0.6 GB drafter, 0.5 GB target): how the load's and the eval's
    # memory scale, where the full scale does not fit a shared machine.
    "medium": dict(H=2048, I=6144, nh=16, nkv=4, d=128, n=5, W=2048, B=16, K=2, gs=16,
                   r=128, k=16, V=65536, layers=[1, 13, 25, 37, 49], target_layers=64,
                   output_multiplier=0.19611613513818404, softcap=20.0),
}
CHUNK_ELEMS = 16 << 20  # fp32 elements generated at once (64 MiB)
POOL_ELEMS = (16 << 20) + 7919  # >= CHUNK_ELEMS; not a multiple of any row length here


def drafter_config(s):
    """The server's keys (server/config/internal/key_table.cc), in
    the transformers 5.x spelling make_fixture.py's DFlash 2 fixture uses."""
    return {
        "architectures": ["DFlash2DraftModel"],
        "model_type": "qwen3",
        "hidden_size": s["H"],
        "intermediate_size": s["I"],
        "num_attention_heads": s["nh"],
        "num_key_value_heads": s["nkv"],
        "head_dim": s["d"],
        "num_hidden_layers": s["n"],
        "layer_types": ["sliding_attention"] * s["n"],
        "sliding_window": s["W"],
        "use_sliding_window": True,
        "max_window_layers": s["n"],
        "is_causal": False,
        "rms_norm_eps": 1e-6,
        "rope_parameters": {"rope_theta": 10000.0, "rope_type": "default"},
        "max_position_embeddings": 32768,
        "attention_bias": False,
        "hidden_act": "silu",
        "num_target_layers": s["target_layers"],
        "vocab_size": s["V"],
        "tie_word_embeddings": False,
        "dtype": "bfloat16",
        "dflash_config": {
            "block_size": s["B"],
            "target_layer_ids": s["layers"],
            "mask_token_id": s["V"] - 1,
            "conv_kernel_size": s["K"],
            "conv_group_size": s["gs"],
            "selector_rank": s["r"],
            "selector_top_k": s["k"],
            "output_multiplier": s["output_multiplier"],
            "final_logit_softcapping": s["softcap"],
        },
    }


def target_config(s):
    return {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3",
            "hidden_size": s["H"], "vocab_size": s["V"],
            "num_hidden_layers": s["target_layers"], "intermediate_size": s["I"],
            "num_attention_heads": s["nh"], "num_key_value_heads": s["nkv"],
            "head_dim": s["d"], "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
            "max_position_embeddings": 32768, "tie_word_embeddings": False,
            "torch_dtype": "bfloat16"}


# A tensor spec: (name, shape, init) with init one of
#   ("normal", std), ("norm",), ("conv_base",), ("head",)  (N(0, 1/H), mask row 0)
def drafter_specs(s):
    """The names and shapes of make_fixture.py's DFlash 2 drafter (checked
    against it by check_names_against_fixture)."""
    H, I, nh, nkv, d, K, V, r = s["H"], s["I"], s["nh"], s["nkv"], s["d"], s["K"], s["V"], s["r"]
    nl = len(s["layers"])
    G = H // s["gs"]

    def lin(name, out, inp):
        return (name, [out, inp], ("normal", inp ** -0.5))

    specs = [lin("fc.weight", H, nl * H), ("hidden_norm.weight", [H], ("norm",))]
    for i in range(s["n"]):
        p = "layers.%d." % i
        specs += [
            (p + "input_layernorm.weight", [H], ("norm",)),
            lin(p + "self_attn.q_proj.weight", nh * d, H),
            lin(p + "self_attn.k_proj.weight", nkv * d, H),
            lin(p + "self_attn.v_proj.weight", nkv * d, H),
            lin(p + "self_attn.o_proj.weight", H, nh * d),
            (p + "self_attn.q_norm.weight", [d], ("norm",)),
            (p + "self_attn.k_norm.weight", [d], ("norm",)),
            (p + "post_attention_layernorm.weight", [H], ("norm",)),
            lin(p + "mlp.gate_proj.weight", I, H),
            lin(p + "mlp.up_proj.weight", I, H),
            lin(p + "mlp.down_proj.weight", H, I),
        ]
    specs.append(("norm.weight", [H], ("norm",)))
    for i in range(s["n"]):
        for m in ("attention_conv", "mlp_conv"):
            p = "layers.%d.%s." % (i, m)
            specs += [(p + "base_kernel", [2, K, H], ("conv_base",)),
                      (p + "kernel_projection.weight", [2 * K * G, H], ("normal", 0.15 * H ** -0.5))]
    sigma = (0.3 / r ** 0.5) ** 0.5  # selector term std ~ 0.3, as make_fixture.py
    specs += [lin("candidate_selector.hidden_projection.weight", r, H),
              ("candidate_selector.predecessor_codebook", [V, r], ("normal", sigma)),
              ("candidate_selector.successor_codebook", [V, r], ("normal", sigma))]
    return specs


def target_shards(s):
    H, V = s["H"], s["V"]
    return [("model-00001-of-00002.safetensors",
             [("model.embed_tokens.weight", [V, H], ("normal", 1.0))]),
            ("model-00002-of-00002.safetensors",
             [("lm_head.weight", [V, H], ("head",)), ("model.norm.weight", [H], ("norm",))])]


def numel(shape):
    n = 1
    for x in shape:
        n *= x
    return n


def st_header(specs):
    """The safetensors header (8-byte aligned, as reference.write_safetensors)."""
    header, off = {}, 0
    for name, shape, _ in specs:
        nb = numel(shape) * 2
        header[name] = {"dtype": "BF16", "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    header["__metadata__"] = {"format": "pt"}
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return text, off


_POOL = {}


def pool(seed):
    """POOL_ELEMS N(0, 1) fp32 values drawn once per seed; tensors take slices
    of it at random offsets. torch.randn plus torch 1.13's fp32 -> bf16
    conversion run at ~10 M values/s here (10 min for the full scale), slices
    and numpy's integer rounding at memory speed."""
    if seed not in _POOL:
        import torch
        g = torch.Generator().manual_seed(seed)
        _POOL[seed] = torch.randn(POOL_ELEMS, generator=g).numpy()
    return _POOL[seed]


def to_bf16_bits(x):
    """fp32 numpy -> bf16 bit patterns (uint16), round to nearest even (finite x)."""
    import numpy as np
    b = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    b = b + (np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1)))
    return (b >> np.uint32(16)).astype(np.uint16)


def chunks(name, shape, init, seed):
    """The tensor's values as bf16 row chunks (deterministic per name and seed):
    slices of the seed's N(0, 1) pool at offsets drawn per chunk, scaled."""
    import numpy as np
    p = pool(seed)
    rng = np.random.default_rng(
        seed * 1000003 + int(hashlib.sha256(name.encode()).hexdigest()[:12], 16))
    if len(shape) == 1:
        rows, row = 1, shape[0]
    else:
        rows, row = shape[0], numel(shape[1:])
    step = max(1, CHUNK_ELEMS // row)
    for r0 in range(0, rows, step):
        n = min(step, rows - r0)
        count = n * row
        off = int(rng.integers(0, POOL_ELEMS))
        if off + count <= POOL_ELEMS:
            v = p[off:off + count]
        else:
            v = np.concatenate([p[off:], p[:count - (POOL_ELEMS - off)]])
        v = v.reshape(n, row)
        kind = init[0]
        if kind == "norm":
            t = 1.0 + 0.05 * v
        elif kind == "conv_base":  # [2, K, H]: tap 0 ~ 1, other taps ~ noise
            t = (0.15 * v).reshape(shape)
            t[:, 0] += 1.0
            t = t.reshape(n, row)
        elif kind == "head":
            t = v * np.float32(shape[1] ** -0.5)
            if r0 + n == rows:
                t[-1] = 0.0  # the mask token (V-1) is never drafted
        else:
            t = v * np.float32(init[1])
        yield to_bf16_bits(t)


def write_safetensors_streaming(path, specs, seed):
    text, data_bytes = st_header(specs)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for name, shape, init in specs:
            for arr in chunks(name, shape, init, seed):
                f.write(memoryview(arr).cast("B"))
    size = os.path.getsize(tmp)
    if size != 8 + len(text) + data_bytes:
        raise SystemExit("%s: wrote %d bytes, expected %d" % (path, size, 8 + len(text) + data_bytes))
    os.replace(tmp, path)
    return size


def check_names_against_fixture():
    """Our spec list = make_fixture.py's DFlash 2 tensors (names and shapes),
    at a tiny size where building them is cheap."""
    import torch
    import make_fixture as mf
    s = dict(SCALES["small"], H=32, I=64, nh=4, nkv=2, d=16, V=128, gs=8, r=8, k=4)
    fs = dict(H=32, V=128, nh=4, nkv=2, d=16, I=64, n=s["n"], W=24, B=16)
    assert mf.LAYERS == [1, 3, 5, 7, 9] and len(s["layers"]) == len(mf.LAYERS)
    ref = mf.make_dflash2_weights(fs, "tiny", torch.Generator().manual_seed(0))
    ours = {name: shape for name, shape, _ in drafter_specs(s)}
    theirs = {k: list(v.shape) for k, v in ref.items()}
    if ours != theirs:
        raise SystemExit("drafter tensor list differs from make_fixture.py's DFlash 2 drafter: "
                         "only ours %s, only theirs %s, shapes %s"
                         % (sorted(set(ours) - set(theirs)), sorted(set(theirs) - set(ours)),
                            [k for k in ours if k in theirs and ours[k] != theirs[k]]))


def summary(s):
    d = drafter_specs(s)
    t = [x for _, specs in target_shards(s) for x in specs]
    db = sum(numel(sh) * 2 for _, sh, _ in d)
    tb = sum(numel(sh) * 2 for _, sh, _ in t)
    return d, t, db, tb


def gb(n):
    return "%.3f GB (%.2f GiB)" % (n / 1e9, n / 2 ** 30)


def dry_run(scale, s, verbose):
    d, t, db, tb = summary(s)
    print("scale %s: drafter %d tensors, target %d tensors (bf16)" % (scale, len(d), len(t)))
    groups = {}
    for name, shape, _ in d:
        key = name.split(".")[0] if not name.startswith("layers.") else \
            "layers.*." + ".".join(name.split(".")[2:])
        g = groups.setdefault(key, [shape, 0, 0])
        g[1] += 1
        g[2] += numel(shape) * 2
    if verbose:
        for name, shape, _ in d + t:
            print("  %-58s %-22s %14d bytes" % (name, shape, numel(shape) * 2))
    else:
        print("  drafter tensors (layers.* summed over %d layers):" % s["n"])
        for key, (shape, n, nb) in groups.items():
            print("    %-50s %-18s x%-2d %15d bytes" % (key, shape, n, nb))
        for name, shape, _ in t:
            print("  target  %-42s %-18s     %15d bytes" % (name, shape, numel(shape) * 2))
    dh, _ = st_header(d)
    print("drafter: %d tensor bytes = %s; model.safetensors %d bytes"
          % (db, gb(db), db + 8 + len(dh)))
    print("target:  %d tensor bytes = %s" % (tb, gb(tb)))
    print("dataset: per sample of L tokens, hidden_states L x %d bf16 = L x %d bytes"
          % (len(s["layers"]) * s["H"], len(s["layers"]) * s["H"] * 2))
    print("config.json: " + json.dumps(drafter_config(s)))


def write_header_only(out, s):
    """OUT/drafter only: config.json and a sparse model.safetensors (the real
    header, zero data)."""
    ddir = os.path.join(out, "drafter")
    os.makedirs(ddir, exist_ok=True)
    with open(os.path.join(ddir, "config.json"), "w") as f:
        json.dump(drafter_config(s), f, indent=1)
    text, data_bytes = st_header(drafter_specs(s))
    with open(os.path.join(ddir, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        f.truncate(8 + len(text) + data_bytes)
    print("header-only drafter (%s of tensors, sparse) in %s" % (gb(data_bytes), ddir))


def write_dataset_dir(out, s, args):
    """OUT/dataset: random ids (never the mask id), the second half a
    response, hidden states N(0, 1) of the drafter's 5 target layers, stored
    bf16. Returns the manifest's entry."""
    import torch
    import make_fixture as mf
    g = torch.Generator().manual_seed(args.seed + 2)
    samples = []
    for i in range(args.samples):
        L = args.tokens
        ids = torch.randint(0, s["V"] - 1, (L,), generator=g)
        mask = torch.zeros(L, dtype=torch.int64)
        mask[L // 2:] = 1
        feats = torch.randn(L, len(s["layers"]) * s["H"], generator=g).to(torch.bfloat16)
        samples.append((i, ids, mask, feats))
    dsdir = os.path.join(out, "dataset")
    mf.write_dataset(dsdir, samples, s["H"], {"hidden_states": s["layers"]},
                     {"hidden_states": (0, len(s["layers"]))})
    return {"samples": args.samples, "tokens": args.tokens,
            "tensor_bytes": args.samples * args.tokens * (len(s["layers"]) * s["H"] * 2 + 16)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--scale", choices=sorted(SCALES), default="full")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64, help="tokens per sample")
    ap.add_argument("--dry-run", action="store_true", help="print the tensors and byte totals")
    ap.add_argument("--verbose", action="store_true", help="with --dry-run: every tensor")
    ap.add_argument("--header-only", action="store_true",
                    help="write OUT/drafter only: config.json and a sparse model.safetensors "
                         "(the real header, zero data, ~no disk) for `dflash-eval validate`")
    args = ap.parse_args(argv)
    s = SCALES[args.scale]
    if args.dry_run:
        dry_run(args.scale, s, args.verbose)
        return 0
    if not args.out:
        ap.error("OUT is required unless --dry-run")
    if args.header_only:
        write_header_only(args.out, s)
        return 0
    import torch
    torch.set_num_threads(1)
    check_names_against_fixture()
    t0 = time.time()
    out = args.out
    d, t, db, tb = summary(s)
    man = {"scale": args.scale, "seed": args.seed, "shapes": s, "dtype": "bf16"}

    ddir = os.path.join(out, "drafter")
    os.makedirs(ddir, exist_ok=True)
    with open(os.path.join(ddir, "config.json"), "w") as f:
        json.dump(drafter_config(s), f, indent=1)
    fsize = write_safetensors_streaming(os.path.join(ddir, "model.safetensors"), d, args.seed)
    man["drafter"] = {"tensors": len(d), "tensor_bytes": db, "file": "model.safetensors",
                      "file_bytes": fsize}
    print("drafter: %d tensors, %s, %.1fs" % (len(d), gb(db), time.time() - t0), flush=True)

    tdir = os.path.join(out, "target")
    os.makedirs(tdir, exist_ok=True)
    with open(os.path.join(tdir, "config.json"), "w") as f:
        json.dump(target_config(s), f, indent=1)
    weight_map, files = {}, 0
    for fname, specs in target_shards(s):
        files += write_safetensors_streaming(os.path.join(tdir, fname), specs, args.seed + 1)
        for name, _, _ in specs:
            weight_map[name] = fname
    with open(os.path.join(tdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": tb}, "weight_map": weight_map}, f, indent=1)
    man["target"] = {"tensors": len(t), "tensor_bytes": tb, "file_bytes": files}
    print("target: %d tensors, %s, %.1fs" % (len(t), gb(tb), time.time() - t0), flush=True)

    man["dataset"] = write_dataset_dir(out, s, args)
    man["seconds"] = time.time() - t0
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(man, f, indent=1)
    print("dataset: %d samples x %d tokens; total %.1fs -> %s"
          % (args.samples, args.tokens, time.time() - t0, out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
