#!/usr/bin/python3
"""Cost of proposal policies (issue 26): one evaluation scoring 3 settings
under 3 policies against the same evaluation with one setting, and with
greedy only. The policies share one vocabulary projection per slot, so the
ratio stays near 1. Prints the medians and the ratios (BENCHMARKS.md).

  bench/policies_bench.py --build build [--size small] [--runs 5] [--threads N]
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", default="small", choices=["tiny", "small"],
                    help="make_fixture size with a final hidden state")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dflash-policies-")
    fx = os.path.join(work, "fx")
    subprocess.run([bench.PY, os.path.join(ROOT, "tools", "dflash_ref", "make_fixture.py"), fx,
                    "--size", args.size], check=True, stdout=subprocess.DEVNULL)
    srv = bench.Server(os.path.abspath(args.build), os.path.join(work, "srv"), fx, args.threads)
    try:
        srv.call("load-target", fx + "/target", "--name", "t", "--final-norm")
        srv.call("load-dataset", fx + "/dataset-final", "--name", "d")
        srv.call("load-drafter", fx + "/drafter", "--name", "m")
        base = ["eval", "--drafter", "m", "--dataset", "d", "--target", "t", "--anchors", "all"]
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
                ts.append(float(bench.find(reply, "elapsedSeconds") or 0))
            times[name] = statistics.median(ts)
            blocks = int(bench.find(reply, "blocks") or 0)
        print("fixture %s, %d blocks (anchor mode, all anchors), %d threads, median of %d runs "
              "of the job's elapsed_seconds" % (args.size, blocks, args.threads, args.runs))
        one = times["1 setting (default policy)"]
        for name, t in times.items():
            print("  %-28s %8.3f s   x%.2f of 1 setting" % (name, t, t / one if one else 0))
    finally:
        srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
