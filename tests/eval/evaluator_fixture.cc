#include "eval/evaluator_fixture.h"

#include <vector>

namespace dflash::eval::testing {

dflash::testing::TinyWorld* EvaluatorTest::world_ = nullptr;
TinyEvalWorld* EvaluatorTest::all_ = nullptr;
data::EvalDataset* EvaluatorTest::dataset_ = nullptr;
model::DrafterModel* EvaluatorTest::drafter_ = nullptr;
weights::TargetTensors* EvaluatorTest::target_ = nullptr;
ReferenceDrafts* EvaluatorTest::ref_ = nullptr;

void EvaluatorTest::SetUpTestSuite() {
  auto loaded = LoadTinyEvalWorld(kB);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  all_ = loaded->release();
  world_ = all_->world.get();
  dataset_ = all_->dataset.get();
  drafter_ = all_->drafter.get();
  target_ = all_->target.get();
  ref_ = all_->ref.get();
}

void EvaluatorTest::TearDownTestSuite() {
  delete all_;
}

absl::StatusOr<types::EvalResult> EvaluatorTest::Run(const types::EvalOptions& o,
                                                     const types::ProgressFn& p) {
  return Evaluate(*drafter_, *target_, *dataset_, o, p);
}

types::EvalOptions EvaluatorTest::Options(types::Mode mode, types::Semantics s) {
  types::EvalOptions o;
  o.mode = mode;
  o.semantics = s;
  o.anchors = types::AnchorStrategy::kAll;
  return o;
}

void EvaluatorTest::ExpectMetrics(const types::EvalResult& got, const Expected& want, bool anchor) {
  const int64_t nb = static_cast<int64_t>(want.blocks.size());
  ASSERT_GT(want.min_margin, 1e-3) << "a reference draft is a near-tie; change the seed";
  EXPECT_EQ(got.blocks, nb);
  std::vector<int64_t> counted(kB - 1), correct(kB - 1), accepted(kB - 1), hist(kB);
  std::vector<double> ce(kB - 1);
  int64_t tokens = 0, value_sum = 0;
  for (const ExpectedBlock& b : want.blocks) {
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

}  // namespace dflash::eval::testing
