"""selfcheck (l), docs/decision-metrics.md: hand cases, consistency on the
fixture's final hidden state, and sampled acceptance at T = 0 == greedy."""

import os

import torch

import decision_metrics as dm
import reference as ref
from selfcheck_common import check, close


def decision_checks(out, head, drafter, samples):
    """(l) docs/decision-metrics.md: hand cases, consistency on the fixture's
    final hidden state, and sampled acceptance at T = 0 == greedy."""
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
