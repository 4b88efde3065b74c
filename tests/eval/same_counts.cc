#include "eval/same_counts.h"

#include "gtest/gtest.h"

namespace dflash::eval::testing {

void ExpectSameCounts(const types::EvalResult& a, const types::EvalResult& b, double ce_tolerance) {
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.tokens_scored, b.tokens_scored);
  EXPECT_EQ(a.accepted_histogram, b.accepted_histogram);
  EXPECT_EQ(a.accept_length_pooled, b.accept_length_pooled);
  EXPECT_EQ(a.tau, b.tau);
  EXPECT_EQ(a.context_positions, b.context_positions);
  EXPECT_EQ(a.loop_accept_share, b.loop_accept_share);
  ASSERT_EQ(a.positions.size(), b.positions.size());
  for (size_t j = 0; j < a.positions.size(); ++j) {
    EXPECT_EQ(a.positions[j].counted, b.positions[j].counted) << j;
    EXPECT_EQ(a.positions[j].correct, b.positions[j].correct) << j;
    EXPECT_EQ(a.positions[j].accepted, b.positions[j].accepted) << j;
    EXPECT_EQ(a.positions[j].conditional_counted, b.positions[j].conditional_counted) << j;
    EXPECT_NEAR(a.positions[j].mean_cross_entropy, b.positions[j].mean_cross_entropy, ce_tolerance)
        << j;
  }
  ASSERT_EQ(a.per_sample.size(), b.per_sample.size());
  for (size_t i = 0; i < a.per_sample.size(); ++i) {
    EXPECT_EQ(a.per_sample[i].sample_index, b.per_sample[i].sample_index);
    EXPECT_EQ(a.per_sample[i].accepted_total, b.per_sample[i].accepted_total);
    EXPECT_EQ(a.per_sample[i].loop_blocks, b.per_sample[i].loop_blocks);
    EXPECT_EQ(a.per_sample[i].category, b.per_sample[i].category);
  }
}

}  // namespace dflash::eval::testing
