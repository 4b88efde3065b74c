// File: drafter_model.h
// The DFlash drafter forward pass (shared/reference/dflash-semantics.md §4;
// DFlash 2 and the updated DFlash 1 rules: dflash2-semantics.md §3),
// batched: many blocks, of one or several sequences, in one call.
//
//   ASSIGN_OR_RETURN(DrafterModel m, DrafterModel::Create(cfg, std::move(w)));
//   ASSIGN_OR_RETURN(ContextCache ctx, m.EncodeContext({features}));
//   ASSIGN_OR_RETURN(at::Tensor h, m.ForwardBlocks(x0, anchors, seq, ctx));
//   // h: [nb, B, H] after the final norm; logits = h[:, 1:] @ lm_head^T
#pragma once

#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "config/drafter_config.h"
#include "model/drafter_schema.h"
#include "types/semantics.h"

namespace dflash::model {

// Per-layer context keys and values for a batch of sequences, computed once
// and shared by every block of those sequences. RoPE is already applied
// (positions 0..len-1). Shorter sequences are zero-padded to max_len.
//
// With first anchors, a windowed layer's keys (and the projection itself
// when every layer is windowed) are computed only from first_anchor - W + 1
// on, the earliest key a block at or after the first anchor can see; the
// rows below stay zero and ForwardBlocks refuses a block before it.
struct ContextCache {
  std::vector<at::Tensor> k;           // per layer: [S, nkv, max_len, d]
  std::vector<at::Tensor> v;           // per layer: [S, nkv, max_len, d]
  std::vector<int64_t> lengths;        // per sequence
  std::vector<int64_t> first_anchor;   // per sequence (0 when not given)
  std::vector<int64_t> windowed_from;  // per sequence: windowed keys start here
  int64_t max_len = 0;
};

// How one layer's block queries see keys (dflash2-semantics §3): causal
// inside the block or not, and a window W (0 = none) that hides keys with
// query - key >= W and, when two_sided, key - query >= W.
struct AttentionRule {
  bool causal = false;
  int64_t window = 0;
  bool two_sided = false;
  bool window_in_block = true;  // zlab-2025: the window hides context keys only
};

// Per layer, under the given semantics: zlab-current follows is_causal (absent:
// sliding layers causal) and use_sliding_window; zlab-2025 is bidirectional
// everywhere, its windows one-sided and on context keys only (§4 of
// dflash-semantics.md).
std::vector<AttentionRule> AttentionRules(const config::DrafterConfig& config,
                                          types::Semantics semantics);

// Options of one ForwardBlocks call.
struct BlockOptions {
  // [nb] int64: block b has lengths[b] <= B slots; slots past it do not
  // exist (no block query sees them). Undefined: every block has B slots.
  at::Tensor lengths;
  types::Semantics semantics = types::kDefaultSemantics;
};

// ForwardBlocksDeferred's result: the last layer stopped after its attention
// heads, so FinishRows pays its output projection and MLP only for the rows
// that get scored (replay scores a block only to its first miss).
struct DeferredBlocks {
  at::Tensor x;      // [nb, B, H] the last layer's input (its residual)
  at::Tensor heads;  // [nb, B, nh * d] its attention heads, before o_proj
};

// DFlash 2's candidate selector (dflash2-semantics §3), in the model dtype.
struct SelectorWeights {
  at::Tensor projection;   // [r, H]
  at::Tensor predecessor;  // [V, r]
  at::Tensor successor;    // [V, r]
  int64_t top_k = 0;
};

// A drafter's own output vocabulary (speculators' lm_head, d2t, t2d): the
// head projects onto V_draft draft indices, each mapped to a target id.
struct DraftVocab {
  at::Tensor lm_head;          // [V_draft, H], model dtype
  at::Tensor draft_to_target;  // [V_draft] int64: index + d2t[index]
  at::Tensor target_to_draft;  // [V] int64: draft index of a target id, -1 outside
  int64_t size() const { return lm_head.size(0); }
};

class DrafterModel {
 public:
  // `weights` maps schema names (dflash-semantics §1, no prefix) to tensors
  // already on the target device and in the compute dtype. Checks every
  // required tensor's presence and shape (InvalidArgument otherwise).
  static absl::StatusOr<DrafterModel> Create(config::DrafterConfig config,
                                             std::map<std::string, at::Tensor> weights);

  const config::DrafterConfig& config() const { return config_; }

  // The same weights on another device (a replica for an evaluation's shard
  // there, issue 30); the same tensors when `device` is this one's.
  absl::StatusOr<DrafterModel> CopyTo(c10::Device device) const;

  // features: per sequence [L_s, K*H_t] in the model dtype and device, the
  // columns already selected and ordered as target_layer_ids says.
  // Computes ctx = RMSNorm_hidden_norm(features @ fc^T) and per layer
  // k = RoPE(RMSNorm_knorm(ctx @ Wk^T)), v = ctx @ Wv^T.
  // first_anchors (empty, or one per sequence): no block will be scored
  // before it, so windowed layers skip the keys no window reaches.
  absl::StatusOr<ContextCache> EncodeContext(const std::vector<at::Tensor>& features,
                                             const std::vector<int64_t>& first_anchors = {}) const;

  // x0:      [nb, B, H]  block input embeddings (target embed of
  //                      [t[a], m, ..., m]), model dtype
  // anchors: [nb] int64  a for each block: slot j sits at position a + j and
  //                      the block sees context positions < a
  // seq:     [nb] int64  which ContextCache sequence each block reads
  // Returns [nb, B, H] after the final norm (model dtype).
  absl::StatusOr<at::Tensor> ForwardBlocks(const at::Tensor& x0, const at::Tensor& anchors,
                                           const at::Tensor& seq, const ContextCache& context,
                                           const BlockOptions& options = {}) const;

  // ForwardBlocks without the last layer's tail (DFlash 1 only: DFlash 2's
  // convolutions mix slots after attention). FailedPrecondition on DFlash 2.
  absl::StatusOr<DeferredBlocks> ForwardBlocksDeferred(const at::Tensor& x0,
                                                       const at::Tensor& anchors,
                                                       const at::Tensor& seq,
                                                       const ContextCache& context,
                                                       const BlockOptions& options = {}) const;
  bool CanDeferTail() const { return !config_.is_dflash2(); }

  // Rows of a DeferredBlocks, x [r, H] and heads [r, nh * d], through the
  // last layer's output projection, residual, MLP and the final norm:
  // [r, H], what ForwardBlocks returns for those rows. Throws c10::Error
  // (callers run it under TorchGuard).
  at::Tensor FinishRows(const at::Tensor& x, const at::Tensor& heads) const;

  // The selector of a DFlash 2 drafter; nullptr for DFlash 1.
  const SelectorWeights* selector() const {
    return selector_.projection.defined() ? &selector_ : nullptr;
  }

  // The drafter's own vocabulary (lm_head + d2t); nullptr: the target's
  // lm_head over the whole target vocabulary.
  const DraftVocab* draft_vocab() const {
    return draft_vocab_.lm_head.defined() ? &draft_vocab_ : nullptr;
  }

  // Bytes held by the weights.
  int64_t bytes() const;

  // Placement and the fc input width (K x H_t), for compatibility checks.
  c10::ScalarType dtype() const { return fc_.scalar_type(); }
  c10::Device device() const { return fc_.device(); }
  int64_t fc_in_features() const { return fc_.size(1); }

 private:
  // Indexed by LayerTensor; biases undefined unless attention_bias, convs
  // undefined unless DFlash 2.
  using Layer = std::array<at::Tensor, kNumLayerTensors>;
  DrafterModel() = default;

  // ForwardBlocks and ForwardBlocksDeferred: every layer, or all but the
  // last one's tail (then the result's heads are defined).
  absl::StatusOr<DeferredBlocks> RunBlocks(const at::Tensor& x0, const at::Tensor& anchors,
                                           const at::Tensor& seq, const ContextCache& context,
                                           const BlockOptions& options, bool defer_tail) const;

  // EncodeContext's work once the inputs are checked (throws on torch errors).
  void EncodeInto(const std::vector<at::Tensor>& features, ContextCache& cache) const;
  std::pair<at::Tensor, at::Tensor> ContextKV(const Layer& l, const at::Tensor& x,
                                              const at::Tensor& cos, const at::Tensor& sin) const;

  config::DrafterConfig config_;
  at::Tensor fc_, hidden_norm_, norm_;
  std::vector<Layer> layers_;
  SelectorWeights selector_;
  DraftVocab draft_vocab_;
  at::Tensor inv_freq_;             // fp32 [d/2], rope type applied
  double attention_scaling_ = 1.0;  // yarn mscale on cos/sin
};

}  // namespace dflash::model
