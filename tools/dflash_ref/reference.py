#!/usr/bin/python3
"""Plain reference of the DFlash drafter forward and its evaluation.

Written straight from shared/reference/dflash-semantics.md (§4 one draft
block, §5 the two evaluation modes) and dflash2-semantics.md (DFlash 2, the
current z-lab rules), one block at a time, no batching, so that the C++
service can be checked against it. Needs only torch (1.13 works).

  reference.py eval --drafter DIR --target DIR --dataset DIR \
      --mode anchor|replay [--anchors all|even] [--max-blocks N] \
      [--max-samples N] [--block-size B] [--max-new-tokens N] \
      [--semantics zlab-current|zlab-2025] [--json OUT]
  reference.py logits --drafter DIR --target DIR --dataset DIR \
      --blocks SAMPLE:ANCHOR[,SAMPLE:ANCHOR...] [--rows R] \
      [--semantics zlab-current|zlab-2025] [--json OUT]

Compute is float32 by default (--compute-dtype float64 for a tighter
baseline); stored bf16 weights are upcast.
"""

# The reference is split by what it holds (issue 27); this file is its command
# line, and the names other code imports as `reference.X` (make_fixture.py,
# selfcheck.py, make_other_layouts.py, bench/) are re-exported here:
#   safetensors_io      safetensors read/write
#   drafter_config      the named semantics, DrafterConfig
#   model_files         drafter weights, the target's embed/lm_head
#   dataset_files       capture files, Sample, load_dataset
#   norm_and_rope       rms_norm, RoPE
#   block_masks         the attention masks of each rule set
#   drafter, dflash2    the forward; DFlash 2's convs and selector
#   anchors, acceptance_metrics, evaluation   §5: anchors, Metrics, the modes
# decision_metrics.py (--sampling) imports those modules, never this one.

import argparse
import json
import sys

import torch

import decision_metrics as dm
from acceptance_metrics import Metrics, leading_matches
from anchors import eligible_anchors, select_anchors
from block_masks import visible
from dataset_files import Sample, list_capture_files, load_dataset
from dflash2 import CODEBOOKS, DFlash2Parts
from drafter import Drafter
from drafter_config import DEFAULT_SEMANTICS, SEMANTICS, DrafterConfig, check_semantics
from evaluation import block_correct, evaluate, score_block
from model_files import (EMBED_NAMES, HEAD_NAMES, PREFIXES, load_drafter_weights,
                         load_state_from_dir, load_target, strip_prefixes)
from norm_and_rope import rms_norm, rope_inv_freq, rotate_half
from safetensors_io import (ST_DTYPES, ST_NAMES, read_safetensors, read_safetensors_header,
                            write_safetensors)

__all__ = [
    "Metrics", "leading_matches", "eligible_anchors", "select_anchors", "visible",
    "Sample", "list_capture_files", "load_dataset", "CODEBOOKS", "DFlash2Parts", "Drafter",
    "DEFAULT_SEMANTICS", "SEMANTICS", "DrafterConfig", "check_semantics", "block_correct",
    "evaluate", "score_block", "EMBED_NAMES", "HEAD_NAMES", "PREFIXES", "load_drafter_weights",
    "load_state_from_dir", "load_target", "strip_prefixes", "rms_norm", "rope_inv_freq",
    "rotate_half", "ST_DTYPES", "ST_NAMES", "read_safetensors", "read_safetensors_header",
    "write_safetensors", "main",
]


def parse_groups(items):
    if not items:
        return None
    groups = {}
    for it in items:
        key, ids = it.split("=", 1)
        groups[key] = [int(x) for x in ids.split(",") if x]
    return groups


def load_all(args):
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.compute_dtype]
    embed, head, _ = load_target(args.target)
    drafter = Drafter(args.drafter, embed, head, dtype)
    samples = load_dataset(args.dataset, drafter.cfg.target_layer_ids,
                           args.max_samples, parse_groups(args.features))
    return drafter, samples


def emit(obj, path):
    text = json.dumps(obj, indent=1)
    if path:
        with open(path, "w") as f:
            f.write(text + "\n")
    print(text)


def logits_entry(drafter, s, a, B, rows, semantics):
    """One block of the `logits` command. zlab-2025: a block of B rows;
    zlab-current: Lb = min(B, L - a) rows (L = the sample's length)."""
    L = B if semantics == "zlab-2025" else min(B, s.input_ids.shape[0] - a)
    if L < 2:
        raise ValueError("sample %d anchor %d: no slot to draft (block length %d)"
                         % (s.index, a, L))
    h = drafter.hidden(s.features[:a], s.input_ids[a], a, L, semantics=semantics)[1:L]
    logits = drafter.logits(h)
    e = {"sample": s.index, "anchor": a, "block_size": B, "block_length": L,
         "semantics": semantics, "drafts": logits.argmax(-1).tolist()}
    if drafter.family == "dflash2":
        prop = drafter.propose(h, logits, s.input_ids[a])
        e["selector_drafts"] = prop["drafts"]
        e["candidates"] = prop["candidates"]
    if rows:
        logits = logits[:rows]
        for key in ("drafts", "selector_drafts", "candidates"):
            if key in e:
                e[key] = e[key][:rows]
    e["logits"] = [[float(v) for v in row] for row in logits.tolist()]
    return e


def add_sampling(r, args, drafter, samples):
    """eval --sampling: the target consistency, sampled acceptance and the
    draft-length curve (decision_metrics.py) added to the result `r`."""
    if args.mode != "anchor":
        raise ValueError("--sampling needs --mode anchor")
    _, head, _ = load_target(args.target)
    norm, eps = dm.load_target_norm(args.target)
    norm_applied = dm.attach_final_hidden(args.dataset, samples)
    B = args.block_size or drafter.cfg.block_size
    r["target_consistency"] = dm.consistency(samples, head, norm, eps, norm_applied)
    r["draft_length_curve"] = dm.draft_length_curve(r["accepted_histogram"])
    r["sampling"] = dm.sampled_eval(drafter, samples, args.sampling, head, norm, eps,
                                    norm_applied, B, args.anchors, args.max_blocks,
                                    args.semantics, args.policy, not args.target_only_truncation)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("eval", "logits"):
        p = sub.add_parser(name)
        p.add_argument("--drafter", required=True)
        p.add_argument("--target", required=True)
        p.add_argument("--dataset", required=True)
        p.add_argument("--features", action="append",
                       help="KEY=IDS, e.g. hidden_states=1,3,5 (overrides dataset.json)")
        p.add_argument("--max-samples", type=int, default=0)
        p.add_argument("--block-size", type=int, default=0, help="0 = the drafter's")
        p.add_argument("--compute-dtype", choices=["float32", "float64"], default="float32")
        p.add_argument("--semantics", choices=list(SEMANTICS), default=DEFAULT_SEMANTICS,
                       help="zlab-current (default) or zlab-2025 (older rules; DFlash 1 only)")
        p.add_argument("--threads", type=int, default=1,
                       help="torch threads (default 1: fastest for these sizes on a busy box)")
        p.add_argument("--json", help="also write the JSON here")
    pe = sub.choices["eval"]
    pe.add_argument("--mode", choices=["anchor", "replay"], default="anchor")
    pe.add_argument("--anchors", choices=["all", "even"], default="all")
    pe.add_argument("--max-blocks", type=int, default=0, help="per sample; 0 = no limit")
    pe.add_argument("--max-new-tokens", type=int, default=0, help="replay; 0 = no limit")
    pe.add_argument("--sampling", action="append", default=[],
                    help="anchor mode: also sampled acceptance, t=T[,p=P][,k=K] (repeatable; "
                         "needs the dataset's final_hidden_state; decision_metrics.py)")
    pe.add_argument("--policy", action="append", default=[],
                    choices=["sample", "argmax", "selector", "match"],
                    help="with --sampling: score each setting under each policy (repeatable)")
    pe.add_argument("--target-only-truncation", action="store_true",
                    help="top-k/top-p truncate only the target's p (the vllm/sglang presets)")
    pl = sub.choices["logits"]
    pl.add_argument("--blocks", required=True, help="SAMPLE:ANCHOR[,...] (sample = file index)")
    pl.add_argument("--rows", type=int, default=0, help="logit rows per block; 0 = all")
    args = ap.parse_args(argv)
    if args.threads > 0:
        torch.set_num_threads(args.threads)

    try:
        drafter, samples = load_all(args)
        check_semantics(args.semantics, drafter.family)
        if args.cmd == "eval":
            r = evaluate(drafter, samples, args.mode, args.anchors, args.max_blocks,
                         args.block_size, args.max_new_tokens, args.semantics)
            if args.sampling:
                add_sampling(r, args, drafter, samples)
            emit(r, args.json)
            return 0
        B = args.block_size or drafter.cfg.block_size
        by_index = {s.index: s for s in samples}
        out = []
        for item in args.blocks.split(","):
            si, a = (int(x) for x in item.split(":"))
            out.append(logits_entry(drafter, by_index[si], a, B, args.rows, args.semantics))
    except (ValueError, KeyError, FileNotFoundError) as e:
        print("error: %s" % e, file=sys.stderr)
        return 2
    emit(out, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
