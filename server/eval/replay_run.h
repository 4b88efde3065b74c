// File: replay_run.h
// Replay mode (dflash-semantics §5): the greedy speculative-decode walk of
// each sequence from its first response token, one block per step, the
// current blocks of a group of walks scored together in one batched
// forward against the group's context K/V (computed once per group).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/block_scorer.h"
#include "eval/eval_part.h"
#include "types/eval_types.h"

namespace dflash::eval {

// The samples of `dataset` (up to options.max_samples) in replay mode.
absl::StatusOr<EvalPart> RunReplay(const BlockScorer& scorer, const data::EvalDataset& dataset,
                                   const types::EvalOptions& options,
                                   const types::ProgressFn& progress);

// An upper bound on the blocks the walk of a sequence of L tokens whose
// response starts at P >= 0 drafts (0 when it drafts none): a range's
// total before it runs (part_ranges.h), as its own first report gives it.
int64_t ReplayBlocksBound(int64_t L, int64_t P, const types::EvalOptions& options);

}  // namespace dflash::eval
