// File: anchors.h
// Anchor selection for anchor mode. An anchor is a position a with
// loss_mask[a] == loss_mask[a+1] == 1 (a+1 < L).
//   all:    every eligible anchor, in order (the first max_blocks when set)
//   even:   m = min(max_blocks, n) of the n eligible anchors, the k-th being
//           eligible[floor(k * n / m)], k = 0..m-1 (the first always taken)
//   random: m anchors drawn without replacement with a PRNG seeded by
//           (seed, sample index), returned sorted: reproducible per sample
//           and independent of which other samples are evaluated. The
//           PRNG is std::mt19937_64 seeded with
//           splitmix64(seed ^ splitmix64(sample_index)), drawing by rejection
//           so picks do not depend on the standard library.
// max_blocks <= 0 means no limit; when m == n every strategy returns all.
#pragma once

#include <cstdint>
#include <vector>

#include "types/eval_types.h"

namespace dflash::eval {

std::vector<int64_t> EligibleAnchors(const uint8_t* loss_mask, int64_t length);

std::vector<int64_t> SelectAnchors(const uint8_t* loss_mask, int64_t length,
                                   types::AnchorStrategy strategy, int64_t max_blocks,
                                   uint64_t seed, int64_t sample_index);

}  // namespace dflash::eval
