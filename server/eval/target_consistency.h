// File: target_consistency.h
// The target-consistency check (docs/decision-metrics.md §1): does the
// resident target, applied to the dataset's captured final hidden state,
// reproduce the dataset's own next tokens? A greedy capture with the right
// target gives ~100%; a wrong target, a wrong naming family, features captured
// on the wrong side of the final norm or a sampled capture give much less.
// Evaluations that need the target's distribution (sampled acceptance) are
// refused below a threshold.
#pragma once

#include <string>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

inline constexpr double kDefaultMinTargetConsistency = 0.90;

// FailedPrecondition unless the target distribution can be computed: the
// dataset declares a final hidden state, its width is the target's hidden
// size and, unless the data says the norm was applied, the target's final
// norm is resident.
absl::Status CheckTargetDistributionInputs(const weights::TargetTensors& target,
                                           const data::EvalDataset& dataset);

// fp32 target logits [n, V] for final hidden rows h [n, H_t]:
// lm_head(final_norm(h)), the norm skipped when the data applied it.
// Throws c10::Error (callers run it under TorchGuard).
at::Tensor TargetLogits(const weights::TargetTensors& target, const at::Tensor& h,
                        bool norm_applied);

// Counts, over every sample, the positions p with p + 1 < L and
// loss_mask[p + 1] = 1, and those where argmax of TargetLogits(h[p]) is
// t[p + 1]. Rows go through the vocabulary projection in slices of at most
// max_logit_elements logits.
absl::StatusOr<types::TargetConsistency> ComputeTargetConsistency(
    const weights::TargetTensors& target, const data::EvalDataset& dataset,
    int64_t max_logit_elements = 8 << 20);

// FailedPrecondition naming the fraction, the pair and the likely causes when
// consistency.fraction < min_fraction; OK otherwise.
absl::Status RequireTargetConsistency(const types::TargetConsistency& consistency,
                                      double min_fraction, const std::string& target_name,
                                      const std::string& dataset_name);

}  // namespace dflash::eval
