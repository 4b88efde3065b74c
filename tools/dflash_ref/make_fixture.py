#!/usr/bin/python3
"""Generates a small, self-consistent DFlash evaluation fixture.

  make_fixture.py OUT --size tiny|small|medium|bench [--seed S] [--dtype fp32|bf16]
                  [--expected all|replay|none] [--threads 1|2] [--demo]

Writes OUT/target, OUT/target-qwen36, OUT/target-tied, OUT/drafter,
OUT/drafter-pt, OUT/dataset, OUT/dataset-4layers, OUT/dataset-split and
OUT/expected/{anchor_all,replay}.json (reference.py zlab-2025 results on
OUT/drafter + OUT/target + OUT/dataset, written exactly as before, without the
"semantics"/"family" keys) and OUT/expected/{logits,logits_tied}.json (a few
blocks' logits with OUT/target and OUT/target-tied, zlab-2025). The response
tokens are the reference drafter's own draft_1 (probability 0.85) or random,
so the metrics are non-trivial.

tiny and small also write the current z-lab spellings and rules:
OUT/drafter-v1new + OUT/dataset-v1new (DFlash 1, draft keys at top level,
embedding scale, output multiplier, softcap, a window shorter than the block),
OUT/drafter2 + OUT/drafter2-dotweight + OUT/dataset2 (DFlash 2), and
OUT/expected/current/, OUT/expected/v1new/, OUT/expected/v1new/2025/,
OUT/expected/dflash2/ ({anchor_all,replay}.json each). medium and bench
write only target, drafter, drafter-pt and dataset, as before.
"""

import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
# The fixture is split by what it holds (issue 27): fixture_configs (sizes,
# configs), fixture_models (weights, target and drafter writers),
# fixture_samples (ids, features, drafter-made responses), fixture_datasets
# (dataset writers), fixture_expected (the reference's results). This file is
# the command line; bench/ imports the names in __all__ from it.
from drafter import Drafter  # noqa: E402
from dflash2 import CODEBOOKS  # noqa: E402
from fixture_configs import (BENCH_SIZES, CHUNK, DFLASH2, LAYERS, MASK_SCALE,  # noqa: E402
                             NUM_TARGET_LAYERS, SIZES, V1NEW, dflash2_config, dflash2_size,
                             drafter_config, layer_types, v1new_config)
from fixture_datasets import write_dataset, write_final_dataset  # noqa: E402
from fixture_expected import write_expected  # noqa: E402
from fixture_models import (make_dflash2_weights, make_drafter_weights,  # noqa: E402
                            make_target_weights, write_drafter, write_drafter_pt, write_targets,
                            write_wrong_head_target)
from fixture_samples import generate_samples, generate_samples_plain  # noqa: E402

__all__ = ["CHUNK", "LAYERS", "NUM_TARGET_LAYERS", "drafter_config", "make_dflash2_weights",
           "write_dataset", "main"]


def write_v1new(out, s, t, seed, sdtype, dtype_name):
    """OUT/drafter-v1new and OUT/dataset-v1new: their own generator, so the
    same files whether or not anything else is written (--demo)."""
    g1 = torch.Generator().manual_seed(seed + V1NEW["seed_offset"])
    w1 = {k: v.to(sdtype) for k, v in make_drafter_weights(s, g1).items()}
    v1dir = os.path.join(out, "drafter-v1new")
    write_drafter(v1dir, v1new_config(s, dtype_name), w1)
    v1 = Drafter(v1dir, t["embed"], t["head"])
    v1.stored_dtype = sdtype
    write_dataset(os.path.join(out, "dataset-v1new"), generate_samples_plain(s, v1, g1),
                  s["H"], {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
    return v1dir


def write_current_variants(out, s, t, seed, size, sdtype, dtype_name, samples, gf):
    """The current z-lab spellings and rules (tiny and small only): a DFlash 1
    drafter in the new config style and a DFlash 2 drafter, each with its own
    weights (own seeds) and its own dataset, and the final-hidden-state
    datasets (generator gf); the main draws are untouched. Returns the
    (drafter dir, dataset dir, expected subdir, [semantics]) to evaluate."""
    H = s["H"]
    v1dir = write_v1new(out, s, t, seed, sdtype, dtype_name)
    write_final_dataset(os.path.join(out, "dataset-final"), samples, H, t, False, gf)
    write_final_dataset(os.path.join(out, "dataset-final-normed"), samples, H, t, True, gf)
    write_wrong_head_target(out, s, t, dtype_name, gf)
    g2 = torch.Generator().manual_seed(seed + DFLASH2["seed_offset"])
    w2 = {k: v.to(sdtype) for k, v in make_dflash2_weights(s, size, g2).items()}
    d2dir = os.path.join(out, "drafter2")
    cfg2 = dflash2_config(s, size, dtype_name)
    write_drafter(d2dir, cfg2, w2)
    write_drafter(os.path.join(out, "drafter2-dotweight"), cfg2,
                  {(k + ".weight" if k in CODEBOOKS else k): v for k, v in w2.items()})
    d2 = Drafter(d2dir, t["embed"], t["head"])
    d2.stored_dtype = sdtype
    samples2 = generate_samples_plain(s, d2, g2)
    write_dataset(os.path.join(out, "dataset2"), samples2, H,
                  {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
    write_final_dataset(os.path.join(out, "dataset2-final"), samples2, H, t, False, gf)
    return [(os.path.join(out, "drafter"), "dataset", "current", ["zlab-current"]),
            (v1dir, "dataset-v1new", "v1new", ["zlab-current", "zlab-2025"]),
            (d2dir, "dataset2", "dflash2", ["zlab-current"])]


def print_summary(args, s, dtype_name, expected, samples, variants, lines, t_gen, total):
    H = s["H"]
    Ls = [int(x[1].shape[0]) for x in samples]
    print("fixture '%s' (%s, %s, seed %d) in %s" % (args.size, dtype_name, expected,
                                                     args.seed, args.out))
    print("  drafter: H=%d, %d/%d heads x %d, I=%d, %d layers %s, W=%d, B=%d, mask %d"
          % (H, s["nh"], s["nkv"], s["d"], s["I"], s["n"], layer_types(s["n"]),
             s["W"], s["B"], s["V"] - 1))
    print("  target: V=%d, H=%d (%s)" % (s["V"], H, "target, target-qwen36, target-tied"
                                          if variants else "target"))
    print("  dataset: %d samples, L %d..%d, layers %s (%s)"
          % (len(samples), min(Ls), max(Ls), LAYERS,
             "dataset, dataset-4layers, dataset-split" if variants else "dataset"))
    if variants:
        k = DFLASH2[dflash2_size(args.size)]
        print("  drafter-v1new: top-level draft keys, W=%d (< B), embedding scale %g, output "
              "multiplier %g, softcap %g; dataset-v1new (zlab-current draft_1)"
              % (s["B"] - V1NEW["window_below_block"], V1NEW["input_embedding_scale"],
                 V1NEW["output_multiplier"], V1NEW["final_logit_softcapping"]))
        print("  drafter2 (+ drafter2-dotweight): DFlash 2, conv K=%d gs=%d (G=%d), selector "
              "rank %d top-%d, all sliding W=%d, is_causal false, embedding scale %g, output "
              "multiplier %g, softcap %g; dataset2 (selector draft_1)"
              % (DFLASH2["conv_kernel_size"], k["gs"], H // k["gs"], k["rank"], k["top_k"],
                 s["W"], DFLASH2["input_embedding_scale"], DFLASH2["output_multiplier"],
                 DFLASH2["final_logit_softcapping"]))
    for line in lines:
        print(line)
    print("  time: generation %.1fs, total %.1fs" % (t_gen, total))


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--size", choices=sorted(SIZES), default="tiny")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    ap.add_argument("--expected", choices=["all", "replay", "none"], default=None,
                    help="which expected results to compute (default: all; none for medium)")
    ap.add_argument("--responses", choices=["drafter", "random"], default="drafter",
                    help="response tokens: the drafter's draft_1 (p=0.85) or all random")
    ap.add_argument("--mask-scale", type=float, default=MASK_SCALE,
                    help="mask embedding scale; larger makes deeper positions agree more")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 or 2; default 1)")
    ap.add_argument("--demo", action="store_true",
                    help="only what scripts/demo.sh reads: target, drafter, drafter-pt, "
                         "drafter-v1new, dataset-v1new (the same files as without it)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    expected = args.expected or ("none" if args.size in BENCH_SIZES else "all")
    t0 = time.time()
    # One thread: these tensors are tiny, and on a busy 2-core machine two
    # OpenMP threads run 10-40x slower than one (same numbers either way).
    torch.set_num_threads(max(1, min(args.threads, 2)))
    s = SIZES[args.size]
    g = torch.Generator().manual_seed(args.seed)
    sdtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    dtype_name = "bfloat16" if args.dtype == "bf16" else "float32"
    out = args.out
    os.makedirs(out, exist_ok=True)

    # Weights, rounded to the stored dtype before anything uses them.
    w = {k: v.to(sdtype) for k, v in make_drafter_weights(s, g).items()}
    t = {k: v.to(sdtype) for k, v in make_target_weights(s, g, args.mask_scale).items()}
    # medium (benchmarks) writes only target, drafter and dataset.
    variants = args.size not in BENCH_SIZES
    write_targets(out, s, t, dtype_name, variants and not args.demo)
    cfg = drafter_config(s, dtype_name)
    ddir = os.path.join(out, "drafter")
    write_drafter(ddir, cfg, w)
    write_drafter_pt(os.path.join(out, "drafter-pt"), cfg, w)

    if args.demo:
        write_v1new(out, s, t, args.seed, sdtype, dtype_name)
        print("fixture '%s' for the demo in %s: target, drafter, drafter-pt, drafter-v1new, "
              "dataset-v1new (%.1fs)" % (args.size, out, time.time() - t0))
        return 0
    drafter = Drafter(ddir, t["embed"], t["head"])
    drafter.stored_dtype = sdtype
    samples = generate_samples(s, drafter, g, responses=args.responses)
    H = s["H"]
    write_dataset(os.path.join(out, "dataset"), samples, H,
                  {"hidden_states": LAYERS}, {"hidden_states": (0, 5)})
    if variants:
        write_dataset(os.path.join(out, "dataset-4layers"), samples, H,
                      {"hidden_states": LAYERS[:4]}, {"hidden_states": (0, 4)})
        write_dataset(os.path.join(out, "dataset-split"), samples, H,
                      {"aux_hidden_state": LAYERS[:4], "hidden_state": LAYERS[4:]},
                      {"aux_hidden_state": (0, 4), "hidden_state": (4, 1)})
        # The final hidden state has its own generator: the draws above are untouched.
        gf = torch.Generator().manual_seed(args.seed + 777)
        extra = write_current_variants(out, s, t, args.seed, dflash2_size(args.size), sdtype,
                                       dtype_name, samples, gf)
    else:
        extra = []  # (drafter dir, dataset dir, expected subdir, [semantics])
    t_gen = time.time() - t0

    lines = write_expected(out, drafter, ddir, t, expected, extra) if expected != "none" else []
    print_summary(args, s, dtype_name, expected, samples, variants, lines, t_gen,
                  time.time() - t0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
