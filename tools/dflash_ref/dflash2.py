"""DFlash 2's parts of the drafter (dflash2-semantics.md §3): the tensor
check, the grouped dynamic causal convs around attention and MLP, and the
candidate selector's top-k, scores and tie rule. A mixin of Drafter (it reads
self.cfg and self.w), kept apart so DFlash 1's forward reads on its own."""

import torch

CODEBOOKS = ("candidate_selector.predecessor_codebook", "candidate_selector.successor_codebook")


class DFlash2Parts:
    def check_dflash2_tensors(self):
        """Codebooks with or without '.weight'; every DFlash 2 tensor present, right shape."""
        c = self.cfg
        for name in CODEBOOKS:
            dotted = name + ".weight"
            if dotted in self.w:
                if name in self.w and not torch.equal(self.w[name], self.w[dotted]):
                    raise ValueError("both '%s' and '%s' present and different" % (name, dotted))
                self.w[name] = self.w.pop(dotted)
        H, K, G = c.hidden_size, c.conv_kernel_size, c.hidden_size // c.conv_group_size
        V = self.lm_head.shape[0]
        want = {"candidate_selector.hidden_projection.weight": [c.selector_rank, H],
                CODEBOOKS[0]: [V, c.selector_rank], CODEBOOKS[1]: [V, c.selector_rank]}
        for i in range(c.num_layers):
            for m in ("attention_conv", "mlp_conv"):
                p = "layers.%d.%s." % (i, m)
                want[p + "base_kernel"] = [2, K, H]
                want[p + "kernel_projection.weight"] = [2 * K * G, H]
        missing = [n for n in want if n not in self.w]
        if missing:
            raise KeyError("DFlash 2 drafter lacks %s" % ", ".join(missing))
        for n, shape in want.items():
            if list(self.w[n].shape) != shape:
                raise ValueError("%s has shape %s; expected %s" % (n, list(self.w[n].shape), shape))
        if c.vocab_size is not None and int(c.vocab_size) != V:
            raise ValueError("config vocab_size %s != target vocabulary %d" % (c.vocab_size, V))
        if c.selector_top_k > V:
            raise ValueError("selector_top_k %d > vocabulary %d" % (c.selector_top_k, V))

    # The grouped dynamic causal conv.
    def grouped_conv(self, y, dyn, base):
        """y [L, H]; dyn [L, K, G] dynamic coefficients; base [K, H].

        out[t, ch] = sum_tap (base[tap, ch] + dyn[t, tap, ch // gs]) * y[t - tap, ch],
        y[t - tap] = 0 before the block's first row. Per tap as z-lab: out +=
        base * y_shift, then out = addcmul(out, dyn, y_shift)."""
        L = y.shape[0]
        gs = self.cfg.conv_group_size
        out = torch.zeros_like(y)
        for tap in range(base.shape[0]):
            shifted = torch.zeros_like(y)
            if tap < L:
                shifted[tap:] = y[:L - tap]
            out = out + base[tap][None, :] * shifted
            d = dyn[:, tap, :].repeat_interleave(gs, dim=1)       # [L, H]: channel -> its group
            out = torch.addcmul(out, d, shifted)
        return out

    def conv_prepare(self, i, module, h):
        """(conv_0(h), D[:, 1]); D = (h @ kernel_projection^T) viewed [L, 2, K, G]."""
        c = self.cfg
        p = "layers.%d.%s." % (i, module)
        G = c.hidden_size // c.conv_group_size
        D = (h @ self.w[p + "kernel_projection.weight"].t()).view(
            h.shape[0], 2, c.conv_kernel_size, G)
        return self.grouped_conv(h, D[:, 0], self.w[p + "base_kernel"][0]), D[:, 1]

    def conv_finish(self, i, module, y, D1):
        return self.grouped_conv(y, D1, self.w["layers.%d.%s.base_kernel" % (i, module)][1])

    # The candidate selector.
    def candidates(self, logits_row):
        """Top-k of one logits row: (ids [k], values [k]), larger first; equal
        logits in token-id order (a stable sort)."""
        vals, ids = torch.sort(logits_row, descending=True, stable=True)
        k = self.cfg.selector_top_k
        return ids[:k], vals[:k]

    def selector_scores(self, eta, cand, unary, pred):
        """S(pred, b) = U(b) + sum_r A[pred, r] * eta[r] * Bc[b, r] for b in cand: [k]."""
        A = self.w[CODEBOOKS[0]]
        Bc = self.w[CODEBOOKS[1]]
        return unary + (A[int(pred)] * eta) @ Bc[cand].t()

    @staticmethod
    def choose(cand, scores):
        """argmax over the candidates; exact ties go to the lower token id."""
        best = None
        for b, s in zip(cand.tolist(), scores.tolist()):
            if best is None or s > best[1] or (s == best[1] and b < best[0]):
                best = (b, s)
        return best[0]
