// Hand-computed checks of the §5 metrics.
#include "eval/metrics.h"

#include <vector>

#include "eval/same_counts.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;

BlockOutcome Block(int64_t sample, std::vector<uint8_t> correct, std::vector<float> ce = {}) {
  BlockOutcome b;
  b.sample = sample;
  b.correct = std::move(correct);
  b.cross_entropy = std::move(ce);
  return b;
}

class MetricsAccumulatorTest : public ::testing::Test {};

TEST_F(MetricsAccumulatorTest, LeadingMatches) {
  EXPECT_EQ(MetricsAccumulator::LeadingMatches({}), 0);
  EXPECT_EQ(MetricsAccumulator::LeadingMatches({0, 1, 1}), 0);
  EXPECT_EQ(MetricsAccumulator::LeadingMatches({1, 1, 0, 1}), 2);
  EXPECT_EQ(MetricsAccumulator::LeadingMatches({1, 1, 1}), 3);
}

// B = 4 (positions j = 1..3). Blocks, with n = leading matches:
//   s0: [1,1,0] n=2   s0: [0,1,1] n=0
//   s1: [1,1,1] n=3   s1: [1] (truncated) n=1   s1: [] (anchor at L-1) n=0
// Sample 2 is registered but has no blocks.
TEST_F(MetricsAccumulatorTest, HandComputedExample) {
  MetricsAccumulator acc(4);
  acc.BeginSample(0, 30, 10);
  acc.Add(Block(0, {1, 1, 0}));
  acc.Add(Block(0, {0, 1, 1}));
  acc.BeginSample(1, 20, 3);
  acc.Add(Block(1, {1, 1, 1}));
  acc.Add(Block(1, {1}));
  acc.Add(Block(1, {}));
  acc.BeginSample(2, 5, 4);
  types::EvalResult r = acc.Finish(types::Mode::kAnchor);

  EXPECT_EQ(r.mode, types::Mode::kAnchor);
  EXPECT_EQ(r.block_size, 4);
  EXPECT_EQ(r.blocks, 5);
  EXPECT_EQ(r.samples, 2);  // sample 2 has no block
  EXPECT_EQ(r.tokens_scored, 3 + 3 + 3 + 1 + 0);
  EXPECT_THAT(r.accepted_histogram, ElementsAre(2, 1, 1, 1));
  // (3 + 1 + 4 + 2 + 1) / 5: the +1 is the bonus token.
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, 11.0 / 5);
  // Sample 0: (3 + 1) / 2 = 2; sample 1: (4 + 2 + 1) / 3 = 7/3.
  EXPECT_DOUBLE_EQ(r.tau, (2.0 + 7.0 / 3) / 2);
  EXPECT_NE(r.tau, r.accept_length_pooled);

  ASSERT_EQ(r.positions.size(), 3u);
  const types::PositionMetrics& p1 = r.positions[0];
  const types::PositionMetrics& p2 = r.positions[1];
  const types::PositionMetrics& p3 = r.positions[2];
  EXPECT_EQ(p1.position, 1);
  EXPECT_EQ(p3.position, 3);
  // The empty block adds to no denominator; the truncated one only to j = 1.
  EXPECT_EQ(p1.counted, 4);
  EXPECT_EQ(p2.counted, 3);
  EXPECT_EQ(p3.counted, 3);
  EXPECT_EQ(p1.correct, 3);
  EXPECT_EQ(p2.correct, 3);
  EXPECT_EQ(p3.correct, 2);
  EXPECT_DOUBLE_EQ(p1.accuracy, 3.0 / 4);
  EXPECT_DOUBLE_EQ(p2.accuracy, 1.0);
  EXPECT_DOUBLE_EQ(p3.accuracy, 2.0 / 3);
  EXPECT_EQ(p1.accepted, 3);
  EXPECT_EQ(p2.accepted, 2);
  EXPECT_EQ(p3.accepted, 1);
  EXPECT_DOUBLE_EQ(p1.acceptance, 3.0 / 4);
  EXPECT_DOUBLE_EQ(p2.acceptance, 2.0 / 3);
  EXPECT_DOUBLE_EQ(p3.acceptance, 1.0 / 3);
  // Conditional denominators: blocks where 1..j-1 all correct and j exists.
  EXPECT_EQ(p1.conditional_counted, 4);
  EXPECT_EQ(p2.conditional_counted, 2);  // [1,1,0], [1,1,1]; not the truncated [1]
  EXPECT_EQ(p3.conditional_counted, 2);
  EXPECT_DOUBLE_EQ(p1.conditional, 3.0 / 4);
  EXPECT_DOUBLE_EQ(p2.conditional, 1.0);
  EXPECT_DOUBLE_EQ(p3.conditional, 1.0 / 2);
  EXPECT_EQ(p1.cross_entropy_counted, 0);
  EXPECT_EQ(p1.mean_cross_entropy, 0);

  ASSERT_EQ(r.per_sample.size(), 3u);
  EXPECT_EQ(r.per_sample[0].sample_index, 0);
  EXPECT_EQ(r.per_sample[0].blocks, 2);
  EXPECT_EQ(r.per_sample[0].accepted_total, 4);
  EXPECT_DOUBLE_EQ(r.per_sample[0].mean_accept_length, 2.0);
  EXPECT_EQ(r.per_sample[0].length, 30);
  EXPECT_EQ(r.per_sample[0].first_response_position, 10);
  EXPECT_EQ(r.per_sample[1].blocks, 3);
  EXPECT_EQ(r.per_sample[1].accepted_total, 7);
  EXPECT_DOUBLE_EQ(r.per_sample[1].mean_accept_length, 7.0 / 3);
  EXPECT_EQ(r.per_sample[2].sample_index, 2);
  EXPECT_EQ(r.per_sample[2].blocks, 0);
  EXPECT_EQ(r.per_sample[2].mean_accept_length, 0);
}

TEST_F(MetricsAccumulatorTest, EmptyBlockIsOneBonusToken) {
  MetricsAccumulator acc(16);
  acc.Add(Block(7, {}));
  types::EvalResult r = acc.Finish(types::Mode::kReplay);
  EXPECT_EQ(r.blocks, 1);
  EXPECT_EQ(r.samples, 1);
  EXPECT_EQ(r.tokens_scored, 0);
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, 1.0);
  EXPECT_DOUBLE_EQ(r.tau, 1.0);
  EXPECT_EQ(r.accepted_histogram[0], 1);
  for (const types::PositionMetrics& p : r.positions) {
    EXPECT_EQ(p.counted, 0) << "j=" << p.position;
    EXPECT_EQ(p.accuracy, 0) << "j=" << p.position;
  }
  // An unregistered sample is registered by its first block.
  ASSERT_EQ(r.per_sample.size(), 1u);
  EXPECT_EQ(r.per_sample[0].sample_index, 7);
}

TEST_F(MetricsAccumulatorTest, HistogramCoversZeroToBMinusOne) {
  MetricsAccumulator acc(3);
  acc.Add(Block(0, {0, 0}));
  acc.Add(Block(0, {1, 0}));
  acc.Add(Block(0, {1, 1}));
  acc.Add(Block(0, {1, 1}));
  types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  EXPECT_THAT(r.accepted_histogram, ElementsAre(1, 1, 2));
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, (1 + 2 + 3 + 3) / 4.0);
}

TEST_F(MetricsAccumulatorTest, TauAndPooledDifferOnUnequalBlockCounts) {
  MetricsAccumulator acc(4);
  acc.BeginSample(0, 10, 0);
  acc.Add(Block(0, {1, 1, 1}));  // 4
  acc.BeginSample(1, 10, 0);
  for (int i = 0; i < 3; ++i) acc.Add(Block(1, {0, 0, 0}));  // 1, 1, 1
  types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, 7.0 / 4);
  EXPECT_DOUBLE_EQ(r.tau, (4.0 + 1.0) / 2);
}

TEST_F(MetricsAccumulatorTest, CrossEntropyPerPosition) {
  MetricsAccumulator acc(4);
  acc.Add(Block(0, {1, 0, 1}, {0.5f, 1.0f, 1.5f}));
  acc.Add(Block(0, {1}, {1.5f}));
  acc.Add(Block(0, {1, 1, 1}));  // no cross entropy
  types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  EXPECT_EQ(r.positions[0].cross_entropy_counted, 2);
  EXPECT_DOUBLE_EQ(r.positions[0].mean_cross_entropy, 1.0);
  EXPECT_EQ(r.positions[1].cross_entropy_counted, 1);
  EXPECT_DOUBLE_EQ(r.positions[1].mean_cross_entropy, 1.0);
  EXPECT_DOUBLE_EQ(r.positions[2].mean_cross_entropy, 1.5);
}

// A replay walk: block at s drafts positions s+1 .. min(s+B-1, L-1),
// records n + 1 and moves to s + n + 1. correct_at[p] says whether the draft
// for position p matches.
void Walk(MetricsAccumulator& acc, int64_t sample, int64_t length, int64_t first,
          int64_t block_size, const std::vector<uint8_t>& correct_at) {
  acc.BeginSample(sample, length, first);
  for (int64_t s = first; s < length;) {
    BlockOutcome b = Block(sample, {});
    for (int64_t p = s + 1; p < std::min(s + block_size, length); ++p) {
      b.correct.push_back(correct_at[p]);
    }
    acc.Add(b);
    s += MetricsAccumulator::LeadingMatches(b.correct) + 1;
  }
}

TEST_F(MetricsAccumulatorTest, ReplayWalkAddsUpToLMinusP) {
  // L = 20, P = 5, B = 4: blocks at 5 (n=3), 9 (n=0), 10 (n=1), 12 (n=2),
  // 15 (n=3), 19 (nothing left: records 1). 4+1+2+3+4+1 = 15 = L - P.
  std::vector<uint8_t> c(20, 1);
  c[10] = 0;  // block at 9 misses position 10
  c[12] = 0;  // block at 10 misses position 12
  c[15] = 0;  // block at 12 misses position 15
  MetricsAccumulator acc(4);
  Walk(acc, 0, 20, 5, 4, c);
  // L = 18, P = 5: the last block at 15 is truncated to positions 16, 17.
  Walk(acc, 1, 18, 5, 4, c);
  // Every draft wrong: L - P blocks of 1.
  Walk(acc, 2, 12, 2, 4, std::vector<uint8_t>(12, 0));
  types::EvalResult r = acc.Finish(types::Mode::kReplay);
  ASSERT_EQ(r.per_sample.size(), 3u);
  EXPECT_EQ(r.per_sample[0].accepted_total, 15);
  EXPECT_EQ(r.per_sample[0].blocks, 6);
  EXPECT_EQ(r.per_sample[1].accepted_total, 13);
  EXPECT_EQ(r.per_sample[1].blocks, 5);
  EXPECT_EQ(r.per_sample[2].accepted_total, 10);
  EXPECT_EQ(r.per_sample[2].blocks, 10);
  EXPECT_EQ(r.blocks, 21);
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, 38.0 / 21);
  EXPECT_DOUBLE_EQ(r.tau, (15.0 / 6 + 13.0 / 5 + 1.0) / 3);
  // Sample 0 histogram: n = 3, 0, 1, 2, 3, 0; sample 1: 3, 0, 1, 2, 2;
  // sample 2: ten blocks of n = 0 (the last one empty).
  EXPECT_THAT(r.accepted_histogram, ElementsAre(2 + 1 + 10, 1 + 1, 1 + 2, 2 + 1));
}

// zlab-current's replay records min(n + 1, L' - s - 1): a last block that
// accepts everything gets no bonus token past the data.
TEST_F(MetricsAccumulatorTest, AcceptCapOfTheCurrentLoop) {
  EXPECT_EQ(MetricsAccumulator::AcceptValue(3, -1), 4);
  EXPECT_EQ(MetricsAccumulator::AcceptValue(3, 3), 3);
  EXPECT_EQ(MetricsAccumulator::AcceptValue(1, 3), 2);
  // L' = 10, P = 4: blocks at s = 4 (n = 2, cap 5 -> 3), s = 7 (2 slots left,
  // both accepted: n = 2, cap 2 -> 2); the sample adds up to L' - P - 1 = 5.
  MetricsAccumulator acc(4);
  acc.BeginSample(0, 10, 4);
  BlockOutcome a = Block(0, {1, 1, 0});
  a.accept_cap = 5;
  BlockOutcome b = Block(0, {1, 1});
  b.accept_cap = 2;
  acc.Add(a);
  acc.Add(b);
  const types::EvalResult r = acc.Finish(types::Mode::kReplay);
  EXPECT_EQ(r.per_sample[0].accepted_total, 5);
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, 2.5);
  EXPECT_THAT(r.accepted_histogram, ElementsAre(0, 0, 2, 0));
}

// DFlash 2, B = 4. Three blocks (path correct / unary correct / covered /
// teacher-forced correct per position):
//   b1: path [1,0,1] unary [1,1,0] covered [1,1,0] tf [1,1,0]
//       n = 1, first miss at j = 2 covered -> ranking error; unary n = 2; oracle n = 2
//   b2: path [0,1]   unary [0,0]   covered [0,1]   tf [0,1]
//       n = 0, first miss at j = 1 not covered -> coverage miss; unary 0; oracle 0
//   b3: path [1,1,1] unary [1,0,0] covered [1,1,1] tf [1,1,1]
//       all accepted; unary 1; oracle 3
TEST_F(MetricsAccumulatorTest, DFlash2SelectorMetricsByHand) {
  MetricsAccumulator acc(4);
  acc.BeginSample(0, 50, 5);
  auto block = [](std::vector<uint8_t> path, std::vector<uint8_t> unary,
                  std::vector<uint8_t> covered, std::vector<uint8_t> tf, int64_t ties) {
    BlockOutcome b = Block(0, std::move(path));
    b.unary_correct = std::move(unary);
    b.covered = std::move(covered);
    b.tf_correct = std::move(tf);
    b.near_ties = ties;
    return b;
  };
  acc.Add(block({1, 0, 1}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, 1));
  acc.Add(block({0, 1}, {0, 0}, {0, 1}, {0, 1}, 0));
  acc.Add(block({1, 1, 1}, {1, 0, 0}, {1, 1, 1}, {1, 1, 1}, 2));
  const types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  EXPECT_DOUBLE_EQ(r.accept_length_pooled, (2 + 1 + 4) / 3.0);
  EXPECT_DOUBLE_EQ(r.unary_accept_length_pooled, (3 + 1 + 2) / 3.0);
  EXPECT_DOUBLE_EQ(r.oracle_accept_length_pooled, (3 + 1 + 4) / 3.0);
  EXPECT_EQ(r.first_miss.all_accepted, 1);
  EXPECT_EQ(r.first_miss.coverage_miss, 1);
  EXPECT_EQ(r.first_miss.ranking_error, 1);
  EXPECT_EQ(r.selector_near_ties, 3);
  // j = 1: counted 3, unary 2, covered 2, tf 2 of 2 covered.
  EXPECT_EQ(r.positions[0].unary_correct, 2);
  EXPECT_DOUBLE_EQ(r.positions[0].coverage, 2.0 / 3);
  EXPECT_DOUBLE_EQ(r.positions[0].tf_accuracy, 1.0);
  // j = 2: counted 3, unary 1, covered 3, tf 3 -> tf accuracy 1.
  EXPECT_EQ(r.positions[1].unary_correct, 1);
  EXPECT_EQ(r.positions[1].covered, 3);
  EXPECT_EQ(r.positions[1].tf_correct, 3);
  // j = 3: counted 2 (b2 is truncated), covered 1, tf 1.
  EXPECT_EQ(r.positions[2].counted, 2);
  EXPECT_DOUBLE_EQ(r.positions[2].coverage, 0.5);
  EXPECT_DOUBLE_EQ(r.positions[2].tf_accuracy, 1.0);
}

}  // namespace
}  // namespace dflash::eval

namespace dflash::eval {
namespace {

// Shards merged in sample order finish to the one-pass result (issue 30).
TEST(MetricsMergeTest, ShardsMergedInOrderEqualOnePass) {
  const auto feed = [](MetricsAccumulator& acc, int64_t sample) {
    acc.BeginSample(sample, 40, 2);
    acc.SetLoops(sample, std::vector<uint8_t>(40, sample % 2));
    acc.SetLabels(sample, sample % 2 ? "code" : "math", "en", "");
    acc.Add(Block(sample, {1, static_cast<uint8_t>(sample % 2), 0}, {0.5f, 1.5f, 2.5f}));
    acc.Add(Block(sample, {static_cast<uint8_t>(sample % 3 == 0), 1}, {0.25f, 0.75f}));
  };
  MetricsAccumulator one(4), first(4), second(4), third(4);
  for (int64_t s = 0; s < 6; ++s) feed(one, s);
  for (int64_t s = 0; s < 2; ++s) feed(first, s);
  for (int64_t s = 2; s < 5; ++s) feed(second, s);
  feed(third, 5);
  ASSERT_TRUE(first.Merge(second).ok());
  ASSERT_TRUE(first.Merge(third).ok());
  testing::ExpectSameCounts(one.Finish(types::Mode::kAnchor), first.Finish(types::Mode::kAnchor),
                            1e-12);
}

TEST(MetricsMergeTest, RefusesASampleInTwoShardsAndOtherBlockSizes) {
  MetricsAccumulator a(4), b(4), c(8);
  a.BeginSample(3, 10, 1);
  b.BeginSample(3, 10, 1);
  EXPECT_EQ(a.Merge(b).ToString(), "INVALID_ARGUMENT: sample 3 is in two shards");
  EXPECT_EQ(a.Merge(c).ToString(), "INVALID_ARGUMENT: shard block size 8 differs from 4");
}

}  // namespace
}  // namespace dflash::eval
