#!/usr/bin/python3
"""Reference for the service's bootstrap intervals (server/eval/bootstrap.cc).

  bootstrap.py CASE.json   -> prints the intervals as JSON

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


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        print(json.dumps(intervals(json.load(f)), indent=1))
