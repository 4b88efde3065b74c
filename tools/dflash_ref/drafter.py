"""The drafter forward (dflash-semantics.md §4): one block of L rows at an
anchor, no batching, the context's K/V concatenated before the block's;
then the unary logits and the drafts (argmax, or DFlash 2's selector walk)."""

import json
import os

import torch

from block_masks import visible
from dflash2 import DFlash2Parts
from drafter_config import DEFAULT_SEMANTICS, DrafterConfig, check_semantics
from model_files import load_drafter_weights
from norm_and_rope import rms_norm, rope_inv_freq, rotate_half


class Drafter(DFlash2Parts):
    def __init__(self, path, embed, lm_head, compute_dtype=torch.float32):
        with open(os.path.join(path if os.path.isdir(path) else os.path.dirname(path),
                               "config.json")) as f:
            self.cfg = DrafterConfig(json.load(f))
        self.dtype = compute_dtype
        w = load_drafter_weights(path)
        # speculators' own vocabulary: lm_head [V_draft, H] with d2t (int64,
        # target id = draft index + d2t[index]); t2d is d2t's inverse.
        self.d2t = w.pop("d2t", None)
        w.pop("t2d", None)
        own_head = w.pop("lm_head.weight", None) if self.d2t is not None else None
        self.w = {k: v.to(compute_dtype) for k, v in w.items()}
        self.embed = embed.to(compute_dtype)
        self.lm_head = (lm_head if own_head is None else own_head).to(compute_dtype)
        self.inv_freq, self.rope_scale = rope_inv_freq(self.cfg.rope, self.cfg.head_dim)
        self.family = self.cfg.family
        # Switches for ablations (selfcheck): False = drafts are argmax(logits).
        self.use_selector = self.family == "dflash2"
        if self.family == "dflash2":
            self.check_dflash2_tensors()

    def rope(self, x, pos):
        """x [T, heads, d], pos [T] int64."""
        angles = pos.float()[:, None] * self.inv_freq[None, :]    # fp32, as HF
        emb = torch.cat((angles, angles), dim=-1).to(self.dtype)  # [T, d]
        cos = (emb.cos() * self.rope_scale)[:, None, :]
        sin = (emb.sin() * self.rope_scale)[:, None, :]
        return x * cos + rotate_half(x) * sin

    def linear(self, x, name):
        y = x @ self.w[name + ".weight"].t()
        b = self.w.get(name + ".bias")
        return y if b is None else y + b

    def context(self, feats):
        """ctx = RMSNorm_hidden_norm(c @ fc^T): [a, H]."""
        ctx = feats.to(self.dtype) @ self.w["fc.weight"].t()
        return rms_norm(ctx, self.w["hidden_norm.weight"], self.cfg.eps)

    def context_kv(self, i, ctx, pos):
        """Layer i's K/V for the context rows (RoPE applied): [a, nkv, d] x 2."""
        c = self.cfg
        p = "layers.%d.self_attn." % i
        k = self.linear(ctx, p + "k_proj").view(-1, c.num_kv_heads, c.head_dim)
        v = self.linear(ctx, p + "v_proj").view(-1, c.num_kv_heads, c.head_dim)
        k = rms_norm(k, self.w[p + "k_norm.weight"], c.eps)
        return self.rope(k, pos), v

    def visible(self, i, a, L, semantics):
        """Layer i's attention mask [L, a+L] (block_masks.visible)."""
        return visible(self.cfg, i, a, L, semantics)

    def hidden(self, feats, tokens_a, a, L, ctx_kv=None, semantics=DEFAULT_SEMANTICS):
        """Final-normed hidden states [L, H] of one block of L rows at anchor a.

        feats: c[0..a-1] [a, K*H_t]; tokens_a: t[a]. ctx_kv: optional
        precomputed per-layer context K/V (already sliced to a rows).
        """
        c = self.cfg
        check_semantics(semantics, self.family)
        nh, nkv, d = c.num_heads, c.num_kv_heads, c.head_dim
        conv = self.family == "dflash2"
        ids = torch.full((L,), c.mask_token_id, dtype=torch.int64)
        ids[0] = int(tokens_a)
        x = self.embed[ids] * c.input_embedding_scale             # [L, H]
        pos_blk = torch.arange(a, a + L, dtype=torch.int64)
        pos_ctx = torch.arange(0, a, dtype=torch.int64)
        ctx = self.context(feats) if ctx_kv is None else None     # [a, H]
        for i in range(c.num_layers):
            p = "layers.%d." % i
            y = rms_norm(x, self.w[p + "input_layernorm.weight"], c.eps)
            if conv:
                y, dyn_attn = self.conv_prepare(i, "attention_conv", y)
            q = self.linear(y, p + "self_attn.q_proj").view(L, nh, d)
            q = rms_norm(q, self.w[p + "self_attn.q_norm.weight"], c.eps)
            q = self.rope(q, pos_blk)
            kb = self.linear(y, p + "self_attn.k_proj").view(L, nkv, d)
            kb = rms_norm(kb, self.w[p + "self_attn.k_norm.weight"], c.eps)
            kb = self.rope(kb, pos_blk)
            vb = self.linear(y, p + "self_attn.v_proj").view(L, nkv, d)
            if ctx_kv is None:
                kc, vc = self.context_kv(i, ctx, pos_ctx)
            else:
                kc, vc = ctx_kv[i]
            k = torch.cat((kc, kb), dim=0)                        # [a+L, nkv, d]
            v = torch.cat((vc, vb), dim=0)
            rep = nh // nkv                                       # GQA
            k = k.repeat_interleave(rep, dim=1)                   # [a+L, nh, d]
            v = v.repeat_interleave(rep, dim=1)
            scores = torch.einsum("qhd,khd->hqk", q, k) * (d ** -0.5)  # [nh, L, a+L]
            vis = self.visible(i, a, L, semantics)
            if not bool(vis.all()):
                scores = scores.masked_fill(~vis[None], float("-inf"))
            probs = torch.softmax(scores.to(torch.promote_types(self.dtype, torch.float32)),
                                  dim=-1).to(self.dtype)
            attn = torch.einsum("hqk,khd->qhd", probs, v).reshape(L, nh * d)
            o = self.linear(attn, p + "self_attn.o_proj")
            if conv:
                o = self.conv_finish(i, "attention_conv", o, dyn_attn)
            x = x + o
            h = rms_norm(x, self.w[p + "post_attention_layernorm.weight"], c.eps)
            if conv:
                h, dyn_mlp = self.conv_prepare(i, "mlp_conv", h)
            gate = self.linear(h, p + "mlp.gate_proj")
            up = self.linear(h, p + "mlp.up_proj")
            f = self.linear(torch.nn.functional.silu(gate) * up, p + "mlp.down_proj")
            if conv:
                f = self.conv_finish(i, "mlp_conv", f, dyn_mlp)
            x = x + f
        return rms_norm(x, self.w["norm.weight"], c.eps)

    def logits(self, h):
        """Unary logits of final-normed rows h [r, H]: lm_head, * output_multiplier,
        then c * tanh(logits / c) when final_logit_softcapping c > 0."""
        c = self.cfg
        logits = (h @ self.lm_head.t()) * c.output_multiplier
        if c.softcap is not None:
            logits = torch.tanh(logits / c.softcap) * c.softcap
        return logits

    def block(self, feats, tokens_a, a, L, rows=None, ctx_kv=None, semantics=DEFAULT_SEMANTICS):
        """Unary logits [rows, V] of the block of L rows at anchor a (rows default L-1)."""
        out = self.hidden(feats, tokens_a, a, L, ctx_kv, semantics)
        r = L - 1 if rows is None else rows
        return self.logits(out[1:1 + r])                          # [r, V]

    def propose(self, h, logits, token_a, labels=None):
        """The drafts of one block's slots j = 1..R, from final-normed rows h
        [R, H] (slots 1..R) and their unary logits [R, V].

        dflash: argmax(logits[j]). dflash2 (use_selector): the greedy walk
        p_1 = t_a, draft_j = argmax_{b in cand_j} S_j(p_j, b), p_{j+1} = draft_j.
        Returns {"drafts", "unary"} and for dflash2 also "candidates" (lists),
        "near_ties" (slots with top-1 - top-2 score < 1e-4, k >= 2) and, when
        labels [R] are given, "tf_correct" (gold predecessor: t[a+j-1]).
        """
        R = logits.shape[0]
        unary = [int(x) for x in logits.argmax(dim=-1).tolist()] if R else []
        if self.d2t is not None:
            if self.family == "dflash2":
                raise ValueError("a reduced draft vocabulary with DFlash 2 is not defined")
            unary = [i + int(self.d2t[i]) for i in unary]  # draft index -> target id
        out = {"drafts": list(unary), "unary": unary}
        if self.family != "dflash2":
            return out
        eta_all = h @ self.w["candidate_selector.hidden_projection.weight"].t()  # [R, r]
        cands, drafts, tf, near = [], [], [], 0
        pred = int(token_a)
        for j in range(R):
            cand, U = self.candidates(logits[j])
            cands.append([int(x) for x in cand.tolist()])
            scores = self.selector_scores(eta_all[j], cand, U, pred)
            if len(cands[-1]) >= 2:
                top = torch.sort(scores, descending=True).values
                if float(top[0] - top[1]) < 1e-4:
                    near += 1
            draft = self.choose(cand, scores)
            drafts.append(draft)
            if labels is not None:
                gold_pred = int(token_a) if j == 0 else int(labels[j - 1])
                tf_scores = self.selector_scores(eta_all[j], cand, U, gold_pred)
                tf.append(self.choose(cand, tf_scores) == int(labels[j]))
            pred = draft
        if self.use_selector:
            out["drafts"] = drafts
        out.update({"candidates": cands, "near_ties": near})
        if labels is not None:
            out["tf_correct"] = tf
        return out

    def sequence_kv(self, feats):
        """Per-layer context K/V for a whole sequence (slice [:a] for anchor a)."""
        ctx = self.context(feats)
        pos = torch.arange(ctx.shape[0], dtype=torch.int64)
        return [self.context_kv(i, ctx, pos) for i in range(self.cfg.num_layers)]
