// File: eval_part.h
// One evaluated part of an evaluation's samples (issue 30): a shard on a
// device slot, a streamed chunk, or a fleet shard run by another server.
// Parts of contiguous sample ranges merged in range order finish to the
// result of one pass (evaluator.h, FinishParts). Pure C++, no torch, so that
// a fleet's parent job can rebuild its shards' parts from the store
// (part_state.h).
#pragma once

#include <cstdint>
#include <vector>

#include "eval/metrics.h"
#include "eval/sampled_acceptance.h"
#include "types/eval_types.h"

namespace dflash::eval {

struct EvalPart {
  EvalPart(int64_t block_size, const std::vector<types::SamplingSetting>& settings)
      : metrics(block_size), sampled(settings, block_size) {}
  MetricsAccumulator metrics;
  SampledAccumulator sampled;
  int64_t context_positions = 0;  // see EvalResult::context_positions
};

}  // namespace dflash::eval
