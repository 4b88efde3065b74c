// File: block_scorer.h
// Scores draft blocks: builds each block's input from the target's
// embed_tokens, runs the drafter on many blocks at once, projects through
// the target's lm_head and compares the argmax drafts with the labels (the
// sequence's own next tokens). Shared by anchor and replay mode.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "model/drafter_model.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

struct BlockRequest {
  int64_t seq = 0;     // index into the ContextCache
  int64_t anchor = 0;  // a: slot 0 holds t[a], slot j drafts position a + j
  int64_t end = 0;     // positions >= end do not exist (L, or L' in replay)
  const std::vector<int64_t>* tokens = nullptr;  // the sequence's token ids
};

struct BlockScore {
  std::vector<uint8_t> correct;      // j = 1.. while a + j < end (at most B-1)
  std::vector<float> cross_entropy;  // same length, when asked for
};

class BlockScorer {
 public:
  BlockScorer(const model::DrafterModel& drafter, const weights::TargetTensors& target,
              const data::EvalDataset& dataset, int64_t block_size, int64_t max_chunk_elements);

  int64_t block_size() const { return block_size_; }

  // Context K/V for these dataset samples (columns selected and ordered as
  // the drafter's target_layer_ids say).
  absl::StatusOr<model::ContextCache> EncodeSamples(const std::vector<size_t>& samples) const;

  // Blocks per forward so attention scores and logits stay in the budget.
  int64_t BlocksPerChunk(int64_t context_length) const;
  // Sequences walked together in replay mode.
  int64_t SequencesPerGroup() const;

  absl::StatusOr<std::vector<BlockScore>> Score(const std::vector<BlockRequest>& blocks,
                                                const model::ContextCache& context,
                                                bool cross_entropy) const;

 private:
  const model::DrafterModel& drafter_;
  const weights::TargetTensors& target_;
  const data::EvalDataset& dataset_;
  int64_t block_size_;
  int64_t max_chunk_elements_;
};

}  // namespace dflash::eval
