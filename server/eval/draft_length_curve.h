// File: draft_length_curve.h
// The greedy draft-length curve of an anchor-mode pass
// (docs/decision-metrics.md §3): the accept length the drafter would reach if
// only its first k of B-1 positions were proposed. Pure C++.
#pragma once

#include <cstdint>
#include <vector>

namespace dflash::eval {

// Pooled accept length with the first k positions proposed, k = 1..B-1,
// from the anchor-mode histogram of leading matches n (hist[n], n = 0..B-1):
// sum_n hist[n] (min(n, k) + 1) / sum_n hist[n]. Empty without blocks.
std::vector<double> DraftLengthCurve(const std::vector<int64_t>& histogram);

}  // namespace dflash::eval
