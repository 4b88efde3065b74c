// File: candidate_selector.h
// DFlash 2's candidate selector, greedy (dflash2-semantics §3): each slot
// picks among the top-k candidates of its logits by
//   S_j(p, b) = U_j(b) + sum_r A[p, r] * eta_j[r] * Bc[b, r],
// walking the slots in order with p = the previous slot's choice (the anchor
// token for slot 1). All blocks walk together, slot by slot; scores are fp32.
#pragma once

#include <ATen/core/Tensor.h>

#include "model/drafter_model.h"

namespace dflash::model {

// Scores closer than this count as a near tie (reported, not broken
// differently: exact ties go to the lower token id).
inline constexpr double kNearTieMargin = 1e-4;

struct SelectorWalk {
  at::Tensor path;            // [nb, J] int64: the selector's draft per slot
  at::Tensor teacher_forced;  // [nb, J] int64: its choice given the gold predecessor
  at::Tensor near_tie;        // [nb, J] bool: best two path scores within kNearTieMargin
};

// S(p, .) for one slot of every block: eta [nb, r] fp32, predecessors [nb],
// unary [nb, k] fp32 (the candidates' logits), candidates [nb, k] ids.
// Returns [nb, k] fp32.
at::Tensor SelectorScores(const SelectorWeights& w, const at::Tensor& eta,
                          const at::Tensor& predecessors, const at::Tensor& unary,
                          const at::Tensor& candidates);

// The candidate with the highest score, exact ties to the lower token id: [nb].
at::Tensor ChooseCandidate(const at::Tensor& scores, const at::Tensor& candidates);

// hidden [nb, J, H]: final-normed hidden of slots 1..J; unary, candidates
// [nb, J, k]: top-k logits and ids per slot; anchors [nb]: t_a; labels
// [nb, J] (-1 where absent): slot j+1's teacher-forced predecessor is
// labels[:, j - 1] (the anchor for slot 1). Throws c10::Error (callers run
// it under TorchGuard).
SelectorWalk WalkSelector(const SelectorWeights& w, const at::Tensor& hidden,
                          const at::Tensor& unary, const at::Tensor& candidates,
                          const at::Tensor& anchors, const at::Tensor& labels);

}  // namespace dflash::model
