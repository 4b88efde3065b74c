#!/usr/bin/python3
"""Cost of proposal policies (issue 26): one evaluation scoring 3 settings
under 3 policies against the same evaluation with one setting, and with
greedy only. The policies share one vocabulary projection per slot, so the
ratio stays near 1. Prints the medians and the ratios (BENCHMARKS.md).

  bench/policies_bench.py --build build [--size small] [--runs 5] [--threads N]
                          [--max-samples N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Server, find: the side-by-side benchmark's helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def add_random_final_hidden(src, dst):
    """dst = src plus a random final hidden state [L, H] per sample."""
    script = r"""
import glob, json, os, shutil, sys, torch
src, dst = sys.argv[1], sys.argv[2]
shutil.copytree(src, dst)
with open(os.path.join(dst, "dataset.json")) as f:
    m = json.load(f)
m["final_hidden_state"] = {"key": "final_hidden", "norm_applied": False}
with open(os.path.join(dst, "dataset.json"), "w") as f:
    json.dump(m, f, indent=1)
g = torch.Generator().manual_seed(0)
for path in glob.glob(os.path.join(dst, "**", "*.ckpt"), recursive=True):
    obj = torch.load(path)
    L, H = obj["input_ids"].shape[-1], int(m["hidden_size"])
    obj["final_hidden"] = torch.randn(L, H, generator=g)
    torch.save(obj, path)
"""
    subprocess.run([bench.PY, "-c", script, src, dst], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", default="medium", choices=["tiny", "small", "medium"],
                    help="make_fixture size (medium: H 512, V 32000, B 16, 64 samples)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--max-samples", type=int, default=0,
                    help="evaluate the first N samples only (0: all); bounds a run on 2 cores")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dflash-policies-")
    fx = os.path.join(work, "fx")
    # Random responses: generated in seconds, not minutes; in anchor mode every
    # block is scored in full whatever its tokens, so the cost is the same.
    subprocess.run([bench.PY, os.path.join(ROOT, "tools", "dflash_ref", "make_fixture.py"), fx,
                    "--size", args.size, "--responses", "random"], check=True,
                   stdout=subprocess.DEVNULL)
    flags = ()
    if not os.path.isdir(os.path.join(fx, "dataset-final")):
        # The bench sizes write no final hidden state: add a random one. Its
        # target consistency is ~0, so the server is told to accept that;
        # the cost of the distributions does not depend on their values.
        add_random_final_hidden(os.path.join(fx, "dataset"), os.path.join(fx, "dataset-final"))
        flags = ("--min-target-consistency", "0")
    srv = bench.Server(os.path.abspath(args.build), os.path.join(work, "srv"), fx, args.threads,
                       flags=flags)
    try:
        srv.call("load-target", fx + "/target", "--name", "t", "--final-norm")
        srv.call("load-dataset", fx + "/dataset-final", "--name", "d")
        srv.call("load-drafter", fx + "/drafter", "--name", "m")
        base = ["eval", "--drafter", "m", "--dataset", "d", "--target", "t", "--anchors", "all",
                "--max-samples", str(args.max_samples)]
        rows = {
            "greedy only": [],
            "1 setting (default policy)": ["--sampling", "t=0.7,p=0.95,k=20"],
            "3 settings x 3 policies": ["--sampling", "t=0.6", "--sampling", "t=0.7,p=0.95,k=20",
                                        "--sampling", "t=1.0", "--policy", "sample", "--policy",
                                        "argmax", "--policy", "match"],
        }
        times = {}
        for name, extra in rows.items():
            srv.call(*base, *extra)  # warm
            ts = []
            for _ in range(args.runs):
                _, reply = srv.call(*base, *extra)
                ts.append(float(bench.find(reply, "computeSeconds") or 0))
            times[name] = statistics.median(ts)
            blocks = int(bench.find(reply, "blocks") or 0)
        print("fixture %s, %d blocks (anchor mode, all anchors%s), %d threads, median of %d "
              "runs of the result's compute_seconds"
              % (args.size, blocks,
                 ", first %d samples" % args.max_samples if args.max_samples else "",
                 args.threads, args.runs), flush=True)
        one = times["1 setting (default policy)"]
        for name, t in times.items():
            print("  %-28s %8.3f s   x%.2f of 1 setting" % (name, t, t / one if one else 0))
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
