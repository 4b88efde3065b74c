// DrafterModel::ForwardBlocks: many draft blocks in one pass
// (dflash-semantics §4, dflash2-semantics §3). Every block attends to the
// context keys of its sequence before its anchor plus its own slots, under
// its layer's AttentionRule (causal or not inside the block, a window).
//
// Context keys/values are shared: blocks reading the same sequence are folded
// into the row dimension of one matmul against that sequence's K/V, so the
// context is never copied per block. When every block reads a different
// sequence (replay mode), each block attends to its own sequence's keys in
// place, exactly the keys it can see: no gather, no padding to the longest
// context and no context mask but the window's.
//
// Windows mask key k for a query at position p when p - k >= W (and, for a
// two-sided window, k - p >= W), applied per query to context and block keys
// alike. A windowed layer reads only the context keys some query of the block
// can see, (a - W, a) for a block at anchor a, so its attention scales with W
// rather than with the context. A block shorter than B (lengths) hides its missing slots from its
// real queries; the missing slots' own rows are computed and discarded (they
// still see themselves, so nothing is NaN), and DFlash 2's taps only reach
// back, so they never feed a real row.
//
// The blocks read to the host, their groups and masks: block_groups.h; this
// file holds the attention over them and the decoder layers.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <tuple>
#include <vector>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/shape_text.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "model/block_groups.h"
#include "model/drafter_model.h"
#include "model/rope.h"
#include "model/tensor_ops.h"

namespace dflash::model {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// [G, nbpg, ...rest] <-> [G, nkv, nbpg * rows, last]: blocks of one group
// folded into the row dimension of each kv head.
at::Tensor FoldRows(const at::Tensor& t, int64_t G) {  // t: [ng, nkv, R, X]
  const int64_t ng = t.size(0), nkv = t.size(1), R = t.size(2), X = t.size(3);
  return t.view({G, ng / G, nkv, R, X}).permute({0, 2, 1, 3, 4}).reshape({G, nkv, (ng / G) * R, X});
}
at::Tensor UnfoldRows(const at::Tensor& t, int64_t ng, int64_t R) {  // [G, nkv, nbpg*R, X]
  const int64_t G = t.size(0), nkv = t.size(1), X = t.size(3);
  return t.view({G, nkv, ng / G, R, X}).permute({0, 2, 1, 3, 4}).reshape({ng, nkv, R, X});
}

// Rows of a per-block mask for one group (a shared mask passes through).
at::Tensor ForGroup(const at::Tensor& mask, const at::Tensor& idx) {
  if (!mask.defined() || mask.size(0) == 1 || !idx.defined()) return mask;
  return mask.index_select(0, idx);
}

// Scores, masks, fp32 softmax and weighted sum for the blocks of one
// sequence. q: [ng, nkv, g*B, d]; kb, vb: [ng, nkv, B, d]; kc, vc: the
// sequence's keys [1, nkv, lc, d]. Returns [ng, nkv, g*B, d].
at::Tensor Attend(const at::Tensor& q, const at::Tensor& kb, const at::Tensor& vb,
                  const at::Tensor& kc, const at::Tensor& vc, const at::Tensor& ctx_mask,
                  const at::Tensor& blk_mask, int64_t g, double scale) {
  const int64_t ng = q.size(0), nkv = q.size(1), R = q.size(2), d = q.size(3);
  const int64_t B = kb.size(2);
  const int64_t lc = kc.defined() ? kc.size(2) : 0;
  // As HF eager: matmul in the model dtype, scaled, masked, fp32 softmax.
  at::Tensor sb = (at::matmul(q, kb.transpose(-1, -2)) * scale).to(at::kFloat);
  if (blk_mask.defined()) {
    sb = sb.view({ng, nkv, g, B, B}).masked_fill(blk_mask, kNegInf).view({ng, nkv, R, B});
  }
  at::Tensor scores = sb;
  if (lc > 0) {
    const int64_t G = kc.size(0);
    at::Tensor sc = at::matmul(FoldRows(q, G), kc.transpose(-1, -2)) * scale;
    sc = UnfoldRows(sc, ng, R).to(at::kFloat);
    sc = sc.view({ng, nkv, g, B, lc}).masked_fill(ctx_mask, kNegInf).view({ng, nkv, R, lc});
    scores = at::cat({sc, sb}, -1);
  }
  at::Tensor p = at::softmax(scores, -1).to(q.scalar_type());
  at::Tensor ob = at::matmul(p.narrow(-1, lc, B), vb);
  if (lc == 0) return ob;
  const int64_t G = kc.size(0);
  at::Tensor oc = at::matmul(FoldRows(p.narrow(-1, 0, lc), G), vc);
  oc = UnfoldRows(oc, ng, R);
  (void)d;
  return (oc.to(at::kFloat) + ob.to(at::kFloat)).to(q.scalar_type());
}

// A layer's weights, indexed by LayerTensor (DrafterModel::Layer).
using LayerWeights = std::array<at::Tensor, kNumLayerTensors>;

// Shape, dtype and placement of the block inputs, the per-block index
// tensors (lengths may be undefined) and the context cache's layer count.
absl::Status CheckBlockInputs(const config::DrafterConfig& c, const at::Tensor& fc,
                              const at::Tensor& x0, const at::Tensor& anchors,
                              const at::Tensor& seq, const at::Tensor& lengths,
                              const ContextCache& context) {
  const c10::ScalarType dtype = fc.scalar_type();
  // Blocks may be shorter than the drafter's block_size (a B=16 drafter
  // scored at B=8 runs 8-slot blocks), never longer.
  const int64_t H = c.hidden_size;
  const int64_t B = x0.defined() && x0.dim() == 3 ? x0.size(1) : 0;
  if (!x0.defined() || x0.dim() != 3 || B < 1 || B > c.block_size || x0.size(2) != H) {
    return absl::InvalidArgumentError(
        absl::StrCat("block inputs x0 have shape ",
                     x0.defined() ? ShapeText(x0.sizes()) : "(undefined)", "; expected [nb, B, ", H,
                     "] with 1 <= B <= block_size ", c.block_size, " (hidden ", H, ")"));
  }
  if (x0.scalar_type() != dtype || x0.device() != fc.device()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "block inputs x0 are ", c10::toString(x0.scalar_type()), " on ", x0.device().str(),
        "; expected ", c10::toString(dtype), " on ", fc.device().str()));
  }
  const int64_t nb = x0.size(0);
  for (const auto& [t, name] : {std::pair<const at::Tensor*, const char*>{&anchors, "anchors"},
                                {&seq, "seq"},
                                {&lengths, "lengths"}}) {
    if (t == &lengths && !t->defined()) continue;
    if (!t->defined() || t->dim() != 1 || t->size(0) != nb ||
        !at::isIntegralType(t->scalar_type(), /*includeBool=*/false)) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, " must be an integer tensor of shape [", nb, "] (one per block)"));
    }
  }
  if (static_cast<int64_t>(context.k.size()) != c.num_hidden_layers ||
      context.v.size() != context.k.size()) {
    return absl::InvalidArgumentError(absl::StrCat("context cache holds ", context.k.size(),
                                                   " layers; the drafter has ",
                                                   c.num_hidden_layers));
  }
  return absl::OkStatus();
}

// Block b's attention when it reads its own sequence s at anchor a: its
// queries q [nkv, g*B, d] against the context keys it can see, [lo, a) of
// ck/cv [S, nkv, L, d] read in place, and its own slots' scores sb
// [nkv, g*B, B] (scaled, fp32, in-block mask applied) and values vb.
at::Tensor AttendOwnSequence(const at::Tensor& q, const at::Tensor& sb, const at::Tensor& vb,
                             const at::Tensor& ck, const at::Tensor& cv, int64_t s, int64_t a,
                             const at::Tensor& window_pattern, int64_t g, double scale) {
  const int64_t nkv = q.size(0), R = q.size(1), B = vb.size(1);
  const int64_t lo =
      window_pattern.defined() ? std::max<int64_t>(0, a - window_pattern.size(1)) : 0;
  const int64_t n = a - lo;
  if (n == 0) return at::matmul(at::softmax(sb, -1).to(q.scalar_type()), vb);
  const at::Tensor kc = ck[s].narrow(1, lo, n), vc = cv[s].narrow(1, lo, n);
  at::Tensor sc = (at::matmul(q, kc.transpose(-1, -2)) * scale).to(at::kFloat);
  if (window_pattern.defined()) {
    const at::Tensor hide = window_pattern.narrow(1, window_pattern.size(1) - n, n);
    sc = sc.view({nkv, g, B, n}).masked_fill(hide, kNegInf).view({nkv, R, n});
  }
  const at::Tensor p = at::softmax(at::cat({sc, sb}, -1), -1).to(q.scalar_type());
  const at::Tensor oc = at::matmul(p.narrow(-1, 0, n), vc);
  const at::Tensor ob = at::matmul(p.narrow(-1, n, B), vb);
  return (oc.to(at::kFloat) + ob.to(at::kFloat)).to(q.scalar_type());
}

// A shared sequence's context keys or values for one layer, [1, nkv, keys,
// d], read in place; undefined when there are none. c: [S, nkv, L, d].
at::Tensor GroupContext(const at::Tensor& c, const Group& grp, bool windowed) {
  const int64_t lo = windowed ? grp.win_lo : 0;
  const int64_t n = windowed ? grp.win_lc : grp.lc;
  if (n == 0) return at::Tensor();
  return c[grp.seq].narrow(1, lo, n).unsqueeze(0);
}

// One layer's attention over every group. q: [nb, nkv, g*B, d]; kb, vb:
// [nb, nkv, B, d]; ck, cv: the layer's context [S, nkv, L, d]; window_pattern
// (WindowPattern) when the layer is windowed. Returns [nb, nkv, g*B, d].
at::Tensor AttendGroups(const at::Tensor& q, const at::Tensor& kb, const at::Tensor& vb,
                        const at::Tensor& ck, const at::Tensor& cv, const HostBlocks& host,
                        const std::vector<Group>& groups, const at::Tensor& window_pattern,
                        const at::Tensor& blk_mask, int64_t g, double scale) {
  const bool windowed = window_pattern.defined();
  if (groups.size() == 1 && groups[0].seq < 0) {  // every block its own sequence
    const int64_t nb = q.size(0), nkv = q.size(1), R = q.size(2), B = kb.size(2);
    at::Tensor sb = (at::matmul(q, kb.transpose(-1, -2)) * scale).to(at::kFloat);
    if (blk_mask.defined()) {
      sb = sb.view({nb, nkv, g, B, B}).masked_fill(blk_mask, kNegInf).view({nb, nkv, R, B});
    }
    at::Tensor attn = at::empty_like(q);
    const int64_t* a_ptr = host.anchors.data_ptr<int64_t>();
    const int64_t* s_ptr = host.seq.data_ptr<int64_t>();
    for (int64_t b = 0; b < nb; ++b) {
      attn[b].copy_(AttendOwnSequence(q[b], sb[b], vb[b], ck, cv, s_ptr[b], a_ptr[b],
                                      window_pattern, g, scale));
    }
    return attn;
  }
  at::Tensor attn = at::empty_like(q);
  for (const Group& grp : groups) {
    const at::Tensor kc = GroupContext(ck, grp, windowed);
    const at::Tensor vc = GroupContext(cv, grp, windowed);
    const bool all = !grp.idx.defined();
    at::Tensor out = Attend(
        all ? q : q.index_select(0, grp.idx), all ? kb : kb.index_select(0, grp.idx),
        all ? vb : vb.index_select(0, grp.idx), kc, vc, windowed ? grp.slide_mask : grp.full_mask,
        all ? blk_mask : ForGroup(blk_mask, grp.idx), g, scale);
    if (all) return out;
    attn.index_copy_(0, grp.idx, out);
  }
  return attn;
}

// What every layer of one ForwardBlocks call shares.
struct BlockPass {
  int64_t nb = 0, B = 0;
  at::Tensor cos, sin;  // [nb, B, 1, d]
  std::vector<AttentionRule> rules;
  std::vector<at::Tensor> blk_masks;  // per layer
  at::Tensor window_pattern;          // WindowPattern when some layer is windowed
  const HostBlocks* host = nullptr;
  std::vector<Group> groups;
};

// Layer li's attention from its (normed, DFlash 2: convolved) input y
// [nb, B, H] to its heads [nb, B, nh * d], before the output projection.
at::Tensor AttentionHeads(const config::DrafterConfig& c, const LayerWeights& l, int64_t li,
                          const at::Tensor& y, const BlockPass& pass, const ContextCache& context) {
  const int64_t nb = pass.nb, B = pass.B;
  const int64_t nh = c.num_attention_heads, nkv = c.num_key_value_heads;
  const int64_t g = nh / nkv, d = c.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(d));
  at::Tensor q = RmsNorm(Linear(y, l[kWq], l[kBq]).view({nb, B, nh, d}), l[kQNorm], c.rms_norm_eps);
  q = ApplyRope(q, pass.cos, pass.sin);
  at::Tensor kb =
      RmsNorm(Linear(y, l[kWk], l[kBk]).view({nb, B, nkv, d}), l[kKNorm], c.rms_norm_eps);
  kb = ApplyRope(kb, pass.cos, pass.sin).permute({0, 2, 1, 3});  // [nb, nkv, B, d]
  at::Tensor vb = Linear(y, l[kWv], l[kBv]).view({nb, B, nkv, d}).permute({0, 2, 1, 3});
  // Query head h = kv_head * g + i, as HF's repeat_kv.
  q = q.view({nb, B, nkv, g, d}).permute({0, 2, 3, 1, 4}).reshape({nb, nkv, g * B, d});
  const at::Tensor& window = pass.rules[li].window > 0 ? pass.window_pattern : at::Tensor();
  at::Tensor attn = AttendGroups(q, kb, vb, context.k[li], context.v[li], *pass.host, pass.groups,
                                 window, pass.blk_masks[li], g, scale);
  return attn.view({nb, nkv, g, B, d}).permute({0, 3, 1, 2, 4}).reshape({nb, B, nh * d});
}

at::Tensor Mlp(const LayerWeights& l, const at::Tensor& h) {
  return at::linear(at::silu(at::linear(h, l[kGate])) * at::linear(h, l[kUp]), l[kDown]);
}

// A DFlash 1 layer's heads from its input x (its own norm, no convs).
at::Tensor PlainHeads(const config::DrafterConfig& c, const LayerWeights& l, int64_t li,
                      const at::Tensor& x, const BlockPass& pass, const ContextCache& context) {
  return AttentionHeads(c, l, li, RmsNorm(x, l[kInputNorm], c.rms_norm_eps), pass, context);
}

// A DFlash 1 layer after its attention heads, row by row: x + o_proj(heads),
// then + MLP. x [..., H], heads [..., nh * d] (any rows of a block).
at::Tensor LayerTail(const config::DrafterConfig& c, const LayerWeights& l, at::Tensor x,
                     const at::Tensor& heads) {
  x = x + Linear(heads, l[kWo], l[kBo]);
  return x + Mlp(l, RmsNorm(x, l[kPostNorm], c.rms_norm_eps));
}

// One decoder layer: x + attention, then + MLP, each wrapped in DFlash 2's
// dynamic convs.
at::Tensor DecoderLayer(const config::DrafterConfig& c, const LayerWeights& l, int64_t li,
                        at::Tensor x, const BlockPass& pass, const ContextCache& context) {
  if (!c.is_dflash2()) return LayerTail(c, l, x, PlainHeads(c, l, li, x, pass, context));
  at::Tensor y = RmsNorm(x, l[kInputNorm], c.rms_norm_eps);
  at::Tensor d_attn;  // the attention conv's side-1 coefficients
  const DynamicConv attn_conv{l[kAttnConvBase], l[kAttnConvProj], c.conv_group_size};
  std::tie(y, d_attn) = attn_conv.Prepare(y);
  at::Tensor a = Linear(AttentionHeads(c, l, li, y, pass, context), l[kWo], l[kBo]);
  x = x + attn_conv.Finish(a, d_attn);
  at::Tensor h = RmsNorm(x, l[kPostNorm], c.rms_norm_eps);
  at::Tensor d_mlp;
  const DynamicConv mlp_conv{l[kMlpConvBase], l[kMlpConvProj], c.conv_group_size};
  std::tie(h, d_mlp) = mlp_conv.Prepare(h);
  return x + mlp_conv.Finish(Mlp(l, h), d_mlp);
}

}  // namespace

std::vector<AttentionRule> AttentionRules(const config::DrafterConfig& c,
                                          types::Semantics semantics) {
  std::vector<AttentionRule> rules(c.num_hidden_layers);
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const bool sliding = c.sliding[i];
    AttentionRule& r = rules[i];
    r.window = sliding ? c.sliding_window : 0;       // 0 when use_sliding_window is false
    if (semantics == types::Semantics::kZlab2025) {  // bidirectional, context-only window
      r.window_in_block = false;
      continue;
    }
    r.causal = c.is_causal.has_value() ? *c.is_causal : sliding;
    r.two_sided = !r.causal;
  }
  return rules;
}

absl::StatusOr<at::Tensor> DrafterModel::ForwardBlocks(const at::Tensor& x0,
                                                       const at::Tensor& anchors,
                                                       const at::Tensor& seq,
                                                       const ContextCache& context,
                                                       const BlockOptions& options) const {
  ASSIGN_OR_RETURN(DeferredBlocks out, RunBlocks(x0, anchors, seq, context, options, false));
  return std::move(out.x);
}

absl::StatusOr<DeferredBlocks> DrafterModel::ForwardBlocksDeferred(
    const at::Tensor& x0, const at::Tensor& anchors, const at::Tensor& seq,
    const ContextCache& context, const BlockOptions& options) const {
  if (!CanDeferTail()) {
    return absl::FailedPreconditionError(
        "a DFlash 2 drafter's last layer cannot be finished row by row (its convolutions mix "
        "slots); use ForwardBlocks");
  }
  return RunBlocks(x0, anchors, seq, context, options, true);
}

at::Tensor DrafterModel::FinishRows(const at::Tensor& x, const at::Tensor& heads) const {
  at::NoGradGuard no_grad;
  const config::DrafterConfig& c = config_;
  return RmsNorm(LayerTail(c, layers_.back(), x, heads), norm_, c.rms_norm_eps);
}

absl::StatusOr<DeferredBlocks> DrafterModel::RunBlocks(
    const at::Tensor& x0, const at::Tensor& anchors, const at::Tensor& seq,
    const ContextCache& context, const BlockOptions& options, bool defer_tail) const {
  const config::DrafterConfig& c = config_;
  RETURN_IF_ERROR(CheckBlockInputs(c, fc_, x0, anchors, seq, options.lengths, context));
  const int64_t B = x0.size(1);
  ASSIGN_OR_RETURN(HostBlocks host, ReadBlocks(anchors, seq, options.lengths, B, context));

  return TorchGuard("drafter forward", [&]() -> DeferredBlocks {
    at::NoGradGuard no_grad;
    BlockPass pass;
    pass.nb = x0.size(0);
    pass.B = B;
    const at::TensorOptions lopt = x0.options().dtype(at::kLong);
    const at::Tensor a_dev = host.anchors.to(x0.device());
    const at::Tensor j = at::arange(B, lopt);
    at::Tensor pos = a_dev.unsqueeze(1) + j;  // [nb, B]
    auto [cos, sin] = RopeCosSin(pos, inv_freq_, attention_scaling_, fc_.scalar_type());
    pass.cos = cos.unsqueeze(2);  // [nb, B, 1, d]
    pass.sin = sin.unsqueeze(2);
    pass.rules = AttentionRules(c, options.semantics);
    bool any_window = false;
    for (const AttentionRule& r : pass.rules) any_window |= r.window > 0;
    const at::Tensor lengths =
        options.lengths.defined() ? options.lengths.to(x0.device(), at::kLong) : at::Tensor();
    // Groups and their context masks, and the in-block masks, shared by all layers.
    const int64_t window = any_window ? c.sliding_window : 0;
    pass.host = &host;
    pass.groups = MakeGroups(host, a_dev, MaskInputs{lopt, j, window});
    // A window of max_len + B or more hides no context key (and its pattern
    // would be W - 1 columns wide): such layers attend as unwindowed.
    if (window > 0 && window < context.max_len + B) pass.window_pattern = WindowPattern(window, j);
    pass.blk_masks = BlockMasks(pass.rules, lengths, B, lopt);

    at::Tensor x = x0;
    const int64_t last = c.num_hidden_layers - 1;
    for (int64_t li = 0; li < last; ++li) x = DecoderLayer(c, layers_[li], li, x, pass, context);
    if (defer_tail) return DeferredBlocks{x, PlainHeads(c, layers_[last], last, x, pass, context)};
    x = DecoderLayer(c, layers_[last], last, x, pass, context);
    return DeferredBlocks{RmsNorm(x, norm_, c.rms_norm_eps), at::Tensor()};
  });
}

}  // namespace dflash::model
