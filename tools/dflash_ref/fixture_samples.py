"""The fixture's samples: random ids, features and coins drawn first, then
the response tokens set to the drafter's own draft_1 (probability P_DRAFT),
so the metrics are non-trivial. The main drafter's responses come from a
batched copy of the zlab-2025 forward (fixture speed; selfcheck compares it),
the other drafters' from the reference forward one block at a time."""

import torch

from fixture_configs import LAYERS, P_DRAFT
from norm_and_rope import rms_norm


def first_logits_batched(dr, ids_a, a, B, kv):
    """draft_1 logits [S, V] of S blocks at the same anchor a (a batched copy
    of reference.Drafter.block for fixture speed; selfcheck compares them).

    ids_a [S]: anchor tokens; kv: per layer (k, v) [S, >=a, nkv, d], RoPE'd.
    """
    c = dr.cfg
    S, nh, nkv, d = ids_a.shape[0], c.num_heads, c.num_kv_heads, c.head_dim
    rep = nh // nkv
    ids = torch.full((S, B), c.mask_token_id, dtype=torch.int64)
    ids[:, 0] = ids_a
    x = dr.embed[ids]                                             # [S, B, H]
    pos_blk = torch.arange(a, a + B, dtype=torch.int64)
    far = (pos_blk[:, None] - torch.arange(a)[None, :]) >= c.sliding_window  # [B, a]
    for i in range(c.num_layers):
        p = "layers.%d." % i
        y = rms_norm(x, dr.w[p + "input_layernorm.weight"], c.eps)
        q = dr.linear(y, p + "self_attn.q_proj").view(S, B, nh, d)
        q = dr.rope(rms_norm(q, dr.w[p + "self_attn.q_norm.weight"], c.eps), pos_blk)
        kb = dr.linear(y, p + "self_attn.k_proj").view(S, B, nkv, d)
        kb = dr.rope(rms_norm(kb, dr.w[p + "self_attn.k_norm.weight"], c.eps), pos_blk)
        vb = dr.linear(y, p + "self_attn.v_proj").view(S, B, nkv, d)
        k = torch.cat((kv[i][0][:, :a], kb), dim=1)               # [S, a+B, nkv, d]
        v = torch.cat((kv[i][1][:, :a], vb), dim=1)
        q = q.view(S, B, nkv, rep, d)                             # head h -> kv h // rep
        scores = torch.einsum("sqgrd,skgd->sgrqk", q, k) * (d ** -0.5)
        if c.sliding[i] and c.sliding_window > 0:
            mask = torch.cat((far, torch.zeros(B, B, dtype=torch.bool)), dim=1)
            scores = scores.masked_fill(mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1)
        attn = torch.einsum("sgrqk,skgd->sqgrd", probs, v).reshape(S, B, nh * d)
        x = x + dr.linear(attn, p + "self_attn.o_proj")
        h = rms_norm(x, dr.w[p + "post_attention_layernorm.weight"], c.eps)
        x = x + dr.linear(torch.nn.functional.silu(dr.linear(h, p + "mlp.gate_proj")) *
                          dr.linear(h, p + "mlp.up_proj"), p + "mlp.down_proj")
    out = rms_norm(x, dr.w["norm.weight"], c.eps)[:, 1]      # [S, H]
    return out @ dr.lm_head.t()


def draw_samples(s, g, stored_dtype):
    """Per sample: [index, ids, P, features, coins]: length L, first response
    position P, features N(0, 1), random ids (never the mask id V-1) and the
    coins (True: the response token at that position takes draft_1)."""
    V, KH = s["V"], len(LAYERS) * s["H"]
    samples = []
    for i in range(s["samples"]):
        L = int(torch.randint(s["L"][0], s["L"][1] + 1, (1,), generator=g))
        p0, p1 = s.get("prompt", (0.2, 0.1))
        P = max(2, int(round(L * (p0 + p1 * float(torch.rand(1, generator=g))))))
        feats = torch.randn(L, KH, generator=g).to(stored_dtype)
        ids = torch.randint(0, V - 1, (L,), generator=g)  # never the mask id
        coins = torch.rand(L, generator=g) < P_DRAFT      # True: take draft_1
        samples.append([i, ids, P, feats, coins])
    return samples


def with_masks(samples):
    out = []
    for i, ids, P, feats, _ in samples:
        mask = torch.zeros(ids.shape[0], dtype=torch.int64)
        mask[P:] = 1
        out.append((i, ids, mask, feats))
    return out


def generate_samples_plain(s, drafter, g, semantics="zlab-current"):
    """Like generate_samples, one block at a time with reference.py's own
    forward (cached context K/V): t[p] = draft_1 of the block at anchor p-1
    (block length min(B, L - (p-1)) under zlab-current) with probability
    0.85; for a DFlash 2 drafter draft_1 is the selector's first choice."""
    B = drafter.cfg.block_size
    mask_id = drafter.cfg.mask_token_id
    samples = draw_samples(s, g, drafter.stored_dtype)
    for x in samples:
        _, ids, P, feats, coins = x
        L = ids.shape[0]
        kv = drafter.sequence_kv(feats.to(drafter.dtype))
        for p in range(P + 1, L):
            a = p - 1
            Lb = B if semantics == "zlab-2025" else min(B, L - a)
            h = drafter.hidden(None, ids[a], a, Lb, ctx_kv=[(k[:a], v[:a]) for k, v in kv],
                               semantics=semantics)[1:2]
            d1 = drafter.propose(h, drafter.logits(h), ids[a])["drafts"][0]
            if bool(coins[p]) and d1 != mask_id:
                ids[p] = d1
    return with_masks(samples)


def generate_samples(s, drafter, g, batch=16, responses="drafter"):
    """Token ids, loss masks and features; response tokens follow the drafter.

    All random draws come first (per sample), then the response tokens are
    filled position by position, sequences of similar length in lockstep.
    """
    V, B = s["V"], s["B"]
    samples = draw_samples(s, g, drafter.stored_dtype)
    order = sorted(range(len(samples)), key=lambda j: samples[j][1].shape[0])
    if responses == "random":  # seconds instead of minutes; accept length ~1
        order = []
    for c0 in range(0, len(order), batch):
        group = [samples[j] for j in order[c0:c0 + batch]]
        Lmax = max(x[1].shape[0] for x in group)
        kv = None
        for x in group:  # per-layer context K/V, padded to Lmax
            one = drafter.sequence_kv(x[3])
            if kv is None:
                kv = [[torch.zeros((len(group), Lmax) + t.shape[1:]) for t in pair]
                      for pair in one]
            row = group.index(x)
            for layer, (k, v) in enumerate(one):
                kv[layer][0][row, :k.shape[0]] = k
                kv[layer][1][row, :v.shape[0]] = v
        ids = torch.zeros(len(group), Lmax, dtype=torch.int64)
        for row, x in enumerate(group):
            ids[row, :x[1].shape[0]] = x[1]
        for p in range(min(x[2] for x in group) + 1, Lmax):
            act = [row for row, x in enumerate(group) if x[2] + 1 <= p < x[1].shape[0]]
            drafts = first_logits_batched(drafter, ids[:, p - 1], p - 1, B, kv).argmax(-1)
            for row in act:
                x = group[row]
                if bool(x[4][p]) and int(drafts[row]) != V - 1:
                    ids[row, p] = drafts[row]
        for row, x in enumerate(group):
            x[1] = ids[row, :x[1].shape[0]].clone()
    return with_masks(samples)

