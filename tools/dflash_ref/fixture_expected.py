"""The fixture's expected results: reference.py's metrics and a few blocks'
logits on the fixture it wrote (the files the C++ tests compare against),
and one summary line per result for make_fixture.py's report."""

import json
import os

from anchors import eligible_anchors
from dataset_files import load_dataset
from drafter import Drafter
from evaluation import evaluate
from fixture_configs import LAYERS


def logit_checks(drafter, samples):
    """Logits of a few blocks (first, a middle and the last anchor of the first
    two samples; at most 7 rows), in reference.py's `logits` format."""
    out = []
    B = drafter.cfg.block_size
    for s in samples[:2]:
        el = eligible_anchors(s.loss_mask)
        for a in sorted({el[0], el[len(el) // 2], el[-1]}):
            logits = drafter.block(s.features[:a], s.input_ids[a], a, B,
                                   semantics="zlab-2025")[:7]
            out.append({"sample": s.index, "anchor": a, "block_size": B,
                        "drafts": logits.argmax(-1).tolist(),
                        "logits": [[float(v) for v in row] for row in logits.tolist()]})
    return out


def write_result(path, r, lines, out):
    """Writes one expected result and adds its summary line."""
    with open(path, "w") as f:
        json.dump(r, f, indent=1)
        f.write("\n")
    acc = [round(p["accuracy"], 3) for p in r["positions"][:4]]
    lines.append("  %-29s blocks %5d  accept length (pooled, +1 bonus) %.3f"
                 "  tau %.3f  accuracy[1..4] %s"
                 % (os.path.relpath(path, out), r["blocks"], r["accept_length_pooled"],
                    r["tau"], acc))
    if r.get("family") == "dflash2":
        un = [round(p["unary_accuracy"], 3) for p in r["positions"][:4]]
        cov = [round(p["coverage"], 3) for p in r["positions"][:4]]
        tf = [round(p["tf_accuracy"], 3) for p in r["positions"][:4]]
        fm = r["first_miss"]
        lines.append("  %-29s unary accept length %.3f, top-k oracle %.3f; first miss: "
                     "all accepted %d, coverage %d, ranking %d; near ties %d"
                     % ("", r["unary_accept_length_pooled"], r["oracle_accept_length_pooled"],
                        fm["all_accepted"], fm["coverage_miss"], fm["ranking_error"],
                        r["selector_near_ties"]))
        lines.append("  %-29s unary accuracy[1..4] %s  coverage %s  tf accuracy %s"
                     % ("", un, cov, tf))



def write_expected(out, drafter, ddir, t, expected, extra):
    """OUT/expected: logits.json and logits_tied.json, the zlab-2025 results
    of before, and per (drafter, dataset, subdir, [semantics]) in `extra` its
    results. expected: "all" (anchor and replay) or "replay". Returns the
    summary lines."""
    lines = []
    edir = os.path.join(out, "expected")
    os.makedirs(edir, exist_ok=True)
    loaded = load_dataset(os.path.join(out, "dataset"), LAYERS)
    tied = Drafter(ddir, t["embed"], t["embed"])
    for fname, dr in (("logits.json", drafter), ("logits_tied.json", tied)):
        with open(os.path.join(edir, fname), "w") as f:
            json.dump(logit_checks(dr, loaded), f)
            f.write("\n")
    runs = [("replay", "replay.json")]
    if expected == "all":
        runs.insert(0, ("anchor", "anchor_all.json"))
    # The files of before: zlab-2025 results, written exactly as before
    # (without the "semantics"/"family" keys every other result carries).
    for mode, fname in runs:
        r = evaluate(drafter, loaded, mode, "all", semantics="zlab-2025")
        del r["semantics"], r["family"]
        write_result(os.path.join(edir, fname), r, lines, out)
    for dpath, dsname, sub, sems in extra:
        dr = Drafter(dpath, t["embed"], t["head"])
        ds = loaded if dsname == "dataset" else \
            load_dataset(os.path.join(out, dsname), dr.cfg.target_layer_ids)
        for sem in sems:
            rel = os.path.join(sub, "2025") if sem == "zlab-2025" and sub == "v1new" else sub
            os.makedirs(os.path.join(edir, rel), exist_ok=True)
            for mode, fname in runs:
                r = evaluate(dr, ds, mode, "all", semantics=sem)
                write_result(os.path.join(edir, rel, fname), r, lines, out)
    return lines
