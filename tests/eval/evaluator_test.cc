// Evaluate() on a tiny in-memory drafter and target and a tiny dataset
// written to disk: which blocks anchor mode scores, the replay walk under
// zlab-current and zlab-2025 (block count, anchors, the totals L' - P - 1 /
// L' - P), max_new_tokens / max_blocks / max_samples, chunking, progress and
// cancellation, and every metric against an independent computation from
// the float64 reference drafter's argmax (tests/eval/reference_walk.h).
#include "eval/evaluator.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "data/eval_dataset.h"
#include "eval/reference_walk.h"
#include "eval/same_counts.h"
#include "eval/tiny_eval_world.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

using ::dflash::eval::testing::ExpectAnchorAll;
using ::dflash::eval::testing::Expected;
using ::dflash::eval::testing::ExpectReplay;
using ::dflash::eval::testing::ReferenceDrafts;
using ::dflash::eval::testing::WalkOptions;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TinyWorld;
using ::testing::ElementsAre;
using ::testing::Eq;
using types::Semantics;

constexpr int64_t kB = 4;

class EvaluatorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto loaded = testing::LoadTinyEvalWorld(kB);
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    all_ = loaded->release();
    world_ = all_->world.get();
    dataset_ = all_->dataset.get();
    drafter_ = all_->drafter.get();
    target_ = all_->target.get();
    ref_ = all_->ref.get();
  }
  static void TearDownTestSuite() { delete all_; }

  static absl::StatusOr<types::EvalResult> Run(const types::EvalOptions& o,
                                               const types::ProgressFn& p = nullptr) {
    return Evaluate(*drafter_, *target_, *dataset_, o, p);
  }

  static types::EvalOptions Options(types::Mode mode, Semantics s) {
    types::EvalOptions o;
    o.mode = mode;
    o.semantics = s;
    o.anchors = types::AnchorStrategy::kAll;
    return o;
  }

  // Every count of `got` equals the expectation's, computed here from the
  // expected blocks without the server's accumulator.
  static void ExpectMetrics(const types::EvalResult& got, const Expected& want, bool anchor) {
    const int64_t nb = static_cast<int64_t>(want.blocks.size());
    ASSERT_GT(want.min_margin, 1e-3) << "a reference draft is a near-tie; change the seed";
    EXPECT_EQ(got.blocks, nb);
    std::vector<int64_t> counted(kB - 1), correct(kB - 1), accepted(kB - 1), hist(kB);
    std::vector<double> ce(kB - 1);
    int64_t tokens = 0, value_sum = 0;
    for (const testing::ExpectedBlock& b : want.blocks) {
      for (size_t j = 0; j < b.correct.size(); ++j) {
        ++counted[j];
        correct[j] += b.correct[j];
        accepted[j] += static_cast<int64_t>(j) < b.n;
        ce[j] += b.ce[j];
      }
      tokens += static_cast<int64_t>(b.correct.size());
      ++hist[b.n];
      value_sum += b.value;
    }
    EXPECT_EQ(got.tokens_scored, tokens);
    EXPECT_EQ(got.accepted_histogram, hist);
    ASSERT_EQ(got.positions.size(), static_cast<size_t>(kB - 1));
    for (int64_t j = 0; j < kB - 1; ++j) {
      SCOPED_TRACE(::testing::Message() << "position " << j + 1);
      const types::PositionMetrics& p = got.positions[j];
      EXPECT_EQ(p.position, j + 1);
      EXPECT_EQ(p.counted, counted[j]);
      // Scored to the first miss: the marginals are not measured (0).
      const bool marginals = !got.positions_to_first_miss;
      EXPECT_EQ(p.correct, marginals ? correct[j] : 0);
      EXPECT_EQ(p.accepted, accepted[j]);
      if (counted[j] > 0) {
        EXPECT_DOUBLE_EQ(p.accuracy, marginals ? static_cast<double>(correct[j]) / counted[j] : 0);
        EXPECT_DOUBLE_EQ(p.acceptance, static_cast<double>(accepted[j]) / counted[j]);
      }
      if (anchor && counted[j] > 0) {
        EXPECT_NEAR(p.mean_cross_entropy, ce[j] / counted[j], 1e-4);
        EXPECT_EQ(p.cross_entropy_counted, counted[j]);
      }
    }
    EXPECT_DOUBLE_EQ(got.accept_length_pooled, nb ? static_cast<double>(value_sum) / nb : 0.0);
    double tau = 0;
    int64_t with_blocks = 0;
    for (size_t s = 0; s < want.sample_blocks.size(); ++s) {
      if (want.sample_blocks[s] == 0) continue;
      tau += static_cast<double>(want.sample_total[s]) / want.sample_blocks[s];
      ++with_blocks;
    }
    EXPECT_EQ(got.samples, with_blocks);
    EXPECT_NEAR(got.tau, with_blocks ? tau / with_blocks : 0.0, 1e-12);
    ASSERT_EQ(got.per_sample.size(), want.sample_blocks.size());
    for (size_t s = 0; s < want.sample_blocks.size(); ++s) {
      SCOPED_TRACE(::testing::Message() << "sample " << s);
      EXPECT_EQ(got.per_sample[s].sample_index, static_cast<int64_t>(s));
      EXPECT_EQ(got.per_sample[s].blocks, want.sample_blocks[s]);
      EXPECT_EQ(got.per_sample[s].accepted_total, want.sample_total[s]);
      EXPECT_EQ(got.per_sample[s].length, static_cast<int64_t>(world_->tokens[s].size()));
      EXPECT_EQ(got.per_sample[s].first_response_position, world_->spec.prompts[s]);
    }
  }

  static TinyWorld* world_;
  static testing::TinyEvalWorld* all_;  // owns what the pointers below show
  static data::EvalDataset* dataset_;
  static model::DrafterModel* drafter_;
  static weights::TargetTensors* target_;
  static ReferenceDrafts* ref_;
};

TinyWorld* EvaluatorTest::world_ = nullptr;
testing::TinyEvalWorld* EvaluatorTest::all_ = nullptr;
data::EvalDataset* EvaluatorTest::dataset_ = nullptr;
model::DrafterModel* EvaluatorTest::drafter_ = nullptr;
weights::TargetTensors* EvaluatorTest::target_ = nullptr;
ReferenceDrafts* EvaluatorTest::ref_ = nullptr;

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

TEST_F(EvaluatorTest, ProgressReportsTotalsFirstAndDoneLast) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    std::vector<types::EvalProgress> seen;
    types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    o.max_chunk_elements = 1;
    ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o, [&](const types::EvalProgress& p) {
                           seen.push_back(p);
                           return true;
                         }));
    ASSERT_GE(seen.size(), 2u);
    EXPECT_EQ(seen.front().blocks_done, 0);
    EXPECT_EQ(seen.front().samples_total, 4);
    // Anchor mode knows its total; replay gives the most blocks a walk can
    // take, sum of (L - P - 1).
    EXPECT_EQ(seen.front().blocks_total, mode == types::Mode::kAnchor ? r.blocks : 10 + 8 + 0 + 11);
    EXPECT_EQ(seen.back().blocks_done, r.blocks);
    // Replay's total is a bound while walks run (they stop early when blocks
    // are accepted far), tightens at every report and ends exact.
    EXPECT_EQ(seen.front().blocks_total_is_bound, mode == types::Mode::kReplay);
    EXPECT_EQ(seen.back().blocks_total, r.blocks);
    EXPECT_FALSE(seen.back().blocks_total_is_bound);
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_LE(seen[i].blocks_total, seen[i - 1].blocks_total) << "report " << i;
      EXPECT_GE(seen[i].blocks_total, seen[i].blocks_done) << "report " << i;
    }
    // Replay: a sample whose walk takes no block (sample 2, P = L - 1) is
    // done from the start. Anchor mode counts a group's samples after its
    // last chunk's report (the job queue completes the numbers at the end).
    if (mode == types::Mode::kReplay) {
      EXPECT_EQ(seen.back().samples_done, 4);
    } else {
      EXPECT_EQ(seen.back().samples_done, 3);
    }
    for (size_t i = 1; i < seen.size(); ++i) {
      EXPECT_GE(seen[i].blocks_done, seen[i - 1].blocks_done);
    }
  }
}

TEST_F(EvaluatorTest, ProgressReturningFalseCancels) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    int calls = 0;
    EXPECT_THAT(Run(Options(mode, Semantics::kZlabCurrent),
                    [&](const types::EvalProgress&) { return ++calls < 2; }),
                StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
    EXPECT_EQ(calls, 2);
    calls = 0;
    EXPECT_THAT(Run(Options(mode, Semantics::kZlabCurrent),
                    [&](const types::EvalProgress&) {
                      ++calls;
                      return false;
                    }),
                StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
    EXPECT_EQ(calls, 1);  // refused on the totals, before any scoring
  }
}

// Issue 30: shards on two slots (the same CPU objects), merged, give the
// one-pass counts; a streamed copy read in chunks of one sample, too.
void ExpectSameCounts(const types::EvalResult& a, const types::EvalResult& b) {
  testing::ExpectSameCounts(a, b, 1e-5);  // float32 cross entropies of other batches
}

TEST_F(EvaluatorTest, ShardsOnTwoSlotsEqualOnePass) {
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    const types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    ASSERT_OK_AND_ASSIGN(types::EvalResult one, Run(o));
    ASSERT_EQ(one.shards.size(), 1u);
    EXPECT_EQ(one.shards[0].end, 4);
    Placement two;
    two.slots = {{drafter_, target_, "cpu#0"}, {drafter_, target_, "cpu#1"}};
    int threads_set = 0;
    two.threads = 2;
    two.set_threads = [&](int) { ++threads_set; };
    types::EvalOptions sharded = o;
    sharded.shards = 3;
    std::vector<types::EvalProgress> seen;
    std::mutex mu;
    ASSERT_OK_AND_ASSIGN(types::EvalResult merged,
                         Evaluate(two, *dataset_, sharded, [&](const types::EvalProgress& p) {
                           std::lock_guard<std::mutex> lock(mu);
                           seen.push_back(p);
                           return true;
                         }));
    ExpectSameCounts(one, merged);
    EXPECT_EQ(threads_set, 2);  // shared out, then given back
    ASSERT_EQ(merged.shards.size(), 3u);
    EXPECT_EQ(merged.shards[0].first, 0);
    EXPECT_EQ(merged.shards[2].end, 4);
    EXPECT_EQ(merged.shards[0].device, "cpu#0");
    EXPECT_EQ(merged.shards[1].device, "cpu#1");
    int64_t blocks = 0;
    for (size_t k = 0; k < merged.shards.size(); ++k) {
      blocks += merged.shards[k].blocks;
      if (k > 0) EXPECT_EQ(merged.shards[k].first, merged.shards[k - 1].end);
    }
    EXPECT_EQ(blocks, merged.blocks);
    // Every shard's totals before any work, as one pass reports them.
    ASSERT_FALSE(seen.empty());
    EXPECT_EQ(seen.front().blocks_done, 0);
    EXPECT_EQ(seen.front().samples_total, 4);
    if (mode == types::Mode::kAnchor) EXPECT_EQ(seen.front().blocks_total, one.blocks);
    EXPECT_EQ(seen.back().blocks_done, one.blocks);
  }
}

TEST_F(EvaluatorTest, ARefusedShardedRunScoresNothing) {
  Placement two;
  two.slots = {{drafter_, target_, "a"}, {drafter_, target_, "b"}};
  types::EvalOptions o = Options(types::Mode::kAnchor, Semantics::kZlabCurrent);
  o.shards = 4;
  int calls = 0;
  EXPECT_THAT(Evaluate(two, *dataset_, o,
                       [&](const types::EvalProgress&) {
                         ++calls;
                         return false;
                       }),
              StatusIs(absl::StatusCode::kCancelled, Eq("evaluation cancelled")));
  EXPECT_EQ(calls, 1);
}

TEST_F(EvaluatorTest, StreamedDatasetEqualsResident) {
  data::DatasetLoadOptions lo;
  lo.path = dataset_->path();
  lo.stream = true;
  lo.stream_budget_bytes = 2 * dataset_->sample_bytes(0);  // one sample per chunk
  ASSERT_OK_AND_ASSIGN(data::EvalDataset streamed, data::EvalDataset::Load(lo));
  EXPECT_TRUE(streamed.streamed());
  EXPECT_EQ(streamed.size(), dataset_->size());
  EXPECT_EQ(streamed.bytes(), 0);
  EXPECT_EQ(streamed.total_sample_bytes(), dataset_->bytes());
  EXPECT_EQ(streamed.fingerprint(), dataset_->fingerprint());
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    const types::EvalOptions o = Options(mode, Semantics::kZlabCurrent);
    ASSERT_OK_AND_ASSIGN(types::EvalResult resident, Run(o));
    ASSERT_OK_AND_ASSIGN(types::EvalResult chunked, Evaluate(*drafter_, *target_, streamed, o));
    ExpectSameCounts(resident, chunked);
    EXPECT_GE(chunked.shards.size(), 2u);
    int64_t read = 0;
    for (const types::ShardPlacement& s : chunked.shards) read += s.bytes_read;
    EXPECT_EQ(read, dataset_->bytes());
  }
}

TEST_F(EvaluatorTest, StreamedSampleGoneOrChangedFailsNamingTheFile) {
  dflash::testing::TempDir dir;
  std::filesystem::copy(dataset_->path(), dir.Join("copy"),
                        std::filesystem::copy_options::recursive);
  data::DatasetLoadOptions lo;
  lo.path = dir.Join("copy");
  lo.stream = true;
  ASSERT_OK_AND_ASSIGN(data::EvalDataset streamed, data::EvalDataset::Load(lo));
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(lo.path)) {
    if (e.path().extension() != ".json") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 2u);
  // Rewritten with another sample's bytes: FailedPrecondition, named.
  std::filesystem::copy_file(files[0], files[1], std::filesystem::copy_options::overwrite_existing);
  const types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
  absl::StatusOr<types::EvalResult> changed = Evaluate(*drafter_, *target_, streamed, o);
  EXPECT_THAT(changed, StatusIs(absl::StatusCode::kFailedPrecondition,
                                ::testing::HasSubstr("' changed since the dataset was loaded")));
  EXPECT_THAT(changed.status().message(), ::testing::HasSubstr(files[1]));
  // Gone: NotFound, named.
  std::filesystem::remove(files[1]);
  EXPECT_THAT(Evaluate(*drafter_, *target_, streamed, o),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("streamed dataset '" + streamed.name() + "': sample file '" + files[1] +
                          "' is gone since the dataset was loaded")));
}

TEST_F(EvaluatorTest, SmallerBlockSizeOverride) {
  types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlab2025);
  o.block_size = 2;
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, Run(o));
  EXPECT_EQ(r.block_size, 2);
  EXPECT_EQ(r.positions.size(), 1u);
  EXPECT_EQ(r.accepted_histogram.size(), 2u);
  for (size_t s = 0; s < world_->tokens.size(); ++s) {
    const int64_t L = static_cast<int64_t>(world_->tokens[s].size());
    EXPECT_EQ(r.per_sample[s].accepted_total, L - world_->spec.prompts[s]);
  }
}

TEST_F(EvaluatorTest, BlockSizeOutOfRange) {
  for (int64_t b : {int64_t{1}, int64_t{5}}) {
    types::EvalOptions o = Options(types::Mode::kReplay, Semantics::kZlabCurrent);
    o.block_size = b;
    EXPECT_THAT(Run(o), StatusIs(absl::StatusCode::kInvalidArgument,
                                 Eq("block_size " + std::to_string(b) +
                                    " must be in [2, 4] (the drafter's block size)")));
  }
}

TEST_F(EvaluatorTest, DatasetWithoutTheDrafterLayers) {
  data::DatasetLoadOptions lo;
  lo.path = all_->dir->Join("data");
  lo.layer_ids = {{"hidden_states", {1, 2, 4}}};
  ASSERT_OK_AND_ASSIGN(data::EvalDataset other, data::EvalDataset::Load(lo));
  EXPECT_THAT(Evaluate(*drafter_, *target_, other, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("drafter needs layer 3; dataset holds [1, 2, 4] (hf-layer; as "
                          "vllm-capture-id: needs 4, holds [2, 3, 5]); the dataset holds "
                          "every layer the drafter needs shifted by +1: check the layer "
                          "numbering declared by the drafter (speculators "
                          "aux_hidden_state_layer_ids count vllm-capture-id) and by the dataset "
                          "(dataset.json 'layer_numbering')")));
}

TEST_F(EvaluatorTest, TargetHiddenSizeMismatch) {
  weights::TargetTensors t = world_->Target();
  t.embed = t.embed.narrow(1, 0, 8).contiguous();
  t.lm_head = t.lm_head.narrow(1, 0, 8).contiguous();
  t.hidden_size = 8;
  EXPECT_THAT(Evaluate(*drafter_, t, *dataset_, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("dataset hidden size 16 does not match the target's 8 (embed_tokens "
                          "[16, 8]): the features were captured from another model")));
}

TEST_F(EvaluatorTest, MaskTokenOutsideTheTargetVocabulary) {
  weights::TargetTensors t = world_->Target();
  t.embed = t.embed.narrow(0, 0, 15).contiguous();
  t.lm_head = t.lm_head.narrow(0, 0, 15).contiguous();
  t.vocab_size = 15;
  EXPECT_THAT(Evaluate(*drafter_, t, *dataset_, types::EvalOptions{}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("drafter mask_token_id 15 is outside the target's vocabulary [0, 15)")));
}

}  // namespace
}  // namespace dflash::eval
