// Slices by hand (eval/slices.h): per-sample metadata, anchor-position
// buckets and loop blocks, counted by MetricsAccumulator and cut by Slices.
#include "eval/slices.h"

#include <vector>

#include "eval/metrics.h"
#include "eval/result_invariants.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

BlockOutcome Block(int64_t sample, int64_t anchor, std::vector<uint8_t> correct) {
  BlockOutcome b;
  b.sample = sample;
  b.anchor = anchor;
  b.correct = std::move(correct);
  return b;
}

const types::SliceResult* Find(const std::vector<types::SliceResult>& slices,
                               const std::string& kind, const std::string& value) {
  for (const types::SliceResult& s : slices) {
    if (s.kind == kind && s.value == value) return &s;
  }
  return nullptr;
}

// B = 3. Sample 0 (L = 9000, P = 0): blocks at anchors 10 (n=2), 511 (n=0),
// 512 (n=1), 8192 (n=2). Sample 1 (L = 600, P = 0): anchor 100 (n=1), and
// anchor 520 (n=2) inside a loop.
types::EvalResult HandResult() {
  MetricsAccumulator acc(3);
  acc.BeginSample(0, 9000, 0);
  acc.Add(Block(0, 10, {1, 1}));
  acc.Add(Block(0, 511, {0, 1}));
  acc.Add(Block(0, 512, {1, 0}));
  acc.Add(Block(0, 8192, {1, 1}));
  acc.BeginSample(1, 600, 0);
  std::vector<uint8_t> loops(600, 0);
  for (int i = 500; i < 550; ++i) loops[i] = 1;
  acc.SetLoops(1, loops);
  acc.Add(Block(1, 100, {1, 0}));
  acc.Add(Block(1, 520, {1, 1}));
  types::EvalResult r = acc.Finish(types::Mode::kAnchor);
  r.per_sample[0].category = "math";
  r.per_sample[1].category = "code";
  r.per_sample[0].thinking = "on";
  return r;
}

TEST(SlicesTest, ContextBucketsSplitAtTheirStarts) {
  const types::EvalResult r = HandResult();
  EXPECT_THAT(r.per_sample[0].context_blocks, ElementsAre(2, 1, 0, 1));
  EXPECT_THAT(r.per_sample[0].context_accepted, ElementsAre(3 + 1, 2, 0, 3));
  EXPECT_THAT(r.per_sample[1].context_blocks, ElementsAre(1, 1, 0, 0));
  const std::vector<types::SliceResult> s = Slices(r, 0, 0);
  const types::SliceResult* low = Find(s, "context", "0-512");
  ASSERT_NE(low, nullptr);
  EXPECT_EQ(low->blocks, 3);
  EXPECT_EQ(low->samples, 2);
  EXPECT_DOUBLE_EQ(low->accept_length, (3 + 1 + 2) / 3.0);
  EXPECT_DOUBLE_EQ(low->tau, ((3 + 1) / 2.0 + 2) / 2);  // per-sample means in the slice
  const types::SliceResult* mid = Find(s, "context", "512-2k");
  ASSERT_NE(mid, nullptr);
  EXPECT_DOUBLE_EQ(mid->accept_length, (2 + 3) / 2.0);
  EXPECT_EQ(Find(s, "context", "2k-8k"), nullptr);  // no block there
  ASSERT_NE(Find(s, "context", "8k+"), nullptr);
  EXPECT_DOUBLE_EQ(Find(s, "context", "8k+")->accept_length, 3);
  EXPECT_FALSE(low->accept_length_ci.has_value());  // resamples 0: no intervals
}

TEST(SlicesTest, LoopBlocksAndMetadataSlices) {
  types::EvalResult r = HandResult();
  EXPECT_EQ(r.per_sample[1].loop_tokens, 50);
  EXPECT_EQ(r.per_sample[1].response_tokens, 600);
  EXPECT_EQ(r.per_sample[1].loop_blocks, 1);  // anchor 520: token 521 is in the loop
  EXPECT_DOUBLE_EQ(r.loop_token_share, 50.0 / (9000 + 600));
  EXPECT_DOUBLE_EQ(r.loop_accept_share, 3.0 / (3 + 1 + 2 + 3 + 2 + 3));
  const std::vector<types::SliceResult> s = Slices(r, 200, 7);
  ASSERT_NE(Find(s, "continuation", "loop"), nullptr);
  EXPECT_DOUBLE_EQ(Find(s, "continuation", "loop")->accept_length, 3);
  EXPECT_DOUBLE_EQ(Find(s, "continuation", "no loop")->accept_length, 11.0 / 5);
  EXPECT_DOUBLE_EQ(Find(s, "category", "math")->accept_length, 9.0 / 4);
  EXPECT_DOUBLE_EQ(Find(s, "category", "code")->accept_length, 5.0 / 2);
  EXPECT_EQ(Find(s, "thinking", "on")->samples, 1);
  EXPECT_EQ(Find(s, "thinking", "off"), nullptr);
  EXPECT_EQ(Find(s, "language", "en"), nullptr);  // no sample says
  // Order: category (sorted), thinking, context, continuation.
  ASSERT_GE(s.size(), 3u);
  EXPECT_EQ(s[0].value, "code");
  EXPECT_EQ(s[1].value, "math");
  EXPECT_EQ(s[2].kind, "thinking");
  // Two samples in the context slice: an interval around the point value.
  const types::SliceResult* low = Find(s, "context", "0-512");
  ASSERT_TRUE(low->accept_length_ci.has_value());
  EXPECT_LE(low->accept_length_ci->lo, low->accept_length);
  EXPECT_GE(low->accept_length_ci->hi, low->accept_length);
  EXPECT_FALSE(Find(s, "category", "math")->accept_length_ci.has_value());  // one sample
}

TEST(SlicesTest, LoopsCarryingMuchOfTheAcceptanceWarn) {
  types::EvalResult r = HandResult();
  types::EvalOptions o;
  o.ci = types::CiMethod::kNone;
  AddSlices(o, &r);  // 3 of 14 accepted: 21% >= 20%
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(r.warnings[0],
            "repeating loops: 0.5% of the response tokens and 21.4% of the accepted tokens lie in "
            "loops (docs/slices.md); accept length 2.333 with those blocks, 2.200 without");
  EXPECT_TRUE(CheckResultInvariants(r).ok());
  // A partition that does not add up is an internal error.
  r.slices.back().blocks += 1;
  EXPECT_THAT(std::string(CheckResultInvariants(r).message()),
              HasSubstr("the continuation slices count 7 blocks, the result 6"));
}

}  // namespace
}  // namespace dflash::eval
