// File: same_counts.h
// Two results of the same evaluation, one pass against shards or chunks
// merged (issue 30): every count, ratio and per-sample summary equal; mean
// cross entropy within `ce_tolerance` (float32 values of other batches).
#pragma once

#include "types/eval_types.h"

namespace dflash::eval::testing {

void ExpectSameCounts(const types::EvalResult& a, const types::EvalResult& b, double ce_tolerance);

}  // namespace dflash::eval::testing
