// File: parts_run.h
// An evaluation's parts run on its device slots (issue 30): the sample
// ranges (part_ranges.h) shared out among one worker per slot, each worker
// scoring its ranges one at a time with a scorer of its own (a streamed
// dataset's next chunk read while the current one is scored), progress
// summed over the parts, and the first failure in sample order stopping
// the rest.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "data/eval_dataset.h"
#include "eval/eval_part.h"
#include "eval/placement.h"
#include "eval/shard_plan.h"
#include "types/eval_types.h"

namespace dflash::eval {

// What RunParts gives: the parts in sample order and where each ran.
struct PartsRun {
  std::vector<EvalPart> parts;
  std::vector<types::ShardPlacement> where;
};

// The ranges of the samples `within` (all of them, or a fleet shard's
// range), how they run (see Evaluate in evaluator.h), in sample order.
absl::StatusOr<PartsRun> RunParts(const Placement& placement, const data::EvalDataset& dataset,
                                  const types::EvalOptions& options, const SampleRange& within,
                                  const types::ProgressFn& progress);

}  // namespace dflash::eval
