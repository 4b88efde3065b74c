"""selfcheck (g)-(i) and the stored results of the current rules: zlab-2025
reproduces the old numbers, zlab-current replay adds up to L' - P - 1, the
masks of both rule sets against masks written out by hand, and every
expected file of the current rules against a fresh CLI run. Calls the DFlash
2 and v1new checks, (j) and (k), in between."""

import json
import os
import subprocess
import sys

import torch

import reference as ref
from selfcheck_common import check, consistent, load_expected, run_cli, same_metrics
from selfcheck_dflash2 import dflash2_checks, v1new_checks

HERE = os.path.dirname(os.path.abspath(__file__))


def old_numbers_check(out, drafter, samples):
    exp = os.path.join(out, "expected")
    # (g) zlab-2025 on the old drafter reproduces the stored old numbers.
    for mode, fname in (("anchor", "anchor_all.json"), ("replay", "replay.json")):
        r = ref.evaluate(drafter, samples, mode, "all", semantics="zlab-2025")
        check(r["semantics"] == "zlab-2025" and r["family"] == "dflash",
              "(g) result says semantics zlab-2025, family dflash")
        del r["semantics"], r["family"]
        text = json.dumps(r, indent=1) + "\n"
        with open(os.path.join(exp, fname)) as f:
            check(text == f.read(), "(g) zlab-2025 %s == expected/%s byte for byte" % (mode, fname))


def replay_total_checks(runs):
    """runs: (name, drafter, samples)."""
    for name, dr, ss in runs:
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


def mask_checks(v1, d2):
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


def expected_cli_checks(out):
    """Every expected file of the current rules == a fresh CLI run."""
    cli = ["eval", "--target", os.path.join(out, "target")]
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
            got = run_cli(args)
            want = load_expected(out, os.path.join(sub, fname))
            check(want["semantics"] == sem and want["family"] ==
                  ("dflash2" if "drafter2" in dname else "dflash"),
                  "expected/%s/%s says semantics %s, family %s"
                  % (sub, fname, want["semantics"], want["family"]))
            same_metrics(got, want, "CLI %s on %s (%s) == expected/%s/%s"
                         % (dname, dsname, sem, sub, fname))
    script = [sys.executable, os.path.join(HERE, "reference.py")]
    r = subprocess.run(script + cli + ["--drafter", os.path.join(out, "drafter2"), "--dataset",
                              os.path.join(out, "dataset2"), "--semantics", "zlab-2025"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    check(r.returncode == 2 and "semantics 'zlab-2025' predates DFlash 2; use zlab-current"
          in r.stderr, "CLI refuses DFlash 2 under zlab-2025 (exit 2)")


def current_checks(out, embed, head, drafter, samples):
    """(g)-(k): semantics and DFlash 2."""
    old_numbers_check(out, drafter, samples)
    # (h) zlab-current replay adds up to L' - P - 1; samples with P >= L' - 1: no blocks.
    v1 = ref.Drafter(os.path.join(out, "drafter-v1new"), embed, head)
    d2 = ref.Drafter(os.path.join(out, "drafter2"), embed, head)
    ids = v1.cfg.target_layer_ids
    s1 = ref.load_dataset(os.path.join(out, "dataset-v1new"), ids)
    s2 = ref.load_dataset(os.path.join(out, "dataset2"), ids)
    replay_total_checks((("drafter", drafter, samples), ("v1new", v1, s1), ("dflash2", d2, s2)))
    mask_checks(v1, d2)
    dflash2_checks(out, embed, head, d2, s2)
    v1new_checks(v1, s1)
    expected_cli_checks(out)
