"""Drafter weights (§1, wrapper prefixes removed) and the target's embedding
and lm_head (§2), from safetensors directories, sharded or not, or .pt files."""

import json
import os

import torch

from safetensors_io import read_safetensors, read_safetensors_header

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
