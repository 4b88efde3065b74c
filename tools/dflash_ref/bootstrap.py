#!/usr/bin/python3
"""Reference for the service's bootstrap intervals (server/eval/bootstrap.cc).

  bootstrap.py CASE.json   -> prints the intervals as JSON
  bootstrap.py --self-test -> the documented case (ctest dflash_ref_bootstrap)

CASE: {"samples": [{"blocks": b, "accepted_total": a, "counted": [...],
"correct": [...], "accepted": [...], "conditional_counted": [...]}, ...],
"resamples": R, "seed": S, "paired_with": [same shape] (optional)}.
Pure Python (no numpy): SplitMix64 draws, multiplicity resamples, numpy's
default (linear) percentile; the definitions are in
docs/decision-metrics-stats.md.
"""

import json
import math
import sys

M64 = (1 << 64) - 1


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & M64

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & M64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64


def metric_names(positions):
    names = ["accept_length", "tau"]
    for j in range(1, positions + 1):
        names += ["accuracy[%d]" % j, "acceptance[%d]" % j, "conditional[%d]" % j]
    return names


def ratio(num, den):
    return num / den if den > 0 else float("nan")


def values(units, weights, positions):
    blocks = sum(w * u["blocks"] for u, w in zip(units, weights))
    accept = sum(w * u["accepted_total"] for u, w in zip(units, weights))
    tau_sum = sum(w * u["accepted_total"] / u["blocks"] for u, w in zip(units, weights))
    out = [ratio(accept, blocks), ratio(tau_sum, sum(weights))]
    for j in range(positions):
        s = {k: sum(w * u[k][j] for u, w in zip(units, weights))
             for k in ("counted", "correct", "accepted", "conditional_counted")}
        out += [ratio(s["correct"], s["counted"]), ratio(s["accepted"], s["counted"]),
                ratio(s["accepted"], s["conditional_counted"])]
    return out


def percentile(sorted_values, q):
    h = (len(sorted_values) - 1) * q
    lo = int(math.floor(h))
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (h - lo) * (sorted_values[hi] - sorted_values[lo])


def intervals(case):
    units = [u for u in case["samples"] if u["blocks"] > 0]
    other = case.get("paired_with")
    if other is not None:
        other = [u for u in other if u["blocks"] > 0]
    positions = len(units[0]["counted"])
    names = metric_names(positions)
    draws = [[] for _ in names]
    rng = SplitMix64(case["seed"])
    n = len(units)
    for _ in range(case["resamples"]):
        weights = [0] * n
        for _ in range(n):
            weights[rng.below(n)] += 1
        v = values(units, weights, positions)
        if other is not None:
            b = values(other, weights, positions)
            v = [y - x for x, y in zip(v, b)]
        for m, x in enumerate(v):
            if not math.isnan(x):
                draws[m].append(x)
    out = {}
    for name, d in zip(names, draws):
        d.sort()
        out[name] = [percentile(d, 0.025), percentile(d, 0.975)] if d else None
    return out


def _unit(blocks, total, counted, correct, accepted, conditional):
    return {"blocks": blocks, "accepted_total": total, "counted": counted, "correct": correct,
            "accepted": accepted, "conditional_counted": conditional}


# The documented case (docs/decision-metrics-stats.md; tests/eval/bootstrap_test.cc
# holds the same numbers for the C++ side).
CASE_A = [_unit(2, 5, [2, 2], [2, 1], [2, 1], [2, 2]), _unit(1, 1, [1, 1], [0, 1], [0, 0], [1, 0]),
          _unit(3, 6, [3, 2], [2, 1], [2, 1], [3, 2]), _unit(0, 0, [0, 0], [0, 0], [0, 0], [0, 0])]
CASE_B = [_unit(2, 6, [2, 2], [2, 2], [2, 2], [2, 2]), _unit(1, 2, [1, 1], [1, 0], [1, 0], [1, 1]),
          _unit(3, 9, [3, 3], [3, 3], [3, 3], [3, 3]), _unit(0, 0, [0, 0], [0, 0], [0, 0], [0, 0])]
WANT_A = [[1.0, 2.5], [1.0, 2.5], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.5, 1.0], [0.0, 0.5],
          [0.5, 0.5]]
WANT_PAIRED = [[0.5, 1.0], [0.5, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [-1.0, 0.5],
               [0.0, 0.5], [0.0, 0.5]]


def self_test():
    """The documented case gives the C++ test's numbers; identical samples a zero width."""
    fails = 0
    for name, case, want in (
            ("single", {"samples": CASE_A, "resamples": 1000, "seed": 7}, WANT_A),
            ("paired", {"samples": CASE_A, "paired_with": CASE_B, "resamples": 1000, "seed": 7},
             WANT_PAIRED)):
        got = list(intervals(case).values())
        ok = all(abs(g[0] - w[0]) < 1e-12 and abs(g[1] - w[1]) < 1e-12 for g, w in zip(got, want))
        print("%s %s: %s" % ("ok  " if ok else "FAIL", name, got))
        fails += not ok
    same = intervals({"samples": [CASE_A[0]] * 5, "resamples": 200, "seed": 1})
    ok = all(v[0] == v[1] for v in same.values())
    print("%s identical samples give zero-width intervals" % ("ok  " if ok else "FAIL"))
    return fails + (not ok)


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(1 if self_test() else 0)
    with open(sys.argv[1]) as f:
        print(json.dumps(intervals(json.load(f)), indent=1))
