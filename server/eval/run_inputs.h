// File: run_inputs.h
// What both evaluation modes (anchor_run.h, replay_run.h) and the range
// planning (part_ranges.h) read from the options and from each sample: the
// block size, how many samples run, a sample's loss mask and tokens on the
// host, which slots are scored, and a scored block as the metrics see it.
// Shared here so the modes count a sample and a block the same way.
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/ATen.h>

#include "data/eval_dataset.h"
#include "eval/metrics.h"
#include "eval/slot_scoring.h"
#include "model/drafter_model.h"
#include "types/eval_types.h"

namespace dflash::eval {

// The request's block size, else the drafter's.
int64_t BlockSize(const model::DrafterModel& drafter, const types::EvalOptions& options);

// First position with loss_mask == 1, or -1.
int64_t FirstResponse(const std::vector<uint8_t>& mask);

std::vector<uint8_t> MaskOnHost(const at::Tensor& mask);
std::vector<int64_t> TokensOnHost(const at::Tensor& ids);

// The samples evaluated: the dataset's, up to max_samples.
size_t NumSamples(const data::EvalDataset& dataset, const types::EvalOptions& options);

// The metrics' view of a scored block.
BlockOutcome Outcome(int64_t sample, int64_t anchor, BlockScore&& score, int64_t accept_cap);

// Which slots are scored and whether cross entropy is (anchor mode):
// replay reads only acceptance, so it stops at each block's first miss
// unless every position is asked for; anchor mode does when only
// acceptance is asked for.
Positions ScoredPositions(const types::EvalOptions& options);

// Registers a sample with its length, response start, loops and labels.
void BeginSample(MetricsAccumulator& acc, const data::DatasetSample& sample,
                 const std::vector<int64_t>& tokens, int64_t first_response);

}  // namespace dflash::eval
