#!/usr/bin/python3
"""The harness users run today: one cold process per evaluation.

  baseline.py --drafter D --target T --dataset DS --mode anchor|replay
              [--anchors all|even] [--max-blocks N] [--max-samples N]
              [--threads N] [--json OUT]

Loads the target's embed_tokens / lm_head from its shards, the cached
dataset files and the drafter, then evaluates ONE block per forward call:
  anchor: every block on a fresh context (the context projection c @ fc^T
          and the per-layer K/V are recomputed for each block), as z-lab's
          dflash_generate calls the drafter on a fresh cache;
  replay: the sequential greedy walk with a draft KV cache, as
          dflash_generate does: the newly accepted positions' context K/V
          are appended to the cache, then one block is drafted.
The forward and the metrics are tools/dflash_ref/reference.py's (imported),
under the rules that harness follows, zlab-2025 (its loop records n + 1
while pos < L'); bench.py asks the service for the same semantics.
Prints one JSON object: the §5 metrics plus timings and the BLAS used.
"""

import argparse
import json
import os
import sys
import time

T_START = time.time()
import torch  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools", "dflash_ref"))
import reference as ref  # noqa: E402

SEMANTICS = "zlab-2025"  # the older harness's rules (dflash2-semantics.md §4)


def blas_library():
    """The BLAS shared object actually mapped into this process."""
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f
                           if "blas" in line.lower() and "/" in line})
        return [os.path.realpath(p) for p in libs]
    except OSError:
        return []


def report(r, t, start, json_path):
    """Adds timings, threads and BLAS to result r, prints it (and writes json_path)."""
    t["total_s"] = time.time() - start
    r["timings"] = t
    r["threads"] = torch.get_num_threads()
    r["blas"] = blas_library()
    r.pop("per_sample", None)
    text = json.dumps(r, indent=1)
    if json_path:
        with open(json_path, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0


def replay(drafter, samples, B, max_blocks=0, max_new_tokens=0):
    """Greedy walk per sample, one block per forward, with a draft KV cache."""
    m = ref.Metrics(B)
    nl = drafter.cfg.num_layers
    for s in samples:
        L = s.input_ids.shape[0]
        resp = (s.loss_mask == 1).nonzero()
        P = int(resp[0]) if resp.numel() else L
        m.begin_sample(s.index, L, P)
        Lp = min(L, P + max_new_tokens) if max_new_tokens > 0 else L
        cache = [(None, None)] * nl  # per layer (k, v) for positions < have
        have = 0
        pos, blocks = P, 0
        while pos < Lp and (max_blocks <= 0 or blocks < max_blocks):
            if pos > have:  # append the accepted positions' context K/V
                ctx = drafter.context(s.features[have:pos])
                p = torch.arange(have, pos, dtype=torch.int64)
                new = []
                for i in range(nl):
                    k, v = drafter.context_kv(i, ctx, p)
                    ok, ov = cache[i]
                    new.append((k if ok is None else torch.cat((ok, k)),
                                v if ov is None else torch.cat((ov, v))))
                cache, have = new, pos
            correct = []
            if pos + 1 < Lp:
                rows = min(B - 1, Lp - 1 - pos)
                logits = drafter.block(None, s.input_ids[pos], pos, B, rows=rows,
                                       ctx_kv=[(k[:pos], v[:pos]) for k, v in cache],
                                       semantics=SEMANTICS)
                labels = s.input_ids[pos + 1:pos + 1 + rows]
                correct = [bool(x) for x in (logits.argmax(-1) == labels).tolist()]
            n = m.add(correct)
            blocks += 1
            pos += n + 1
    r = m.result()
    r.update({"mode": "replay", "block_size": B})
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--drafter", required=True)
    ap.add_argument("--target", required=True)
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--mode", choices=["anchor", "replay"], default="anchor")
    ap.add_argument("--anchors", choices=["all", "even"], default="even")
    ap.add_argument("--max-blocks", type=int, default=0)
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="0 = torch's default")
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    t = {"startup_s": time.time() - T_START}

    t0 = time.time()
    embed, head, _ = ref.load_target(args.target)
    t["load_target_s"] = time.time() - t0
    t0 = time.time()
    drafter = ref.Drafter(args.drafter, embed, head)
    t["load_drafter_s"] = time.time() - t0
    t0 = time.time()
    samples = ref.load_dataset(args.dataset, drafter.cfg.target_layer_ids, args.max_samples)
    t["load_dataset_s"] = time.time() - t0

    t0 = time.time()
    B = drafter.cfg.block_size
    if args.mode == "anchor":
        r = ref.evaluate(drafter, samples, "anchor", args.anchors, args.max_blocks,
                         semantics=SEMANTICS)
    else:
        r = replay(drafter, samples, B, args.max_blocks)
    t["eval_s"] = time.time() - t0
    return report(r, t, T_START, args.json)


if __name__ == "__main__":
    sys.exit(main())
