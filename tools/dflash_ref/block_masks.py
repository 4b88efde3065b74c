"""Which keys a block's rows attend to, per layer, under each named rule set
(zlab-2025: dflash-semantics.md §4; zlab-current: dflash2-semantics.md §3).
Kept apart from the forward so the rules read on their own and selfcheck can
hold them against masks written out by hand."""

import torch


def visible(c, i, a, L, semantics):
    """Layer i's attention mask [L, a+L] (True = visible) for a block of L
    rows at anchor a; keys are the context 0..a-1 then the block a..a+L-1,
    all at absolute positions. c: the DrafterConfig."""
    q = torch.arange(a, a + L, dtype=torch.int64)[:, None]    # query positions
    k = torch.arange(0, a + L, dtype=torch.int64)[None, :]    # key positions
    vis = torch.ones(L, a + L, dtype=torch.bool)
    if semantics == "zlab-2025":
        # Bidirectional in the block; sliding layers hide context keys at
        # distance >= W (the block keys never).
        if c.sliding[i] and c.sliding_window > 0:
            vis &= ~((q - k >= c.sliding_window) & (k < a))
        return vis
    if c.causal[i]:
        vis &= k <= q
    W = c.window[i]
    if W is not None:
        vis &= q - k < W
        if not c.causal[i]:
            vis &= k - q < W
    return vis
