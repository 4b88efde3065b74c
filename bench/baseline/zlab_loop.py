#!/usr/bin/python3
"""z-lab's loop shape: the baseline a user would write from dflash_generate.

  zlab_loop.py --drafter D --target T --dataset DS [--max-samples N]
               [--max-blocks N] [--max-new-tokens N] [--threads N] [--json OUT]

Written from shared/reference/dflash2-semantics.md §4 (z-lab's current
dflash_generate at temperature 0, the zlab-current rules), with cached
features standing in for the target: per sample, from s = P while
s + 1 < L':
  - append the newly accepted positions' context K/V to a draft KV cache
    (the fc projection, hidden_norm and every layer's K/V of positions
    [have, s)), so the context is projected once per position;
  - one drafter call on the block of min(B, L' - s) rows at anchor s;
  - the lm_head over the WHOLE block's draft slots (all min(B, L' - s) - 1
    of them, as dflash_generate computes draft_logits before verifying),
    argmax (DFlash 1) or the candidate selector's walk (DFlash 2);
  - n leading matches against the cached response; the loop records
    produced = min(n + 1, L' - s - 1) and moves s by it.
The forward is tools/dflash_ref/reference.py's (imported). Prints one JSON
object: the §5 metrics plus timings, like baseline.py.
"""

import argparse
import os
import sys
import time

T_START = time.time()
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "dflash_ref"))
sys.path.insert(0, HERE)
import reference as ref  # noqa: E402
from baseline import report  # noqa: E402

SEMANTICS = "zlab-current"


class DraftCache:
    """Per layer context K/V of positions [0, have): dflash_generate's draft
    KV cache, grown by the accepted positions before each block."""

    def __init__(self, drafter):
        self.drafter = drafter
        self.kv = [None] * drafter.cfg.num_layers
        self.have = 0

    def extend(self, features, upto):
        if upto <= self.have:
            return
        ctx = self.drafter.context(features[self.have:upto])
        pos = torch.arange(self.have, upto, dtype=torch.int64)
        for i in range(self.drafter.cfg.num_layers):
            k, v = self.drafter.context_kv(i, ctx, pos)
            old = self.kv[i]
            self.kv[i] = (k, v) if old is None else (torch.cat((old[0], k)), torch.cat((old[1], v)))
        self.have = upto

    def upto(self, a):
        return [(k[:a], v[:a]) for k, v in self.kv] if self.have else None


def score(drafter, s, cache, pos, B, Lp):
    """One dflash_generate step at anchor pos: the whole block drafted."""
    Lb = min(B, Lp - pos)
    ctx_kv = cache.upto(pos)
    if ctx_kv is None:  # P = 0: an empty context
        ctx_kv = [(torch.zeros(0, drafter.cfg.num_kv_heads, drafter.cfg.head_dim,
                               dtype=drafter.dtype),) * 2] * drafter.cfg.num_layers
    h = drafter.hidden(None, s.input_ids[pos], pos, Lb, ctx_kv=ctx_kv, semantics=SEMANTICS)[1:Lb]
    logits = drafter.logits(h)  # [Lb - 1, V]: every draft slot of the block
    labels = [int(x) for x in s.input_ids[pos + 1:pos + Lb].tolist()]
    prop = drafter.propose(h, logits, s.input_ids[pos], labels)
    out = {"correct": [d == t for d, t in zip(prop["drafts"], labels)]}
    if drafter.family == "dflash2":
        out["unary_correct"] = [d == t for d, t in zip(prop["unary"], labels)]
        out["covered"] = [t in c for t, c in zip(labels, prop["candidates"])]
        out["tf_correct"] = prop["tf_correct"]
        out["near_ties"] = prop["near_ties"]
    return out


def replay(drafter, samples, B, max_blocks=0, max_new_tokens=0):
    m = ref.Metrics(B, drafter.family)
    for s in samples:
        L = s.input_ids.shape[0]
        resp = (s.loss_mask == 1).nonzero()
        P = int(resp[0]) if resp.numel() else L
        m.begin_sample(s.index, L, P)
        Lp = min(L, P + max_new_tokens) if max_new_tokens > 0 else L
        cache = DraftCache(drafter)
        pos, blocks = P, 0
        while pos + 1 < Lp and (max_blocks <= 0 or blocks < max_blocks):
            cache.extend(s.features, pos)
            cap = Lp - pos - 1
            n = m.add(score(drafter, s, cache, pos, B, Lp), cap)
            blocks += 1
            pos += min(n + 1, cap)
    r = m.result()
    r.update({"mode": "replay", "block_size": B, "semantics": SEMANTICS})
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--max-blocks", type=int, default=0)
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--max-new-tokens", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="0 = torch's default")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    t = {"startup_s": time.time() - T_START}
    t0 = time.time()
    embed, head, _ = ref.load_target(args.target)
    drafter = ref.Drafter(args.drafter, embed, head)
    samples = ref.load_dataset(args.dataset, drafter.cfg.target_layer_ids, args.max_samples)
    t["load_s"] = time.time() - t0
    t0 = time.time()
    r = replay(drafter, samples, drafter.cfg.block_size, args.max_blocks, args.max_new_tokens)
    t["eval_s"] = time.time() - t0
    return report(r, t, T_START, args.json)


if __name__ == "__main__":
    sys.exit(main())
