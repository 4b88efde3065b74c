#!/usr/bin/python3
"""Rewrites fixture drafters in the layouts of the other DFlash trainers.

  make_other_layouts.py FIXTURE_DIR

FIXTURE_DIR is make_fixture.py's output (tiny or small). Written from the
public format descriptions (no third-party code), each beside its z-lab-layout
twin, which holds the same weights and must give the same numbers:

  spec-drafter         speculators "dflash" of drafter (twin: drafter)
  spec-drafter2        speculators "dflash2" of drafter2-plain (twin: drafter2-plain)
  drafter2-plain       drafter2 without the scales and softcap speculators has
                       no keys for (z-lab layout)
  modelopt-drafter     Model-Optimizer export of drafter-bidir (twin: drafter-bidir)
  drafter-bidir        drafter with is_causal false (z-lab layout)
  spec-drafter-fullvocab spec-drafter with its own vocabulary: draft_vocab_size
                       = V, lm_head.weight = the target's, d2t zeros, t2d all
                       true (the identity: the twin's numbers exactly)
  spec-drafter-fullvocab-head  the same with lm_head.weight alone (no d2t, t2d)
  spec-drafter-reducedvocab a reduced draft vocabulary: the 3V/8 most frequent
                       tokens of dataset (ties: lower id), ascending (at V/2
                       the tiny drafter's argmax never leaves it: the numbers
                       would not tell the two heads apart); lm_head
                       rows of those ids, d2t = id - index, t2d marks them.
                       expected/reducedvocab/{anchor_all,replay}.json are the
                       reference's numbers (zlab-current), coverage.json the
                       draft vocabulary's share of the anchor-mode labels
  spec-drafter-badvocab-d2t-float, spec-drafter-badvocab-t2d  the same with d2t
                       saved as F32, and with t2d negated (refused at load)
  spec-drafter-shifted spec-drafter with aux_hidden_state_layer_ids written in
                       HF numbering by mistake (every id one too low)
  dataset-modelopt     dataset as Model-Optimizer per-conversation .pt dumps
                       (input_ids, aux_hidden_states [seq, n*H], the final
                       hidden_states [seq, H], loss_mask); its manifest
                       declares "aux_hidden_states"
  dataset-capture-ids  dataset's files with a manifest in vLLM capture ids
                       ("layer_numbering": "vllm-capture-id", every id + 1)
  dataset-vllm         dataset as vLLM / speculators hs_{i}.safetensors
                       (hidden_states [seq, layers, H], token_ids, no loss
                       mask; the manifest gives "prompt_lengths", which
                       reproduce dataset's masks)
  dataset-vllm-all     the same files declared "loss_mask": "all-positions"
  dataset-vllm-nomask  the same files, the manifest silent on responses
  dataset-both-readings dataset's files with layers 0..9: the held ones as in
                       dataset, the others random; spec-drafter-shifted's
                       declared layers [0, 2, 4, 6, 8] and their +1 reading
                       both fit (the layer-offset check's case)
  dataset-vllm-fp8     hs_0 with a "hidden_states_scale" tensor (FP8-style)

speculators: the decoder shape nested in transformer_layer_config as a
Qwen3Config diff (fields equal to Qwen3Config's defaults omitted), flat draft
keys, aux_hidden_state_layer_ids in vLLM capture ids (HF layer k = id k+1),
sliding_window_non_causal, and the training copies embed_tokens.weight,
verifier_norm.weight and verifier_lm_head.weight saved with the drafter.
Model-Optimizer: z-lab's layout with block_size at the top level,
dflash_config.causal, use_swa and swa_window_size.
"""
import copy
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference as ref  # noqa: E402

# Qwen3Config's defaults (transformers): what a to_diff_dict leaves out.
QWEN3_DEFAULTS = {
    "vocab_size": 151936, "hidden_size": 4096, "intermediate_size": 22016,
    "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
    "head_dim": 128, "hidden_act": "silu", "max_position_embeddings": 32768,
    "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "attention_bias": False,
    "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": 28,
}
DECODER_KEYS = set(QWEN3_DEFAULTS) | {"layer_types", "rope_scaling", "rope_parameters",
                                      "tie_word_embeddings"}
DRAFT2_KEYS = ("conv_kernel_size", "conv_group_size", "selector_rank", "selector_top_k")


def draft_value(cfg, key):
    dc = cfg.get("dflash_config") or {}
    return dc[key] if dc.get(key) is not None else cfg.get(key)


def to_speculators(cfg, kind):
    if cfg.get("is_causal") is True:
        raise SystemExit("is_causal true has no speculators spelling")
    for key in ("input_embedding_scale", "output_multiplier", "final_logit_softcapping"):
        if draft_value(cfg, key) is not None:
            raise SystemExit(key + " has no speculators spelling")
    tl = {k: v for k, v in cfg.items() if k in DECODER_KEYS}
    for k, v in QWEN3_DEFAULTS.items():
        if k in tl and tl[k] == v:
            del tl[k]
    tl.update({"model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"]})
    out = {
        "speculators_model_type": kind,
        "architectures": ["DFlash2DraftModel" if kind == "dflash2" else "DFlashDraftModel"],
        "transformer_layer_config": tl,
        "draft_vocab_size": cfg["vocab_size"],
        "block_size": draft_value(cfg, "block_size") or 16,
        "mask_token_id": draft_value(cfg, "mask_token_id"),
        "aux_hidden_state_layer_ids": [i + 1 for i in draft_value(cfg, "target_layer_ids")],
        "sliding_window_non_causal": cfg.get("is_causal") is False,
        "projector_type": "dflash", "sample_from_anchor": False, "shift_label": False,
        "speculators_version": "fixture",
        "torch_dtype": cfg.get("torch_dtype", cfg.get("dtype")),
    }
    if kind == "dflash2":
        out.update({k: draft_value(cfg, k) for k in DRAFT2_KEYS})
    return out


def to_modelopt(cfg):
    out = copy.deepcopy(cfg)
    dc = out.setdefault("dflash_config", {})
    out["block_size"] = dc.pop("block_size", out.get("block_size", 16))
    dc["causal"] = out.pop("is_causal", None) is True
    if out.pop("use_sliding_window", True):
        out["use_swa"] = True
        out["swa_window_size"] = out.pop("sliding_window")
    return out


def write_dir(path, cfg, weights_from, extra=None):
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    src = os.path.join(weights_from, "model.safetensors")
    if extra is None:
        shutil.copyfile(src, os.path.join(path, "model.safetensors"))
        return
    w = ref.read_safetensors(src)
    w.update(extra)
    ref.write_safetensors(os.path.join(path, "model.safetensors"), w, {"format": "pt"})


def speculators_extras(cfg, weights_dir):
    """The training copies speculators saves with a drafter (values unused)."""
    import torch
    w = ref.read_safetensors(os.path.join(weights_dir, "model.safetensors"))
    H, V = w["norm.weight"].shape[0], cfg["vocab_size"]
    dt = w["norm.weight"].dtype
    g = torch.Generator().manual_seed(7)
    return {"embed_tokens.weight": torch.randn(V, H, generator=g).to(dt),
            "verifier_norm.weight": torch.ones(H, dtype=dt),
            "verifier_lm_head.weight": torch.randn(V, H, generator=g).to(dt)}


def vocab_tensors(out, ids, dt):
    """lm_head rows, d2t and t2d of a draft vocabulary (target ids ascending)."""
    import torch
    _, head, _ = ref.load_target(os.path.join(out, "target"))
    ids = torch.tensor(sorted(ids), dtype=torch.int64)
    t2d = torch.zeros(head.shape[0], dtype=torch.bool)
    t2d[ids] = True
    return {"lm_head.weight": head[ids].to(dt).contiguous(),
            "d2t": ids - torch.arange(len(ids), dtype=torch.int64), "t2d": t2d}


def write_reduced_vocab(out, c1, d1):
    """spec-drafter-fullvocab, spec-drafter-reducedvocab and the latter's expected numbers."""
    import torch
    dt = ref.read_safetensors(os.path.join(d1, "model.safetensors"))["norm.weight"].dtype
    V = c1["vocab_size"]
    full = to_speculators(c1, "dflash")
    write_dir(os.path.join(out, "spec-drafter-fullvocab"), full, d1,
              vocab_tensors(out, range(V), dt))
    head_only = {"lm_head.weight": vocab_tensors(out, range(V), dt)["lm_head.weight"]}
    write_dir(os.path.join(out, "spec-drafter-fullvocab-head"), full, d1, head_only)
    samples = ref.load_dataset(os.path.join(out, "dataset"), c1["dflash_config"]["target_layer_ids"])
    counts = torch.zeros(V, dtype=torch.int64)
    for s in samples:
        counts += torch.bincount(s.input_ids.to(torch.int64), minlength=V)
    order = sorted(range(V), key=lambda i: (-int(counts[i]), i))
    n = V * 3 // 8
    ids = order[:n]
    half = dict(full, draft_vocab_size=n)
    hdir = os.path.join(out, "spec-drafter-reducedvocab")
    write_dir(hdir, half, d1, vocab_tensors(out, ids, dt))
    # Defects: d2t saved as float (would be cast), and a t2d that disagrees.
    bad = vocab_tensors(out, ids, dt)
    bad["d2t"] = bad["d2t"].to(torch.float32)
    write_dir(os.path.join(out, "spec-drafter-badvocab-d2t-float"), half, d1, bad)
    bad = vocab_tensors(out, ids, dt)
    bad["t2d"] = bad["t2d"].logical_not()
    write_dir(os.path.join(out, "spec-drafter-badvocab-t2d"), half, d1, bad)
    embed, head, _ = ref.load_target(os.path.join(out, "target"))
    dr = ref.Drafter(d1, embed, head)
    extra = vocab_tensors(out, ids, dt)
    dr.lm_head, dr.d2t = extra["lm_head.weight"].to(dr.dtype), extra["d2t"]
    edir = os.path.join(out, "expected", "reducedvocab")
    os.makedirs(edir, exist_ok=True)
    for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
        r = ref.evaluate(dr, samples, mode, "all", semantics="zlab-current")
        write_manifest_like(os.path.join(edir, fname), r)
    B, inside, scored = dr.cfg.block_size, 0, 0
    for s in samples:
        L = s.input_ids.shape[0]
        for a in ref.select_anchors(s.loss_mask, "all", 0):
            labels = s.input_ids[a + 1:min(L, a + B)]
            scored += labels.numel()
            inside += int(extra["t2d"][labels.to(torch.int64)].sum())
    write_manifest_like(os.path.join(edir, "coverage.json"),
                        {"draft_vocab_size": n, "labels_in_draft_vocab": inside,
                         "tokens_scored": scored})


def write_manifest_like(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)


def capture_files(root):
    for folder, _, files in sorted(os.walk(root)):
        for name in sorted(files):
            if name.endswith(".ckpt"):
                yield os.path.join(folder, name), name


def write_datasets(out):
    """dataset-modelopt and dataset-capture-ids from dataset."""
    import torch
    src = os.path.join(out, "dataset")
    manifest = load_manifest(src)
    (key, layers), = manifest["features"].items()
    mo = os.path.join(out, "dataset-modelopt")
    os.makedirs(mo, exist_ok=True)
    g = torch.Generator().manual_seed(11)
    for path, name in capture_files(src):
        d = torch.load(path)
        i = int(name[len("data_"):-len(".ckpt")])
        feats = d[key]
        torch.save({"input_ids": d["input_ids"], "aux_hidden_states": feats,
                    "hidden_states": torch.randn(feats.shape[0], manifest["hidden_size"],
                                                 generator=g).to(feats.dtype),
                    "loss_mask": d["loss_mask"]},
                   os.path.join(mo, "conversation_%d.pt" % i))
    write_manifest(mo, dict(manifest, features={"aux_hidden_states": layers}))
    write_vllm(out, src, manifest, key, layers)
    write_both_readings(out, src, manifest, key, layers)
    ids = os.path.join(out, "dataset-capture-ids")
    shutil.copytree(src, ids, dirs_exist_ok=True)
    write_manifest(ids, dict(manifest, layer_numbering="vllm-capture-id",
                             features={key: [i + 1 for i in layers]}))


def write_both_readings(out, src, manifest, key, layers):
    """dataset-both-readings: layers 0..max(layers), the held ones as in dataset,
    the others random (what a shifted reading of the drafter would read)."""
    import torch
    H = manifest["hidden_size"]
    ids = list(range(max(layers) + 1))
    dst = os.path.join(out, "dataset-both-readings")
    g = torch.Generator().manual_seed(23)
    for path, name in capture_files(src):
        d = torch.load(path)
        f = d[key].reshape(d[key].shape[0], len(layers), H)
        full = torch.randn(f.shape[0], len(ids), H, generator=g).to(f.dtype)
        for c, layer in enumerate(layers):
            full[:, layer] = f[:, c]
        rel = os.path.relpath(path, src)
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        torch.save(dict(d, **{key: full.reshape(f.shape[0], -1).contiguous()}),
                   os.path.join(dst, rel))
    write_manifest(dst, dict(manifest, features={key: ids}))


def write_vllm(out, src, manifest, key, layers):
    """hs_{i}.safetensors; the masks become prompt lengths (each is a suffix)."""
    H = manifest["hidden_size"]
    vl = os.path.join(out, "dataset-vllm")
    os.makedirs(vl, exist_ok=True)
    prompts = {}
    for path, name in capture_files(src):
        import torch
        d = torch.load(path)
        i = int(name[len("data_"):-len(".ckpt")])
        mask = d["loss_mask"]
        p = int(mask.nonzero()[0])
        assert int(mask.sum()) == len(mask) - p, "mask is not a suffix"
        prompts[i] = p
        hs = d[key].reshape(d[key].shape[0], len(layers), H).contiguous()
        ref.write_safetensors(os.path.join(vl, "hs_%d.safetensors" % i),
                              {"hidden_states": hs, "token_ids": d["input_ids"]})
    base = {"name": "vllm", "hidden_size": H, "layer_numbering": "vllm-capture-id",
            "features": {"hidden_states": [i + 1 for i in layers]}}
    write_manifest(vl, dict(base, prompt_lengths=[prompts[i] for i in sorted(prompts)]))
    al = os.path.join(out, "dataset-vllm-all")
    shutil.copytree(vl, al, dirs_exist_ok=True)
    write_manifest(al, dict(base, loss_mask="all-positions"))
    nm = os.path.join(out, "dataset-vllm-nomask")
    shutil.copytree(vl, nm, dirs_exist_ok=True)
    write_manifest(nm, base)
    f8 = os.path.join(out, "dataset-vllm-fp8")
    shutil.copytree(vl, f8, dirs_exist_ok=True)
    w = ref.read_safetensors(os.path.join(f8, "hs_0.safetensors"))
    import torch
    w["hidden_states_scale"] = torch.ones(1)
    ref.write_safetensors(os.path.join(f8, "hs_0.safetensors"), w)


def load_manifest(path):
    with open(os.path.join(path, "dataset.json")) as f:
        return json.load(f)


def write_manifest(path, m):
    with open(os.path.join(path, "dataset.json"), "w") as f:
        json.dump(m, f, indent=1)


def load(path):
    with open(os.path.join(path, "config.json")) as f:
        return json.load(f)


def main(out):
    d1 = os.path.join(out, "drafter")
    c1 = load(d1)
    write_dir(os.path.join(out, "spec-drafter"), to_speculators(c1, "dflash"), d1,
              speculators_extras(c1, d1))
    shifted = to_speculators(c1, "dflash")
    shifted["aux_hidden_state_layer_ids"] = [i - 1 for i in shifted["aux_hidden_state_layer_ids"]]
    write_dir(os.path.join(out, "spec-drafter-shifted"), shifted, d1)
    write_reduced_vocab(out, c1, d1)

    bidir = dict(c1, is_causal=False)
    write_dir(os.path.join(out, "drafter-bidir"), bidir, d1)
    write_dir(os.path.join(out, "modelopt-drafter"), to_modelopt(bidir), d1)

    d2 = os.path.join(out, "drafter2")
    c2 = load(d2)
    for key in ("input_embedding_scale", "output_multiplier", "final_logit_softcapping"):
        c2.pop(key, None)
        c2["dflash_config"].pop(key, None)
    write_dir(os.path.join(out, "drafter2-plain"), c2, d2)
    write_dir(os.path.join(out, "spec-drafter2"), to_speculators(c2, "dflash2"), d2,
              speculators_extras(c2, d2))
    write_datasets(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(sys.argv[1])
