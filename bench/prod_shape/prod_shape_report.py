"""The markdown section prod_shape.py prints for BENCHMARKS.md: the table of
measures against their targets and how they were measured."""


def mb(n):
    return "%.1f MB" % (n / 1e6) if n < 1e9 else "%.3f GB" % (n / 1e9)


def page_cache_text(r):
    """How warm the page cache was for the plain reads and the load."""
    pc = r["page_cache_before_read"]
    return ("cold (posix_fadvise DONTNEED before each read and before the load)"
            if r["plain_read"]["cold"] else
            "warm: both the plain read and the load found the file in the page cache"
            " (%s of its pages resident before the first read, %s before the load; the "
            "table uses the second of two plain reads)"
            % ("?" if pc is None else "%.0f%%" % (100 * pc),
               "?" if r["page_cache_before_load"] is None
               else "%.0f%%" % (100 * r["page_cache_before_load"])))


def result_rows(r):
    """The table's rows: measure, value, target, met."""
    dl, ev = r["drafter_load"], r["eval"]
    read_s = r["plain_read"]["seconds"][-1]
    load_s = dl["server_seconds"]
    frac = read_s / load_s if load_s > 0 else 0
    fr = r["fresh_read"]
    fresh_bw = fr["bytes"] / fr["seconds"] if fr["seconds"] > 0 else 0
    rep_b, ten_b = dl["reported_bytes"], r["drafter_tensor_bytes"]
    dev = (rep_b - ten_b) / ten_b if ten_b else 0
    ratio = r["peak_growth"] / r["resident_growth"] if r["resident_growth"] > 0 else float("inf")
    yes = lambda ok: "yes" if ok else "**no**"  # noqa: E731
    finite = ev["blocks"] == 1 and ev["accept_length"] >= 1
    return [
        ("validate (`dflash-eval validate`, %d tensors)" % r["validate"]["found"],
         "ok, %.2f s" % r["validate"]["seconds"], "ok", yes(r["validate"]["ok"])),
        ("drafter load, bf16 (server's load_seconds; client call %.2f s)" % dl["client_seconds"],
         "%.2f s (%.0f MB/s)" % (load_s, ten_b / load_s / 1e6 if load_s else 0),
         "about a plain read", "-"),
        ("plain read of model.safetensors (%s, 8 MiB buffer)" % mb(r["drafter_file_bytes"]),
         "%.2f s (%.0f MB/s)" % (read_s, r["drafter_file_bytes"] / read_s / 1e6),
         "", ""),
        ("load throughput / plain-read throughput", "%.0f %%" % (100 * frac), ">= 70 %",
         yes(frac >= 0.7)),
        ("read into fresh memory (%s of the file into one new anonymous mapping)"
         % mb(r["fresh_read"]["bytes"]),
         "%.0f MB/s: the load runs at %.0f %% of it"
         % (fresh_bw / 1e6, 100 * (ten_b / load_s) / fresh_bw if load_s and fresh_bw else 0),
         "(info: the floor of a load that owns its memory)", "-"),
        ("resident drafter: reported vs tensor bytes of the file",
         "%s vs %s (%+.1f %%)" % (mb(rep_b), mb(ten_b), 100 * dev), "within 5 %",
         yes(abs(dev) <= 0.05)),
        ("server RSS that stays after the load (VmRSS after - before)",
         mb(r["resident_growth"]), "(info: vs %s reported)" % mb(rep_b), "-"),
        ("peak RSS growth during the load (VmHWM, reset before it, - VmRSS before)",
         "%s (%.2fx of what stays)" % (mb(r["peak_growth"]), ratio), "<= 1.25x",
         yes(ratio <= 1.25)),
        ("one anchor block (anchor, even, 1 sample, 1 block)",
         "%.2f s wall (compute %.2f s): %d block, accept length %.3f (unary %.3f)"
         % (ev["client_seconds"], ev["compute_seconds"], ev["blocks"], ev["accept_length"],
            ev["unary_accept_length"]), "evaluates", yes(finite)),
    ]


def how_measured(r):
    """The paragraph under the table: machine, page cache, RSS readings."""
    m, ev = r["machine"], r["eval"]
    cache = page_cache_text(r)
    b, a = r["rss_before_drafter"], r["rss_after_drafter"]
    return ("How it was measured: dflash-evald `--device cpu --threads %d` on %s, %d cores, "
            "%.1f GiB RAM (%.1f GiB available at the start), kernel %s; load average %s at "
            "the start, %s at the end. Page cache: %s. RSS from /proc/PID/status: before the "
            "drafter load VmRSS %s (RssAnon %s, RssFile %s), after VmRSS %s (RssAnon %s, "
            "RssFile %s); VmHWM %s via /proc/PID/clear_refs right before the load, peak "
            "also sampled every 10 ms (%d samples, max %s: RssAnon %s, RssFile %s). The "
            "eval's own peak RSS growth: %s."
            % (r["threads"], m["cpu"] or "?", m["cores"], m["mem_total"] / 2 ** 30,
               r["mem_start"]["MemAvailable"] / 2 ** 30, m["kernel"],
               "/".join("%.1f" % x for x in r["load_avg_start"]),
               "/".join("%.1f" % x for x in r["load_avg_end"]), cache,
               mb(b["VmRSS"]), mb(b.get("RssAnon", 0)), mb(b.get("RssFile", 0)),
               mb(a["VmRSS"]), mb(a.get("RssAnon", 0)), mb(a.get("RssFile", 0)),
               "reset to VmRSS" if r["hwm_reset"] else "not reset (clear_refs refused)",
               r["sampler_samples"], mb(r["sampled_peak_rss"]),
               mb(r["sampled_at_peak"].get("RssAnon", 0)),
               mb(r["sampled_at_peak"].get("RssFile", 0)), mb(ev["peak_growth"])))


def markdown(r):
    s = r["shapes"]
    ten_b = r["drafter_tensor_bytes"]
    out = []
    out.append("### Production shape (%s scale)" % r["scale"])
    out.append("")
    out.append("`bench/prod_shape/run.sh%s` (random bf16 weights, `bench/prod_shape/"
               "make_prod_shape.py`): a DFlash 2 drafter H %d, I %d, %d/%d heads x %d, %d "
               "layers sliding W %d, is_causal false, B %d, conv K %d gs %d, selector r %d "
               "top-%d, V %d, target layers %s (%s of bf16 tensors); a bf16 target "
               "(embed_tokens + lm_head, %d x %d) and the dataset (2 samples x 64 tokens) "
               "resident beside it."
               % ("" if r["scale"] == "full" else " --scale " + r["scale"], s["H"], s["I"],
                  s["nh"], s["nkv"], s["d"], s["n"], s["W"], s["B"], s["K"], s["gs"], s["r"],
                  s["k"], s["V"], s["layers"], mb(ten_b), s["V"], s["H"]))
    out.append("")
    out.append("| measure | value | target | met |")
    out.append("|---|---|---|---|")
    for row in result_rows(r):
        out.append("| %s |" % " | ".join(row))
    out.append("")
    out.append(how_measured(r))
    return "\n".join(out)
