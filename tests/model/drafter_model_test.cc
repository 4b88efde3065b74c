// DrafterModel::ForwardBlocks against the plain float64 reference, batched
// against one-block-at-a-time, bf16 against fp32, and Create()'s checks.
#include "model/drafter_model.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_schema.h"
#include "model/legacy_options.h"
#include "model/reference_drafter.h"
#include "test_util/status_matchers.h"

// tests/CMakeLists.txt builds each *_test.cc alone; the reference is
// compiled into this binary.

namespace dflash::model {
namespace {

using ::dflash::model::testing::Legacy;
using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t kVocab = 64;
constexpr int64_t kTargetHidden = 24;

config::DrafterConfig TinyConfig(const std::string& rope_type, bool bias = false,
                                 int64_t window = 5) {
  config::DrafterConfig c;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.num_key_value_heads = 2;
  c.head_dim = 8;
  c.intermediate_size = 48;
  c.num_hidden_layers = 3;
  c.rms_norm_eps = 1e-6;
  c.attention_bias = bias;
  c.sliding = {true, false, true};
  c.sliding_window = window;
  c.block_size = 4;
  c.target_layer_ids = {1, 4, 7};
  c.mask_token_id = kVocab - 1;
  c.rope.type = rope_type;
  c.rope.theta = 10000.0;
  if (rope_type == "linear") c.rope.factor = 2.5;
  if (rope_type == "llama3") {
    // d = 8 gives wavelengths 6.3, 63, 628, 6283: two kept, one blended,
    // one divided.
    c.rope.factor = 8.0;
    c.rope.low_freq_factor = 1.0;
    c.rope.high_freq_factor = 4.0;
    c.rope.original_max_position_embeddings = 1024;
  }
  if (rope_type == "yarn") {
    c.rope.factor = 4.0;
    c.rope.original_max_position_embeddings = 64;  // ramp over dims 0..2
  }
  return c;
}

std::map<std::string, at::Tensor> RandomWeights(const config::DrafterConfig& c, uint64_t seed) {
  at::manual_seed(seed);
  std::map<std::string, at::Tensor> w;
  for (const weights::TensorSpec& s : DrafterSchema(c, kTargetHidden)) {
    const bool is_norm = s.name.find("norm") != std::string::npos;
    const bool is_bias = s.name.find(".bias") != std::string::npos;
    at::Tensor t = at::randn(s.shape);
    if (is_norm) {
      t = 1.0 + 0.1 * t;
    } else if (is_bias) {
      t = 0.1 * t;
    } else {
      t = t / std::sqrt(static_cast<double>(s.shape[1]));
    }
    w[s.name] = t;
  }
  return w;
}

struct Fixture {
  config::DrafterConfig cfg;
  std::map<std::string, at::Tensor> weights;
  at::Tensor embed, lm_head;
  std::vector<at::Tensor> features;          // per sequence [L, K*H_t]
  std::vector<std::vector<int64_t>> tokens;  // per sequence
};

Fixture MakeFixture(const config::DrafterConfig& cfg, std::vector<int64_t> lengths,
                    uint64_t seed = 7) {
  Fixture f;
  f.cfg = cfg;
  f.weights = RandomWeights(cfg, seed);
  f.embed = at::randn({kVocab, cfg.hidden_size});
  f.lm_head = at::randn({kVocab, cfg.hidden_size}) * 0.3;
  for (int64_t L : lengths) {
    f.features.push_back(at::randn({L, cfg.num_target_features() * kTargetHidden}));
    at::Tensor t = at::randint(0, kVocab - 1, {L}, at::kLong);
    f.tokens.emplace_back(t.data_ptr<int64_t>(), t.data_ptr<int64_t>() + L);
  }
  return f;
}

// x0 for block at anchor a of sequence s: embed([t[a], m, ..., m]).
at::Tensor BlockInput(const Fixture& f, int64_t s, int64_t a) {
  std::vector<int64_t> ids(f.cfg.block_size, f.cfg.mask_token_id);
  ids[0] = f.tokens[s][a];
  return f.embed.index_select(0, at::tensor(ids, at::kLong));
}

struct Block {
  int64_t seq, anchor;
};

// All blocks in one ForwardBlocks call; returns [nb, B, H] as fp32.
at::Tensor RunBlocks(const DrafterModel& m, const Fixture& f, const ContextCache& ctx,
                     const std::vector<Block>& blocks, c10::ScalarType dtype) {
  std::vector<at::Tensor> xs;
  std::vector<int64_t> anchors, seqs;
  for (const Block& b : blocks) {
    xs.push_back(BlockInput(f, b.seq, b.anchor));
    anchors.push_back(b.anchor);
    seqs.push_back(b.seq);
  }
  auto out = m.ForwardBlocks(at::stack(xs).to(dtype), at::tensor(anchors, at::kLong),
                             at::tensor(seqs, at::kLong), ctx, Legacy());
  EXPECT_THAT(out, IsOk());
  return out.ok() ? out->to(at::kFloat) : at::Tensor();
}

at::Tensor Logits(const at::Tensor& h, const at::Tensor& lm_head) {  // h [B, H]
  return at::matmul(h.narrow(0, 1, h.size(0) - 1).to(at::kDouble), lm_head.to(at::kDouble).t());
}

double MaxRelDiff(const at::Tensor& got, const at::Tensor& want) {
  const double scale = want.abs().max().item<double>();
  return (got.to(at::kDouble) - want.to(at::kDouble)).abs().max().item<double>() /
         std::max(scale, 1e-30);
}

std::vector<Block> AllBlocks(const Fixture& f) {
  std::vector<Block> blocks;
  for (int64_t s = 0; s < static_cast<int64_t>(f.tokens.size()); ++s) {
    const int64_t L = static_cast<int64_t>(f.tokens[s].size());
    for (int64_t a : {int64_t{1}, int64_t{2}, L / 2, L - 2, L - 1}) {
      blocks.push_back({s, a});
    }
  }
  return blocks;
}

class DrafterModelRefTest : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(DrafterModelRefTest, MatchesReferenceFp32) {
  const auto& [rope, bias] = GetParam();
  Fixture f = MakeFixture(TinyConfig(rope, bias), {13, 7, 20});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  std::vector<Block> blocks = AllBlocks(f);
  blocks.push_back({1, 0});  // no context at all
  at::Tensor h = RunBlocks(m, f, ctx, blocks, at::kFloat);
  ASSERT_TRUE(h.defined());
  double worst = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    std::vector<double> ref = reference::ReferenceBlock(f.cfg, f.weights, f.features[b.seq],
                                                        BlockInput(f, b.seq, b.anchor), b.anchor);
    at::Tensor ref_h = at::tensor(ref, at::kDouble).view({f.cfg.block_size, -1});
    at::Tensor want = Logits(ref_h, f.lm_head);
    at::Tensor got = Logits(h[i], f.lm_head);
    const double rel = MaxRelDiff(got, want);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-5) << "block seq " << b.seq << " anchor " << b.anchor;
    EXPECT_TRUE(at::equal(got.argmax(-1), want.argmax(-1)))
        << "argmax differs: block seq " << b.seq << " anchor " << b.anchor;
    EXPECT_LE(MaxRelDiff(h[i], ref_h), 1e-5);
  }
  std::printf("[ rope %s bias %d ] %zu blocks, max rel diff of logits %.3g\n", rope.c_str(),
              bias ? 1 : 0, blocks.size(), worst);
}

INSTANTIATE_TEST_SUITE_P(
    RopeTypes, DrafterModelRefTest,
    ::testing::Values(std::make_tuple("default", false), std::make_tuple("linear", false),
                      std::make_tuple("llama3", false), std::make_tuple("yarn", false),
                      std::make_tuple("default", true), std::make_tuple("yarn", true)));

// Blocks at anchors 1, 6 and 14 of one 15-token sequence, with the tiny
// config's sliding layers under this window, against the reference.
void ExpectWindowMatchesReference(int64_t window) {
  Fixture f = MakeFixture(TinyConfig("default", false, window), {15});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  std::vector<Block> blocks = {{0, 1}, {0, 6}, {0, 14}};
  at::Tensor h = RunBlocks(m, f, ctx, blocks, at::kFloat);
  for (size_t i = 0; i < blocks.size(); ++i) {
    std::vector<double> ref = reference::ReferenceBlock(
        f.cfg, f.weights, f.features[0], BlockInput(f, 0, blocks[i].anchor), blocks[i].anchor);
    at::Tensor ref_h = at::tensor(ref, at::kDouble).view({f.cfg.block_size, -1});
    const double rel = MaxRelDiff(Logits(h[i], f.lm_head), Logits(ref_h, f.lm_head));
    EXPECT_LE(rel, 1e-5) << "window " << window << ", anchor " << blocks[i].anchor;
  }
}

// Under zlab-2025 a window narrower than the block hides context keys only
// (dflash-semantics §4: a query sees context key c only if p - c < W), and
// the reference applies the same rule. zlab-current's in-block windows are
// checked against tools/dflash_ref (drafter-v1new, W < B) end to end.
TEST(DrafterModelTest, NarrowWindowMatchesReference) {
  ExpectWindowMatchesReference(3);
}

// A window wider than every context hides no context key; its mask would
// be W - 1 columns wide, so it is never built (here 2^40 columns).
TEST(DrafterModelTest, WindowWiderThanTheContextMatchesReference) {
  ExpectWindowMatchesReference(int64_t{1} << 40);
}

// The comparison can fail: the window and the anchor position both matter.
TEST(DrafterModelTest, ReferenceComparisonDetectsPositionAndWindowErrors) {
  Fixture f = MakeFixture(TinyConfig("default"), {20});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  at::Tensor h = RunBlocks(m, f, ctx, {{0, 15}}, at::kFloat);
  at::Tensor got = Logits(h[0], f.lm_head);
  // Off-by-one context (anchor 14 semantics with the same x0).
  std::vector<double> shifted =
      reference::ReferenceBlock(f.cfg, f.weights, f.features[0], BlockInput(f, 0, 15), 14);
  EXPECT_GT(MaxRelDiff(got, Logits(at::tensor(shifted).view({4, -1}), f.lm_head)), 1e-3);
  // No window at all.
  config::DrafterConfig full = f.cfg;
  full.sliding = {false, false, false};
  std::vector<double> no_window =
      reference::ReferenceBlock(full, f.weights, f.features[0], BlockInput(f, 0, 15), 15);
  EXPECT_GT(MaxRelDiff(got, Logits(at::tensor(no_window).view({4, -1}), f.lm_head)), 1e-3);
}

TEST(DrafterModelTest, BatchedEqualsOneBlockAtATime) {
  Fixture f = MakeFixture(TinyConfig("yarn", true), {13, 7, 20});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  const std::vector<Block> all = AllBlocks(f);
  at::Tensor batched = RunBlocks(m, f, ctx, all, at::kFloat);  // grouped
  // One block per sequence: the gathered path.
  const std::vector<Block> distinct = {{2, 17}, {0, 5}, {1, 6}};
  at::Tensor gathered = RunBlocks(m, f, ctx, distinct, at::kFloat);
  // A context holding only one sequence gives the same result as the full one.
  ASSERT_OK_AND_ASSIGN(ContextCache ctx2, m.EncodeContext({f.features[2]}));
  double worst = 0;
  auto check = [&](const at::Tensor& got, const Block& b, const ContextCache& c, int64_t seq_in_c) {
    Block local{seq_in_c, b.anchor};
    at::Tensor x0 = BlockInput(f, b.seq, b.anchor).unsqueeze(0);
    auto one = m.ForwardBlocks(x0, at::tensor({b.anchor}, at::kLong),
                               at::tensor({local.seq}, at::kLong), c, Legacy());
    ASSERT_THAT(one, IsOk());
    at::Tensor want = Logits((*one)[0], f.lm_head);
    at::Tensor have = Logits(got, f.lm_head);
    const double rel = MaxRelDiff(have, want);
    worst = std::max(worst, rel);
    EXPECT_LE(rel, 1e-6) << "seq " << b.seq << " anchor " << b.anchor;
    EXPECT_TRUE(at::equal(have.argmax(-1), want.argmax(-1)));
  };
  for (size_t i = 0; i < all.size(); ++i) check(batched[i], all[i], ctx, all[i].seq);
  for (size_t i = 0; i < distinct.size(); ++i) {
    check(gathered[i], distinct[i], ctx, distinct[i].seq);
  }
  check(batched[12], all[12], ctx2, 0);  // seq 2, anchor 1
  check(batched[14], all[14], ctx2, 0);  // seq 2, anchor 18
  std::printf("[ batched vs single ] max rel diff of logits %.3g\n", worst);
}

// Replay finishes the last layer only for the rows it scores: any rows of
// any blocks, finished together, equal ForwardBlocks' rows.
TEST(DrafterModelTest, DeferredTailFinishedForSomeRowsEqualsForwardBlocks) {
  Fixture f = MakeFixture(TinyConfig("yarn", true), {13, 7, 20});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_TRUE(m.CanDeferTail());
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  const std::vector<Block> blocks = {{2, 17}, {0, 5}, {1, 6}};  // one per sequence
  std::vector<at::Tensor> xs;
  for (const Block& b : blocks) xs.push_back(BlockInput(f, b.seq, b.anchor));
  const at::Tensor x0 = at::stack(xs), anchors = at::tensor({17, 5, 6}, at::kLong);
  const at::Tensor seqs = at::tensor({2, 0, 1}, at::kLong);
  ASSERT_OK_AND_ASSIGN(at::Tensor full, m.ForwardBlocks(x0, anchors, seqs, ctx));
  ASSERT_OK_AND_ASSIGN(DeferredBlocks d, m.ForwardBlocksDeferred(x0, anchors, seqs, ctx));
  ASSERT_TRUE(d.heads.defined());
  EXPECT_EQ(d.heads.sizes(), (std::vector<int64_t>{3, 4, 32}));
  // Slots 1-2 of block 0 and slot 3 of block 2, finished in one call.
  const at::Tensor got =
      m.FinishRows(at::cat({d.x[0].narrow(0, 1, 2), d.x[2].narrow(0, 3, 1)}),
                   at::cat({d.heads[0].narrow(0, 1, 2), d.heads[2].narrow(0, 3, 1)}));
  const at::Tensor want = at::cat({full[0].narrow(0, 1, 2), full[2].narrow(0, 3, 1)});
  EXPECT_LE(MaxRelDiff(got, want), 1e-6);
  EXPECT_TRUE(at::equal(at::matmul(got, f.lm_head.t()).argmax(-1),
                        at::matmul(want, f.lm_head.t()).argmax(-1)));
  // Every row of every block at once, too.
  EXPECT_LE(MaxRelDiff(m.FinishRows(d.x.reshape({12, 32}), d.heads.reshape({12, 32})),
                       full.reshape({12, 32})),
            1e-6);
}

// DFlash 2's convolutions mix slots after attention: its last layer cannot
// be finished row by row, and asking says so.
TEST(DrafterModelTest, DeferredTailIsRefusedForDflash2) {
  config::DrafterConfig cfg = TinyConfig("default");
  cfg.family = config::DrafterFamily::kDFlash2;
  cfg.conv_kernel_size = 2;
  cfg.conv_group_size = 8;
  cfg.selector_rank = 4;
  cfg.selector_top_k = 2;
  cfg.vocab_size = kVocab;
  Fixture f = MakeFixture(cfg, {13});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  EXPECT_FALSE(m.CanDeferTail());
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  const at::Tensor x0 = BlockInput(f, 0, 5).unsqueeze(0);
  const at::Tensor anchors = at::tensor({5}, at::kLong), seqs = at::tensor({0}, at::kLong);
  EXPECT_THAT(m.ForwardBlocksDeferred(x0, anchors, seqs, ctx).status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       "a DFlash 2 drafter's last layer cannot be finished row by row (its "
                       "convolutions mix slots); use ForwardBlocks"));
  EXPECT_THAT(m.ForwardBlocks(x0, anchors, seqs, ctx), IsOk());
}

TEST(DrafterModelTest, Bf16RoughlyAgreesWithReference) {
  Fixture f = MakeFixture(TinyConfig("default"), {13, 20});
  std::map<std::string, at::Tensor> w16;
  for (const auto& [k, v] : f.weights) w16[k] = v.to(at::kBFloat16);
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, w16));
  std::vector<at::Tensor> feats16;
  for (const at::Tensor& t : f.features) feats16.push_back(t.to(at::kBFloat16));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(feats16));
  EXPECT_EQ(ctx.k[0].scalar_type(), at::kBFloat16);
  const std::vector<Block> blocks = AllBlocks(f);
  at::Tensor h = RunBlocks(m, f, ctx, blocks, at::kBFloat16);
  double worst = 0;
  int agree = 0, total = 0;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const Block& b = blocks[i];
    std::map<std::string, at::Tensor> w16f;  // reference sees the bf16 values
    for (const auto& [k, v] : w16) w16f[k] = v.to(at::kFloat);
    std::vector<double> ref = reference::ReferenceBlock(
        f.cfg, w16f, feats16[b.seq], BlockInput(f, b.seq, b.anchor).to(at::kBFloat16), b.anchor);
    at::Tensor want = Logits(at::tensor(ref).view({4, -1}), f.lm_head);
    at::Tensor got = Logits(h[i], f.lm_head);
    worst = std::max(worst, MaxRelDiff(got, want));
    agree += at::eq(got.argmax(-1), want.argmax(-1)).sum().item<int>();
    total += static_cast<int>(got.size(0));
  }
  std::printf("[ bf16 ] max rel diff of logits %.3g, argmax agree %d/%d\n", worst, agree, total);
  EXPECT_LE(worst, 0.1);
  EXPECT_GE(agree, total * 8 / 10);
}

TEST(DrafterModelTest, BytesCountsEveryWeight) {
  Fixture f = MakeFixture(TinyConfig("default", true), {3});
  int64_t want = 0;
  for (const auto& [k, v] : f.weights) want += v.numel() * 4;
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  EXPECT_EQ(m.bytes(), want);
}

TEST(DrafterModelTest, CreateRejectsMissingTensor) {
  Fixture f = MakeFixture(TinyConfig("default"), {3});
  f.weights.erase("layers.1.self_attn.k_norm.weight");
  EXPECT_THAT(DrafterModel::Create(f.cfg, f.weights),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("drafter tensor 'layers.1.self_attn.k_norm.weight' "
                                 "is missing (expected shape [8])")));
}

TEST(DrafterModelTest, CreateRejectsMissingBiasWhenAttentionBias) {
  Fixture f = MakeFixture(TinyConfig("default", true), {3});
  f.weights.erase("layers.0.self_attn.o_proj.bias");
  EXPECT_THAT(DrafterModel::Create(f.cfg, f.weights),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("'layers.0.self_attn.o_proj.bias' is missing")));
}

TEST(DrafterModelTest, CreateRejectsWrongShape) {
  Fixture f = MakeFixture(TinyConfig("default"), {3});
  f.weights["layers.2.self_attn.k_proj.weight"] = at::zeros({32, 32});
  EXPECT_THAT(DrafterModel::Create(f.cfg, f.weights),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'layers.2.self_attn.k_proj.weight' has "
                                 "shape [32, 32]; expected [16, 32]")));
}

TEST(DrafterModelTest, CreateRejectsFcNotMatchingTargetLayers) {
  Fixture f = MakeFixture(TinyConfig("default"), {3});
  f.weights["fc.weight"] = at::zeros({32, 70});
  EXPECT_THAT(DrafterModel::Create(f.cfg, f.weights),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'fc.weight' has shape [32, 70]; expected "
                                 "[32, 3 * target hidden size] for 3 target layers")));
}

TEST(DrafterModelTest, CreateRejectsUnexpectedTensorAndMixedDtype) {
  Fixture f = MakeFixture(TinyConfig("default"), {3});
  auto w = f.weights;
  w["layers.0.self_attn.q_proj.bias"] = at::zeros({32});
  EXPECT_THAT(DrafterModel::Create(f.cfg, w),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unexpected drafter tensor "
                                 "'layers.0.self_attn.q_proj.bias' (shape [32]); "
                                 "attention_bias is false")));
  w = f.weights;
  w["norm.weight"] = w["norm.weight"].to(at::kBFloat16);
  EXPECT_THAT(DrafterModel::Create(f.cfg, w),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tensor 'norm.weight' has dtype BFloat16; "
                                 "expected Float")));
}

TEST(DrafterModelTest, ForwardRejectsBadInputs) {
  Fixture f = MakeFixture(TinyConfig("default"), {5, 3});
  ASSERT_OK_AND_ASSIGN(DrafterModel m, DrafterModel::Create(f.cfg, f.weights));
  ASSERT_OK_AND_ASSIGN(ContextCache ctx, m.EncodeContext(f.features));
  at::Tensor x0 = at::zeros({1, 4, 32});
  EXPECT_THAT(m.ForwardBlocks(x0, at::tensor({4}, at::kLong), at::tensor({1}, at::kLong), ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("block 0 has anchor 4; sequence 1 has 3 context positions")));
  EXPECT_THAT(m.ForwardBlocks(x0, at::tensor({1}, at::kLong), at::tensor({2}, at::kLong), ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("block 0 reads sequence 2; the context holds 2 sequences")));
  EXPECT_THAT(m.ForwardBlocks(at::zeros({1, 5, 32}), at::tensor({1}, at::kLong),
                              at::tensor({0}, at::kLong), ctx),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("block inputs x0 have shape [1, 5, 32]; expected [nb, B, 32] "
                                 "with 1 <= B <= block_size 4 (hidden 32)")));
  // Shorter blocks are allowed: a drafter scored at a smaller block size.
  EXPECT_OK(m.ForwardBlocks(at::zeros({1, 3, 32}), at::tensor({1}, at::kLong),
                            at::tensor({0}, at::kLong), ctx));
  EXPECT_THAT(m.EncodeContext({at::zeros({5, 48})}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("context features of sequence 0 have shape [5, 48]; "
                                 "expected [L, 72]")));
}

}  // namespace
}  // namespace dflash::model
