// File: shard_plan.h
// Where an evaluation's samples split (issue 30): contiguous sample ranges,
// so that parts evaluated apart and merged in range order give the result
// of one pass (metrics.h, MetricsAccumulator::Merge). Pure C++, no torch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace dflash::eval {

struct SampleRange {
  size_t begin = 0, end = 0;  // [begin, end) in dataset order
  size_t size() const { return end - begin; }
};

// At most `parts` non-empty ranges covering [0, weights.size()) whose summed
// weights (a sample's tokens) are as even as contiguous cuts allow: range k
// ends at the first sample where the running sum reaches (k + 1) / parts of
// the total. parts <= 1 or one sample: one range.
std::vector<SampleRange> SplitEvenly(const std::vector<int64_t>& weights, int64_t parts);

// Ranges covering [0, weights.size()) whose summed weights (a sample's bytes)
// stay at most `cap`; a sample heavier than `cap` is a range of its own.
std::vector<SampleRange> SplitUnderCap(const std::vector<int64_t>& weights, int64_t cap);

}  // namespace dflash::eval
