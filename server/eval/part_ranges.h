// File: part_ranges.h
// How an evaluation's samples are cut into the ranges its parts run
// (issue 30), and each range's totals before any work, so that the caller
// may refuse on them (limits) or show them.
#pragma once

#include <vector>

#include "data/eval_dataset.h"
#include "eval/placement.h"
#include "eval/shard_plan.h"
#include "types/eval_types.h"

namespace dflash::eval {

// The ranges of the samples `within`, in dataset positions: options.shards
// ranges (else one per slot) balanced by tokens; for a streamed dataset,
// chunks within each worker's share of the stream budget (it holds the
// chunk it scores, its context K/V and the chunk it reads ahead).
std::vector<SampleRange> PartRanges(const Placement& placement, const data::EvalDataset& dataset,
                                    const types::EvalOptions& options, const SampleRange& within);

// Each range's totals before it starts, as its own first report will give
// them (anchor mode's selected anchors, replay's bound on its walks); only
// the sample count for a streamed dataset or a single range, which report
// their own before any work.
std::vector<types::EvalProgress> InitialTotals(const data::EvalDataset& dataset,
                                               const types::EvalOptions& options,
                                               const std::vector<SampleRange>& ranges);

}  // namespace dflash::eval
