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
at::Tensor ProcessedProbs(const at::Tensor& logits, const types::SamplingSetting& s);

// alpha [n] of DFlash 1 rows under s.policy (kSample, kArgmax, kMatch) from
// the target's processed p [n, V] and the drafter's logits [n, V]: the
// formulas of docs/served-acceptance.md, for the hand-computed tests.
at::Tensor Dflash1Alpha(const at::Tensor& target_probs, const at::Tensor& drafter_logits,
                        const types::SamplingSetting& s);

// What the alphas of a set of drafted slots (rows) need.
struct SlotAlphaInputs {
  at::Tensor drafter_hidden;  // [rows, H] final-normed drafter hidden, lm_head's dtype
  at::Tensor target_hidden;   // [rows, H_t] captured final hidden at the slot's position - 1
  bool norm_applied = false;  // target_hidden already final-normed
  // DFlash 2: the teacher-forced predecessor of each slot (t_a for slot 1,
  // else the label of the slot before); undefined for DFlash 1.
  at::Tensor predecessors;  // [rows] int64
};

// alpha [rows, settings] fp32, each setting under its own (resolved) policy
// (types/eval_types.h, ProposalPolicy). DFlash 1's q is the drafter's
// processed logits (multiplier and softcap first, as the drafter emits
// them); DFlash 2's selector q is softmax(S_j(pred, .) / T) over the slot's
// top-k candidates (one-hot at the selector's choice for T = 0), which the
// request's top-p and top-k do not touch (dflash2-semantics §3); DFlash 2's
// kSample q is its unary logits', kArgmax proposes the selector's choice.
// Rows go through the vocabulary projection once, in slices of at most
// max_logit_elements logits, for every setting and policy. Throws c10::Error.
at::Tensor SlotAlphas(const SlotAlphaInputs& in, const model::DrafterModel& drafter,
                      const weights::TargetTensors& target,
                      const std::vector<types::SamplingSetting>& settings,
                      int64_t max_logit_elements = 8 << 20);

}  // namespace dflash::eval
