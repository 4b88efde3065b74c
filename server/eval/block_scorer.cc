#include "eval/block_scorer.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "common/status_macros.h"
#include "common/torch_guard.h"

namespace dflash::eval {

BlockScorer::BlockScorer(const model::DrafterModel& drafter,
                         const weights::TargetTensors& target, const data::EvalDataset& dataset,
                         int64_t block_size, int64_t max_chunk_elements)
    : drafter_(drafter),
      target_(target),
      dataset_(dataset),
      block_size_(block_size),
      max_chunk_elements_(std::max<int64_t>(max_chunk_elements, 1)) {}

absl::StatusOr<model::ContextCache> BlockScorer::EncodeSamples(
    const std::vector<size_t>& samples) const {
  std::vector<at::Tensor> features;
  for (size_t i : samples) {
    ASSIGN_OR_RETURN(at::Tensor f, dataset_.Features(i, drafter_.config().target_layer_ids));
    ASSIGN_OR_RETURN(at::Tensor cast, TorchGuard("casting features", [&] {
                       return f.to(drafter_.device(), drafter_.dtype());
                     }));
    features.push_back(std::move(cast));
  }
  return drafter_.EncodeContext(features);
}

int64_t BlockScorer::BlocksPerChunk(int64_t context_length) const {
  const int64_t heads = drafter_.config().num_attention_heads;
  const int64_t per_block = std::max(heads * block_size_ * (context_length + block_size_),
                                     (block_size_ - 1) * target_.vocab_size);
  return std::max<int64_t>(1, max_chunk_elements_ / per_block);
}

int64_t BlockScorer::SequencesPerGroup() const {
  int64_t longest = 1;
  for (size_t i = 0; i < dataset_.size(); ++i) {
    longest = std::max<int64_t>(longest, dataset_.sample(i).input_ids.numel());
  }
  return std::min<int64_t>(256, BlocksPerChunk(longest));
}

absl::StatusOr<std::vector<BlockScore>> BlockScorer::Score(
    const std::vector<BlockRequest>& blocks, const model::ContextCache& context,
    bool cross_entropy) const {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  const int64_t B = block_size_;
  const int64_t mask = drafter_.config().mask_token_id;
  // Block inputs [t[a], m, ..., m] and labels t[a + j] (-1 where absent).
  at::Tensor inputs = at::full({nb, B}, mask, at::kLong);
  at::Tensor labels = at::full({nb, B - 1}, -1, at::kLong);
  at::Tensor anchors = at::empty({nb}, at::kLong);
  at::Tensor seq = at::empty({nb}, at::kLong);
  auto in = inputs.accessor<int64_t, 2>();
  auto lab = labels.accessor<int64_t, 2>();
  auto anc = anchors.accessor<int64_t, 1>();
  auto sq = seq.accessor<int64_t, 1>();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockRequest& r = blocks[b];
    const std::vector<int64_t>& t = *r.tokens;
    in[b][0] = t[r.anchor];
    for (int64_t j = 1; j < B && r.anchor + j < r.end; ++j) lab[b][j - 1] = t[r.anchor + j];
    anc[b] = r.anchor;
    sq[b] = r.seq;
  }

  const c10::Device device = drafter_.device();
  ASSIGN_OR_RETURN(at::Tensor x0, TorchGuard("embedding block inputs", [&] {
                     return target_.embed.index_select(0, inputs.view({-1}).to(device))
                         .view({nb, B, -1})
                         .to(drafter_.dtype());
                   }));
  ASSIGN_OR_RETURN(at::Tensor hidden,
                   drafter_.ForwardBlocks(x0, anchors.to(device), seq.to(device), context));

  return TorchGuard("scoring drafts", [&]() -> std::vector<BlockScore> {
    // logits [rows, V] for the B-1 drafted slots, through the target's head,
    // a slice of rows at a time: each slice's logits stay small enough to be
    // reused from the allocator (no page faults on a fresh buffer per chunk)
    // and are reduced (argmax, log-sum-exp, label logit) while still warm.
    at::Tensor h = hidden.narrow(1, 1, B - 1).to(target_.lm_head.scalar_type())
                       .reshape({nb * (B - 1), -1});
    const at::Tensor head_t = target_.lm_head.t();
    const at::Tensor flat_labels = labels.view({-1}).clamp_min(0).to(device);
    const int64_t rows = nb * (B - 1);
    const int64_t slice = std::max<int64_t>(
        1, std::min<int64_t>(rows, (int64_t{8} << 20) / std::max<int64_t>(1, target_.vocab_size)));
    at::Tensor drafts = at::empty({rows}, at::kLong);
    at::Tensor ce = at::zeros({rows}, at::kFloat);
    for (int64_t r0 = 0; r0 < rows; r0 += slice) {
      const int64_t n = std::min(slice, rows - r0);
      at::Tensor logits = at::mm(h.narrow(0, r0, n), head_t);
      drafts.narrow(0, r0, n).copy_(logits.argmax(-1));
      if (cross_entropy) {
        at::Tensor lf = logits.to(at::kFloat);
        at::Tensor gathered =
            lf.gather(-1, flat_labels.narrow(0, r0, n).unsqueeze(-1)).squeeze(-1);
        ce.narrow(0, r0, n).copy_(at::logsumexp(lf, -1) - gathered);
      }
    }
    const int64_t* d = drafts.data_ptr<int64_t>();
    const float* c = ce.data_ptr<float>();
    const int64_t* lab_p = labels.data_ptr<int64_t>();
    std::vector<BlockScore> out(nb);
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t* lb = lab_p + b * (B - 1);
      const int64_t* db = d + b * (B - 1);
      int64_t m = 0;
      while (m < B - 1 && lb[m] >= 0) ++m;
      out[b].correct.resize(m);
      for (int64_t j = 0; j < m; ++j) out[b].correct[j] = db[j] == lb[j] ? 1 : 0;
      if (cross_entropy) out[b].cross_entropy.assign(c + b * (B - 1), c + b * (B - 1) + m);
    }
    return out;
  });
}

}  // namespace dflash::eval
