"""The fixture's dataset writers: SpecForge-style capture files in
rows_<a>-<b> folders with dataset.json, one or two feature keys, and the
variant carrying the target's final hidden state (decision metrics)."""

import json
import os

import torch

from decision_metrics import make_final_hidden
from fixture_configs import CHUNK, LAYERS


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
        obj["final_hidden"] = make_final_hidden(ids, mask, t["head"], t["norm"], 1e-6,
                                                norm_applied, g).to(t["head"].dtype)
        torch.save(obj, f)

