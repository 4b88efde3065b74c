#!/usr/bin/python3
"""scripts/gpu-check.sh's checks (issue 14 item 7): one real dflash-evald
(--device auto) with a generated fixture loaded on the CPU (fp32) and, where
a GPU is visible, on cuda:0 twice: fp32 (must agree with the CPU) and the
CUDA default, bf16 weights and features with fp32 accumulation (reported).
Anchor and replay evals on each; the integer outcomes (per-position correct
counts = which drafts matched, the accepted-length histogram) must be equal
between CPU and CUDA fp32, the float metrics within 1e-4. Then `info`'s
CUDA caching-allocator numbers. Then the GPU path's bad input: a server started on a device that does
not exist must exit with a clear error, and a load that meets a real CUDA
out-of-memory (another process holds the rest of the card) must be
RESOURCE_EXHAUSTED with the sizes while the server keeps serving what it
holds. Resident bytes from `info` are set beside nvidia-smi's count for the
server process. Prints one markdown table (and --json, everything); exit 1
on any disagreement or failed check.

    gpu_check.py --build DIR --fixture FX [--threads N] [--cpu-only] [--json F]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prod_shape import Server  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from bench import find  # noqa: E402


def load(srv, fx, suffix, dtype):
    """On the server's device (load-dataset takes no --device)."""
    extra = ["--dtype", dtype] if dtype else []
    srv.call("load-target", os.path.join(fx, "target"), "--name", "t" + suffix, *extra)
    srv.call("load-drafter", os.path.join(fx, "drafter"), "--name", "d" + suffix, *extra)
    srv.call("load-dataset", os.path.join(fx, "dataset"), "--name", "ds" + suffix, *extra)


def evaluate(srv, suffix, mode):
    dt, rep, _ = srv.call("eval", "--sync", "--drafter", "d" + suffix, "--dataset",
                          "ds" + suffix, "--target", "t" + suffix, "--mode", mode,
                          "--max-samples", "4")
    pos = find(rep, "positions") or []
    return {"seconds": dt, "compute_seconds": float(find(rep, "computeSeconds") or 0),
            "blocks": int(find(rep, "blocks") or 0),
            "accept_length": float(find(rep, "acceptLengthPooled") or 0),
            "tau": float(find(rep, "tau") or 0),
            "correct": [int(p.get("correct", 0)) for p in pos],
            "accuracy": [float(p.get("accuracy", 0)) for p in pos],
            "histogram": [int(h) for h in (find(rep, "acceptedHistogram") or [])]}


def differing_positions(a, b):
    """Positions whose correct counts differ (which drafts matched)."""
    return [j for j, (x, y) in enumerate(zip(a["correct"], b["correct"])) if x != y]


def smi_used_bytes(pid):
    """nvidia-smi's memory for one process (MiB -> bytes); None if unknown."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory",
                              "--format=csv,noheader,nounits"], stdout=subprocess.PIPE,
                             text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        parts = [x.strip() for x in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            return int(parts[1]) * 1024 * 1024
    return None


def resident(srv):
    """info's device rows for cuda:0 and nvidia-smi's view of the process."""
    info = srv.call("info")[1]
    row = {"nvidia_smi_process_bytes": smi_used_bytes(srv.proc.pid)}
    for d in find(info, "devices") or []:
        if str(d.get("name", "")).startswith("cuda"):
            row.update({k: int(d.get(k, 0) or 0) for k in (
                "usedMemoryBytes", "totalMemoryBytes", "allocatorAllocatedBytes",
                "allocatorReservedBytes", "allocatorPeakReservedBytes", "allocatorOoms")})
            row["device"] = d.get("name")
    return row


def bad_device(build, work):
    """--device cuda:7 on a one-GPU host: a startup error naming it."""
    p = subprocess.run([os.path.join(build, "server", "dflash-evald"), "--listen",
                        "127.0.0.1:0", "--state-dir", os.path.join(work, "bad-state"),
                        "--device", "cuda:7"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=120)
    ok = p.returncode != 0 and "cuda:7" in p.stdout
    return {"exit": p.returncode, "output_tail": p.stdout[-600:], "ok": ok}


# Takes the card's free memory in 1 GiB, then 64 MiB, then 2 MiB pieces (one
# piece of "all that is free" fails: the free figure includes what the
# process's own context needs).
HOG = """import time, torch
xs, held = [], 0
for step in (1 << 30, 64 << 20, 2 << 20):
    while True:
        try:
            xs.append(torch.empty(step, dtype=torch.uint8, device='cuda'))
            held += step
        except RuntimeError:
            break
print('held', held, 'free', torch.cuda.mem_get_info()[0], flush=True)
time.sleep(300)
"""


def cuda_oom(build, fx, threads, py):
    """A fresh server on cuda:0 (nothing cached in its allocator); another
    process takes all the card's free memory; loading the target must be
    RESOURCE_EXHAUSTED; once the memory is back the same load succeeds and
    the server has kept serving."""
    work = tempfile.mkdtemp(prefix="dflash-oom.")
    srv = Server(build, work, fx, threads, device="cuda:0")
    hog = None
    try:
        srv.call("info")
        hog = subprocess.Popen(
            [py, "-c", HOG],
            stdout=subprocess.PIPE, text=True)
        held = hog.stdout.readline().strip()
        load = [srv.client, "--server", srv.addr, "load-target", os.path.join(fx, "target"),
                "--name", "t_oom", "--dtype", "fp32"]
        p = subprocess.run(load, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        hog.kill()
        hog.wait()
        hog = None
        again = subprocess.run(load, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               text=True)
        ok = (p.returncode != 0 and "RESOURCE_EXHAUSTED" in p.stdout and "needed" in p.stdout
              and again.returncode == 0 and srv.proc.poll() is None)
        return {"hog": held, "exit": p.returncode, "output_tail": p.stdout[-800:],
                "load_after_release_exit": again.returncode,
                "load_after_release_tail": again.stdout[-300:], "ok": ok}
    finally:
        if hog is not None:
            hog.kill()
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)


def agree(a, b, tol):
    if a["blocks"] != b["blocks"] or a["correct"] != b["correct"]:
        return False
    if a["histogram"] != b["histogram"]:
        return False
    close = lambda x, y: abs(x - y) <= tol * max(1.0, abs(x))  # noqa: E731
    return (close(a["accept_length"], b["accept_length"]) and close(a["tau"], b["tau"])
            and all(close(x, y) for x, y in zip(a["accuracy"], b["accuracy"])))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cpu-only", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    fx = os.path.abspath(args.fixture)
    rows, ok, results, infos = [], True, {}, []
    checks = {}
    placements = [("_cpu", "cpu", "fp32")]
    if not args.cpu_only:
        placements += [("_gpu32", "cuda:0", "fp32"), ("_gpu", "cuda:0", "")]
    # One server per placement (--device X): every load goes to its device.
    for suffix, device, dtype in placements:
        work = tempfile.mkdtemp(prefix="dflash-gpucheck.")
        srv = Server(args.build, work, fx, args.threads, device=device)
        try:
            load(srv, fx, suffix, dtype)
            if device != "cpu":
                checks["resident" + suffix] = resident(srv)
            for mode in ("anchor", "replay"):
                results[suffix, mode] = evaluate(srv, suffix, mode)
            if device != "cpu":
                infos.append(srv.call("info")[1])
            if suffix == "_gpu":
                checks["bad_device"] = bad_device(args.build, work)
                checks["cuda_oom"] = cuda_oom(args.build, fx, args.threads, sys.executable)
                ok = ok and checks["bad_device"]["ok"] and checks["cuda_oom"]["ok"]
        finally:
            srv.stop()
            shutil.rmtree(work, ignore_errors=True)
    for (suffix, mode), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ref = results["_cpu", mode]
        verdict = "reference"
        if suffix == "_gpu32":
            same = agree(ref, r, 1e-4)
            ok = ok and same
            diff = differing_positions(ref, r)
            verdict = "agrees" if same else "**DIFFERS** at positions %s" % diff
            checks["fp32_" + mode] = {"agrees": same, "differing_positions": diff}
        elif suffix == "_gpu":
            verdict = "bf16: accept length %+.4f vs cpu" % (r["accept_length"]
                                                             - ref["accept_length"])
        device, dtype = next((d, t or "bf16 (default)") for s_, d, t in placements
                             if s_ == suffix)
        rows.append("| %s | %s %s | %d | %.4f | %.4f | %.3f | %s |"
                    % (mode, device, dtype, r["blocks"], r["accept_length"], r["tau"],
                       r["compute_seconds"], verdict))
    for info in infos[-1:]:
        for d in find(info, "devices") or []:
            if str(d.get("name", "")).startswith("cuda"):
                rows.append("| info | %s allocator | | allocated %s, reserved %s, peak "
                            "reserved %s, %s OOMs | | | |"
                            % (d.get("name"), d.get("allocatorAllocatedBytes", 0),
                               d.get("allocatorReservedBytes", 0),
                               d.get("allocatorPeakReservedBytes", 0),
                               d.get("allocatorOoms", 0)))
    if args.cpu_only:
        rows.append("| note | --cpu-only: the CPU rows only | | | | | |")
    print("| mode | placement | blocks | accept length | tau | compute s | CPU vs CUDA |")
    print("|---|---|---|---|---|---|---|")
    for name, c in sorted(checks.items()):
        rows.append("| check | %s | | | | | %s |" % (name, json.dumps(c)[:300]))
    print("\n".join(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"ok": ok, "results": {"%s %s" % k: v for k, v in results.items()},
                       "checks": checks, "table": rows}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
