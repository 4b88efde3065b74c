"""Evaluation (dflash-semantics.md §5, dflash2-semantics.md §4-§5): one
block drafted and scored against the data, and the two modes over a
dataset, anchor (independent blocks) and replay (the greedy walk)."""

from acceptance_metrics import Metrics
from anchors import select_anchors
from drafter_config import DEFAULT_SEMANTICS, check_semantics


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
