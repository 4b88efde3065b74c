"""Reference for docs/decision-metrics.md §1-§3: target consistency, sampled
acceptance (anchor mode) and the draft-length curve. Used by reference.py
(`eval --sampling t=..,p=..,k=..`, `consistency`) and make_fixture.py; it
imports the reference's modules, not reference.py, so neither imports the
other back.

Approximation (as the service): the prefix is teacher-forced (the data's
tokens), and each position's acceptance alpha_j = sum_x min(p_j(x), q_j(x)) is
treated as an independent draw, so a block's expected accept length is
1 + sum_k prod_{i<=k} alpha_i.
"""

import json
import os

import torch

from anchors import select_anchors
from dataset_files import list_capture_files
from drafter_config import DEFAULT_SEMANTICS
from norm_and_rope import rms_norm
from safetensors_io import read_safetensors, read_safetensors_header

NORM_NAMES = ["model.norm.weight", "model.language_model.norm.weight",
              "language_model.model.norm.weight"]


def load_target_norm(path):
    """(final norm weight [H], rms_norm_eps) of a target directory."""
    with open(os.path.join(path, "config.json")) as f:
        cfg = json.load(f)
    eps = cfg.get("rms_norm_eps", (cfg.get("text_config") or {}).get("rms_norm_eps", 1e-6))
    index = os.path.join(path, "model.safetensors.index.json")
    if os.path.isfile(index):
        with open(index) as f:
            weight_map = json.load(f)["weight_map"]
    else:
        weight_map = {k: "model.safetensors" for k in
                      read_safetensors_header(os.path.join(path, "model.safetensors"))[1]
                      if k != "__metadata__"}
    for n in NORM_NAMES:
        if n in weight_map:
            return read_safetensors(os.path.join(path, weight_map[n]), {n})[n], float(eps)
    raise KeyError("target final norm not found; tried %s" % NORM_NAMES)


def attach_final_hidden(root, samples):
    """Sets s.final_hidden [L, H] from the manifest's final_hidden_state;
    returns its norm_applied flag."""
    with open(os.path.join(root, "dataset.json")) as f:
        spec = json.load(f).get("final_hidden_state")
    if spec is None:
        raise ValueError("dataset '%s' declares no final_hidden_state" % root)
    key = spec.get("key", "hidden_state")
    files = dict(list_capture_files(root))
    for s in samples:
        t = torch.load(files[s.index], map_location="cpu")[key]
        s.final_hidden = (t[0] if t.dim() == 3 else t).float()
    return bool(spec["norm_applied"])


def target_logits(h, head, norm, eps, norm_applied):
    x = h.to(head.dtype)
    if not norm_applied:
        x = rms_norm(x, norm, eps)
    return (x @ head.t()).float()


def consistency(samples, head, norm, eps, norm_applied):
    """positions p with loss_mask[p+1] = 1; matches where argmax == t[p+1]."""
    pos = hits = 0
    for s in samples:
        L = s.input_ids.shape[0]
        rows = [p for p in range(L - 1) if int(s.loss_mask[p + 1]) == 1]
        if not rows:
            continue
        arg = target_logits(s.final_hidden[rows], head, norm, eps, norm_applied).argmax(-1)
        hits += int((arg == s.input_ids[[p + 1 for p in rows]]).sum())
        pos += len(rows)
    return {"positions": pos, "matches": hits, "fraction": hits / pos if pos else 0.0,
            "norm_applied": norm_applied}


def parse_setting(spec):
    out = {"temperature": None, "top_p": 1.0, "top_k": 0}
    for part in spec.split(","):
        k, v = part.split("=", 1)
        key = {"t": "temperature", "p": "top_p", "k": "top_k"}[k]
        out[key] = int(v) if key == "top_k" else float(v)
    if out["temperature"] is None:
        raise ValueError("--sampling '%s': missing t=" % spec)
    return out


def processed_probs(logits, st):
    """logits / T, keep top-k, softmax, keep the smallest set of largest
    probabilities reaching top-p, renormalise; T = 0: one-hot argmax."""
    if st["temperature"] <= 0:
        return torch.nn.functional.one_hot(logits.argmax(-1), logits.shape[-1]).float()
    x = logits.float() / st["temperature"]
    k = st["top_k"]
    if 0 < k < x.shape[-1]:
        kth = torch.topk(x, k, dim=-1).values[..., -1:]
        x = x.masked_fill(x < kth, float("-inf"))
    probs = torch.softmax(x, -1)
    if st["top_p"] < 1.0:
        srt, order = torch.sort(probs, dim=-1, descending=True)
        keep = (srt.cumsum(-1) - srt) < st["top_p"]
        mask = torch.zeros_like(keep).scatter(-1, order, keep)
        probs = probs * mask.float()
        probs = probs / probs.sum(-1, keepdim=True)
    return probs


def policy_alpha(policy, p, dl_row, q_full, sel):
    """alpha of one position under a proposal policy (docs/served-acceptance.md).
    p: the target's processed distribution [V]; q_full: the drafter's processed
    q over the vocabulary; sel: DFlash 2's (cand, q over cand, choice) or None."""
    if policy == "argmax":
        x = sel[2] if sel is not None else int(dl_row.argmax())
        return float(p[x])
    if policy == "selector":
        cand, qs, _ = sel
        return float(torch.minimum(p[cand], qs).sum())
    if policy == "match":
        if sel is not None:
            cand, qs, _ = sel
            return float((p[cand] * qs).sum())
        return float((p * q_full).sum())
    return float(torch.minimum(p, q_full).sum())  # sample


def block_alphas(drafter, s, a, B, st_list, head, norm, eps, norm_applied, semantics):
    """alpha[setting][j-1] for the existing positions j of the block at a;
    each setting carries its policy (and whether q is truncated too)."""
    L = s.input_ids.shape[0]
    if semantics == "zlab-2025":
        rows = min(B - 1, L - 1 - a)
        h = drafter.hidden(s.features[:a], s.input_ids[a], a, B, semantics=semantics)[1:1 + rows]
    else:
        Lb = min(B, L - a)
        rows = Lb - 1
        h = drafter.hidden(s.features[:a], s.input_ids[a], a, Lb, semantics=semantics)[1:Lb]
    dl = drafter.logits(h).float()
    tl = target_logits(s.final_hidden[a:a + rows], head, norm, eps, norm_applied)
    dflash2 = drafter.family == "dflash2"
    eta = h @ drafter.w["candidate_selector.hidden_projection.weight"].t() if dflash2 else None
    out = []
    for st in st_list:
        p = processed_probs(tl, st)
        qst = st if st.get("truncate_draft", True) else dict(st, top_p=1.0, top_k=0)
        q = processed_probs(dl, qst)
        al = []
        for j in range(rows):
            sel = None
            if dflash2:
                cand, U = drafter.candidates(dl[j])
                pred = int(s.input_ids[a + j])  # teacher-forced: t_a, then the labels
                sc = drafter.selector_scores(eta[j], cand, U, pred).float()
                choice = drafter.choose(cand, sc)
                if st["temperature"] <= 0:
                    qs = (cand == choice).float()
                else:
                    qs = torch.softmax(sc / st["temperature"], -1)
                sel = (cand, qs, int(choice))
            policy = st.get("policy") or ("selector" if dflash2 else "sample")
            al.append(policy_alpha(policy, p[j], dl[j], q[j], sel))
        out.append(al)
    return out


def expected_accept(alpha, B):
    """(1 + sum_k prod_{i<=k} alpha_i, the same with k = 1..B-1 proposed)."""
    total, prod, curve = 1.0, 1.0, []
    for k in range(B - 1):
        if k < len(alpha):
            prod *= alpha[k]
            total += prod
        curve.append(total)
    return total, curve


def sampled_eval(drafter, samples, settings, head, norm, eps, norm_applied, B,
                 anchors="all", max_blocks=0, semantics=DEFAULT_SEMANTICS, policies=(),
                 truncate_draft=True):
    """Each setting under each policy (setting-major, as the service orders
    them); no policies: the drafter's default (sample / selector)."""
    st_list = []
    for x in settings:
        for pol in (policies or [None]):
            st = parse_setting(x)
            st["policy"] = pol
            st["truncate_draft"] = truncate_draft
            st_list.append(st)
    acc = [{"alpha": [0.0] * (B - 1), "counted": [0] * (B - 1), "sum": 0.0,
            "curve": [0.0] * (B - 1), "marginal": [0.0] * (B - 1), "per_sample": []}
           for _ in st_list]
    blocks = 0
    for s in samples:
        per = [[0.0, 0] for _ in st_list]
        for a in select_anchors(s.loss_mask, anchors, max_blocks):
            blocks += 1
            al = block_alphas(drafter, s, a, B, st_list, head, norm, eps, norm_applied, semantics)
            for i, alpha in enumerate(al):
                for j, x in enumerate(alpha):
                    acc[i]["alpha"][j] += x
                    acc[i]["counted"][j] += 1
                e, curve = expected_accept(alpha, B)
                prod = 1.0
                for j, x in enumerate(alpha):
                    prod *= x
                    acc[i]["marginal"][j] += prod
                acc[i]["sum"] += e
                acc[i]["curve"] = [c + d for c, d in zip(acc[i]["curve"], curve)]
                per[i][0] += e
                per[i][1] += 1
        for i in range(len(st_list)):
            if per[i][1]:
                acc[i]["per_sample"].append(per[i][0] / per[i][1])
    out = []
    for st, a in zip(st_list, acc):
        out.append({"setting": st,
                    "mean_alpha": [x / c if c else 0.0 for x, c in zip(a["alpha"], a["counted"])],
                    "counted": a["counted"],
                    "expected_accept_length_pooled": a["sum"] / blocks if blocks else 0.0,
                    "expected_tau": (sum(a["per_sample"]) / len(a["per_sample"])
                                     if a["per_sample"] else 0.0),
                    "draft_length_curve": [c / blocks for c in a["curve"]] if blocks else [],
                    "marginal_accept": [m / blocks for m in a["marginal"]] if blocks else []})
    return out


def draft_length_curve(histogram):
    """Pooled accept length with k = 1..B-1 positions proposed, from hist[n]."""
    blocks = sum(histogram)
    if not blocks:
        return []
    return [sum(h * (min(n, k) + 1) for n, h in enumerate(histogram)) / blocks
            for k in range(1, len(histogram))]


def make_final_hidden(ids, mask, head, norm, eps, norm_applied, g, steps=200):
    """A final hidden state [L, H] whose target argmax at every position p
    with mask[p+1] = 1 is ids[p+1] (a greedy capture): start at the label's
    head row, push away from the current winner until the label wins; other
    positions are random. Raises if a label cannot be made the argmax."""
    L, H = ids.shape[0], head.shape[1]
    out = torch.randn(L, H, generator=g)
    for p in range(L - 1):
        if int(mask[p + 1]) != 1:
            continue
        y = int(ids[p + 1])
        u = head[y].float().clone()
        for _ in range(steps):
            top = torch.topk(head.float() @ u, 2)
            if int(top.indices[0]) == y and float(top.values[0] - top.values[1]) > 1e-3:
                break
            other = int(top.indices[0]) if int(top.indices[0]) != y else int(top.indices[1])
            u = u + 0.5 * (head[y].float() - head[other].float())
        else:
            raise ValueError("position %d: label %d cannot be the argmax" % (p, y))
        if norm_applied:
            out[p] = u
        else:
            # rms_norm(x) = norm * x / rms(x): x = u / norm is normed back to
            # u / rms(u / norm), a positive multiple of u (same argmax).
            out[p] = u / norm.float()
    return out
