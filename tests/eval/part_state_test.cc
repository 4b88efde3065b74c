// An EvalPart written as JSON and read back (eval/part_state.h): the same
// part exactly (its JSON again byte for byte, its finished numbers equal to
// the last bit), parts read back merge to the one-pass numbers, and
// malformed state is InvalidArgument saying what is wrong.
#include "eval/part_state.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

using ::testing::HasSubstr;

const std::vector<types::SamplingSetting> kSettings = {{0.6, 0.95, 20}, {1.0, 1.0, 0}};

// Two blocks of a sample: DFlash 2's counts, cross entropies that are not
// short decimals in binary, loops on odd samples, labels, alphas.
void Feed(EvalPart& part, int64_t sample) {
  MetricsAccumulator& m = part.metrics;
  m.BeginSample(sample, 40, 2);
  m.SetLoops(sample, std::vector<uint8_t>(40, sample % 2));
  m.SetLabels(sample, sample % 2 ? "code" : "math", "en", sample % 3 ? "on" : "");
  BlockOutcome a;
  a.sample = sample;
  a.anchor = 3 + sample;
  a.correct = {1, static_cast<uint8_t>(sample % 2), 0};
  a.cross_entropy = {0.1f * sample, 1.7f / (sample + 1), 2.3f};
  a.unary_correct = {1, 0, 0};
  a.covered = {1, 1, static_cast<uint8_t>(sample % 2)};
  a.tf_correct = {1, static_cast<uint8_t>(sample % 2), 0};
  a.near_ties = sample;
  a.labels_in_vocab = 3;
  m.Add(a);
  BlockOutcome b = a;
  b.anchor = 900 + sample;  // another context bucket
  b.correct = {static_cast<uint8_t>(sample % 3 == 0), 1};
  b.cross_entropy = {0.3f, 0.7f};
  b.unary_correct = {1, 1};
  b.covered = {1, 1};
  b.tf_correct = {0, 1};
  m.Add(b);
  part.sampled.Add(sample, {{0.5f, 0.1f * sample, 0.3f}, {0.9f, 0.7f, 1.0f / 3}});
  part.sampled.Add(sample, {{0.25f, 1.0f / 7}, {0.6f, 0.2f}});
  part.context_positions += 40 - sample;
}

EvalPart Part(int64_t begin, int64_t end) {
  EvalPart part(4, kSettings);
  for (int64_t s = begin; s < end; ++s) Feed(part, s);
  return part;
}

// `u` equals `v`: `exact` to the last bit, else within 1e-12 (sums).
void ExpectClose(double u, double v, bool exact) {
  if (exact) {
    EXPECT_EQ(u, v);
  } else {
    EXPECT_NEAR(u, v, 1e-12 * std::max(1.0, std::abs(u)));
  }
}

// The pooled counts and rates.
void ExpectSameTotals(const types::EvalResult& a, const types::EvalResult& b) {
  EXPECT_EQ(a.blocks, b.blocks);
  EXPECT_EQ(a.samples, b.samples);
  EXPECT_EQ(a.tokens_scored, b.tokens_scored);
  EXPECT_EQ(a.labels_in_draft_vocab, b.labels_in_draft_vocab);
  EXPECT_EQ(a.accepted_histogram, b.accepted_histogram);
  EXPECT_EQ(a.accept_length_pooled, b.accept_length_pooled);
  EXPECT_EQ(a.tau, b.tau);
  EXPECT_EQ(a.unary_accept_length_pooled, b.unary_accept_length_pooled);
  EXPECT_EQ(a.oracle_accept_length_pooled, b.oracle_accept_length_pooled);
  EXPECT_EQ(a.first_miss.all_accepted, b.first_miss.all_accepted);
  EXPECT_EQ(a.first_miss.coverage_miss, b.first_miss.coverage_miss);
  EXPECT_EQ(a.first_miss.ranking_error, b.first_miss.ranking_error);
  EXPECT_EQ(a.selector_near_ties, b.selector_near_ties);
  EXPECT_EQ(a.loop_token_share, b.loop_token_share);
  EXPECT_EQ(a.loop_accept_share, b.loop_accept_share);
}

void ExpectSamePositions(const types::EvalResult& a, const types::EvalResult& b, bool exact) {
  ASSERT_EQ(a.positions.size(), b.positions.size());
  for (size_t j = 0; j < a.positions.size(); ++j) {
    const types::PositionMetrics &p = a.positions[j], &q = b.positions[j];
    EXPECT_EQ(p.position, q.position);
    EXPECT_EQ(p.counted, q.counted);
    EXPECT_EQ(p.correct, q.correct);
    EXPECT_EQ(p.accepted, q.accepted);
    EXPECT_EQ(p.conditional_counted, q.conditional_counted);
    EXPECT_EQ(p.cross_entropy_counted, q.cross_entropy_counted);
    EXPECT_EQ(p.unary_correct, q.unary_correct);
    EXPECT_EQ(p.covered, q.covered);
    EXPECT_EQ(p.tf_correct, q.tf_correct);
    ExpectClose(p.mean_cross_entropy, q.mean_cross_entropy, exact);
  }
}

void ExpectSameSamples(const types::EvalResult& a, const types::EvalResult& b) {
  ASSERT_EQ(a.per_sample.size(), b.per_sample.size());
  for (size_t i = 0; i < a.per_sample.size(); ++i) {
    const types::SampleSummary &s = a.per_sample[i], &t = b.per_sample[i];
    EXPECT_EQ(s.sample_index, t.sample_index);
    EXPECT_EQ(s.blocks, t.blocks);
    EXPECT_EQ(s.mean_accept_length, t.mean_accept_length);
    EXPECT_EQ(s.length, t.length);
    EXPECT_EQ(s.first_response_position, t.first_response_position);
    EXPECT_EQ(s.accepted_total, t.accepted_total);
    EXPECT_EQ(s.counted, t.counted);
    EXPECT_EQ(s.correct, t.correct);
    EXPECT_EQ(s.accepted, t.accepted);
    EXPECT_EQ(s.conditional_counted, t.conditional_counted);
    EXPECT_EQ(s.response_tokens, t.response_tokens);
    EXPECT_EQ(s.loop_tokens, t.loop_tokens);
    EXPECT_EQ(s.loop_blocks, t.loop_blocks);
    EXPECT_EQ(s.loop_accepted_total, t.loop_accepted_total);
    EXPECT_EQ(s.context_blocks, t.context_blocks);
    EXPECT_EQ(s.context_accepted, t.context_accepted);
    EXPECT_EQ(s.category, t.category);
    EXPECT_EQ(s.language, t.language);
    EXPECT_EQ(s.thinking, t.thinking);
  }
}

// Sampled acceptance, finished the same way for both.
void ExpectSameSampled(const EvalPart& x, const EvalPart& y, bool exact) {
  const std::vector<types::SampledAcceptance> u = x.sampled.Finish(300, 11),
                                              v = y.sampled.Finish(300, 11);
  ASSERT_EQ(u.size(), kSettings.size());
  ASSERT_EQ(v.size(), kSettings.size());
  for (size_t k = 0; k < u.size(); ++k) {
    EXPECT_EQ(u[k].setting.temperature, v[k].setting.temperature);
    EXPECT_EQ(u[k].setting.top_p, v[k].setting.top_p);
    EXPECT_EQ(u[k].setting.top_k, v[k].setting.top_k);
    EXPECT_EQ(u[k].counted, v[k].counted);
    ASSERT_EQ(u[k].mean_alpha.size(), v[k].mean_alpha.size());
    for (size_t j = 0; j < u[k].mean_alpha.size(); ++j) {
      ExpectClose(u[k].mean_alpha[j], v[k].mean_alpha[j], exact);
      ExpectClose(u[k].draft_length_curve[j], v[k].draft_length_curve[j], exact);
      ExpectClose(u[k].marginal_accept[j], v[k].marginal_accept[j], exact);
    }
    ExpectClose(u[k].expected_accept_length_pooled, v[k].expected_accept_length_pooled, exact);
    EXPECT_EQ(u[k].expected_tau, v[k].expected_tau);  // per-sample sums: not re-added
    ASSERT_TRUE(u[k].accept_length_ci.has_value() && v[k].accept_length_ci.has_value());
    EXPECT_EQ(u[k].accept_length_ci->lo, v[k].accept_length_ci->lo);  // same samples and seed
    EXPECT_EQ(u[k].accept_length_ci->hi, v[k].accept_length_ci->hi);
  }
}

// Finished numbers equal: `exact` to the last bit, else sums within 1e-12.
void ExpectSameFinish(const EvalPart& x, const EvalPart& y, bool exact) {
  const types::EvalResult a = x.metrics.Finish(types::Mode::kAnchor),
                          b = y.metrics.Finish(types::Mode::kAnchor);
  ExpectSameTotals(a, b);
  ASSERT_NO_FATAL_FAILURE(ExpectSamePositions(a, b, exact));
  ASSERT_NO_FATAL_FAILURE(ExpectSameSamples(a, b));
  ASSERT_NO_FATAL_FAILURE(ExpectSameSampled(x, y, exact));
  EXPECT_EQ(x.context_positions, y.context_positions);
}

TEST(PartStateTest, ReadBackIsTheSamePartExactly) {
  const EvalPart part = Part(0, 7);
  const std::string text = PartToJson(part);
  absl::StatusOr<EvalPart> back = PartFromJson(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PartToJson(*back), text);
  ExpectSameFinish(part, *back, /*exact=*/true);
  EXPECT_EQ(back->metrics.blocks(), 14);
}

TEST(PartStateTest, PartsReadBackMergeToOnePass) {
  const EvalPart one = Part(0, 9);
  std::vector<EvalPart> parts;
  for (const auto& [b, e] : {std::pair<int64_t, int64_t>{0, 2}, {2, 7}, {7, 9}}) {
    absl::StatusOr<EvalPart> back = PartFromJson(PartToJson(Part(b, e)));
    ASSERT_TRUE(back.ok()) << back.status();
    parts.push_back(*std::move(back));
  }
  EvalPart merged = std::move(parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) {
    ASSERT_TRUE(merged.metrics.Merge(parts[k].metrics).ok());
    ASSERT_TRUE(merged.sampled.Merge(parts[k].sampled).ok());
    merged.context_positions += parts[k].context_positions;
  }
  // Counts exact; the floating sums of three parts added differ from one
  // running sum only by rounding.
  ExpectSameFinish(one, merged, /*exact=*/false);
  // A part read back still refuses a sample it already holds.
  absl::StatusOr<EvalPart> again = PartFromJson(PartToJson(Part(8, 9)));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(merged.metrics.Merge(again->metrics).ToString(),
            "INVALID_ARGUMENT: sample 8 is in two shards");
}

TEST(PartStateTest, AnEmptyPartRoundTrips) {
  const EvalPart empty(6, {});
  absl::StatusOr<EvalPart> back = PartFromJson(PartToJson(empty));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(PartToJson(*back), PartToJson(empty));
  EXPECT_EQ(back->metrics.Finish(types::Mode::kReplay).accepted_histogram.size(), 6u);
}

TEST(PartStateTest, MalformedStateIsInvalidArgument) {
  EXPECT_EQ(PartFromJson("not json").status().ToString(),
            "INVALID_ARGUMENT: a shard's stored part is not a JSON object");
  absl::Status missing = PartFromJson(R"({"metrics": {"block_size": 4}})").status();
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(missing.message(), HasSubstr("a shard's stored part: "));
  // Positions that do not fit the block size.
  nlohmann::json j = nlohmann::json::parse(PartToJson(Part(0, 1)));
  j["metrics"]["block_size"] = 8;
  EXPECT_EQ(PartFromJson(j.dump()).status().ToString(),
            "INVALID_ARGUMENT: a shard's stored part: 3 positions at block size 8 (expected 7)");
  j = nlohmann::json::parse(PartToJson(Part(0, 2)));
  j["metrics"]["samples"][1]["i"] = 0;
  EXPECT_EQ(PartFromJson(j.dump()).status().ToString(),
            "INVALID_ARGUMENT: a shard's stored part: sample 0 is listed twice");
}

}  // namespace
}  // namespace dflash::eval
