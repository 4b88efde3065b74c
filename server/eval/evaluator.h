// File: evaluator.h
// Block-acceptance evaluation of one drafter on one dataset against the
// target's embed_tokens and lm_head (dflash-semantics §5): anchor mode (all
// blocks of a sequence in one batched forward, chunked to a memory budget)
// and replay mode (the greedy speculative-decode walk, the current block of
// many sequences batched together).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/eval_part.h"
#include "eval/placement.h"
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
                             const types::EvalOptions& options);

// The samples split into contiguous ranges (options.shards, else one per
// slot; a streamed dataset in chunks within its budget, each read while the
// one before it is scored), the ranges run on the slots at once, and their
// counts merged in sample order: counts equal one pass's, floating sums
// within rounding. Checks compatibility against the first slot.
// A fleet shard (options.sample_end > 0) evaluates only the samples
// [sample_begin, sample_end) and its result also holds its merged part
// (EvalResult::part_state) for the parent job to merge.
absl::StatusOr<types::EvalResult> Evaluate(const Placement& placement,
                                           const data::EvalDataset& dataset,
                                           const types::EvalOptions& options,
                                           const types::ProgressFn& progress = nullptr);

// Parts of contiguous sample ranges, in sample order, merged into one.
// InvalidArgument when there is none or two hold the same sample.
absl::StatusOr<EvalPart> MergeParts(std::vector<EvalPart> parts);

// The result of an evaluation whose parts ran (here, or as a fleet's shards
// on other servers): the parts merged in sample order and finished as
// Evaluate finishes its own, against the first slot's drafter and target
// (layer-numbering check, slices, invariants); `where` lists the shards,
// `start` is when the evaluation began (compute_seconds).
absl::StatusOr<types::EvalResult> FinishParts(const Placement& placement,
                                              const data::EvalDataset& dataset,
                                              const types::EvalOptions& options,
                                              std::vector<EvalPart> parts,
                                              std::vector<types::ShardPlacement> where,
                                              std::chrono::steady_clock::time_point start);

// One slot, the caller's threads.
absl::StatusOr<types::EvalResult> Evaluate(const model::DrafterModel& drafter,
                                           const weights::TargetTensors& target,
                                           const data::EvalDataset& dataset,
                                           const types::EvalOptions& options,
                                           const types::ProgressFn& progress = nullptr);

}  // namespace dflash::eval
