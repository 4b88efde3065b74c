"""selfcheck (j) and (k): DFlash 2 and DFlash 1 in the new spelling. Each
DFlash 2 feature (convs, selector, softcap, multiplier, embedding scale)
changes the drafts, the '.weight' codebook copy is the same drafter, the
counts are consistent; v1new's scale, window and causal layer matter, its
softcap and multiplier do not move argmax drafts."""

import os

import torch

import reference as ref
from selfcheck_common import anchor_drafts, check, consistent, load_expected, n_differ, run_cli


def dflash2_ablations(d2, s2):
    """(j) Each DFlash 2 feature changes the anchor-mode drafts; undone after."""
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


def dflash2_block_checks(out, embed, head, d2, s2):
    """(j) Shortened blocks, cached context K/V, float64, the logits CLI."""
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
    lg = run_cli(
        ["logits", "--drafter", os.path.join(out, "drafter2-dotweight"), "--target",
         os.path.join(out, "target"), "--dataset", os.path.join(out, "dataset2"),
         "--blocks", "%d:%d" % (s.index, a)])[0]
    h = d2.hidden(s.features[:a], s.input_ids[a], a, B2)[1:]
    prop = d2.propose(h, d2.logits(h), s.input_ids[a])
    check(float((torch.tensor(lg["logits"]) - plain).abs().max()) == 0.0 and
          lg["selector_drafts"] == prop["drafts"] and lg["candidates"] == prop["candidates"],
          "(j) logits CLI on drafter2-dotweight == in-process (logits, selector drafts)")


def dflash2_checks(out, embed, head, d2, s2):
    # (j) DFlash 2.
    dw = ref.Drafter(os.path.join(out, "drafter2-dotweight"), embed, head)
    check(sorted(dw.w) == sorted(d2.w) and all(torch.equal(dw.w[k], d2.w[k]) for k in d2.w),
          "(j) drafter2-dotweight ('.weight' codebooks) loads the same tensors")
    try:
        ref.evaluate(d2, s2[:1], "anchor", semantics="zlab-2025")
        check(False, "(j) DFlash 2 under zlab-2025 refused")
    except ValueError as e:
        check("predates DFlash 2" in str(e), "(j) DFlash 2 under zlab-2025 refused: %s" % e)
    dflash2_ablations(d2, s2)
    for rel, mode in (("dflash2/anchor_all.json", "anchor"), ("dflash2/replay.json", "replay")):
        want = load_expected(out, rel)
        consistent(want, d2.cfg.block_size, "(j) expected/" + rel)
        check(any(p["unary_accuracy"] != p["accuracy"] for p in want["positions"]) and
              want["first_miss"]["coverage_miss"] > 0 and want["first_miss"]["ranking_error"] > 0,
              "(j) expected/%s: selector changes accuracy; coverage misses %d, ranking errors %d"
              % (rel, want["first_miss"]["coverage_miss"], want["first_miss"]["ranking_error"]))
        check(want["accept_length_pooled"] > 1.5, "(j) expected/%s accept length %.3f > 1.5"
              % (rel, want["accept_length_pooled"]))
    dflash2_block_checks(out, embed, head, d2, s2)


def v1new_checks(v1, s1):
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
