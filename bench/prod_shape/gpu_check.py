#!/usr/bin/python3
"""scripts/gpu-check.sh's checks (issue 14 item 7): one real dflash-evald
(--device auto) with a generated fixture loaded on the CPU (fp32) and, where
a GPU is visible, on cuda:0 twice: fp32 (must agree with the CPU) and the
CUDA default, bf16 weights and features with fp32 accumulation (reported).
Anchor and replay evals on each; the integer outcomes (per-position correct
counts = which drafts matched, the accepted-length histogram) must be equal
between CPU and CUDA fp32, the float metrics within 1e-4. Then `info`'s
CUDA caching-allocator numbers. Prints one markdown table; exit 1 on any
disagreement.

    gpu_check.py --build DIR --fixture FX [--threads N] [--cpu-only]
"""
import argparse
import os
import shutil
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
    args = ap.parse_args()
    fx = os.path.abspath(args.fixture)
    rows, ok, results, infos = [], True, {}, []
    placements = [("_cpu", "cpu", "fp32")]
    if not args.cpu_only:
        placements += [("_gpu32", "cuda:0", "fp32"), ("_gpu", "cuda:0", "")]
    # One server per placement (--device X): every load goes to its device.
    for suffix, device, dtype in placements:
        work = tempfile.mkdtemp(prefix="dflash-gpucheck.")
        srv = Server(args.build, work, fx, args.threads, device=device)
        try:
            load(srv, fx, suffix, dtype)
            for mode in ("anchor", "replay"):
                results[suffix, mode] = evaluate(srv, suffix, mode)
            if device != "cpu":
                infos.append(srv.call("info")[1])
        finally:
            srv.stop()
            shutil.rmtree(work, ignore_errors=True)
    for (suffix, mode), r in sorted(results.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        ref = results["_cpu", mode]
        verdict = "reference"
        if suffix == "_gpu32":
            same = agree(ref, r, 1e-4)
            ok = ok and same
            verdict = "agrees" if same else "**DIFFERS**"
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
    print("\n".join(rows))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
