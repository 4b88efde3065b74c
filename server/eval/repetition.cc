// File: repetition.cc
// One pass per period: a run of r positions with t[i] == t[i - p] makes the
// segment [start - p, start + r) periodic, r + p tokens long.
#include "eval/repetition.h"

#include <algorithm>

namespace dflash::eval {

std::vector<uint8_t> LoopMask(const std::vector<int64_t>& tokens, int64_t first_response) {
  const int64_t L = static_cast<int64_t>(tokens.size());
  std::vector<uint8_t> mask(L, 0);
  if (first_response < 0 || first_response >= L) return mask;
  for (int64_t p = 1; p <= kMaxLoopPeriod; ++p) {
    int64_t run = 0;  // matches ending at i - 1
    for (int64_t i = first_response + p; i <= L; ++i) {
      if (i < L && tokens[i] == tokens[i - p]) {
        ++run;
        continue;
      }
      const int64_t span = run + p;  // the segment [i - run - p, i)
      if (run > 0 && span >= kMinLoopRepeats * p && span >= kMinLoopTokens) {
        std::fill(mask.begin() + (i - span), mask.begin() + i, uint8_t{1});
      }
      run = 0;
    }
  }
  return mask;
}

}  // namespace dflash::eval
