"""The acceptance metrics of scored blocks (dflash-semantics.md §5,
dflash2-semantics.md §5): per-position counts, the accepted histogram,
pooled accept length and tau, and DFlash 2's unary/oracle/first-miss
breakdown. Pure bookkeeping: no model, no torch."""


def leading_matches(correct):
    n = 0
    for c in correct:
        if not c:
            break
        n += 1
    return n


class Metrics:
    """Accumulates scored blocks. Every accept-length-like number is an
    "accept value": n + 1, or min(n + 1, cap) when the caller passes a cap
    (zlab-current replay: cap = L' - s - 1)."""

    def __init__(self, B, family="dflash"):
        self.B = B
        self.family = family
        self.counted = [0] * (B - 1)
        self.correct = [0] * (B - 1)
        self.accepted = [0] * (B - 1)
        self.cond_counted = [0] * (B - 1)
        self.hist = [0] * B
        self.blocks = 0
        self.tokens = 0
        self.accept_sum = 0
        self.per_sample = []
        # DFlash 2
        self.unary_correct = [0] * (B - 1)
        self.covered = [0] * (B - 1)
        self.tf_correct = [0] * (B - 1)
        self.unary_accept_sum = 0
        self.oracle_accept_sum = 0
        self.first_miss = {"all_accepted": 0, "coverage_miss": 0, "ranking_error": 0}
        self.near_ties = 0

    def begin_sample(self, index, L, P):
        self.per_sample.append({"sample_index": index, "blocks": 0, "accepted_total": 0,
                                "length": L, "first_response_position": P})

    @staticmethod
    def accept_value(n, cap):
        return n + 1 if cap is None else min(n + 1, cap)

    def add(self, blk, cap=None):
        """blk: score_block's dict (correct[j-1] for the positions j = 1.. that
        exist, and for dflash2 unary/covered/tf lists), or a plain list of
        correct flags (bench/baseline). Returns n."""
        if not isinstance(blk, dict):
            blk = {"correct": list(blk)}
        correct = blk["correct"]
        n = leading_matches(correct)
        for j in range(1, len(correct) + 1):
            self.counted[j - 1] += 1
            self.correct[j - 1] += int(correct[j - 1])
            if n >= j:
                self.accepted[j - 1] += 1
            if n >= j - 1:
                self.cond_counted[j - 1] += 1
        self.hist[n] += 1
        self.blocks += 1
        self.tokens += len(correct)
        value = self.accept_value(n, cap)
        self.accept_sum += value
        s = self.per_sample[-1]
        s["blocks"] += 1
        s["accepted_total"] += value
        if self.family == "dflash2":
            unary, covered, tf = blk["unary_correct"], blk["covered"], blk["tf_correct"]
            for j in range(1, len(correct) + 1):
                self.unary_correct[j - 1] += int(unary[j - 1])
                self.covered[j - 1] += int(covered[j - 1])
                self.tf_correct[j - 1] += int(covered[j - 1] and tf[j - 1])
            self.unary_accept_sum += self.accept_value(leading_matches(unary), cap)
            self.oracle_accept_sum += self.accept_value(leading_matches(covered), cap)
            if n == len(correct):
                self.first_miss["all_accepted"] += 1
            elif not covered[n]:
                self.first_miss["coverage_miss"] += 1
            else:
                self.first_miss["ranking_error"] += 1
            self.near_ties += blk["near_ties"]
        return n

    def result(self):
        def ratio(a, b):
            return a / b if b else 0.0

        positions = []
        for j in range(1, self.B):
            e = {
                "position": j,
                "counted": self.counted[j - 1],
                "correct": self.correct[j - 1],
                "accuracy": ratio(self.correct[j - 1], self.counted[j - 1]),
                "accepted": self.accepted[j - 1],
                "acceptance": ratio(self.accepted[j - 1], self.counted[j - 1]),
                "conditional_counted": self.cond_counted[j - 1],
                "conditional": ratio(self.accepted[j - 1], self.cond_counted[j - 1]),
            }
            if self.family == "dflash2":
                e.update({
                    "unary_correct": self.unary_correct[j - 1],
                    "unary_accuracy": ratio(self.unary_correct[j - 1], self.counted[j - 1]),
                    "covered": self.covered[j - 1],
                    "coverage": ratio(self.covered[j - 1], self.counted[j - 1]),
                    "tf_covered": self.covered[j - 1],
                    "tf_correct": self.tf_correct[j - 1],
                    "tf_accuracy": ratio(self.tf_correct[j - 1], self.covered[j - 1]),
                })
            positions.append(e)
        per_sample = []
        for s in self.per_sample:
            if s["blocks"] == 0:
                continue
            s = dict(s)
            s["mean_accept_length"] = s["accepted_total"] / s["blocks"]
            per_sample.append(s)
        tau = ratio(sum(s["mean_accept_length"] for s in per_sample), len(per_sample))
        r = {
            "accept_length_pooled": ratio(self.accept_sum, self.blocks),
            "tau": tau,
            "blocks": self.blocks,
            "samples": len(per_sample),
            "tokens_scored": self.tokens,
            "accepted_histogram": self.hist,
            "positions": positions,
            "per_sample": per_sample,
        }
        if self.family == "dflash2":
            r.update({
                "unary_accept_length_pooled": ratio(self.unary_accept_sum, self.blocks),
                "oracle_accept_length_pooled": ratio(self.oracle_accept_sum, self.blocks),
                "first_miss": dict(self.first_miss),
                "selector_near_ties": self.near_ties,
            })
        return r
