#!/usr/bin/python3
"""Self-check of reference.py and make_fixture.py on a tiny fixture.

  selfcheck.py [--keep DIR]

Checks: (a) zlab-2025 replay adds up to L - P per sample; (b) anchor metrics
are internally consistent; (c) dataset-split, drafter-pt and target-qwen36
give the same metrics as dataset / drafter / target; (d) the cached-context
path equals the plain one; (e) the 4-layer dataset is refused; (f) the stored
expected files match a fresh evaluation; plus replay limits and 'even' anchors.
Semantics and DFlash 2: (g) zlab-2025 on the old drafter reproduces the old
numbers; (h) zlab-current replay adds up to L' - P - 1; (i) the masks of the
current rules; (j) each DFlash 2 feature (convs, selector, softcap,
multiplier, embedding scale) changes drafts, the '.weight' codebook copy is
the same drafter, DFlash 2 counts are consistent (first-miss shares add up
to blocks); (k) DFlash 1 in the new spelling (v1new).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as ref  # noqa: E402

FAILS = []


def check(cond, what):
    print("%s %s" % ("ok  " if cond else "FAIL", what))
    if not cond:
        FAILS.append(what)


def close(x, y, tol=1e-12):
    return abs(x - y) <= tol * max(1.0, abs(x), abs(y))


def consistent(r, B, name):
    """(b): internal consistency of one result. In zlab-current replay the
    last block of a sample may record min(n + 1, L' - s - 1) = n: the pooled
    accept length then sits below the histogram mean by (such blocks)/blocks."""
    capped = r.get("semantics") == "zlab-current" and r.get("mode") == "replay"
    pos = r["positions"]
    check(len(pos) == B - 1 and len(r["accepted_histogram"]) == B,
          "%s: %d positions, %d histogram bins" % (name, B - 1, B))
    check(sum(r["accepted_histogram"]) == r["blocks"], "%s: histogram sums to blocks" % name)
    check(sum(p["counted"] for p in pos) == r["tokens_scored"],
          "%s: sum of counted == tokens_scored" % name)
    ok = all(p["accepted"] <= p["correct"] <= p["counted"] and
             p["acceptance"] <= p["accuracy"] + 1e-15 and
             p["accepted"] <= p["conditional_counted"] <= p["counted"] for p in pos)
    check(ok, "%s: accepted <= correct <= counted, acceptance <= accuracy" % name)
    mono = all(pos[j]["accepted"] <= pos[j - 1]["accepted"] for j in range(1, len(pos)))
    check(mono, "%s: accepted[j] non-increasing in j" % name)
    cond = all(pos[j]["conditional_counted"] == pos[j - 1]["accepted"]
               for j in range(1, len(pos)) if pos[j]["counted"] == pos[j - 1]["counted"])
    check(cond, "%s: conditional_counted[j] == accepted[j-1] (full blocks)" % name)
    # Pooled accept length = 1 + sum_j accepted_j / blocks (= 1 + sum_j
    # acceptance_j * counted_j / blocks).
    al = 1 + sum(p["acceptance"] * p["counted"] for p in pos) / r["blocks"]
    hist_al = sum((n + 1) * c for n, c in enumerate(r["accepted_histogram"])) / r["blocks"]
    ps = r["per_sample"]
    if not capped:
        check(close(r["accept_length_pooled"], al, 1e-9),
              "%s: pooled accept length %.6f == 1 + sum acceptance*counted/blocks %.6f"
              % (name, r["accept_length_pooled"], al))
        check(close(r["accept_length_pooled"], hist_al), "%s: pooled == histogram mean" % name)
    else:
        gap = round((hist_al - r["accept_length_pooled"]) * r["blocks"])
        check(close(r["accept_length_pooled"], sum(s["accepted_total"] for s in ps)
                    / r["blocks"]) and 0 <= gap <= len(ps) and close(hist_al, al, 1e-9),
              "%s: pooled == sum of per-sample totals / blocks; histogram mean - pooled = "
              "%d capped last blocks / blocks (<= one per sample)" % (name, gap))
    if r.get("family") == "dflash2":
        ok = all(p["correct"] <= p["covered"] == p["tf_covered"] <= p["counted"] and
                 p["unary_correct"] <= p["covered"] and p["tf_correct"] <= p["tf_covered"]
                 for p in pos)
        check(ok, "%s: correct, unary_correct <= covered == tf_covered <= counted; "
              "tf_correct <= tf_covered" % name)
        fm = r["first_miss"]
        check(sum(fm.values()) == r["blocks"] and len(fm) == 3,
              "%s: first-miss shares %s add up to blocks %d" % (name, fm, r["blocks"]))
        check(r["oracle_accept_length_pooled"] >= r["accept_length_pooled"] - 1e-12,
              "%s: top-k oracle accept length %.3f >= path %.3f"
              % (name, r["oracle_accept_length_pooled"], r["accept_length_pooled"]))
    check(len(ps) == r["samples"] and sum(s["blocks"] for s in ps) == r["blocks"],
          "%s: per-sample blocks add up" % name)
    tau = sum(s["accepted_total"] / s["blocks"] for s in ps) / len(ps)
    check(close(r["tau"], tau), "%s: tau == mean of per-sample means" % name)


def same_metrics(r1, r2, name):
    keys = ["accept_length_pooled", "tau", "blocks", "samples", "tokens_scored",
            "accepted_histogram", "positions", "per_sample"]
    keys += [k for k in ("unary_accept_length_pooled", "oracle_accept_length_pooled",
                         "first_miss", "selector_near_ties", "semantics", "family")
             if k in r1 or k in r2]
    diff = [k for k in keys if r1[k] != r2[k]]
    check(not diff, "%s (differs: %s)" % (name, diff) if diff else name)


def anchor_drafts(dr, samples, semantics="zlab-current"):
    """Every draft token of the anchor-mode blocks (anchors all)."""
    out = []
    B = dr.cfg.block_size
    for s in samples:
        L = s.input_ids.shape[0]
        for a in ref.eligible_anchors(s.loss_mask):
            out.append(ref.score_block(dr, s, a, B, L, semantics)["drafts"])
    return out


def n_differ(d1, d2):
    return sum(x != y for b1, b2 in zip(d1, d2) for x, y in zip(b1, b2))


def current_checks(out, embed, head, drafter, samples):
    """(g)-(k): semantics and DFlash 2."""
    cli = [sys.executable, os.path.join(HERE, "reference.py"), "eval",
           "--target", os.path.join(out, "target")]
    exp = os.path.join(out, "expected")

    def load(rel):
        with open(os.path.join(exp, rel)) as f:
            return json.load(f)

    # (g) zlab-2025 on the old drafter reproduces the stored old numbers.
    for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
        r = ref.evaluate(drafter, samples, mode, "all", semantics="zlab-2025")
        check(r["semantics"] == "zlab-2025" and r["family"] == "dflash",
              "(g) result says semantics zlab-2025, family dflash")
        del r["semantics"], r["family"]
        text = json.dumps(r, indent=1) + "\n"
        with open(os.path.join(exp, fname)) as f:
            check(text == f.read(), "(g) zlab-2025 %s == expected/%s byte for byte" % (mode, fname))

    # (h) zlab-current replay adds up to L' - P - 1; samples with P >= L' - 1: no blocks.
    v1 = ref.Drafter(os.path.join(out, "drafter-v1new"), embed, head)
    d2 = ref.Drafter(os.path.join(out, "drafter2"), embed, head)
    ids = v1.cfg.target_layer_ids
    s1 = ref.load_dataset(os.path.join(out, "dataset-v1new"), ids)
    s2 = ref.load_dataset(os.path.join(out, "dataset2"), ids)
    for name, dr, ss in (("drafter", drafter, samples), ("v1new", v1, s1), ("dflash2", d2, s2)):
        for N in (0, 10, 1, 2):
            r = ref.evaluate(dr, ss, "replay", max_new_tokens=N)
            want = {}
            for s in ss:
                L = s.input_ids.shape[0]
                P = int((s.loss_mask == 1).nonzero()[0])
                Lp = min(L, P + N) if N else L
                if Lp - P - 1 > 0:
                    want[s.index] = Lp - P - 1
            got = {p["sample_index"]: p["accepted_total"] for p in r["per_sample"]}
            check(got == want, "(h) %s zlab-current replay, max_new_tokens %d: accepted_total "
                  "== L' - P - 1 per sample (%d samples with blocks)" % (name, N, len(want)))
            if N == 0:
                consistent(r, dr.cfg.block_size, "(h) %s zlab-current replay" % name)
        r = ref.evaluate(dr, ss, "replay", block_size=3)
        check(all(p["accepted_total"] == p["length"] - p["first_response_position"] - 1
                  for p in r["per_sample"]), "(h) %s zlab-current replay B=3 adds up" % name)
        r = ref.evaluate(dr, ss, "anchor", "all")
        consistent(r, dr.cfg.block_size, "(h) %s zlab-current anchor" % name)

    # (i) masks: the rules of dflash2-semantics.md §3, by hand, a = 3, L = 4.
    def by_hand(a, L, causal, W):
        rows = []
        for q in range(a, a + L):
            rows.append([(not causal or k <= q) and
                         (W is None or (q - k < W and (causal or k - q < W)))
                         for k in range(a + L)])
        return torch.tensor(rows)

    c1, c2 = v1.cfg, d2.cfg
    check(c1.causal == [True, False] and c1.window == [c1.block_size - 3, None],
          "(i) v1new: sliding layer causal with W=%d, full layer bidirectional, no window"
          % (c1.block_size - 3))
    check(all(c2.causal[i] is False and c2.window[i] == c2.raw["sliding_window"]
              for i in range(c2.num_layers)), "(i) drafter2: is_causal false, every layer windowed")
    check(c1.input_embedding_scale == 2.0 and c1.output_multiplier == 0.5 and c1.softcap == 3.0
          and c1.block_size == 8 and c1.mask_token_id == 127 and c1.target_layer_ids == [1, 3, 5, 7, 9],
          "(i) v1new: top-level draft keys read")
    for dr, i in ((v1, 0), (v1, 1), (d2, 0)):
        for a, L, W in ((3, 4, 2), (0, 4, 3), (10, 4, 2)):
            dr.cfg.window[i], keep = (W if dr.cfg.window[i] is not None else None), dr.cfg.window[i]
            want = by_hand(a, L, dr.cfg.causal[i], dr.cfg.window[i])
            got = dr.visible(i, a, L, "zlab-current")
            dr.cfg.window[i] = keep
            check(torch.equal(got, want), "(i) %s layer %d mask (a=%d, L=%d, W=%s)"
                  % ("v1new" if dr is v1 else "drafter2", i, a, L, W))
    m = v1.visible(1, 10, 4, "zlab-2025")
    check(bool(m.all()), "(i) zlab-2025 mask: full layer sees everything")
    m = v1.visible(0, 10, 4, "zlab-2025")
    want = torch.tensor([[q - k < 5 or k >= 10 for k in range(14)] for q in range(10, 14)])
    check(torch.equal(m, want), "(i) zlab-2025 mask: sliding layer hides context at q - k >= W")

    # (j) DFlash 2.
    dw = ref.Drafter(os.path.join(out, "drafter2-dotweight"), embed, head)
    check(sorted(dw.w) == sorted(d2.w) and all(torch.equal(dw.w[k], d2.w[k]) for k in d2.w),
          "(j) drafter2-dotweight ('.weight' codebooks) loads the same tensors")
    try:
        ref.evaluate(d2, s2[:1], "anchor", semantics="zlab-2025")
        check(False, "(j) DFlash 2 under zlab-2025 refused")
    except ValueError as e:
        check("predates DFlash 2" in str(e), "(j) DFlash 2 under zlab-2025 refused: %s" % e)
    base = anchor_drafts(d2, s2)
    nslots = sum(len(b) for b in base)

    def ablated(name, change, undo):
        change()
        try:
            n = n_differ(base, anchor_drafts(d2, s2))
        finally:
            undo()
        check(n > 0, "(j) %s changes %d of %d anchor-mode drafts" % (name, n, nslots))

    saved = {k: v.clone() for k, v in d2.w.items() if "_conv." in k}

    def identity_convs():
        for k in saved:
            if k.endswith("base_kernel"):
                d2.w[k] = torch.zeros_like(saved[k])
                d2.w[k][:, 0] = 1.0
            else:
                d2.w[k] = torch.zeros_like(saved[k])

    ablated("identity convs", identity_convs, lambda: d2.w.update(saved))
    ablated("no selector (unary argmax)", lambda: setattr(d2, "use_selector", False),
            lambda: setattr(d2, "use_selector", True))
    cap = d2.cfg.softcap
    ablated("no softcap", lambda: setattr(d2.cfg, "softcap", None),
            lambda: setattr(d2.cfg, "softcap", cap))
    mult = d2.cfg.output_multiplier
    ablated("output_multiplier 1", lambda: setattr(d2.cfg, "output_multiplier", 1.0),
            lambda: setattr(d2.cfg, "output_multiplier", mult))
    scale = d2.cfg.input_embedding_scale
    ablated("input_embedding_scale 1", lambda: setattr(d2.cfg, "input_embedding_scale", 1.0),
            lambda: setattr(d2.cfg, "input_embedding_scale", scale))
    check(n_differ(base, anchor_drafts(d2, s2)) == 0, "(j) ablations undone")
    for rel, mode in (("dflash2/anchor_all.json", "anchor"), ("dflash2/replay.json", "replay")):
        want = load(rel)
        consistent(want, d2.cfg.block_size, "(j) expected/" + rel)
        check(any(p["unary_accuracy"] != p["accuracy"] for p in want["positions"]) and
              want["first_miss"]["coverage_miss"] > 0 and want["first_miss"]["ranking_error"] > 0,
              "(j) expected/%s: selector changes accuracy; coverage misses %d, ranking errors %d"
              % (rel, want["first_miss"]["coverage_miss"], want["first_miss"]["ranking_error"]))
        check(want["accept_length_pooled"] > 1.5, "(j) expected/%s accept length %.3f > 1.5"
              % (rel, want["accept_length_pooled"]))
    # Shortened blocks matter for bidirectional layers: the block at L-3 has 3 rows.
    s = s2[0]
    a = s.input_ids.shape[0] - 3
    short = d2.block(s.features[:a], s.input_ids[a], a, 3)
    full = d2.block(s.features[:a], s.input_ids[a], a, d2.cfg.block_size)[:2]
    check(float((short - full).abs().max()) > 1e-3,
          "(j) shortened block (3 rows) != first rows of a full block (bidirectional layers)")
    # Cached context K/V and float64 on DFlash 2.
    kv = d2.sequence_kv(s.features)
    a = ref.eligible_anchors(s.loss_mask)[len(ref.eligible_anchors(s.loss_mask)) // 2]
    B2 = d2.cfg.block_size
    plain = d2.block(s.features[:a], s.input_ids[a], a, B2)
    cached = d2.block(None, s.input_ids[a], a, B2, ctx_kv=[(k[:a], v[:a]) for k, v in kv])
    d64 = ref.Drafter(os.path.join(out, "drafter2"), embed, head, torch.float64)
    p64 = d64.block(s.features[:a], s.input_ids[a], a, B2)
    check(float((plain - cached).abs().max()) < 1e-4 and
          float((plain.double() - p64).abs().max() / p64.abs().max()) < 1e-4,
          "(j) drafter2: cached == plain, float32 ~ float64 logits")
    lg = json.loads(subprocess.run(
        [sys.executable, os.path.join(HERE, "reference.py"), "logits",
         "--drafter", os.path.join(out, "drafter2-dotweight"), "--target",
         os.path.join(out, "target"), "--dataset", os.path.join(out, "dataset2"),
         "--blocks", "%d:%d" % (s.index, a)], check=True, stdout=subprocess.PIPE).stdout)[0]
    h = d2.hidden(s.features[:a], s.input_ids[a], a, B2)[1:]
    prop = d2.propose(h, d2.logits(h), s.input_ids[a])
    check(float((torch.tensor(lg["logits"]) - plain).abs().max()) == 0.0 and
          lg["selector_drafts"] == prop["drafts"] and lg["candidates"] == prop["candidates"],
          "(j) logits CLI on drafter2-dotweight == in-process (logits, selector drafts)")

    # (k) v1new: the embedding scale matters; softcap and multiplier are
    # monotone, so DFlash 1 drafts do not move; zlab-current != zlab-2025.
    vb = anchor_drafts(v1, s1)
    v1.cfg.input_embedding_scale = 1.0
    n = n_differ(vb, anchor_drafts(v1, s1))
    v1.cfg.input_embedding_scale = 2.0
    check(n > 0, "(k) v1new: input_embedding_scale 1 changes %d drafts" % n)
    v1.cfg.softcap, v1.cfg.output_multiplier = None, 1.0
    n = n_differ(vb, anchor_drafts(v1, s1))
    v1.cfg.softcap, v1.cfg.output_multiplier = 3.0, 0.5
    check(n == 0, "(k) v1new: softcap/multiplier do not move DFlash 1 argmax drafts")
    v1.cfg.window[0] = None
    n = n_differ(vb, anchor_drafts(v1, s1))
    v1.cfg.window[0] = v1.cfg.block_size - 3
    check(n > 0, "(k) v1new: the window W = B - 3 (in the block too) moves %d drafts" % n)
    v1.cfg.causal[0] = False
    n = n_differ(vb, anchor_drafts(v1, s1))
    v1.cfg.causal[0] = True
    check(n > 0, "(k) v1new: the causal sliding layer moves %d drafts" % n)
    n = n_differ(vb, anchor_drafts(v1, s1, "zlab-2025"))
    check(n > 0, "(k) v1new: zlab-2025 changes %d drafts" % n)

    # Every new expected file == a fresh CLI run.
    runs = [("drafter", "dataset-split", "current", "zlab-current"),
            ("drafter-v1new", "dataset-v1new", "v1new", "zlab-current"),
            ("drafter-v1new", "dataset-v1new", "v1new/2025", "zlab-2025"),
            ("drafter2-dotweight", "dataset2", "dflash2", "zlab-current")]
    for dname, dsname, sub, sem in runs:
        for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
            args = cli + ["--drafter", os.path.join(out, dname), "--dataset",
                          os.path.join(out, dsname), "--mode", mode]
            if sem != "zlab-current":
                args += ["--semantics", sem]
            got = json.loads(subprocess.run(args, check=True, stdout=subprocess.PIPE).stdout)
            want = load(os.path.join(sub, fname))
            check(want["semantics"] == sem and want["family"] ==
                  ("dflash2" if "drafter2" in dname else "dflash"),
                  "expected/%s/%s says semantics %s, family %s"
                  % (sub, fname, want["semantics"], want["family"]))
            same_metrics(got, want, "CLI %s on %s (%s) == expected/%s/%s"
                         % (dname, dsname, sem, sub, fname))
    r = subprocess.run(cli + ["--drafter", os.path.join(out, "drafter2"), "--dataset",
                              os.path.join(out, "dataset2"), "--semantics", "zlab-2025"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    check(r.returncode == 2 and "semantics 'zlab-2025' predates DFlash 2; use zlab-current"
          in r.stderr, "CLI refuses DFlash 2 under zlab-2025 (exit 2)")


def decision_checks(out, head, drafter, samples):
    """(l) docs/decision-metrics.md: hand cases, consistency on the fixture's
    final hidden state, and sampled acceptance at T = 0 == greedy."""
    import decision_metrics as dm
    lg = torch.log(torch.tensor([[4.0, 2.0, 1.0, 1.0]]))
    p = dm.processed_probs(lg, {"temperature": 1.0, "top_p": 1.0, "top_k": 0})
    q = torch.tensor([[0.25, 0.25, 0.5, 0.0]])
    check(close(float(torch.minimum(p, q).sum()), 0.625, 1e-6), "(l) alpha = 5/8 (hand case)")
    p2 = dm.processed_probs(lg, {"temperature": 1.0, "top_p": 0.5, "top_k": 0})
    check(p2.tolist() == [[1.0, 0.0, 0.0, 0.0]], "(l) top-p 0.5 keeps only the first token")
    check(close(dm.expected_accept([0.625, 0.4, 1.0], 4)[0], 2.125), "(l) E = 2.125 (hand case)")
    check(dm.draft_length_curve([2, 1, 0, 1]) == [1.5, 1.75, 2.0], "(l) curve (hand case)")
    norm, eps = dm.load_target_norm(os.path.join(out, "target"))
    final = ref.load_dataset(os.path.join(out, "dataset-final"), drafter.cfg.target_layer_ids)
    applied = dm.attach_final_hidden(os.path.join(out, "dataset-final"), final)
    c = dm.consistency(final, head, norm, eps, applied)
    check(c["fraction"] == 1.0, "(l) dataset-final consistency %.3f == 1" % c["fraction"])
    _, wrong, _ = ref.load_target(os.path.join(out, "target-wronghead"))
    cw = dm.consistency(final, wrong, norm, eps, applied)
    check(cw["fraction"] < 0.05, "(l) target-wronghead consistency %.3f < 0.05" % cw["fraction"])
    B = drafter.cfg.block_size
    g = ref.evaluate(drafter, final, "anchor", "all")
    s = dm.sampled_eval(drafter, final, ["t=0"], head, norm, eps, applied, B)[0]
    check(s["expected_accept_length_pooled"] == g["accept_length_pooled"] and
          close(s["expected_tau"], g["tau"]), "(l) T=0 sampled == greedy anchor numbers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="generate into this directory and keep it")
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny tensors: one thread is the fastest (see make_fixture.py)
    tmp = None
    if args.keep:
        out = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="dflash_selfcheck_")
        out = tmp.name
    subprocess.run([sys.executable, os.path.join(HERE, "make_fixture.py"), out,
                    "--size", "tiny"], check=True)

    embed, head, tied = ref.load_target(os.path.join(out, "target"))
    check(not tied, "target: not tied")
    drafter = ref.Drafter(os.path.join(out, "drafter"), embed, head)
    B = drafter.cfg.block_size
    ids = drafter.cfg.target_layer_ids
    samples = ref.load_dataset(os.path.join(out, "dataset"), ids)
    check([s.index for s in samples] == list(range(len(samples))), "samples in file-index order")

    OLD = "zlab-2025"  # the rules the first checks below were written for
    # (a) replay adds up to L - P.
    rep = ref.evaluate(drafter, samples, "replay", semantics=OLD)
    ok = all(p["accepted_total"] == p["length"] - p["first_response_position"]
             for p in rep["per_sample"])
    check(ok and len(rep["per_sample"]) == len(samples),
          "(a) replay: accepted_total == L - P for every sample")
    consistent(rep, B, "replay")

    # (b) anchor consistency.
    anc = ref.evaluate(drafter, samples, "anchor", "all", semantics=OLD)
    consistent(anc, B, "anchor all")
    n_el = sum(len(ref.eligible_anchors(s.loss_mask)) for s in samples)
    check(anc["blocks"] == n_el, "anchor all: one block per eligible anchor (%d)" % n_el)
    check(anc["positions"][0]["counted"] == anc["blocks"], "anchor: position 1 always exists")
    check(anc["positions"][0]["accuracy"] > 0.5, "anchor: position-1 accuracy is high (%.3f)"
          % anc["positions"][0]["accuracy"])
    check(1.5 < anc["accept_length_pooled"] < B, "anchor: accept length non-trivial (%.3f)"
          % anc["accept_length_pooled"])
    even = ref.evaluate(drafter, samples, "anchor", "even", max_blocks=5, semantics=OLD)
    consistent(even, B, "anchor even/5")
    check(even["blocks"] == 5 * len(samples), "even: 5 blocks per sample")
    el = list(range(100, 113))  # n = 13, m = 5 -> floor(k*13/5) = 0, 2, 5, 7, 10
    mask = torch.zeros(120, dtype=torch.int64)
    mask[100:114] = 1
    check(ref.select_anchors(mask, "even", 5) == [el[i] for i in (0, 2, 5, 7, 10)],
          "even anchor formula eligible[floor(k*n/m)]")

    # Replay limits.
    r = ref.evaluate(drafter, samples, "replay", max_new_tokens=10, semantics=OLD)
    check(all(p["accepted_total"] == min(10, p["length"] - p["first_response_position"])
              for p in r["per_sample"]), "replay max_new_tokens=10: totals == min(10, L-P)")
    r = ref.evaluate(drafter, samples, "replay", max_blocks=3, semantics=OLD)
    check(all(p["blocks"] <= 3 for p in r["per_sample"]), "replay max_blocks=3")
    r = ref.evaluate(drafter, samples, "replay", block_size=4, semantics=OLD)
    check(len(r["positions"]) == 3 and all(
        p["accepted_total"] == p["length"] - p["first_response_position"]
        for p in r["per_sample"]), "replay block_size=4")

    # (c) same numbers from other layouts.
    split = ref.load_dataset(os.path.join(out, "dataset-split"), ids)
    check(all(torch.equal(a.features, b.features) for a, b in zip(samples, split)),
          "(c) dataset-split features == dataset features")
    same_metrics(ref.evaluate(drafter, split, "anchor", "all", semantics=OLD), anc,
                 "(c) dataset-split anchor")
    same_metrics(ref.evaluate(drafter, split, "replay", semantics=OLD), rep,
                 "(c) dataset-split replay")
    pt = ref.Drafter(os.path.join(out, "drafter-pt"), embed, head)
    check(sorted(pt.w) == sorted(drafter.w) and
          all(torch.equal(pt.w[k], drafter.w[k]) for k in pt.w), "drafter-pt weights == drafter")
    e36, h36, _ = ref.load_target(os.path.join(out, "target-qwen36"))
    check(torch.equal(e36, embed) and torch.equal(h36, head), "target-qwen36 == target")
    et, ht, tt = ref.load_target(os.path.join(out, "target-tied"))
    check(tt and torch.equal(et, embed) and ht is et, "target-tied: lm_head = embed")

    # (d) cached context K/V == per-block recompute.
    s = samples[0]
    kv = drafter.sequence_kv(s.features)
    a = ref.eligible_anchors(s.loss_mask)[-1]
    plain = drafter.block(s.features[:a], s.input_ids[a], a, B, semantics=OLD)
    cached = drafter.block(None, s.input_ids[a], a, B, ctx_kv=[(k[:a], v[:a]) for k, v in kv],
                           semantics=OLD)
    d = float((plain - cached).abs().max())
    check(d < 1e-4, "(d) cached vs plain logits max diff %.2e" % d)
    import make_fixture as mf
    two = samples[:2]
    a2 = min(x.input_ids.shape[0] for x in two) - 2
    kv2 = [[torch.stack([drafter.sequence_kv(x.features)[i][j][:a2] for x in two])
            for j in range(2)] for i in range(drafter.cfg.num_layers)]
    fb = mf.first_logits_batched(drafter, torch.stack([x.input_ids[a2] for x in two]), a2, B, kv2)
    fp = torch.stack([drafter.block(x.features[:a2], x.input_ids[a2], a2, B, semantics=OLD)[0]
                      for x in two])
    d = float((fb - fp).abs().max())
    check(d < 1e-4, "fixture's batched draft_1 vs plain block: max diff %.2e" % d)
    d64 = ref.Drafter(os.path.join(out, "drafter"), embed, head, torch.float64)
    p64 = d64.block(s.features[:a], s.input_ids[a], a, B, semantics=OLD)
    d = float((plain.double() - p64).abs().max() / p64.abs().max())
    check(d < 1e-4 and torch.equal(plain.argmax(-1), p64.argmax(-1)),
          "float32 vs float64 logits: rel max diff %.2e, same argmax" % d)

    # (e) refusal.
    try:
        ref.load_dataset(os.path.join(out, "dataset-4layers"), ids)
        check(False, "(e) dataset-4layers refused")
    except ValueError as e:
        check("drafter needs layer 9; dataset holds [1, 3, 5, 7]" in str(e),
              "(e) dataset-4layers refused: %s" % e)

    # (f) stored expected files == a fresh run through the CLI.
    cli = [sys.executable, os.path.join(HERE, "reference.py"), "eval",
           "--drafter", os.path.join(out, "drafter"), "--target", os.path.join(out, "target"),
           "--dataset", os.path.join(out, "dataset-split")]
    for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
        got = json.loads(subprocess.run(cli + ["--mode", mode, "--semantics", OLD], check=True,
                                        stdout=subprocess.PIPE).stdout)
        with open(os.path.join(out, "expected", fname)) as f:
            want = json.load(f)
        check("semantics" not in want and "family" not in want,
              "(f) expected/%s keeps its old keys (no semantics/family)" % fname)
        check(got["semantics"] == OLD and got["family"] == "dflash",
              "(f) CLI result says semantics %s, family dflash" % OLD)
        del got["semantics"], got["family"]
        same_metrics(got, want, "(f) CLI %s on dataset-split == expected/%s" % (mode, fname))
    lg = json.loads(subprocess.run(
        [sys.executable, os.path.join(HERE, "reference.py"), "logits",
         "--drafter", os.path.join(out, "drafter-pt"), "--target", os.path.join(out, "target"),
         "--dataset", os.path.join(out, "dataset"), "--blocks", "0:%d" % a, "--rows", "3",
         "--semantics", OLD],
        check=True, stdout=subprocess.PIPE).stdout)
    d = float((torch.tensor(lg[0]["logits"]) - plain[:3]).abs().max())
    check(d == 0.0, "logits CLI (drafter-pt) == in-process logits (max diff %.1e)" % d)

    current_checks(out, embed, head, drafter, samples)
    decision_checks(out, head, drafter, samples)
    print("%d failed" % len(FAILS) if FAILS else "all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
