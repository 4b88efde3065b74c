// File: evaluator.h
// Block-acceptance evaluation of one drafter on one dataset against the
// target's embed_tokens and lm_head (dflash-semantics §5): anchor mode (all
// blocks of a sequence in one batched forward, chunked to a memory budget)
// and replay mode (the greedy speculative-decode walk, the current block of
// many sequences batched together).
#pragma once

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "model/drafter_model.h"
#include "types/eval_types.h"
#include "weights/target_tensors.h"

namespace dflash::eval {

// Checked before any compute. FailedPrecondition when the three resident
// objects do not fit one another: missing layers, fc width != K x H_t,
// drafter hidden != target hidden, mask token outside the vocabulary, a
// DFlash 2 selector over another vocabulary, objects on two devices, or
// a DFlash 2 drafter under zlab-2025 semantics. InvalidArgument when the
// request's own block size is outside [2, the drafter's block size] (the
// request must change, not the server's state).
absl::Status CheckCompatible(const model::DrafterModel& drafter,
                             const weights::TargetTensors& target, const data::EvalDataset& dataset,
                             const EvalOptions& options);

absl::StatusOr<EvalResult> Evaluate(const model::DrafterModel& drafter,
                                    const weights::TargetTensors& target,
                                    const data::EvalDataset& dataset, const EvalOptions& options,
                                    const ProgressFn& progress = nullptr);

}  // namespace dflash::eval
