#!/usr/bin/python3
"""Self-check of reference.py and make_fixture.py on a tiny fixture.

  selfcheck.py [--keep DIR]

Checks: (a) replay adds up to L - P per sample; (b) anchor metrics are
internally consistent; (c) dataset-split, drafter-pt and target-qwen36 give
the same metrics as dataset / drafter / target; (d) the cached-context path
equals the plain one; (e) the 4-layer dataset is refused; (f) the stored
expected files match a fresh evaluation; plus replay limits and 'even' anchors.
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
    """(b): internal consistency of one result."""
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
    check(close(r["accept_length_pooled"], al, 1e-9),
          "%s: pooled accept length %.6f == 1 + sum acceptance*counted/blocks %.6f"
          % (name, r["accept_length_pooled"], al))
    hist_al = sum((n + 1) * c for n, c in enumerate(r["accepted_histogram"])) / r["blocks"]
    check(close(r["accept_length_pooled"], hist_al), "%s: pooled == histogram mean" % name)
    ps = r["per_sample"]
    check(len(ps) == r["samples"] and sum(s["blocks"] for s in ps) == r["blocks"],
          "%s: per-sample blocks add up" % name)
    tau = sum(s["accepted_total"] / s["blocks"] for s in ps) / len(ps)
    check(close(r["tau"], tau), "%s: tau == mean of per-sample means" % name)


def same_metrics(r1, r2, name):
    keys = ["accept_length_pooled", "tau", "blocks", "samples", "tokens_scored",
            "accepted_histogram", "positions", "per_sample"]
    diff = [k for k in keys if r1[k] != r2[k]]
    check(not diff, "%s (differs: %s)" % (name, diff) if diff else name)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="generate into this directory and keep it")
    args = ap.parse_args()
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

    # (a) replay adds up to L - P.
    rep = ref.evaluate(drafter, samples, "replay")
    ok = all(p["accepted_total"] == p["length"] - p["first_response_position"]
             for p in rep["per_sample"])
    check(ok and len(rep["per_sample"]) == len(samples),
          "(a) replay: accepted_total == L - P for every sample")
    consistent(rep, B, "replay")

    # (b) anchor consistency.
    anc = ref.evaluate(drafter, samples, "anchor", "all")
    consistent(anc, B, "anchor all")
    n_el = sum(len(ref.eligible_anchors(s.loss_mask)) for s in samples)
    check(anc["blocks"] == n_el, "anchor all: one block per eligible anchor (%d)" % n_el)
    check(anc["positions"][0]["counted"] == anc["blocks"], "anchor: position 1 always exists")
    check(anc["positions"][0]["accuracy"] > 0.5, "anchor: position-1 accuracy is high (%.3f)"
          % anc["positions"][0]["accuracy"])
    check(1.5 < anc["accept_length_pooled"] < B, "anchor: accept length non-trivial (%.3f)"
          % anc["accept_length_pooled"])
    even = ref.evaluate(drafter, samples, "anchor", "even", max_blocks=5)
    consistent(even, B, "anchor even/5")
    check(even["blocks"] == 5 * len(samples), "even: 5 blocks per sample")
    el = list(range(100, 113))  # n = 13, m = 5 -> floor(k*13/5) = 0, 2, 5, 7, 10
    mask = torch.zeros(120, dtype=torch.int64)
    mask[100:114] = 1
    check(ref.select_anchors(mask, "even", 5) == [el[i] for i in (0, 2, 5, 7, 10)],
          "even anchor formula eligible[floor(k*n/m)]")

    # Replay limits.
    r = ref.evaluate(drafter, samples, "replay", max_new_tokens=10)
    check(all(p["accepted_total"] == min(10, p["length"] - p["first_response_position"])
              for p in r["per_sample"]), "replay max_new_tokens=10: totals == min(10, L-P)")
    r = ref.evaluate(drafter, samples, "replay", max_blocks=3)
    check(all(p["blocks"] <= 3 for p in r["per_sample"]), "replay max_blocks=3")
    r = ref.evaluate(drafter, samples, "replay", block_size=4)
    check(len(r["positions"]) == 3 and all(
        p["accepted_total"] == p["length"] - p["first_response_position"]
        for p in r["per_sample"]), "replay block_size=4")

    # (c) same numbers from other layouts.
    split = ref.load_dataset(os.path.join(out, "dataset-split"), ids)
    check(all(torch.equal(a.features, b.features) for a, b in zip(samples, split)),
          "(c) dataset-split features == dataset features")
    same_metrics(ref.evaluate(drafter, split, "anchor", "all"), anc, "(c) dataset-split anchor")
    same_metrics(ref.evaluate(drafter, split, "replay"), rep, "(c) dataset-split replay")
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
    plain = drafter.block(s.features[:a], s.input_ids[a], a, B)
    cached = drafter.block(None, s.input_ids[a], a, B, ctx_kv=[(k[:a], v[:a]) for k, v in kv])
    d = float((plain - cached).abs().max())
    check(d < 1e-4, "(d) cached vs plain logits max diff %.2e" % d)
    import make_fixture as mf
    two = samples[:2]
    a2 = min(x.input_ids.shape[0] for x in two) - 2
    kv2 = [[torch.stack([drafter.sequence_kv(x.features)[i][j][:a2] for x in two])
            for j in range(2)] for i in range(drafter.cfg.num_layers)]
    fb = mf.first_logits_batched(drafter, torch.stack([x.input_ids[a2] for x in two]), a2, B, kv2)
    fp = torch.stack([drafter.block(x.features[:a2], x.input_ids[a2], a2, B)[0] for x in two])
    d = float((fb - fp).abs().max())
    check(d < 1e-4, "fixture's batched draft_1 vs plain block: max diff %.2e" % d)
    d64 = ref.Drafter(os.path.join(out, "drafter"), embed, head, torch.float64)
    p64 = d64.block(s.features[:a], s.input_ids[a], a, B)
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
        got = json.loads(subprocess.run(cli + ["--mode", mode], check=True,
                                        stdout=subprocess.PIPE).stdout)
        with open(os.path.join(out, "expected", fname)) as f:
            want = json.load(f)
        same_metrics(got, want, "(f) CLI %s on dataset-split == expected/%s" % (mode, fname))
    lg = json.loads(subprocess.run(
        [sys.executable, os.path.join(HERE, "reference.py"), "logits",
         "--drafter", os.path.join(out, "drafter-pt"), "--target", os.path.join(out, "target"),
         "--dataset", os.path.join(out, "dataset"), "--blocks", "0:%d" % a, "--rows", "3"],
        check=True, stdout=subprocess.PIPE).stdout)
    d = float((torch.tensor(lg[0]["logits"]) - plain[:3]).abs().max())
    check(d == 0.0, "logits CLI (drafter-pt) == in-process logits (max diff %.1e)" % d)

    print("%d failed" % len(FAILS) if FAILS else "all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
