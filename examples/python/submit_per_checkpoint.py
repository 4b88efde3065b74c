#!/usr/bin/env python3
"""Submit one detached dflash-evald evaluation per saved training checkpoint.

Built on the `dflash_eval` package (client/python; `pip install client/python`
into a `python3 -m venv --system-site-packages` virtualenv). After saving
`.../run-a/step-4000/`, call

    python submit_per_checkpoint.py --dataset gsm8k .../run-a/step-4000

Given a folder that is not itself a checkpoint, every checkpoint directory
directly under it is submitted, in step order. The run defaults to the
parent folder's name and the step comes from the folder's name. Inside a
training script, use `dflash_eval.CheckpointHook` instead.

With --gate best|previous|JOB it waits, prints each job's one-line gate
verdict (the server computes it: the new checkpoint against the reference,
paired over the same samples) and exits 4 when a checkpoint is significantly
worse, as `dflash-eval eval --gate` does.
"""

import argparse
import glob
import os
import re
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import dflash_eval

WEIGHT_PATTERNS = ("*.safetensors", "*.pt", "*.bin", "*.pth", "config.json")


def is_checkpoint(path: str) -> bool:
    return os.path.isfile(path) or any(glob.glob(os.path.join(path, p)) for p in WEIGHT_PATTERNS)


def step_of(path: str) -> Optional[int]:
    """The training step in a name like step-4000, checkpoint_4000, ckpt4000 (else the last number)."""
    name = os.path.basename(os.path.normpath(path))
    name = re.sub(r"\.(safetensors|pt|pth|bin)$", "", name)
    m = re.search(r"(?:step|checkpoint|ckpt|iter)[-_]?(\d+)", name, re.IGNORECASE)
    if m is None:
        m = re.search(r"(\d+)(?!.*\d)", name)
    return int(m.group(1)) if m else None


def _order(path: str) -> Tuple[bool, int, str]:
    step = step_of(path)
    return (step is None, step or 0, path)


def find_checkpoints(paths: Sequence[str]) -> List[str]:
    """Each path that is a checkpoint, else the checkpoints directly under it; by step."""
    found = []
    for path in paths:
        path = os.path.abspath(path)
        if not os.path.exists(path):
            raise SystemExit(f"no such file or directory: {path}")
        if is_checkpoint(path):
            found.append(path)
            continue
        children = [os.path.join(path, n) for n in sorted(os.listdir(path))]
        inner = [c for c in children if os.path.isdir(c) and is_checkpoint(c)]
        if not inner:
            raise SystemExit(f"{path}: neither a checkpoint nor a folder of checkpoints "
                             f"(looked for {', '.join(WEIGHT_PATTERNS)})")
        found.extend(inner)
    return sorted(found, key=_order)


def parse_labels(items: Sequence[str]) -> Dict[str, str]:
    labels = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise SystemExit(f"--label '{item}' is not KEY=VALUE")
        labels[key] = value
    return labels


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="checkpoint directories, or folders holding them")
    ap.add_argument("--server", default=None,
                    help="HOST:PORT (default: $DFLASH_EVAL_SERVER or 127.0.0.1:50051)")
    ap.add_argument("--token-file", default=None,
                    help="bearer token file (default: $DFLASH_EVAL_TOKEN)")
    ap.add_argument("--dataset", required=True, help="resident dataset name")
    ap.add_argument("--target", default="", help="resident target (default: the only one)")
    ap.add_argument("--run", default=None, help="training run label (default: the folder name above "
                    "the checkpoints)")
    ap.add_argument("--label", action="append", default=[], help="KEY=VALUE (repeatable)")
    ap.add_argument("--mode", choices=("anchor", "replay"), default="anchor")
    ap.add_argument("--anchors", choices=("even", "random", "all"), default="even")
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--keep-loaded", action="store_true",
                    help="leave each drafter resident (default: unload_after)")
    ap.add_argument("--wait", action="store_true",
                    help="wait until every job ends; print accept length per step")
    ap.add_argument("--gate", default="",
                    help="best, previous or a job id: exit 4 when a checkpoint is significantly "
                         "worse than that reference (implies --wait)")
    ap.add_argument("--metric", default="tau", help="gate metric (tau, accept_length, "
                    "acceptance[j], ...)")
    ap.add_argument("--min-delta", type=float, default=0.0,
                    help="gate: worse only when the whole interval lies below -X")
    args = ap.parse_args(argv)
    gate: Dict[str, Any] = {"gate": args.gate, "gate_metric": args.metric,
            "gate_min_delta": args.min_delta} if args.gate else {}

    checkpoints = find_checkpoints(args.paths)
    labels = parse_labels(args.label)
    run = args.run or os.path.basename(os.path.dirname(checkpoints[0]))
    try:
        client = dflash_eval.Client(args.server, token_file=args.token_file)
        jobs = []
        for path in checkpoints:
            job = client.submit(checkpoint=path, dataset=args.dataset, mode=args.mode, run=run,
                                step=step_of(path) or 0, labels=labels, target=args.target,
                                anchors=args.anchors, max_samples=args.max_samples,
                                unload_after=not args.keep_loaded, **gate)
            jobs.append(job)
            print(f"submitted {job.id}  run {run} step {job.record.step}  {path}", flush=True)
        if not args.wait and not args.gate:
            return 0
        failed = worse = 0
        print(f"{'step':>10} {'accept length':>14} {'tau':>7}  job")
        for job in jobs:
            final = job.wait()
            if final.succeeded and final.result is not None:
                r = final.result
                print(f"{final.step:>10} {r.accept_length_pooled:>14.3f} {r.tau:>7.3f}  {job.id}")
                if r.gate is not None:
                    print(f"{'':>10} {r.gate.text}")
                    worse += r.gate.verdict == "worse"
                    failed += r.gate.verdict == "error"
            else:
                failed += 1
                print(f"{final.step:>10} {final.state:>14}          {job.id}: "
                      f"{final.error_message}")
        return 1 if failed else 4 if worse else 0
    except dflash_eval.Error as e:
        print(f"submit_per_checkpoint: {e}", file=sys.stderr)
        return 2 if isinstance(e, dflash_eval.UnreachableError) else 1


if __name__ == "__main__":
    sys.exit(main())
