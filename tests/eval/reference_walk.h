// File: reference_walk.h
// Test-side expectations for the evaluator, computed independently of
// server/eval: drafts from the plain float64 reference drafter
// (tests/model/reference_drafter.h) and the anchor / replay walks written
// straight from dflash-semantics.md §5 and dflash2-semantics.md §4, with
// their own counting (no MetricsAccumulator).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "test_util/tiny_world.h"
#include "types/semantics.h"

namespace dflash::eval::testing {

// One block's reference drafts: slot j = 1..len-1.
struct RefBlock {
  std::vector<int64_t> drafts;
  std::vector<std::vector<double>> logits;  // [len-1][V]
  double min_margin = 1e300;                // smallest top-1 minus top-2 logit
};

class ReferenceDrafts {
 public:
  explicit ReferenceDrafts(const dflash::testing::TinyWorld& w) : w_(w) {}
  // A block of `len` slots (the first holds t[anchor]) at `anchor` of
  // sequence `seq`, every slot seeing every other (no causal layer, no
  // window in the tiny config).
  const RefBlock& Block(size_t seq, int64_t anchor, int64_t len);

 private:
  const dflash::testing::TinyWorld& w_;
  std::map<std::tuple<size_t, int64_t, int64_t, int64_t>, RefBlock> cache_;
};

struct ExpectedBlock {
  size_t seq = 0;
  int64_t anchor = 0;
  std::vector<uint8_t> correct;  // existing positions only
  std::vector<double> ce;        // same length
  int64_t n = 0;                 // leading matches
  int64_t value = 0;             // the recorded accept value
};

struct Expected {
  std::vector<ExpectedBlock> blocks;                 // in sample, then anchor order
  std::vector<int64_t> sample_blocks, sample_total;  // per sample
  double min_margin = 1e300;                         // over compared positions
};

struct WalkOptions {
  types::Semantics semantics = types::Semantics::kZlabCurrent;
  int64_t block_size = 4;
  int64_t max_new_tokens = 0;
  int64_t max_blocks = 0;
  size_t samples = 0;  // 0 = all
};

// Replay: s = P; draft; accept leading matches n; record and move (§5 /
// dflash2 §4 by semantics).
Expected ExpectReplay(ReferenceDrafts& ref, const dflash::testing::TinyWorld& w,
                      const WalkOptions& o);
// Anchor mode with every eligible anchor (loss_mask[a] = loss_mask[a+1] = 1).
Expected ExpectAnchorAll(ReferenceDrafts& ref, const dflash::testing::TinyWorld& w,
                         const WalkOptions& o);

// Rewrites each response so that the zlab-2025 replay walk with block size B
// accepts a chosen number of drafts per block (cycling through 0..B-1), so
// the walks have long accepted runs instead of chance matches.
void DesignTokens(dflash::testing::TinyWorld& w, int64_t B);

}  // namespace dflash::eval::testing
