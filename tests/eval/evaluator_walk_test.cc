// Evaluate() on a tiny in-memory drafter and target and a tiny dataset
// written to disk (evaluator_fixture.h): which blocks anchor mode scores,
// the replay walk under zlab-current and zlab-2025 (block count, anchors,
// the totals L' - P - 1 / L' - P), max_new_tokens / max_blocks /
// max_samples, chunking and scoring to the first miss, and every metric
// against an independent computation from the float64 reference drafter's
// argmax (tests/eval/reference_walk.h).
#include "eval/evaluator.h"

#include <algorithm>
#include <string>
#include <vector>

#include "eval/evaluator_fixture.h"
#include "eval/reference_walk.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::eval {
namespace {

using ::dflash::eval::testing::EvaluatorTest;
using ::dflash::eval::testing::ExpectAnchorAll;
using ::dflash::eval::testing::Expected;
using ::dflash::eval::testing::ExpectReplay;
using ::dflash::eval::testing::WalkOptions;
using ::testing::ElementsAre;
using types::Semantics;

// The designed tokens make the walk accept long runs: the test would prove
// little if every block missed at once.
TEST_F(EvaluatorTest, DesignedWalkAcceptsDrafts) {
  WalkOptions w;
  w.semantics = Semantics::kZlab2025;
  const Expected e = ExpectReplay(*ref_, *world_, w);
  int64_t accepted = 0;
  for (const auto& b : e.blocks) accepted += b.n;
  EXPECT_GT(accepted, static_cast<int64_t>(e.blocks.size()));
}

TEST_F(EvaluatorTest, ReplayZlabCurrentMatchesReferenceWalk) {
  ASSERT_OK_AND_ASSIGN(types::EvalResult r,
                       Run(Options(types::Mode::kReplay, Semantics::kZlabCurrent)));
  WalkOptions w;
  w.semantics = Semantics::kZlabCurrent;
  const Expected e = ExpectReplay(*ref_, *world_, w);
  ExpectMetrics(r, e, /*anchor=*/false);
  EXPECT_EQ(r.mode, types::Mode::kReplay);
  EXPECT_EQ(r.semantics, "zlab-current");
  EXPECT_EQ(r.family, "DFlash 1");
  EXPECT_EQ(r.block_size, kB);
  EXPECT_EQ(r.device, "cpu");
  // zlab-current: a sample's recorded values add up to L - P - 1.
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    const int64_t L = static_cast<int64_t>(world_->tokens[s].size());
    EXPECT_EQ(r.per_sample[s].accepted_total, L - world_->spec.prompts[s] - 1) << s;
  }
  // The walk's anchors: P, then each previous anchor plus its value.
  size_t i = 0;
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    int64_t pos = world_->spec.prompts[s];
    for (; i < e.blocks.size() && e.blocks[i].seq == s; ++i) {
      EXPECT_EQ(e.blocks[i].anchor, pos);
      pos += e.blocks[i].value;
    }
    EXPECT_EQ(pos, static_cast<int64_t>(world_->tokens[s].size()) - 1);
  }
}

TEST_F(EvaluatorTest, ReplayZlab2025MatchesReferenceWalk) {
  ASSERT_OK_AND_ASSIGN(types::EvalResult r,
                       Run(Options(types::Mode::kReplay, Semantics::kZlab2025)));
  WalkOptions w;
  w.semantics = Semantics::kZlab2025;
  ExpectMetrics(r, ExpectReplay(*ref_, *world_, w), /*anchor=*/false);
  EXPECT_EQ(r.semantics, "zlab-2025");
  // zlab-2025: the values add up to L - P (the last block may sit at L - 1).
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    const int64_t L = static_cast<int64_t>(world_->tokens[s].size());
    EXPECT_EQ(r.per_sample[s].accepted_total, L - world_->spec.prompts[s]) << s;
  }
  // The designed tokens: every block accepts 1 or 3 (cycling), so the walk
  // of sample 0 (P = 3, L = 14) is 3 -> 5 -> 9 -> 11 -> 15: 4 blocks.
  EXPECT_EQ(r.per_sample[0].blocks, 4);
}

TEST_F(EvaluatorTest, ReplayMaxNewTokensShortensTheSequence) {
  for (Semantics sem : {Semantics::kZlabCurrent, Semantics::kZlab2025}) {
    SCOPED_TRACE(types::SemanticsName(sem));
    types::EvalOptions o = Options(types::Mode::kReplay, sem);
    o.max_new_tokens = 5;
    ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o));
    WalkOptions w;
    w.semantics = sem;
    w.max_new_tokens = 5;
    ExpectMetrics(r, ExpectReplay(*ref_, *world_, w), false);
    for (size_t s = 0; s < world_->tokens.size(); ++s) {
      const int64_t L = static_cast<int64_t>(world_->tokens[s].size());
      const int64_t P = world_->spec.prompts[s];
      const int64_t end = std::min(L, P + 5);  // L'
      EXPECT_EQ(r.per_sample[s].accepted_total, end - P - (sem == Semantics::kZlabCurrent ? 1 : 0))
          << s;
    }
  }
}

TEST_F(EvaluatorTest, ReplayMaxBlocksAndMaxSamples) {
  types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
  o.max_blocks = 2;
  o.max_samples = 3;
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o));
  WalkOptions w;
  w.max_blocks = 2;
  w.samples = 3;
  const Expected e = ExpectReplay(*ref_, *world_, w);
  ExpectMetrics(r, e, false);
  EXPECT_THAT(e.sample_blocks, ElementsAre(2, 2, 0));  // sample 2: P = 8 = L - 1
  EXPECT_EQ(r.per_sample.size(), 3u);
}

TEST_F(EvaluatorTest, AnchorAllScoresEveryEligibleAnchor) {
  for (Semantics sem : {Semantics::kZlabCurrent, Semantics::kZlab2025}) {
    SCOPED_TRACE(types::SemanticsName(sem));
    ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(Options(types::Mode::kAnchor, sem)));
    WalkOptions w;
    w.semantics = sem;
    const Expected e = ExpectAnchorAll(*ref_, *world_, w);
    ExpectMetrics(r, e, /*anchor=*/true);
    // Eligible anchors are P .. L-2: L - P - 1 blocks per sample.
    EXPECT_THAT(e.sample_blocks, ElementsAre(10, 8, 0, 11));
    // Positions: a block at a has min(B - 1, L - 1 - a) positions; position
    // j exists in the blocks with a <= L - 1 - j.
    EXPECT_EQ(r.positions[0].counted, 29);
    EXPECT_EQ(r.positions[1].counted, 29 - 3);
    EXPECT_EQ(r.positions[2].counted, 29 - 6);
  }
}

TEST_F(EvaluatorTest, AnchorEvenWithMaxBlocksPicksSpreadAnchors) {
  types::EvalOptions o = Options(types::Mode::kAnchor, Semantics::kZlabCurrent);
  o.anchors = types::AnchorStrategy::kEven;
  o.max_blocks = 3;
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o));
  // 10, 8, 0 and 11 eligible anchors -> 3, 3, 0, 3 blocks.
  EXPECT_EQ(r.blocks, 9);
  EXPECT_EQ(r.per_sample[0].blocks, 3);
  EXPECT_EQ(r.per_sample[2].blocks, 0);
  EXPECT_EQ(r.samples, 3);
}

TEST_F(EvaluatorTest, ChunkSizeDoesNotChangeResults) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    types::EvalOptions big = Options(mode, Semantics::kZlabCurrent);
    types::EvalOptions tiny = big;
    tiny.max_chunk_elements = 1;  // one block per forward
    ASSERT_OK_AND_ASSIGN(types::EvalResult a, Run(big));
    ASSERT_OK_AND_ASSIGN(types::EvalResult b, Run(tiny));
    EXPECT_EQ(a.blocks, b.blocks);
    EXPECT_EQ(a.accepted_histogram, b.accepted_histogram);
    for (size_t j = 0; j < a.positions.size(); ++j) {
      EXPECT_EQ(a.positions[j].correct, b.positions[j].correct);
      EXPECT_NEAR(a.positions[j].mean_cross_entropy, b.positions[j].mean_cross_entropy, 1e-5);
    }
  }
}

// Replay by default, and anchor mode with metrics=acceptance, score each
// block to its first miss: every number acceptance reads equals the full
// computation's, under both semantics and with slices of 1, 2 and 4 slots
// (the tiny blocks have 3 draft slots).
TEST_F(EvaluatorTest, ScoringToTheFirstMissKeepsAcceptanceExact) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    for (Semantics sem : {Semantics::kZlabCurrent, Semantics::kZlab2025}) {
      for (int64_t slice : {1, 2, 4}) {
        SCOPED_TRACE(::testing::Message() << (mode == types::Mode::kAnchor ? "anchor " : "replay ")
                                          << types::SemanticsName(sem) << " slice " << slice);
        types::EvalOptions full = Options(mode, sem);
        full.full_positions = true;
        full.metrics = types::MetricSet::kAcceptance;
        types::EvalOptions cut = full;
        cut.full_positions = false;
        cut.first_miss_slice = slice;
        ASSERT_OK_AND_ASSIGN(types::EvalResult a, Run(full));
        ASSERT_OK_AND_ASSIGN(types::EvalResult b, Run(cut));
        EXPECT_FALSE(a.positions_to_first_miss);
        EXPECT_TRUE(b.positions_to_first_miss);
        EXPECT_THAT(b.warnings, ::testing::Contains(::testing::HasSubstr("first miss")));
        EXPECT_EQ(a.blocks, b.blocks);
        EXPECT_EQ(a.tokens_scored, b.tokens_scored);
        EXPECT_EQ(a.accepted_histogram, b.accepted_histogram);
        EXPECT_DOUBLE_EQ(a.accept_length_pooled, b.accept_length_pooled);
        EXPECT_DOUBLE_EQ(a.tau, b.tau);
        ASSERT_EQ(a.positions.size(), b.positions.size());
        for (size_t j = 0; j < a.positions.size(); ++j) {
          EXPECT_EQ(a.positions[j].counted, b.positions[j].counted) << j;
          EXPECT_EQ(a.positions[j].accepted, b.positions[j].accepted) << j;
          EXPECT_EQ(a.positions[j].conditional_counted, b.positions[j].conditional_counted) << j;
          EXPECT_DOUBLE_EQ(a.positions[j].conditional, b.positions[j].conditional) << j;
          EXPECT_EQ(b.positions[j].correct, 0) << j;                // not measured
          EXPECT_EQ(b.positions[j].cross_entropy_counted, 0) << j;  // acceptance only
        }
        ASSERT_EQ(a.per_sample.size(), b.per_sample.size());
        for (size_t s = 0; s < a.per_sample.size(); ++s) {
          EXPECT_EQ(a.per_sample[s].accepted_total, b.per_sample[s].accepted_total) << s;
          EXPECT_EQ(a.per_sample[s].blocks, b.per_sample[s].blocks) << s;
        }
      }
    }
  }
}

// The context is projected only up to what the scored blocks can see:
// replay with one block per walk needs the positions before P.
TEST_F(EvaluatorTest, ContextIsProjectedOnlyUpToTheLastScoredAnchor) {
  int64_t all = 0, prompts = 0;
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    all += static_cast<int64_t>(world_->tokens[s].size());
    prompts += world_->spec.prompts[s];
  }
  types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
  o.max_blocks = 1;
  ASSERT_OK_AND_ASSIGN(types::EvalResult one, Run(o));
  EXPECT_EQ(one.context_positions, prompts);
  WalkOptions w;
  w.max_blocks = 1;
  ExpectMetrics(one, ExpectReplay(*ref_, *world_, w), false);
  // Anchor mode, every anchor: each sample up to its last anchor, L - 2.
  ASSERT_OK_AND_ASSIGN(types::EvalResult anchor,
                       Run(Options(types::Mode::kAnchor, Semantics::kZlabCurrent)));
  int64_t last_anchors = 0;
  for (const types::SampleSummary& s : anchor.per_sample) {
    if (s.blocks > 0) last_anchors += s.length - 2;
  }
  EXPECT_EQ(anchor.context_positions, last_anchors);
  EXPECT_LT(anchor.context_positions, all);
}
}  // namespace
}  // namespace dflash::eval
