#!/usr/bin/python3
"""Shards across servers (issue 30): one evaluation on one fleet server with
one thread against the same evaluation split over two fleet servers on one
PostgreSQL, one thread each. Both are by-path fleet jobs on the medium
fixture, after a warm-up job that loads everything on every server. Prints
the client's wall time (submit to result), the ratio, and the overhead of
sharding: the wall time less the shard seconds of the busiest server (its
shards run one after another), which leaves the claims through PostgreSQL,
the part records, the merge and the store.

  bench/fleet_shards_bench.py --build build [--size medium] [--runs 3]

Needs Debian's PostgreSQL server binaries (/usr/lib/postgresql/*/bin); as
root, the cluster runs as user nobody.
"""

import argparse
import glob
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (Server: a dflash-evald process and its client)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Postgres:
    """A throwaway PostgreSQL cluster on a loopback port (no fsync)."""

    def __init__(self, work):
        bins = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not bins:
            raise SystemExit("no PostgreSQL server binaries; install Debian's postgresql")
        self.bin = os.path.dirname(bins[-1])
        self.dir = os.path.join(work, "pg")
        os.makedirs(self.dir)
        self.prefix = []
        if os.geteuid() == 0:
            shutil.chown(self.dir, "nobody", "nogroup")
            os.chmod(work, 0o755)
            self.prefix = ["runuser", "-u", "nobody", "--"]
        self.port = free_port()
        self.run("initdb", "-D", self.dir + "/data", "-A", "trust", "-U", "postgres",
                 "--no-sync", "-E", "UTF8")
        self.run("pg_ctl", "start", "-D", self.dir + "/data", "-l", self.dir + "/log", "-w",
                 "-o", "-h 127.0.0.1 -p %d -k %s -F" % (self.port, self.dir))

    def run(self, tool, *args):
        subprocess.run(self.prefix + [os.path.join(self.bin, tool), *args], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def database(self, name):
        subprocess.run(["psql", "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "-c", "CREATE DATABASE " + name], check=True, stdout=subprocess.DEVNULL)
        return "postgresql://postgres@127.0.0.1:%d/%s" % (self.port, name)

    def stop(self):
        subprocess.run(self.prefix + [os.path.join(self.bin, "pg_ctl"), "stop", "-D",
                                      self.dir + "/data", "-m", "immediate", "-w"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def fleet_server(build, work, fx, url, name):
    return bench.Server(build, os.path.join(work, name), fx, 1,
                        flags=("--store", url, "--fleet-name", name,
                               "--fleet-lease-seconds", "30", "--fleet-heartbeat-seconds", "0.5"))


def timed_runs(srv, args, runs):
    """Client wall seconds of `runs` jobs after one warm-up, and the replies."""
    srv.call(*args)
    out = []
    for _ in range(runs):
        out.append(srv.call(*args))
    return out


def shard_seconds(reply):
    return [float(s.get("seconds", 0)) for s in bench.find(reply, "shards") or []]


def busiest_server_seconds(reply):
    """The most shard seconds one server spent: its shards run one after
    another, so the wall time less this is what sharding added (claims,
    part records, the merge, the store)."""
    per = {}
    for s in bench.find(reply, "shards") or []:
        per[s.get("server")] = per.get(s.get("server"), 0.0) + float(s.get("seconds", 0))
    return max(per.values()) if per else 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--size", default="medium", choices=["tiny", "small", "medium"])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--max-samples", type=int, default=32)
    ap.add_argument("--max-blocks", type=int, default=48,
                    help="blocks per sample, spread evenly (0: every anchor)")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="dflash-fleet-shards-")
    fx = os.path.join(work, "fx")
    subprocess.run([bench.PY, os.path.join(ROOT, "tools", "dflash_ref", "make_fixture.py"), fx,
                    "--size", args.size, "--responses", "random"], check=True,
                   stdout=subprocess.DEVNULL)
    build = os.path.abspath(args.build)
    pg = Postgres(work)
    servers = []
    try:
        alone = fleet_server(build, work, fx, pg.database("alone"), "alone")
        servers.append(alone)
        pair_url = pg.database("pair")
        a = fleet_server(build, work, fx, pair_url, "a")
        b = fleet_server(build, work, fx, pair_url, "b")
        servers += [a, b]
        job = ["eval", "--checkpoint", fx + "/drafter", "--dataset-path", fx + "/dataset",
               "--target-path", fx + "/target", "--max-samples", str(args.max_samples),
               "--max-blocks", str(args.max_blocks)]
        if args.max_blocks == 0:
            job += ["--anchors", "all"]
        # Both servers of the pair must hold everything before timing: the
        # warm-up runs 2 shards so each server loads (on demand) once.
        rows = [("1 server x 1 thread, 1 piece", alone, ["--shards", "1"]),
                ("1 server x 1 thread, 2 shards", alone, ["--shards", "2"]),
                ("2 servers x 1 thread, 2 shards", a, ["--shards", "2"]),
                ("2 servers x 1 thread, 8 shards", a, ["--shards", "8"])]
        results = {name: timed_runs(srv, job + extra, args.runs) for name, srv, extra in rows}
    finally:
        for s in servers:
            s.stop()
        pg.stop()
    base = statistics.median(dt for dt, _ in results["1 server x 1 thread, 1 piece"])
    reply = results["1 server x 1 thread, 1 piece"][0][1]
    print("fixture %s, %s samples, %s blocks (anchor mode, %s); by-path fleet jobs on "
          "PostgreSQL; median client wall seconds of %d runs after a warm-up; load average %s"
          % (args.size, bench.find(reply, "samples"), bench.find(reply, "blocks"),
             "%d even anchors a sample" % args.max_blocks if args.max_blocks else "every anchor",
             args.runs, " ".join("%.2f" % x for x in os.getloadavg())))
    for name, runs in results.items():
        wall = statistics.median(dt for dt, _ in runs)
        line = "  %-32s %7.3f s   x%.2f of one piece" % (name, wall, base / wall if wall else 0)
        if shard_seconds(runs[-1][1]):
            over = statistics.median(dt - busiest_server_seconds(r) for dt, r in runs)
            used = {s.get("server") for s in bench.find(runs[-1][1], "shards")}
            line += ("   overhead (wall - busiest server's shard seconds) %.3f s   "
                     "shards ran on %d server(s)"
                     % (over, len(used)))
        print(line)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
