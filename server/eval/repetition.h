// File: repetition.h
// Degenerate continuations (docs/slices.md): which response tokens lie in a
// repeating loop. High acceptance on a response that repeats itself says
// little about the drafter (z-lab/dflash issue #91), so results report the
// loop's share and the accept length without those blocks.
//
// A loop is a segment t[s, e) of the response (s >= P) with a period p in
// 1..kMaxLoopPeriod (t[i] == t[i - p] for every i in [s + p, e)) that spans
// at least kMinLoopRepeats periods (e - s >= 3p) and kMinLoopTokens tokens
// (e - s >= 16). Every maximal such run, for every p, is marked.
#pragma once

#include <cstdint>
#include <vector>

namespace dflash::eval {

inline constexpr int64_t kMaxLoopPeriod = 32;
inline constexpr int64_t kMinLoopRepeats = 3;
inline constexpr int64_t kMinLoopTokens = 16;

// [L] 1 where the token at that position lies in a loop; positions before
// first_response (the prompt) are never marked. first_response < 0: none.
std::vector<uint8_t> LoopMask(const std::vector<int64_t>& tokens, int64_t first_response);

}  // namespace dflash::eval
