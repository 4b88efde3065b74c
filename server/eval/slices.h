// File: slices.h
// A result cut into slices (docs/slices.md): by the dataset's per-sample
// metadata (category, language, thinking), by anchor position (context
// length buckets) and by repetition (blocks in a repeating loop or not),
// each with its pooled accept length, tau and 95% bootstrap intervals over
// the slice's samples. Torch-free: it reads the per-sample counts only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "types/eval_types.h"

namespace dflash::eval {

// "0-512", "512-2k", "2k-8k", "8k+".
std::string ContextBucketName(int bucket);

// Every slice with at least one block, in the order category, language,
// thinking (values sorted), context (bucket order), continuation ("loop",
// "no loop"; only when some block is a loop block). Intervals when
// resamples > 0 and the slice has two or more samples.
std::vector<types::SliceResult> Slices(const types::EvalResult& result, int64_t resamples,
                                       uint64_t seed);

// Sets result->slices from options.ci / ci_resamples / seed, and warns when
// loop blocks carry a large share (>= kLoopWarnShare) of the accept values.
inline constexpr double kLoopWarnShare = 0.2;
void AddSlices(const types::EvalOptions& options, types::EvalResult* result);

}  // namespace dflash::eval
