"""selfcheck's helpers: the pass/fail record, and the checks that every
result must pass whatever produced it (counts add up, pooled accept length
and tau agree with the histogram and the per-sample totals)."""

import contextlib
import io
import json
import os

import reference as ref

FAILS = []


def run_cli(argv):
    """reference.py's command line, in this process: its JSON output. Each
    run as a subprocess cost a torch import (~1.7 s of the ~2 s a run took);
    the one refusal check still runs the real script (exit code, stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = ref.main(argv)
    if rc != 0:
        raise RuntimeError("reference.py %s exited %d" % (" ".join(argv), rc))
    return json.loads(out.getvalue())


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


def load_expected(out, rel):
    """OUT/expected/<rel>, parsed."""
    with open(os.path.join(out, "expected", rel)) as f:
        return json.load(f)
