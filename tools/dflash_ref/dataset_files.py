"""Cached-feature datasets (§3): capture files data_<i>.ckpt, their feature
columns gathered in the drafter's target_layer_ids order."""

import json
import os
import re

import torch

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
