// The ranges an evaluation's parts run and their totals before any work, on
// the tiny world's four samples (14, 11, 9 and 17 tokens; responses from
// 3, 2, 8 and 5): token-balanced cuts counted by hand, the streamed chunks
// within each worker's share of the budget, and anchor mode's and replay's
// totals.
#include "eval/part_ranges.h"

#include <memory>
#include <vector>

#include "eval/replay_run.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "test_util/tiny_world.h"

namespace dflash::eval {
namespace {

using ::dflash::testing::TinySpec;

class PartRangesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    world_ = new dflash::testing::TinyWorld(dflash::testing::MakeTinyWorld(TinySpec{}));
    dir_ = new dflash::testing::TempDir();
    world_->WriteDataset(dir_->Join("data"));
    auto drafter = model::DrafterModel::Create(world_->cfg, world_->weights);
    ASSERT_OK(drafter.status());
    drafter_ = new model::DrafterModel(*std::move(drafter));
  }
  static void TearDownTestSuite() {
    delete drafter_;
    delete dir_;
    delete world_;
  }

  static data::EvalDataset Load(bool stream = false, int64_t budget = 0) {
    data::DatasetLoadOptions o;
    o.path = dir_->Join("data");
    o.stream = stream;
    o.stream_budget_bytes = budget;
    absl::StatusOr<data::EvalDataset> d = data::EvalDataset::Load(o);
    EXPECT_OK(d.status());
    return *std::move(d);
  }
  static Placement Slots(int n) {
    Placement p;
    for (int i = 0; i < n; ++i) p.slots.push_back({drafter_, nullptr, "cpu"});
    return p;
  }
  static std::vector<std::pair<size_t, size_t>> Pairs(const std::vector<SampleRange>& r) {
    std::vector<std::pair<size_t, size_t>> out;
    for (const SampleRange& x : r) out.emplace_back(x.begin, x.end);
    return out;
  }

  static dflash::testing::TinyWorld* world_;
  static dflash::testing::TempDir* dir_;
  static model::DrafterModel* drafter_;
};

dflash::testing::TinyWorld* PartRangesTest::world_ = nullptr;
dflash::testing::TempDir* PartRangesTest::dir_ = nullptr;
model::DrafterModel* PartRangesTest::drafter_ = nullptr;

using Range = std::pair<size_t, size_t>;

TEST_F(PartRangesTest, OneRangePerSlotBalancedByTokens) {
  const data::EvalDataset d = Load();
  types::EvalOptions o;
  // 51 tokens in two: the running sum 14, 25, 34 first reaches 25.5 at
  // sample 2.
  EXPECT_THAT(Pairs(PartRanges(Slots(2), d, o, {0, 4})),
              ::testing::ElementsAre(Range{0, 3}, Range{3, 4}));
  // shards overrides the slots: 17 a third, 34 two thirds.
  o.shards = 3;
  EXPECT_THAT(Pairs(PartRanges(Slots(1), d, o, {0, 4})),
              ::testing::ElementsAre(Range{0, 2}, Range{2, 3}, Range{3, 4}));
}

TEST_F(PartRangesTest, RangesWithinAPartAreInDatasetPositions) {
  const data::EvalDataset d = Load();
  types::EvalOptions o;
  // Samples 1..3: 11, 9, 17 tokens; 11 + 9 = 20 first reaches 18.5.
  EXPECT_THAT(Pairs(PartRanges(Slots(2), d, o, {1, 4})),
              ::testing::ElementsAre(Range{1, 3}, Range{3, 4}));
  EXPECT_THAT(Pairs(PartRanges(Slots(1), d, o, {2, 3})), ::testing::ElementsAre(Range{2, 3}));
}

// Each worker's share of the budget holds its chunk, the chunk read ahead
// and the context K/V: per token, the hidden state (16) and two layers of
// one K/V head of 8, in fp32: (16 + 2 * 2 * 8) * 4 = 192 bytes.
TEST_F(PartRangesTest, StreamedChunksFitEachWorkersShare) {
  const data::EvalDataset resident = Load();
  int64_t bytes = 0, tokens = 0;
  for (size_t i = 0; i < 4; ++i) {
    bytes += resident.sample_bytes(i);
    tokens += resident.sample_tokens(i);
  }
  const int64_t budget = 6 * bytes;
  const data::EvalDataset d = Load(/*stream=*/true, budget);
  ASSERT_TRUE(d.streamed());
  types::EvalOptions o;
  const double share = 192.0 * tokens / bytes;
  const auto cap = static_cast<int64_t>(budget / 2.0 / (2.0 + share));
  const std::vector<SampleRange> r = PartRanges(Slots(2), d, o, {0, 4});
  ASSERT_FALSE(r.empty());
  size_t next = 0;
  for (size_t k = 0; k < r.size(); ++k) {
    EXPECT_EQ(r[k].begin, next);  // contiguous, covering every sample
    int64_t sum = 0;
    for (size_t i = r[k].begin; i < r[k].end; ++i) sum += d.sample_bytes(i);
    EXPECT_LE(sum, cap) << "range " << k;
    if (r[k].end < 4) EXPECT_GT(sum + d.sample_bytes(r[k].end), cap) << "range " << k;
    next = r[k].end;
  }
  EXPECT_EQ(next, 4u);
}

TEST_F(PartRangesTest, AnchorTotalsCountTheSelectedAnchors) {
  const data::EvalDataset d = Load();
  types::EvalOptions o;
  o.mode = types::Mode::kAnchor;
  o.max_blocks = 5;
  // Eligible anchors L - 1 - P: 10, 8, 0, 11; at most 5 each.
  const std::vector<types::EvalProgress> t = InitialTotals(d, o, {{0, 2}, {2, 4}});
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].samples_total, 2);
  EXPECT_EQ(t[0].blocks_total, 10);
  EXPECT_EQ(t[1].blocks_total, 5);
  EXPECT_FALSE(t[0].blocks_total_is_bound);
  o.max_blocks = 0;
  EXPECT_EQ(InitialTotals(d, o, {{0, 2}, {2, 4}})[1].blocks_total, 11);
}

TEST_F(PartRangesTest, ReplayTotalsAreBounds) {
  const data::EvalDataset d = Load();
  types::EvalOptions o;
  o.mode = types::Mode::kReplay;
  const std::vector<types::EvalProgress> t = InitialTotals(d, o, {{0, 1}, {1, 4}});
  EXPECT_EQ(t[0].blocks_total, ReplayBlocksBound(14, 3, o));
  EXPECT_EQ(t[1].blocks_total,
            ReplayBlocksBound(11, 2, o) + ReplayBlocksBound(9, 8, o) + ReplayBlocksBound(17, 5, o));
  EXPECT_TRUE(t[0].blocks_total_is_bound);
  EXPECT_EQ(t[1].samples_total, 3);
}

// A single range, or a streamed dataset, reports its own totals: only the
// sample count is known before.
TEST_F(PartRangesTest, OneRangeOrStreamedGivesOnlySampleCounts) {
  types::EvalOptions o;
  const std::vector<types::EvalProgress> one = InitialTotals(Load(), o, {{0, 4}});
  EXPECT_EQ(one[0].samples_total, 4);
  EXPECT_EQ(one[0].blocks_total, 0);
  const std::vector<types::EvalProgress> s = InitialTotals(Load(true), o, {{0, 2}, {2, 4}});
  EXPECT_EQ(s[1].samples_total, 2);
  EXPECT_EQ(s[1].blocks_total, 0);
  EXPECT_FALSE(s[1].blocks_total_is_bound);
}

}  // namespace
}  // namespace dflash::eval
