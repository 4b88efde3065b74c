"""selfcheck (a)-(f): the zlab-2025 rules the first checks were written
for, on the fixture's main drafter and dataset: replay totals, anchor
consistency, replay limits and 'even' anchors, the other layouts, the cached
and batched forwards, the 4-layer refusal and the stored expected files."""

import json
import os

import torch

import reference as ref
from fixture_samples import first_logits_batched
from selfcheck_common import check, consistent, run_cli, same_metrics

OLD = "zlab-2025"  # the rules the checks below were written for


def metric_checks(drafter, samples):
    """(a) replay adds up, (b) anchor consistency, replay limits."""
    B = drafter.cfg.block_size
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
    return anc, rep


def layout_checks(out, embed, head, drafter, samples, anc, rep):
    """(c) the other layouts give the same numbers and tensors."""
    ids = drafter.cfg.target_layer_ids
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


def forward_checks(out, embed, head, drafter, samples):
    """(d) cached context K/V == per-block recompute; the fixture's batched
    forward and float64 agree. Returns (anchor, logits) of the last block of
    sample 0, for (f)."""
    B = drafter.cfg.block_size
    s = samples[0]
    kv = drafter.sequence_kv(s.features)
    a = ref.eligible_anchors(s.loss_mask)[-1]
    plain = drafter.block(s.features[:a], s.input_ids[a], a, B, semantics=OLD)
    cached = drafter.block(None, s.input_ids[a], a, B, ctx_kv=[(k[:a], v[:a]) for k, v in kv],
                           semantics=OLD)
    d = float((plain - cached).abs().max())
    check(d < 1e-4, "(d) cached vs plain logits max diff %.2e" % d)
    two = samples[:2]
    a2 = min(x.input_ids.shape[0] for x in two) - 2
    kv2 = [[torch.stack([drafter.sequence_kv(x.features)[i][j][:a2] for x in two])
            for j in range(2)] for i in range(drafter.cfg.num_layers)]
    fb = first_logits_batched(drafter, torch.stack([x.input_ids[a2] for x in two]), a2, B, kv2)
    fp = torch.stack([drafter.block(x.features[:a2], x.input_ids[a2], a2, B, semantics=OLD)[0]
                      for x in two])
    d = float((fb - fp).abs().max())
    check(d < 1e-4, "fixture's batched draft_1 vs plain block: max diff %.2e" % d)
    d64 = ref.Drafter(os.path.join(out, "drafter"), embed, head, torch.float64)
    p64 = d64.block(s.features[:a], s.input_ids[a], a, B, semantics=OLD)
    d = float((plain.double() - p64).abs().max() / p64.abs().max())
    check(d < 1e-4 and torch.equal(plain.argmax(-1), p64.argmax(-1)),
          "float32 vs float64 logits: rel max diff %.2e, same argmax" % d)
    return a, plain


def zlab2025_checks(out, embed, head, drafter, samples):
    """(a)-(f)."""
    anc, rep = metric_checks(drafter, samples)
    layout_checks(out, embed, head, drafter, samples, anc, rep)
    a, plain = forward_checks(out, embed, head, drafter, samples)
    ids = drafter.cfg.target_layer_ids

    # (e) refusal.
    try:
        ref.load_dataset(os.path.join(out, "dataset-4layers"), ids)
        check(False, "(e) dataset-4layers refused")
    except ValueError as e:
        check("drafter needs layer 9; dataset holds [1, 3, 5, 7]" in str(e),
              "(e) dataset-4layers refused: %s" % e)

    # (f) stored expected files == a fresh run through the CLI.
    cli = ["eval", "--drafter", os.path.join(out, "drafter"), "--target",
           os.path.join(out, "target"), "--dataset", os.path.join(out, "dataset-split")]
    for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
        got = run_cli(cli + ["--mode", mode, "--semantics", OLD])
        with open(os.path.join(out, "expected", fname)) as f:
            want = json.load(f)
        check("semantics" not in want and "family" not in want,
              "(f) expected/%s keeps its old keys (no semantics/family)" % fname)
        check(got["semantics"] == OLD and got["family"] == "dflash",
              "(f) CLI result says semantics %s, family dflash" % OLD)
        del got["semantics"], got["family"]
        same_metrics(got, want, "(f) CLI %s on dataset-split == expected/%s" % (mode, fname))
    lg = run_cli(
        ["logits", "--drafter", os.path.join(out, "drafter-pt"), "--target",
         os.path.join(out, "target"), "--dataset", os.path.join(out, "dataset"),
         "--blocks", "0:%d" % a, "--rows", "3", "--semantics", OLD])
    d = float((torch.tensor(lg[0]["logits"]) - plain[:3]).abs().max())
    check(d == 0.0, "logits CLI (drafter-pt) == in-process logits (max diff %.1e)" % d)
