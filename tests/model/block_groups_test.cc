// The block checks and masks of ForwardBlocks' first half: each refusal with
// its exact message, the grouping by sequence, and every mask against the
// rule it encodes, written as plain loops.
#include "model/block_groups.h"

#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::model {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;

at::Tensor Longs(std::vector<int64_t> v) {
  return at::tensor(v, at::kLong);
}

class BlockGroupsTest : public ::testing::Test {
 protected:
  void SetUp() override { ctx_.lengths = {5, 3}; }
  ContextCache ctx_;
};

TEST_F(BlockGroupsTest, BadBlocksAreNamed) {
  const auto code = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(ReadBlocks(Longs({1, 2}), Longs({0, 0}), Longs({4, 5}), 4, ctx_),
              StatusIs(code, "block 1 has length 5; expected 1..4"));
  EXPECT_THAT(ReadBlocks(Longs({1}), Longs({0}), Longs({0}), 4, ctx_),
              StatusIs(code, "block 0 has length 0; expected 1..4"));
  EXPECT_THAT(ReadBlocks(Longs({1, 1}), Longs({1, -1}), {}, 4, ctx_),
              StatusIs(code, "block 1 reads sequence -1; the context holds 2 sequences"));
  EXPECT_THAT(ReadBlocks(Longs({5, 4}), Longs({0, 1}), {}, 4, ctx_),
              StatusIs(code, "block 1 has anchor 4; sequence 1 has 3 context positions"));
  EXPECT_THAT(ReadBlocks(Longs({-1}), Longs({0}), {}, 4, ctx_),
              StatusIs(code, "block 0 has anchor -1; sequence 0 has 5 context positions"));
  ctx_.first_anchor = {2, 0};
  EXPECT_THAT(ReadBlocks(Longs({1}), Longs({0}), {}, 4, ctx_),
              StatusIs(code,
                       "block 0 has anchor 1; sequence 0's context was encoded for anchors "
                       "from 2 on"));
}

TEST_F(BlockGroupsTest, BlocksAreListedBySequence) {
  ASSERT_OK_AND_ASSIGN(HostBlocks h,
                       ReadBlocks(Longs({5, 1, 3}), Longs({0, 1, 0}), Longs({4, 1, 2}), 4, ctx_));
  ASSERT_EQ(h.by_seq.size(), 2u);
  EXPECT_THAT(h.by_seq[0], ElementsAre(0, 2));
  EXPECT_THAT(h.by_seq[1], ElementsAre(1));
  EXPECT_TRUE(at::equal(h.anchors, Longs({5, 1, 3})));
}

TEST_F(BlockGroupsTest, OneSequencePerBlockIsOneGroup) {
  ASSERT_OK_AND_ASSIGN(HostBlocks h, ReadBlocks(Longs({2, 3}), Longs({1, 0}), {}, 4, ctx_));
  const std::vector<Group> g = MakeGroups(h, h.anchors, {at::TensorOptions(at::kLong), {}, 0});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].ng, 2);
  EXPECT_EQ(g[0].seq, -1);
  EXPECT_FALSE(g[0].idx.defined());
  EXPECT_FALSE(g[0].full_mask.defined());
}

// Sequence 0 holds blocks at anchors 4 and 2 under a window of 3: keys at
// or after a block's anchor are masked, and a windowed layer also hides
// keys with a + j - key >= 3.
TEST_F(BlockGroupsTest, SharedSequenceMasksFollowTheLoops) {
  ctx_.lengths = {6, 3};
  ASSERT_OK_AND_ASSIGN(HostBlocks h, ReadBlocks(Longs({4, 1, 2}), Longs({0, 1, 0}), {}, 3, ctx_));
  const at::TensorOptions lopt(at::kLong);
  const std::vector<Group> g = MakeGroups(h, h.anchors, {lopt, at::arange(3, lopt), 3});
  ASSERT_EQ(g.size(), 2u);
  const Group& s0 = g[0];
  EXPECT_EQ(s0.seq, 0);
  EXPECT_EQ(s0.ng, 2);
  EXPECT_TRUE(at::equal(s0.idx, Longs({0, 2})));
  EXPECT_EQ(s0.lc, 4);
  EXPECT_EQ(s0.win_lo, 0);  // min anchor 2 - (3 - 1)
  EXPECT_EQ(s0.win_lc, 4);
  ASSERT_EQ(s0.full_mask.sizes(), (std::vector<int64_t>{2, 1, 1, 3, 4}));
  ASSERT_EQ(s0.slide_mask.sizes(), (std::vector<int64_t>{2, 1, 1, 3, 4}));
  const std::vector<int64_t> anchor = {4, 2};
  for (int64_t b = 0; b < 2; ++b) {
    for (int64_t j = 0; j < 3; ++j) {
      for (int64_t k = 0; k < 4; ++k) {
        const bool after = k >= anchor[b];
        EXPECT_EQ(s0.full_mask[b][0][0][j][k].item<bool>(), after) << b << j << k;
        const bool slide = after || anchor[b] + j - (s0.win_lo + k) >= 3;
        EXPECT_EQ(s0.slide_mask[b][0][0][j][k].item<bool>(), slide) << b << j << k;
      }
    }
  }
  EXPECT_EQ(g[1].seq, 1);
  EXPECT_EQ(g[1].lc, 1);
  EXPECT_EQ(g[1].win_lc, 1);
}

TEST_F(BlockGroupsTest, BlockMasksFollowEachRule) {
  const at::TensorOptions lopt(at::kLong);
  AttentionRule bidir, causal, window;
  causal.causal = true;
  window.window = 2;
  window.two_sided = true;
  const std::vector<at::Tensor> m = BlockMasks({bidir, causal, window, causal}, {}, 3, lopt);
  ASSERT_EQ(m.size(), 4u);
  EXPECT_FALSE(m[0].defined());     // nothing masked
  EXPECT_TRUE(m[3].is_same(m[1]));  // one tensor per distinct rule
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(m[1][0][0][0][i][j].item<bool>(), j > i) << i << j;
      EXPECT_EQ(m[2][0][0][0][i][j].item<bool>(), i - j >= 2 || j - i >= 2) << i << j;
    }
  }
  // With lengths: queries inside a block of length 2 do not see slot 2.
  const std::vector<at::Tensor> l = BlockMasks({bidir}, Longs({2, 3}), 3, lopt);
  ASSERT_EQ(l[0].sizes(), (std::vector<int64_t>{2, 1, 1, 3, 3}));
  for (int64_t i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < 3; ++j) {
      EXPECT_EQ(l[0][0][0][0][i][j].item<bool>(), j >= 2 && i < 2) << i << j;
      EXPECT_FALSE(l[0][1][0][0][i][j].item<bool>()) << i << j;
    }
  }
}

// A context-only window (zlab-2025) leaves the block itself unmasked.
TEST_F(BlockGroupsTest, ContextOnlyWindowMasksNothingInTheBlock) {
  AttentionRule r;
  r.window = 1;
  r.window_in_block = false;
  EXPECT_FALSE(BlockMasks({r}, {}, 3, at::TensorOptions(at::kLong))[0].defined());
}

TEST_F(BlockGroupsTest, WindowPatternHidesColumnsBeforeTheSlot) {
  const at::Tensor p = WindowPattern(4, at::arange(3, at::kLong));
  ASSERT_EQ(p.sizes(), (std::vector<int64_t>{3, 3}));
  for (int64_t j = 0; j < 3; ++j) {
    for (int64_t c = 0; c < 3; ++c) EXPECT_EQ(p[j][c].item<bool>(), c < j) << j << c;
  }
}

}  // namespace
}  // namespace dflash::model
