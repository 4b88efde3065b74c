#!/usr/bin/python3
"""Shards across device slots (issue 30): one evaluation on one slot with one
thread against the same evaluation split over two slots (--device cpu,cpu)
with one thread each, and the cost of splitting itself (8 shards on one
slot against one piece: part datasets, per-part scorers, the merge). Prints
the wall times (the client's, submit to result), the ratios, and the
streamed cost (the dataset kept on disk, read in chunks).

  bench/shards_bench.py --build build [--size medium] [--runs 3] [--max-samples N]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Server, timed: the side-by-side benchmark's helpers)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def median_wall(srv, args, runs):
    """Median client wall seconds of `runs` evaluations, and the last reply."""
    srv.call(*args)  # warm
    walls, reply = [], {}
    for _ in range(runs):
        dt, reply = srv.call(*args)
        walls.append(dt)
    return statistics.median(walls), reply


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", default="medium", choices=["tiny", "small", "medium"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-samples", type=int, default=16,
                    help="the first N samples (0: all); bounds a run on 2 cores")
    ap.add_argument("--max-blocks", type=int, default=48,
                    help="blocks per sample, spread evenly (0: every anchor)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dflash-shards-")
    fx = os.path.join(work, "fx")
    subprocess.run([bench.PY, os.path.join(ROOT, "tools", "dflash_ref", "make_fixture.py"), fx,
                    "--size", args.size, "--responses", "random"], check=True,
                   stdout=subprocess.DEVNULL)
    build = os.path.abspath(args.build)
    one = bench.Server(build, os.path.join(work, "one"), fx, 1)
    two = bench.Server(build, os.path.join(work, "two"), fx, 2, flags=("--device", "cpu,cpu"))
    results = {}
    try:
        for srv in (one, two):
            srv.call("load-target", fx + "/target", "--name", "t")
            srv.call("load-dataset", fx + "/dataset", "--name", "d")
            srv.call("load-dataset", fx + "/dataset", "--name", "ds", "--stream",
                     "--stream-budget", str(64 << 20))
            srv.call("load-drafter", fx + "/drafter", "--name", "m")
        base = ["eval", "--drafter", "m", "--target", "t", "--max-samples",
                str(args.max_samples), "--max-blocks", str(args.max_blocks)]
        if args.max_blocks == 0:
            base += ["--anchors", "all"]
        rows = [
            ("1 slot, 1 thread, one piece", one, ["--dataset", "d", "--shards", "1"]),
            ("1 slot, 1 thread, 8 shards", one, ["--dataset", "d", "--shards", "8"]),
            ("2 slots x 1 thread, 2 shards", two, ["--dataset", "d", "--shards", "2"]),
            ("2 slots x 1 thread, 8 shards", two, ["--dataset", "d", "--shards", "8"]),
            ("1 slot, 1 thread, streamed", one, ["--dataset", "ds"]),
        ]
        for name, srv, extra in rows:
            results[name] = median_wall(srv, base + extra, args.runs)
    finally:
        one.stop()
        two.stop()
    base_wall, reply = results["1 slot, 1 thread, one piece"]
    print("fixture %s, %s samples, %s blocks (anchor mode, %s); median client wall "
          "seconds of %d runs (submit to result); load average %s"
          % (args.size, reply.get("samples"), reply.get("blocks"),
             "%d even anchors a sample" % args.max_blocks if args.max_blocks else "every anchor",
             args.runs, " ".join("%.2f" % x for x in os.getloadavg())))
    for name, (wall, r) in results.items():
        shards = r.get("shards", [])
        read = sum(int(s.get("bytesRead", 0)) for s in shards)
        print("  %-32s %8.3f s   x%.2f of one piece   %d shard(s)%s"
              % (name, wall, base_wall / wall if wall else 0, len(shards),
                 ", read %d bytes" % read if read else ""))
    split = results["1 slot, 1 thread, 8 shards"][0] - base_wall
    print("  splitting into 8 on one slot costs %+.3f s (%.1f%% of one piece, %.1f ms a shard)"
          % (split, 100 * split / base_wall, 1000 * split / 8))
    return 0


if __name__ == "__main__":
    sys.exit(main())
