#!/usr/bin/python3
"""Self-check of reference.py and make_fixture.py on a tiny fixture.

  selfcheck.py [--keep DIR]

Checks: (a) zlab-2025 replay adds up to L - P per sample; (b) anchor metrics
are internally consistent; (c) dataset-split, drafter-pt and target-qwen36
give the same metrics as dataset / drafter / target; (d) the cached-context
path equals the plain one; (e) the 4-layer dataset is refused; (f) the stored
expected files match a fresh evaluation; plus replay limits and 'even' anchors.
Semantics and DFlash 2: (g) zlab-2025 on the old drafter reproduces the old
numbers; (h) zlab-current replay adds up to L' - P - 1; (i) the masks of the
current rules; (j) each DFlash 2 feature (convs, selector, softcap,
multiplier, embedding scale) changes drafts, the '.weight' codebook copy is
the same drafter, DFlash 2 counts are consistent (first-miss shares add up
to blocks); (k) DFlash 1 in the new spelling (v1new).
"""

import argparse
import os
import subprocess
import sys
import tempfile

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# The checks are split by what they check (issue 27): selfcheck_common (the
# record, per-result consistency), selfcheck_basics (a)-(f),
# selfcheck_current (g)-(i), selfcheck_dflash2 (j)-(k), selfcheck_decision (l).
import reference as ref  # noqa: E402
import selfcheck_common  # noqa: E402
from selfcheck_basics import zlab2025_checks  # noqa: E402
from selfcheck_common import check  # noqa: E402
from selfcheck_current import current_checks  # noqa: E402
from selfcheck_decision import decision_checks  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keep", help="generate into this directory and keep it")
    args = ap.parse_args()
    torch.set_num_threads(1)  # tiny tensors: one thread is the fastest (see make_fixture.py)
    tmp = None
    if args.keep:
        out = args.keep
    else:
        tmp = tempfile.TemporaryDirectory(prefix="dflash_selfcheck_")
        out = tmp.name
    subprocess.run([sys.executable, os.path.join(HERE, "make_fixture.py"), out,
                    "--size", "tiny"], check=True)

    embed, head, tied = ref.load_target(os.path.join(out, "target"))
    check(not tied, "target: not tied")
    drafter = ref.Drafter(os.path.join(out, "drafter"), embed, head)
    ids = drafter.cfg.target_layer_ids
    samples = ref.load_dataset(os.path.join(out, "dataset"), ids)
    check([s.index for s in samples] == list(range(len(samples))), "samples in file-index order")

    zlab2025_checks(out, embed, head, drafter, samples)
    current_checks(out, embed, head, drafter, samples)
    decision_checks(out, head, drafter, samples)
    fails = selfcheck_common.FAILS
    print("%d failed" % len(fails) if fails else "all checks passed")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
