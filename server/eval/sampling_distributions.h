// File: sampling_distributions.h
// The processed next-token distributions of speculative sampling and the
// per-position acceptance probability alpha = sum_x min(p(x), q(x))
// (docs/decision-metrics.md §2). Processing as serving engines apply it:
// logits / T, then top-k, then top-p, then renormalise; T = 0 is the one-hot
// argmax (lowest id on exact ties, as argmax). All tensors fp32.
#pragma once

#include <vector>

#include <ATen/core/Tensor.h>

#include "model/drafter_model.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

// probs [n, V] of logits [n, V] under `s`. Throws c10::Error.
at::Tensor ProcessedProbs(const at::Tensor& logits, const SamplingSetting& s);

// What the alphas of a set of drafted slots (rows) need.
struct SlotAlphaInputs {
  at::Tensor drafter_hidden;  // [rows, H] final-normed drafter hidden, lm_head's dtype
  at::Tensor target_hidden;   // [rows, H_t] captured final hidden at the slot's position - 1
  bool norm_applied = false;  // target_hidden already final-normed
  // DFlash 2: the teacher-forced predecessor of each slot (t_a for slot 1,
  // else the label of the slot before); undefined for DFlash 1.
  at::Tensor predecessors;  // [rows] int64
};

// alpha [rows, settings] fp32. DFlash 1: q is the drafter's processed
// logits (multiplier and softcap applied first, as the drafter emits them).
// DFlash 2: q is softmax(S_j(pred, .) / T) over the slot's top-k candidates
// (one-hot at the selector's choice for T = 0); the request's top-p and top-k
// do not apply to it (dflash2-semantics §3). Rows go through the vocabulary
// projection in slices of at most max_logit_elements logits. Throws c10::Error.
at::Tensor SlotAlphas(const SlotAlphaInputs& in, const model::DrafterModel& drafter,
                      const weights::TargetTensors& target,
                      const std::vector<SamplingSetting>& settings,
                      int64_t max_logit_elements = 8 << 20);

}  // namespace dflash::eval
