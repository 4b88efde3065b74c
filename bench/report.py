#!/usr/bin/python3
"""Turns bench.py's JSON into the one table (text) or BENCHMARKS.md (--markdown)."""

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows(r):
    """(name, service, baseline, ratio/value, target, met) tuples."""
    out = []
    req = r["request"]
    for key, what, target in (
            ("S1", "S1 anchor, %d samples x %d even blocks" % (req["samples"], req["s1_blocks"]),
             4.0),
            ("S2", "S2 replay walk, %d samples" % req["samples"], 2.0),
            ("S3", "S3 sweep, %d checkpoints x (%d samples x %d blocks)"
             % (req["checkpoints"], req["samples"], req["s3_blocks"]), 10.0),
            ("Z", "Z replay walk vs z-lab's loop (zlab-current, %d samples, %d threads)"
             % (req["samples"], r["rows"].get("Z", {}).get("threads", r["machine"]["threads"])),
             5.0),
            ("Z1", "Z1 the same, both held to one thread (torch and OpenBLAS)", 5.0)):
        x = r["rows"].get(key)
        if not x:
            continue
        speed = x["baseline_s"] / x["service_s"] if x["service_s"] else 0
        out.append((what, "%.2f s" % x["service_s"], "%.2f s" % x["baseline_s"],
                    "%.1fx faster" % speed, ">= %.0fx" % target, speed >= target))
    roof = r["roofline"]
    ev = roof["eval"]
    peak = max(roof["matmul_gflops_1024"], roof["matmul_gflops_2048"])
    out.append(("roofline, anchor (S1 request, eval core)",
                "%.1f GFLOP/s" % ev["gflops_per_s"], "peak %.1f GFLOP/s" % peak,
                "%.0f%% of peak" % (100 * ev["fraction_of_peak"]), ">= 50%",
                ev["fraction_of_peak"] >= 0.5))
    for name in ("drafter", "dataset"):
        l = roof["load_" + name]
        load_bw = l["file_bytes"] / l["seconds"] / 1e6
        plain_bw = l["file_bytes"] / l["plain_read_seconds"] / 1e6
        out.append(("load %s (%.1f MB of files)" % (name, l["file_bytes"] / 1e6),
                    "%.0f MB/s" % load_bw, "plain read %.0f MB/s" % plain_bw,
                    "%.0f%% of read" % (100 * load_bw / plain_bw), ">= 70%",
                    load_bw / plain_bw >= 0.7))
    lt = roof["load_target"]
    out.append(("load target: bytes read vs needed tensors",
                "%.1f MB read" % (roof["target_bytes_read"] / 1e6),
                "%.1f MB tensors" % (lt["tensor_bytes"] / 1e6),
                "%.2fx" % (roof["target_bytes_read"] / lt["tensor_bytes"]), "1.00x",
                roof["target_bytes_read"] <= lt["tensor_bytes"] * 1.0001))
    for name, key in (("drafter", "drafter_storage_bytes"), ("dataset", "dataset_storage_bytes")):
        rep = roof["load_" + name]["tensor_bytes"]
        held = roof[key]
        out.append(("resident %s: reported vs storage held" % name,
                    "%.1f MB reported" % (rep / 1e6), "%.1f MB held" % (held / 1e6),
                    "%+.1f%%" % (100.0 * (rep - held) / held), "within 5%",
                    abs(rep - held) <= 0.05 * held))
    l = roof["load_dataset"]
    ratio = l["peak_rss_growth"] / l["tensor_bytes"]
    out.append(("peak RSS growth during dataset load",
                "%.1f MB" % (l["peak_rss_growth"] / 1e6),
                "%.1f MB loaded" % (l["tensor_bytes"] / 1e6), "%.2fx" % ratio, "<= 1.3x",
                ratio <= 1.3))
    sl = r["service_loads"]
    total = sum(sl[k]["bytes"] for k in ("target", "dataset", "drafter"))
    out.append(("server VmHWM after loads vs resident bytes",
                "%.1f MB VmHWM" % (sl["server_vmhwm"] / 1e6), "%.1f MB resident" % (total / 1e6),
                "%.2fx" % (sl["server_vmhwm"] / total), "(info)", None))
    return out


def text_table(r):
    t = rows(r)
    head = ("measure", "service", "baseline / reference", "result", "target", "met")
    cells = [head] + [(a, b, c, d, e, "-" if f is None else ("yes" if f else "NO"))
                      for a, b, c, d, e, f in t]
    w = [max(len(row[i]) for row in cells) for i in range(6)]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(row)) for row in cells]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


def md_table(r):
    t = rows(r)
    lines = ["| measure | service | baseline / reference | result | target | met |",
             "|---|---|---|---|---|---|"]
    for a, b, c, d, e, f in t:
        lines.append("| %s | %s | %s | %s | %s | %s |"
                     % (a, b, c, d, e, "-" if f is None else ("yes" if f else "**no**")))
    return "\n".join(lines)


def machine_line(r):
    m = r["machine"]
    return ("%s, %d cores, %d threads (service and baseline), BLAS %s, matmul peak %.1f GFLOP/s "
            "(fp32, measured in roofline_bench), load average at the end %.1f"
            % (m["cpu"], m["cores"], m["threads"], m["blas"], m["matmul_gflops"],
               m["load_avg"][0]))


def markdown(r, notes):
    out = []
    out.append("# Benchmarks\n")
    start = r.get("load_avg_start")
    out.append("Generated by `bench/run.sh --markdown` on %s; load average %s at the start "
               "and %.1f at the end (1-minute). Both sides of each row ran in the same "
               "minutes, so a busy machine slows both.\n"
               % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                  "%.1f" % start[0] if start else "(not recorded)",
                  r["machine"]["load_avg"][0]))
    out.append("Machine: " + machine_line(r) + ".\n")
    out.append("Service: medians of %d runs; baseline (cold `/usr/bin/python3` process per "
               "evaluation, one block per forward): median of %d run(s). Agreement between the "
               "two (blocks, accept length, accuracy[j]) is checked before any time is "
               "reported.\n" % (r["request"]["runs"], r["request"]["baseline_runs"]))
    out.append(md_table(r) + "\n")
    sc = r.get("scaling")
    if sc:
        out.append("## Scaling (service, wall time of the client call / eval compute)\n")
        out.append("| anchor, 8 even blocks: samples | wall s | compute s |\n|---|---|---|")
        out += ["| %d | %.2f | %.2f |" % tuple(x) for x in sc["samples"]]
        out.append("\n| anchor, 64 samples: blocks per sample | wall s | compute s |\n|---|---|---|")
        out += ["| %d | %.2f | %.2f |" % tuple(x) for x in sc["blocks"]]
        out.append("\n| replay, 64 samples: max new tokens (walk length) | wall s | compute s |"
                   "\n|---|---|---|")
        out += ["| %s | %.2f | %.2f |" % ((x[0] or "all",) + tuple(x[1:])) for x in sc["tokens"]]
        out.append("")
    out.append(notes)
    out.append("\n## Raw results\n\n```json\n" + json.dumps(r, indent=1) + "\n```\n")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--markdown", default="")
    args = ap.parse_args()
    with open(args.results) as f:
        r = json.load(f)
    print("Machine: " + machine_line(r))
    print(text_table(r))
    if args.markdown:
        with open(os.path.join(ROOT, "bench", "NOTES.md")) as f:
            notes = f.read()
        with open(args.markdown, "w") as f:
            f.write(markdown(r, notes))
        print("wrote " + args.markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
