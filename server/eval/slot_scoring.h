// File: slot_scoring.h
// From the drafter's hidden states of each block's draft slots to the
// per-slot verdicts of BlockScore: the vocabulary projection and its
// reductions (eval/vocab_chunks.h), then argmax drafts (DFlash 1) or the
// candidate selector's greedy walk (DFlash 2, dflash2-semantics §3),
// compared with the labels.
//
// Slots are scored in slices of kSliceWidth positions (1-2, 3-4, ...).
// With Positions::kToFirstMiss a block leaves after the slice holding its
// first miss, so the projection is paid only for what acceptance reads:
// accept lengths, histogram and conditional rates stay exact, while the
// per-position verdicts past the first miss are not computed (the vectors
// stop there). For DFlash 2 a block stays until its selector path, its
// unary argmax chain and its top-k coverage chain have all missed, so the
// unary and oracle accept lengths and the first-miss split stay exact too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "eval/vocab_chunks.h"
#include "model/drafter_model.h"

namespace dflash::eval {

// Slots per slice. Narrower slices score fewer rows past a block's first
// miss but take more vocabulary passes; on the bench fixture's 64-sample
// replay (one thread, the last layer finished per slice), 2 took 6 % less
// CPU than 4 and 3 % less than 3 (BENCHMARKS.md, "Replay against z-lab's
// loop"). EvalOptions::first_miss_slice (types/, which cannot see this) has
// the same default.
inline constexpr int64_t kSliceWidth = 2;

// Which slots are scored.
enum class Positions { kAll, kToFirstMiss };

struct BlockScore {
  // Slots j = 1..positions exist (a + j < end, at most B - 1). The vectors
  // below hold slots 1..measured(): all of them, or under kToFirstMiss the
  // slots up to the slice where the block's chains missed.
  int64_t positions = 0;
  std::vector<uint8_t> correct;      // draft_j == label
  std::vector<float> cross_entropy;  // same length as correct, when asked for
  // DFlash 2, same length: unary argmax correct, label among the top-k
  // candidates, teacher-forced selector correct; path near-ties (< 1e-4).
  std::vector<uint8_t> unary_correct, covered, tf_correct;
  int64_t near_ties = 0;
  // Of slots 1..positions, labels the drafter can draft (all of them
  // without a reduced draft vocabulary).
  int64_t labels_in_vocab = 0;
  // Sampled acceptance: alpha[s][j - 1] per setting s for slots 1..positions
  // (anchor mode scores every slot when sampling is asked for).
  std::vector<std::vector<float>> alpha;

  int64_t measured() const { return static_cast<int64_t>(correct.size()); }
};

// What ScoreSlots reads besides the hidden states.
struct SlotInputs {
  at::Tensor labels;   // [nb, J] int64, host: t[a + j] or -1 where absent
  at::Tensor anchors;  // [nb] int64, host: t[a] (the selector's first predecessor)
  const model::SelectorWeights* selector = nullptr;  // DFlash 2, else nullptr
};

// Replay's pipelined scoring (DFlash 1 argmax drafts, acceptance only): a
// block waits with its slot states for its next slice, and one vocabulary
// pass scores the next slice of every waiting block, whichever forward drew
// it. A pass streams the whole lm_head whatever its rows (1 row cost 8.7 ms
// and 128 rows 51 ms at V = 32000, H = 512 on one CPU thread), so a step
// pays one pass instead of one per slice.
struct PendingSlots {
  at::Tensor hidden;            // [J, H] slots 1..J, lm_head's dtype and device
  at::Tensor heads;             // defined: hidden is the last layer's input (model
                                // dtype) and these its heads [J, nh * d]
                                // (model::DeferredBlocks)
  std::vector<int64_t> labels;  // [J] t[a + j], -1 where absent
  BlockScore score;             // positions and labels_in_vocab set; correct grows
  // Every slot scored, or a miss among them.
  bool done() const {
    return score.measured() >= score.positions ||
           std::find(score.correct.begin(), score.correct.end(), 0) != score.correct.end();
  }
};

// Each block of hidden [nb, J, H] (and heads [nb, J, nh * d] when the last
// layer's tail is deferred, else undefined) with its labels [nb, J] (host
// int64) as a PendingSlots.
std::vector<PendingSlots> StartPending(const at::Tensor& hidden, const at::Tensor& heads,
                                       const at::Tensor& labels, const VocabProjector& projector);

// One vocabulary pass: the next `width` slots (fewer at a block's end) of
// every item not done; when the items have heads (all of them, from one
// drafter's Draft), `drafter` first finishes just those slots
// (FinishRows). Throws c10::Error (callers run it under TorchGuard).
void ScoreNextSlices(const std::vector<PendingSlots*>& items, const VocabProjector& projector,
                     int64_t width, const model::DrafterModel* drafter = nullptr);

// hidden [nb, J, H]: slots 1..J of each block in lm_head's dtype and device.
// Throws c10::Error (callers run it under TorchGuard).
std::vector<BlockScore> ScoreSlots(const at::Tensor& hidden, const SlotInputs& in,
                                   const VocabProjector& projector, Positions positions,
                                   bool cross_entropy, int64_t slice_width = kSliceWidth);

}  // namespace dflash::eval
