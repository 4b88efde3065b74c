// File: anchors.cc
#include "eval/anchors.h"

#include <algorithm>
#include <random>
#include <utility>

namespace dflash::eval {
namespace {

// splitmix64's mixer: each sample's anchor seed from the run's seed.
uint64_t MixSeed(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Uniform in [0, bound) by rejection; std::uniform_int_distribution is
// implementation-defined, and picks must not change with the standard library.
uint64_t UniformBelow(std::mt19937_64& rng, uint64_t bound) {
  const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
  for (;;) {
    const uint64_t r = rng();
    if (r >= threshold) return r % bound;
  }
}

}  // namespace

std::vector<int64_t> EligibleAnchors(const uint8_t* loss_mask, int64_t length) {
  std::vector<int64_t> out;
  for (int64_t a = 0; a + 1 < length; ++a) {
    if (loss_mask[a] != 0 && loss_mask[a + 1] != 0) out.push_back(a);
  }
  return out;
}

std::vector<int64_t> SelectAnchors(const uint8_t* loss_mask, int64_t length,
                                   types::AnchorStrategy strategy, int64_t max_blocks,
                                   uint64_t seed, int64_t sample_index) {
  std::vector<int64_t> eligible = EligibleAnchors(loss_mask, length);
  const int64_t n = static_cast<int64_t>(eligible.size());
  const int64_t m = max_blocks > 0 ? std::min(max_blocks, n) : n;
  if (m == n) return eligible;  // every strategy takes them all
  if (strategy == types::AnchorStrategy::kAll) {
    eligible.resize(m);  // max_blocks caps "all" to the first m
    return eligible;
  }
  std::vector<int64_t> out;
  out.reserve(m);
  if (strategy == types::AnchorStrategy::kEven) {
    for (int64_t k = 0; k < m; ++k) out.push_back(eligible[k * n / m]);
    return out;
  }
  // kRandom: partial Fisher-Yates over the eligible list.
  std::mt19937_64 rng(MixSeed(seed ^ MixSeed(static_cast<uint64_t>(sample_index))));
  for (int64_t i = 0; i < m; ++i) {
    const int64_t j = i + static_cast<int64_t>(UniformBelow(rng, static_cast<uint64_t>(n - i)));
    std::swap(eligible[i], eligible[j]);
  }
  out.assign(eligible.begin(), eligible.begin() + m);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace dflash::eval
