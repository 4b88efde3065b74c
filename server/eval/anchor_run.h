// File: anchor_run.h
// Anchor mode (dflash-semantics §5): every sample's anchors selected up
// front (so progress knows the total), then all blocks of a group of
// samples scored in batched forwards, chunked to the scorer's memory
// budget, and counted in sample and anchor order.
#pragma once

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/block_scorer.h"
#include "eval/eval_part.h"
#include "types/eval_types.h"

namespace dflash::eval {

// The samples of `dataset` (up to options.max_samples) in anchor mode.
absl::StatusOr<EvalPart> RunAnchor(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const types::EvalOptions& options,
                                   const types::ProgressFn& progress);

}  // namespace dflash::eval
