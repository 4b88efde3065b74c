// File: drafter_model.h
// The DFlash drafter forward pass (shared/reference/dflash-semantics.md §4),
// batched: many blocks, of one or several sequences, in one call.
//
//   ASSIGN_OR_RETURN(DrafterModel m, DrafterModel::Create(cfg, std::move(w)));
//   ASSIGN_OR_RETURN(ContextCache ctx, m.EncodeContext({features}));
//   ASSIGN_OR_RETURN(at::Tensor h, m.ForwardBlocks(x0, anchors, seq, ctx));
//   // h: [nb, B, H] after the final norm; logits = h[:, 1:] @ lm_head^T
#pragma once

#include <map>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/statusor.h"
#include "model/drafter_config.h"

namespace dflash::model {

// Per-layer context keys and values for a batch of sequences, computed once
// and shared by every block of those sequences. RoPE is already applied
// (positions 0..len-1). Shorter sequences are zero-padded to max_len.
struct ContextCache {
  std::vector<at::Tensor> k;   // per layer: [S, max_len, nkv, d]
  std::vector<at::Tensor> v;   // per layer: [S, max_len, nkv, d]
  std::vector<int64_t> lengths;  // per sequence
  int64_t max_len = 0;
};

class DrafterModel {
 public:
  // `weights` maps schema names (dflash-semantics §1, no prefix) to tensors
  // already on the target device and in the compute dtype. Checks every
  // required tensor's presence and shape (InvalidArgument otherwise).
  static absl::StatusOr<DrafterModel> Create(
      DrafterConfig config, std::map<std::string, at::Tensor> weights);

  const DrafterConfig& config() const { return config_; }

  // features: per sequence [L_s, K*H_t] in the model dtype and device, the
  // columns already selected and ordered as target_layer_ids says.
  // Computes ctx = RMSNorm_hidden_norm(features @ fc^T) and per layer
  // k = RoPE(RMSNorm_knorm(ctx @ Wk^T)), v = ctx @ Wv^T.
  absl::StatusOr<ContextCache> EncodeContext(
      const std::vector<at::Tensor>& features) const;

  // x0:      [nb, B, H]  block input embeddings (target embed of
  //                      [t[a], m, ..., m]), model dtype
  // anchors: [nb] int64  a for each block: slot j sits at position a + j and
  //                      the block sees context positions < a
  // seq:     [nb] int64  which ContextCache sequence each block reads
  // Returns [nb, B, H] after the final norm (model dtype).
  absl::StatusOr<at::Tensor> ForwardBlocks(const at::Tensor& x0,
                                           const at::Tensor& anchors,
                                           const at::Tensor& seq,
                                           const ContextCache& context) const;

  // Bytes held by the weights.
  int64_t bytes() const;

  // Placement and the fc input width (K x H_t), for compatibility checks.
  c10::ScalarType dtype() const { return fc_.scalar_type(); }
  c10::Device device() const { return fc_.device(); }
  int64_t fc_in_features() const { return fc_.size(1); }

 private:
  struct Layer {
    at::Tensor input_norm, post_norm;
    at::Tensor wq, wk, wv, wo, bq, bk, bv, bo;  // biases undefined unless attention_bias
    at::Tensor q_norm, k_norm;
    at::Tensor gate, up, down;
  };
  DrafterModel() = default;

  DrafterConfig config_;
  at::Tensor fc_, hidden_norm_, norm_;
  std::vector<Layer> layers_;
  at::Tensor inv_freq_;  // fp32 [d/2], rope type applied
  double attention_scaling_ = 1.0;  // yarn mscale on cos/sin
};

}  // namespace dflash::model
