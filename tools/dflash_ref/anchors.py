"""Anchor selection (dflash-semantics.md §5): which positions of a sample
start a block in anchor mode; shared by the evaluation and the sampled
acceptance of decision_metrics.py."""


def eligible_anchors(mask):
    L = mask.shape[0]
    return [a for a in range(L - 1) if mask[a] == 1 and mask[a + 1] == 1]


def select_anchors(mask, strategy, max_blocks):
    """all: every eligible anchor (the first max_blocks when max_blocks > 0);
    even: eligible[floor(k*n/m)], k = 0..m-1, m = min(max_blocks, n)."""
    el = eligible_anchors(mask)
    n = len(el)
    if strategy == "all":
        return el[:max_blocks] if max_blocks > 0 else el
    if strategy == "even":
        m = min(max_blocks, n) if max_blocks > 0 else n
        return [el[(k * n) // m] for k in range(m)]
    raise ValueError("anchor strategy '%s' not supported by the reference" % strategy)
