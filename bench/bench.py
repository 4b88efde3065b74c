#!/usr/bin/python3
"""Side-by-side benchmark: dflash-evald vs the per-block Python harness.

Driven by bench/run.sh (which builds and makes the fixture); see
BENCHMARKS.md. Needs no torch itself: the baseline runs as its own cold
/usr/bin/python3 processes.
"""

import argparse
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PY = os.environ.get("DFLASH_FIXTURE_PY", "/usr/bin/python3")
BASELINE = os.path.join(ROOT, "bench", "baseline", "baseline.py")
ZLAB_LOOP = os.path.join(ROOT, "bench", "baseline", "zlab_loop.py")


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def timed(cmd, env=None):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    dt = time.time() - t0
    if p.returncode != 0:
        raise SystemExit("command failed (%d): %s\n%s%s" % (p.returncode, " ".join(cmd),
                                                             p.stdout[-2000:], p.stderr[-4000:]))
    return dt, p.stdout


def proc_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def one_thread_env():
    """The environment of a process held to one thread: torch's intra-op pool
    (--threads 1) and OpenBLAS's own pool, which otherwise starts one thread
    per core whatever torch is told."""
    return dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")


def load_fixture(srv, fx):
    """Loads the fixture's target, dataset and drafter as btarget, bdataset,
    bdrafter; returns each load's wall time and resident bytes."""
    loads = {}
    for kind, path in (("load-target", "target"), ("load-dataset", "dataset"),
                       ("load-drafter", "drafter")):
        dt, rep = srv.call(kind, os.path.join(fx, path), "--name", "b" + path)
        loads[path] = {"wall_s": dt, "bytes": int(find(rep, "bytes") or 0)}
    return loads


def zlab_row(srv, fx, threads, env, runs, baseline_runs, args):
    """Row Z: the service's replay against zlab_loop.py on the same threads;
    returns the row and the agreement check."""
    log("== Z: replay, zlab-current, vs z-lab's loop, %d thread(s)%s"
        % (threads, " (OpenBLAS held to one)" if env else ""))
    zt, zreply = [], None
    for _ in range(runs):
        dt, zreply = srv.call("eval", *srv.sync, "--drafter", "bdrafter", "--dataset",
                              "bdataset", "--max-samples", str(args.samples), "--mode", "replay")
        zt.append(dt)
    lt, lout = [], None
    for _ in range(baseline_runs):
        dt, text = timed([PY, ZLAB_LOOP, "--drafter", os.path.join(fx, "drafter"),
                          "--target", os.path.join(fx, "target"), "--dataset",
                          os.path.join(fx, "dataset"), "--threads", str(threads),
                          "--max-samples", str(args.samples)], env=env)
        lt.append(dt)
        lout = json.loads(text)
    zs = service_metrics(zreply)
    agree = check_agree("Z", zs, baseline_metrics(lout), args.tol)
    agree["same_tau"] = abs(float(find(zreply, "tau") or 0) - lout["tau"])
    row = {"service_s": median(zt), "baseline_s": median(lt), "threads": threads,
           "service_runs": zt, "baseline_runs": lt, "blocks": zs["blocks"],
           "service_compute_s": float(find(zreply, "computeSeconds") or 0),
           "baseline_eval_s": lout["timings"]["eval_s"],
           "accept_length": zs["accept_length"], "tau": lout["tau"]}
    log("   service %.2fs (compute %.2fs), z-lab loop %.2fs (eval %.2fs)"
        % (median(zt), row["service_compute_s"], median(lt), lout["timings"]["eval_s"]))
    return row, agree


class Server:
    def __init__(self, build, work, data_root, threads, env=None, flags=()):
        self.work = work
        os.makedirs(work, exist_ok=True)
        port_file = os.path.join(work, "port")
        self.proc = subprocess.Popen(
            [os.path.join(build, "server", "dflash-evald"), "--listen", "127.0.0.1:0",
             "--port-file", port_file, "--state-dir", os.path.join(work, "state"),
             "--data-root", data_root, "--log-level", "warn", "--threads", str(threads),
             *flags],
            stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "server.log"), "w"),
            env=env)
        for _ in range(600):
            if os.path.exists(port_file) and os.path.getsize(port_file) > 0:
                break
            if self.proc.poll() is not None:
                raise SystemExit("dflash-evald exited before serving; see %s/server.log" % work)
            time.sleep(0.1)
        with open(port_file) as f:
            self.addr = "127.0.0.1:" + f.read().strip()
        self.client = os.path.join(build, "client", "dflash-eval")
        help_text = subprocess.run([self.client, "eval", "--help"], stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True).stdout
        self.sync = ["--sync"] if "--sync" in help_text else []

    def call(self, *args):
        dt, out = timed([self.client, "--server", self.addr, "--json", "--timeout", "0"]
                        + list(args))
        return dt, json.loads(out) if out.strip() else {}

    def eval(self, *args):
        # The baseline harness follows the older rules: compare like with like.
        return self.call("eval", *self.sync, "--semantics", "zlab-2025", *args)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def find(obj, key):
    """First value of `key` anywhere in a JSON tree (the reply nests the result)."""
    if isinstance(obj, dict):
        if key in obj:
            return obj[key]
        for v in obj.values():
            r = find(v, key)
            if r is not None:
                return r
    elif isinstance(obj, list):
        for v in obj:
            r = find(v, key)
            if r is not None:
                return r
    return None


def service_metrics(reply):
    pos = find(reply, "positions") or []
    # Replay scores each block to its first miss: accuracy[j] is not measured
    # there, acceptance[j] and the histogram are (and are compared instead).
    cut = bool(find(reply, "positionsToFirstMiss"))
    return {"blocks": int(find(reply, "blocks") or 0),
            "accept_length": float(find(reply, "acceptLengthPooled") or 0),
            "accuracy": None if cut else [float(p.get("accuracy", 0)) for p in pos],
            "acceptance": [float(p.get("acceptance", 0)) for p in pos],
            "histogram": [int(x) for x in find(reply, "acceptedHistogram") or []]}


def baseline_metrics(r):
    return {"blocks": r["blocks"], "accept_length": r["accept_length_pooled"],
            "accuracy": [p["accuracy"] for p in r["positions"]],
            "acceptance": [p["acceptance"] for p in r["positions"]],
            "histogram": r["accepted_histogram"]}


def check_agree(name, svc, base, tol):
    """Same blocks, accept length and per-position accuracy (to `tol`)."""
    d_al = abs(svc["accept_length"] - base["accept_length"])
    key = "accuracy" if svc["accuracy"] is not None else "acceptance"
    d_acc = max([abs(a - b) for a, b in zip(svc[key], base[key])] or [0])
    ok = (svc["blocks"] == base["blocks"] and len(svc[key]) == len(base[key])
          and d_al <= tol and d_acc <= tol
          and (not svc["histogram"] or svc["histogram"] == base["histogram"]))
    line = ("%s: service blocks %d accept length %.4f | baseline blocks %d accept length %.4f"
            " | max |d %s[j]| %.2g" % (name, svc["blocks"], svc["accept_length"],
                                       base["blocks"], base["accept_length"], key, d_acc))
    log(("agree  " if ok else "DISAGREE  ") + line)
    if not ok:
        raise SystemExit("the baseline and the service disagree (%s); stopping" % name)
    return {"d_accept_length": d_al, "d_accuracy": d_acc}


def baseline_cmd(fx, drafter, threads, req):
    return [PY, BASELINE, "--drafter", drafter, "--target", os.path.join(fx, "target"),
            "--dataset", os.path.join(fx, "dataset"), "--threads", str(threads)] + req


def make_checkpoints(fx, n):
    """n training-like checkpoints (.pt, module. prefix) = drafter + small noise."""
    out = os.path.join(fx, "ckpts")
    if os.path.isfile(os.path.join(out, ".complete-%d" % n)):
        return [os.path.join(out, "step-%d" % k) for k in range(1, n + 1)]
    code = r"""
import os, sys, shutil, torch
sys.path.insert(0, sys.argv[1])
import reference as ref
fx, out, n = sys.argv[2], sys.argv[3], int(sys.argv[4])
w = ref.read_safetensors(os.path.join(fx, "drafter", "model.safetensors"))
g = torch.Generator().manual_seed(1)
for k in range(1, n + 1):
    d = os.path.join(out, "step-%d" % k)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(fx, "drafter", "config.json"), d)
    sd = {"module." + name: t + 1e-3 * k * torch.randn(t.shape, generator=g) * t.std()
          for name, t in w.items()}
    torch.save({"model": sd, "step": 1000 * k}, os.path.join(d, "checkpoint.pt"))
"""
    subprocess.run([PY, "-c", code, os.path.join(ROOT, "tools", "dflash_ref"), fx, out, str(n)],
                   check=True)
    open(os.path.join(out, ".complete-%d" % n), "w").close()
    return [os.path.join(out, "step-%d" % k) for k in range(1, n + 1)]


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def machine_info(threads, roof):
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    blas = os.path.realpath("/usr/lib/x86_64-linux-gnu/libblas.so.3")
    return {"cpu": cpu, "cores": os.cpu_count(), "threads": threads, "blas": blas,
            "kernel": platform.release(), "load_avg": os.getloadavg(),
            "matmul_gflops": max(roof.get("matmul_gflops_1024", 0),
                                 roof.get("matmul_gflops_2048", 0))}


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--runs", type=int, default=3, help="service runs per row (median)")
    ap.add_argument("--baseline-runs", type=int, default=1)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--s1-blocks", type=int, default=8, help="anchor blocks per sample")
    ap.add_argument("--s3-blocks", type=int, default=2)
    ap.add_argument("--checkpoints", type=int, default=5)
    ap.add_argument("--smoke", action="store_true", help="agreement only, tiny fixture")
    ap.add_argument("--scaling", action="store_true")
    ap.add_argument("--tol", type=float, default=2e-3)
    ap.add_argument("--json", default="")
    return ap.parse_args()


def s1_args(args):
    return ["--mode", "anchor", "--anchors", "even", "--max-blocks", str(args.s1_blocks)]


def svc_eval(srv, args, req, runs):
    """The service's eval of bdrafter on bdataset `runs` times: (times, last reply)."""
    times, reply = [], None
    for _ in range(runs):
        dt, reply = srv.eval("--drafter", "bdrafter", "--dataset", "bdataset",
                             "--max-samples", str(args.samples), *req)
        times.append(dt)
    return times, reply


def base_eval(args, req, runs, drafter=None):
    """The Python baseline `runs` times: (times, last output)."""
    fx, T = args.fixture, args.threads
    times, out = [], None
    for _ in range(runs):
        dt, text = timed(baseline_cmd(fx, drafter or os.path.join(fx, "drafter"), T,
                                      ["--max-samples", str(args.samples)] + req))
        times.append(dt)
        out = json.loads(text)
    return times, out


def s1_s2_rows(srv, args, res):
    """Rows S1 (anchor) and S2 (replay): service against baseline, agreement
    checked. Returns the last baseline output."""
    bout = None
    for row, req in (("S1", s1_args(args)), ("S2", ["--mode", "replay"])):
        log("== %s: %s" % (row, " ".join(req)))
        st, sreply = svc_eval(srv, args, req, 1 if args.smoke else args.runs)
        bt, bout = base_eval(args, req, 1 if args.smoke else args.baseline_runs)
        res["agreement"][row] = check_agree(row, service_metrics(sreply),
                                            baseline_metrics(bout), args.tol)
        res["rows"][row] = {"service_s": median(st), "baseline_s": median(bt),
                            "service_runs": st, "baseline_runs": bt,
                            "blocks": service_metrics(sreply)["blocks"],
                            "service_compute_s": float(find(sreply, "computeSeconds") or 0),
                            "baseline_eval_s": bout["timings"]["eval_s"],
                            "baseline_timings": bout["timings"],
                            "accept_length": service_metrics(sreply)["accept_length"]}
        log("   service %.2fs (runs %s), baseline %.2fs (runs %s)"
            % (median(st), ["%.2f" % x for x in st], median(bt), ["%.2f" % x for x in bt]))
    return bout


def z_rows(srv, args, work, res):
    """Z: z-lab's loop shape (dflash_generate: draft KV cache, one drafter
    call and the lm_head over the whole block per step) against the
    service's replay, both under the current z-lab rules: at the run's
    threads (each side's default pools), and both held to one thread."""
    fx, T = args.fixture, args.threads
    res["rows"]["Z"], res["agreement"]["Z"] = zlab_row(
        srv, fx, T, None, 1 if args.smoke else args.runs,
        1 if args.smoke else args.baseline_runs, args)
    if not args.smoke and T > 1:
        one = Server(args.build, os.path.join(work, "one-thread"), fx, 1, one_thread_env())
        try:
            load_fixture(one, fx)
            res["rows"]["Z1"], res["agreement"]["Z1"] = zlab_row(
                one, fx, 1, one_thread_env(), args.runs, args.baseline_runs, args)
        finally:
            one.stop()


def s3_row(srv, args, res):
    """S3: the training-loop sweep over fresh checkpoints."""
    ckpts = make_checkpoints(args.fixture, args.checkpoints)
    s3 = ["--mode", "anchor", "--anchors", "even", "--max-blocks", str(args.s3_blocks)]
    log("== S3: %d checkpoints, %s" % (len(ckpts), " ".join(s3)))
    svc_sweeps, base_sweeps = [], []
    for _ in range(args.runs):
        t0 = time.time()
        replies = [srv.eval("--checkpoint", c, "--dataset", "bdataset", "--max-samples",
                            str(args.samples), *s3)[1] for c in ckpts]
        svc_sweeps.append(time.time() - t0)
    for _ in range(args.baseline_runs):
        t0 = time.time()
        outs = [base_eval(args, s3, 1, c)[1] for c in ckpts]
        base_sweeps.append(time.time() - t0)
    for k, (r, o) in enumerate(zip(replies, outs)):
        check_agree("S3 step-%d" % (k + 1), service_metrics(r), baseline_metrics(o),
                    args.tol)
    res["rows"]["S3"] = {"service_s": median(svc_sweeps), "baseline_s": median(base_sweeps),
                         "service_runs": svc_sweeps, "baseline_runs": base_sweeps,
                         "blocks": service_metrics(replies[0])["blocks"] * len(ckpts)}
    log("   service %.2fs, baseline %.2fs" % (median(svc_sweeps), median(base_sweeps)))


def scaling(srv, args):
    """The service's time against samples, blocks per sample and new tokens."""
    sc = {"samples": [], "blocks": [], "tokens": []}
    for n in (16, 32, 64):
        dt, r = srv.eval("--drafter", "bdrafter", "--dataset", "bdataset",
                         "--max-samples", str(n), *s1_args(args))
        sc["samples"].append((n, dt, float(find(r, "computeSeconds") or 0)))
    for m in (2, 4, 8, 16):
        dt, r = srv.eval("--drafter", "bdrafter", "--dataset", "bdataset",
                         "--max-samples", str(args.samples), "--mode", "anchor",
                         "--anchors", "even", "--max-blocks", str(m))
        sc["blocks"].append((m, dt, float(find(r, "computeSeconds") or 0)))
    for m in (32, 64, 128):
        dt, r = srv.eval("--drafter", "bdrafter", "--dataset", "bdataset",
                         "--max-samples", str(args.samples), "--mode", "replay",
                         "--max-new-tokens", str(m))
        sc["tokens"].append((m, dt, float(find(r, "computeSeconds") or 0)))
    return sc


def service_rows(args, work, res):
    """Every row that needs the server. Returns True when the smoke is done."""
    fx, T = args.fixture, args.threads
    srv = Server(args.build, work, fx, T)
    try:
        # Loads through the service (resident bytes, peak RSS).
        loads = load_fixture(srv, fx)
        loads["server_vmhwm"] = proc_kb(srv.proc.pid, "VmHWM")
        loads["server_vmrss"] = proc_kb(srv.proc.pid, "VmRSS")
        res["service_loads"] = loads
        bout = s1_s2_rows(srv, args, res)
        z_rows(srv, args, work, res)
        res["baseline_blas"] = bout.get("blas", [])
        res["baseline_threads"] = bout.get("threads")
        if args.smoke:
            log("smoke: baseline and service agree")
            return True
        s3_row(srv, args, res)
        if args.scaling:
            res["scaling"] = scaling(srv, args)
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    return False


def roofline(args, res):
    """Roofline, loads and memory: the eval core in one process (no gRPC)."""
    fx, T = args.fixture, args.threads
    log("== roofline_bench (anchor, S1 request)")
    dt, text = timed([os.path.join(args.build, "bench", "roofline_bench"),
                      "--target", os.path.join(fx, "target"),
                      "--drafter", os.path.join(fx, "drafter"),
                      "--dataset", os.path.join(fx, "dataset"), "--threads", str(T),
                      "--max-samples", str(args.samples), "--mode", "anchor",
                      "--anchors", "even", "--max-blocks", str(args.s1_blocks),
                      "--repeat", str(args.runs)])
    res["roofline"] = json.loads(text)
    res["machine"] = machine_info(T, res["roofline"])


def main():
    args = parse_args()
    work = tempfile.mkdtemp(prefix="dflash-bench.")
    res = {"rows": {}, "agreement": {}, "load_avg_start": os.getloadavg()}
    if service_rows(args, work, res):
        return 0
    roofline(args, res)
    res["request"] = {"samples": args.samples, "s1_blocks": args.s1_blocks,
                      "s3_blocks": args.s3_blocks, "checkpoints": args.checkpoints,
                      "runs": args.runs, "baseline_runs": args.baseline_runs}
    text = json.dumps(res, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")
    print(text)
    return 0

if __name__ == "__main__":
    sys.exit(main())
