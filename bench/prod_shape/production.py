#!/usr/bin/python3
"""bench/run.sh --production (issue 14 item 5): the eval core at production
shapes (bench/fixtures/make.sh --size qwen3-8b), through roofline_bench (no
gRPC: loads, evals and the matmul peak in one process), once in anchor mode
and once in replay mode. Prints a markdown table for BENCHMARKS.md:

  - each load's time (target bf16 -> fp32, drafter, dataset) against a plain
    read of its files (8 MiB buffer, warm page cache) and its peak RSS growth
    against the bytes it keeps (VmHWM reset through /proc/self/clear_refs);
  - anchor and replay compute time per block (median of --repeat runs);
  - the eval's FLOP rate as a fraction of the matmul peak measured on the
    same threads (FLOP formula in BENCHMARKS.md, "Roofline").
"""
import argparse
import json
import os
import subprocess
import sys
import time


def run_bench(build, fx, mode, args):
    cmd = [os.path.join(build, "bench", "roofline_bench"),
           "--target", os.path.join(fx, "target"), "--drafter", os.path.join(fx, "drafter"),
           "--dataset", os.path.join(fx, "dataset"), "--mode", mode, "--anchors", "even",
           "--max-samples", str(args.max_samples), "--max-blocks", str(args.max_blocks),
           "--threads", str(args.threads), "--repeat", str(args.repeat),
           "--device", args.device, "--dtype", args.dtype]
    print("production: " + " ".join(cmd), file=sys.stderr, flush=True)
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        raise SystemExit("roofline_bench (%s) failed with exit %d" % (mode, p.returncode))
    out = json.loads(p.stdout)
    out["wall_seconds"] = time.time() - t0
    return out


def gb(n):
    return "%.2f GB" % (n / 1e9)


def markdown(man, runs, args):
    s = man["shapes"]
    a = runs["anchor"]
    lines = ["| production shape (%s) | value |" % man["size"], "|---|---|"]
    lines.append("| shapes | H %d, %d/%d heads x %d, I %d, %d drafter layer(s), V %d, "
                 "%d samples / %d tokens |" % (s["H"], s["nh"], s["nkv"], s["d"], s["I"],
                                                s["n"], s["V"], s["samples"],
                                                man["dataset_tokens"]))
    lines.append("| threads, device, resident dtype | %d, %s, %s |"
                 % (a["threads"], a["device"], a["dtype"]))
    for name, label in (("target", "target load (bf16 file)"), ("drafter", "drafter load"),
                        ("dataset", "dataset load")):
        ld = a["load_" + name]
        frac = ld["plain_read_seconds"] / ld["seconds"] if ld["seconds"] > 0 else 0
        ratio = ld["peak_rss_growth"] / ld["tensor_bytes"] if ld["tensor_bytes"] else 0
        lines.append("| %s | %.2f s for %s of files (plain read %.2f s: %.0f%%); peak RSS "
                     "growth %s = %.2fx the %s kept |"
                     % (label, ld["seconds"], gb(ld["file_bytes"]), ld["plain_read_seconds"],
                        100 * frac, gb(ld["peak_rss_growth"]), ratio, gb(ld["tensor_bytes"])))
    peak = max(a.get("matmul_gflops_%d" % n, 0) for n in (1024, 2048, 8192))
    lines.append("| matmul peak (%s, these threads) | %.1f GFLOP/s |" % (a["dtype"], peak))
    for mode in ("anchor", "replay"):
        e = runs[mode]["eval"]
        per = e["compute_seconds_median"] / e["blocks"] if e["blocks"] else 0
        lines.append("| %s: %d blocks | %.1f ms per block (%.2f s), %.1f GFLOP/s = %.0f%% of "
                     "the matmul peak; accept length %.3f |"
                     % (mode, e["blocks"], 1e3 * per, e["compute_seconds_median"],
                        e["gflops_per_s"], 100 * e["fraction_of_peak"],
                        e["accept_length_pooled"]))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True)
    ap.add_argument("--fixture", required=True)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--max-samples", type=int, default=8)
    ap.add_argument("--max-blocks", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    fx = os.path.abspath(args.fixture)
    with open(os.path.join(fx, "manifest.json")) as f:
        man = json.load(f)
    runs = {m: run_bench(args.build, fx, m, args) for m in ("anchor", "replay")}
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"manifest": man, "runs": runs}, f, indent=1)
    print(markdown(man, runs, args))


if __name__ == "__main__":
    main()
