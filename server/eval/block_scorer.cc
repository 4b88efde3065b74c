#include "eval/block_scorer.h"

#include <algorithm>
#include <utility>

#include <ATen/ATen.h>

#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "eval/sampled_alphas.h"

namespace dflash::eval {

BlockScorer::BlockScorer(const model::DrafterModel& drafter, const weights::TargetTensors& target,
                         const data::EvalDataset& dataset, int64_t block_size,
                         int64_t max_chunk_elements, types::Semantics semantics,
                         int64_t logits_budget_bytes)
    : drafter_(drafter),
      target_(target),
      dataset_(dataset),
      block_size_(block_size),
      max_chunk_elements_(std::max<int64_t>(max_chunk_elements, 1)),
      semantics_(semantics),
      logits_budget_bytes_(logits_budget_bytes) {}

absl::StatusOr<model::ContextCache> BlockScorer::EncodeSamples(
    const std::vector<size_t>& samples, const std::vector<int64_t>* needed,
    const std::vector<int64_t>* first) const {
  std::vector<at::Tensor> features;
  for (size_t s = 0; s < samples.size(); ++s) {
    ASSIGN_OR_RETURN(
        at::Tensor f,
        dataset_.Features(samples[s],
                          layer_ids_.empty() ? drafter_.config().target_layer_ids : layer_ids_));
    ASSIGN_OR_RETURN(at::Tensor cast, TorchGuard("casting features", [&] {
                       const int64_t keep = needed != nullptr
                                                ? std::clamp<int64_t>((*needed)[s], 1, f.size(0))
                                                : f.size(0);
                       return f.narrow(0, 0, keep).to(drafter_.device(), drafter_.dtype());
                     }));
    features.push_back(std::move(cast));
  }
  return drafter_.EncodeContext(features, first != nullptr ? *first : std::vector<int64_t>{});
}

int64_t BlockScorer::BlocksPerChunk(int64_t context_length) const {
  const int64_t heads = drafter_.config().num_attention_heads;
  // Logits are bounded on their own (eval/vocab_chunks.h).
  const int64_t per_block = heads * block_size_ * (context_length + block_size_);
  return std::max<int64_t>(1, max_chunk_elements_ / per_block);
}

int64_t BlockScorer::SequencesPerGroup() const {
  int64_t longest = 1;
  for (size_t i = 0; i < dataset_.size(); ++i) {
    longest = std::max<int64_t>(longest, dataset_.sample(i).input_ids.numel());
  }
  return std::min<int64_t>(256, BlocksPerChunk(longest));
}

namespace {

// Block inputs [t[a], m, ..., m], labels t[a + j] (-1 where absent) and,
// under zlab-current, each block's length min(B, end - a); on the host.
struct HostBlockInputs {
  at::Tensor inputs;       // [nb, B]
  at::Tensor labels;       // [nb, B - 1]
  at::Tensor anchors;      // [nb]
  at::Tensor seq;          // [nb]
  at::Tensor lengths;      // [nb]
  bool shortened = false;  // some block has fewer than B slots
};

HostBlockInputs MakeBlockInputs(const std::vector<BlockRequest>& blocks, int64_t B, int64_t mask,
                                types::Semantics semantics) {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  const bool current = semantics == types::Semantics::kZlabCurrent;
  HostBlockInputs h;
  h.inputs = at::full({nb, B}, mask, at::kLong);
  h.labels = at::full({nb, B - 1}, -1, at::kLong);
  h.anchors = at::empty({nb}, at::kLong);
  h.seq = at::empty({nb}, at::kLong);
  h.lengths = at::empty({nb}, at::kLong);
  auto in = h.inputs.accessor<int64_t, 2>();
  auto lab = h.labels.accessor<int64_t, 2>();
  auto anc = h.anchors.accessor<int64_t, 1>();
  auto sq = h.seq.accessor<int64_t, 1>();
  auto len = h.lengths.accessor<int64_t, 1>();
  for (int64_t b = 0; b < nb; ++b) {
    const BlockRequest& r = blocks[b];
    const std::vector<int64_t>& t = *r.tokens;
    in[b][0] = t[r.anchor];
    for (int64_t j = 1; j < B && r.anchor + j < r.end; ++j) lab[b][j - 1] = t[r.anchor + j];
    anc[b] = r.anchor;
    sq[b] = r.seq;
    len[b] = current ? std::clamp<int64_t>(r.end - r.anchor, 1, B) : B;
    h.shortened |= len[b] < B;
  }
  return h;
}

}  // namespace

absl::StatusOr<BlockScorer::Drafted> BlockScorer::Forward(const std::vector<BlockRequest>& blocks,
                                                          const model::ContextCache& context,
                                                          bool defer_tail) const {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  const int64_t B = block_size_;
  const config::DrafterConfig& cfg = drafter_.config();
  const HostBlockInputs host = MakeBlockInputs(blocks, B, cfg.mask_token_id, semantics_);

  const c10::Device device = drafter_.device();
  ASSIGN_OR_RETURN(
      at::Tensor x0, TorchGuard("embedding block inputs", [&] {
        at::Tensor e =
            target_.embed.index_select(0, host.inputs.view({-1}).to(device)).view({nb, B, -1});
        // z-lab scales in the embedding's dtype, then the drafter casts.
        if (cfg.input_embedding_scale != 1.0) e = e * cfg.input_embedding_scale;
        return e.to(drafter_.dtype());
      }));
  model::BlockOptions options;
  options.semantics = semantics_;
  if (host.shortened) options.lengths = host.lengths.to(device);
  const at::Tensor anchors = host.anchors.to(device), seq = host.seq.to(device);
  const at::Tensor anchor_tokens = host.inputs.select(1, 0);
  if (defer_tail) {  // slot 0 is never scored: its rows are dropped here
    ASSIGN_OR_RETURN(model::DeferredBlocks d,
                     drafter_.ForwardBlocksDeferred(x0, anchors, seq, context, options));
    return Drafted{d.x.narrow(1, 1, B - 1), d.heads.narrow(1, 1, B - 1), host.labels,
                   anchor_tokens};
  }
  ASSIGN_OR_RETURN(at::Tensor hidden, drafter_.ForwardBlocks(x0, anchors, seq, context, options));
  ASSIGN_OR_RETURN(at::Tensor slots, TorchGuard("casting draft slots", [&] {
                     return hidden.narrow(1, 1, B - 1).to(Projector().dtype());
                   }));
  return Drafted{std::move(slots), at::Tensor(), host.labels, anchor_tokens};
}

VocabProjector BlockScorer::Projector() const {
  const config::DrafterConfig& cfg = drafter_.config();
  const model::DraftVocab* vocab = drafter_.draft_vocab();
  VocabProjector projector(vocab != nullptr ? vocab->lm_head : target_.lm_head,
                           LogitsTransform{cfg.output_multiplier, cfg.final_logit_softcapping},
                           logits_budget_bytes_);
  if (vocab != nullptr) projector.SetDraftVocab(vocab->draft_to_target, vocab->target_to_draft);
  return projector;
}

absl::StatusOr<std::vector<BlockScore>> BlockScorer::Score(const std::vector<BlockRequest>& blocks,
                                                           const model::ContextCache& context,
                                                           CrossEntropy cross_entropy,
                                                           Positions positions,
                                                           int64_t slice_width) const {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  ASSIGN_OR_RETURN(Drafted drafted, Forward(blocks, context));
  const model::SelectorWeights* selector = drafter_.selector();
  return TorchGuard("scoring drafts", [&]() -> std::vector<BlockScore> {
    const VocabProjector projector = Projector();
    const at::Tensor& h = drafted.slots;
    const SlotInputs in{drafted.labels, drafted.anchors, selector};
    std::vector<BlockScore> scores = ScoreSlots(
        h, in, projector, positions, cross_entropy == CrossEntropy::kCompute, slice_width);
    if (!sampling_.empty()) {
      AddSampledAlphas(blocks, h.reshape({nb * (block_size_ - 1), -1}), drafter_, target_,
                       sampling_, final_norm_applied_, scores);
    }
    return scores;
  });
}

bool BlockScorer::CanPipeline() const {
  const model::SelectorWeights* selector = drafter_.selector();
  return (selector == nullptr || selector->top_k == 0) && sampling_.empty();
}

absl::StatusOr<std::vector<PendingSlots>> BlockScorer::Draft(
    const std::vector<BlockRequest>& blocks, const model::ContextCache& context) const {
  // The last layer's tail waits for the rows a slice scores (DFlash 1).
  ASSIGN_OR_RETURN(Drafted drafted, Forward(blocks, context, drafter_.CanDeferTail()));
  return TorchGuard("scoring drafts", [&] {
    return StartPending(drafted.slots, drafted.heads, drafted.labels, Projector());
  });
}

absl::Status BlockScorer::ScoreNextSlices(const std::vector<PendingSlots*>& items,
                                          int64_t slice_width) const {
  return TorchGuard("scoring drafts",
                    [&] { eval::ScoreNextSlices(items, Projector(), slice_width, &drafter_); });
}

}  // namespace dflash::eval
