// File: block_scorer.h
// Scores draft blocks: builds each block's input from the target's
// embed_tokens (times input_embedding_scale), runs the drafter on many blocks
// at once, projects through the target's lm_head (times output_multiplier,
// then the softcap) and compares the drafts with the labels (the sequence's
// own next tokens): argmax for DFlash 1, the candidate selector's greedy
// walk for DFlash 2 (dflash2-semantics §3). Shared by anchor and replay mode.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/block_request.h"
#include "eval/slot_scoring.h"
#include "eval/vocab_chunks.h"
#include "model/drafter_model.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

enum class CrossEntropy { kSkip, kCompute };

class BlockScorer {
 public:
  // Under zlab-current a block at anchor a has min(B, end - a) slots;
  // under zlab-2025 always B.
  BlockScorer(const model::DrafterModel& drafter, const weights::TargetTensors& target,
              const data::EvalDataset& dataset, int64_t block_size, int64_t max_chunk_elements,
              types::Semantics semantics, int64_t logits_budget_bytes = kDefaultLogitsBudgetBytes);

  int64_t block_size() const { return block_size_; }

  // Score also computes the alphas of these settings (sampling_distributions.h)
  // for blocks that carry a final hidden state.
  void EnableSampling(std::vector<types::SamplingSetting> settings, bool final_norm_applied) {
    sampling_ = std::move(settings);
    final_norm_applied_ = final_norm_applied;
  }

  // Context K/V for these dataset samples (columns selected and ordered as
  // the drafter's target_layer_ids say). With `needed` (one per sample),
  // only positions < needed[i] are projected: a block at anchor a reads
  // positions < a, so the largest anchor scored is enough. With `first`
  // (the smallest anchor scored per sample), windowed layers skip the keys
  // no window reaches.
  absl::StatusOr<model::ContextCache> EncodeSamples(
      const std::vector<size_t>& samples, const std::vector<int64_t>* needed = nullptr,
      const std::vector<int64_t>* first = nullptr) const;

  // Blocks per forward so attention scores stay in the budget (logits have
  // their own, logits_budget_bytes).
  int64_t BlocksPerChunk(int64_t context_length) const;
  // Sequences walked together in replay mode.
  int64_t SequencesPerGroup() const;

  absl::StatusOr<std::vector<BlockScore>> Score(const std::vector<BlockRequest>& blocks,
                                                const model::ContextCache& context,
                                                CrossEntropy cross_entropy,
                                                Positions positions = Positions::kAll,
                                                int64_t slice_width = kSliceWidth) const;

  // Pipelined replay (slot_scoring.h, PendingSlots): whether this drafter
  // can be scored so (argmax drafts: no candidate selector, no sampling),
  // then Draft runs the drafter on the blocks and ScoreNextSlices scores the
  // next slice of many waiting blocks, from any Draft calls, in one
  // vocabulary pass. Together they give Score's kToFirstMiss verdicts.
  bool CanPipeline() const;
  absl::StatusOr<std::vector<PendingSlots>> Draft(const std::vector<BlockRequest>& blocks,
                                                  const model::ContextCache& context) const;
  absl::Status ScoreNextSlices(const std::vector<PendingSlots*>& items,
                               int64_t slice_width = kSliceWidth) const;

  // Reads these dataset layers instead of the drafter's target_layer_ids
  // (the layer-offset check scores the other numbering's reading).
  void UseLayerIds(std::vector<int> ids) { layer_ids_ = std::move(ids); }

 private:
  const model::DrafterModel& drafter_;
  const weights::TargetTensors& target_;
  const data::EvalDataset& dataset_;
  int64_t block_size_;
  int64_t max_chunk_elements_;
  types::Semantics semantics_;
  int64_t logits_budget_bytes_;
  std::vector<int> layer_ids_;  // empty: the drafter's target_layer_ids
  std::vector<types::SamplingSetting> sampling_;
  bool final_norm_applied_ = false;

  // The projector over the head drafts are read from (the drafter's own
  // when it has a draft vocabulary, else the target's lm_head).
  VocabProjector Projector() const;
  // The block inputs through the drafter: the draft slots' hidden states
  // [nb, B - 1, H] in the head's dtype, with the blocks' labels [nb, B - 1]
  // and anchor tokens [nb] (host). With defer_tail (the drafter's
  // CanDeferTail), slots hold the last layer's input in the model dtype and
  // heads its attention heads [nb, B - 1, nh * d] (model::DeferredBlocks).
  struct Drafted {
    at::Tensor slots, heads, labels, anchors;
  };
  absl::StatusOr<Drafted> Forward(const std::vector<BlockRequest>& blocks,
                                  const model::ContextCache& context,
                                  bool defer_tail = false) const;
};

}  // namespace dflash::eval
