// VocabProjector at Qwen3.6's vocabulary (248320) and many rows (32 blocks
// of 15 draft slots): the logits chunks stay within the byte budget, which
// all rows' logits at once (~480 MB) would not, and the argmax, cross
// entropy and top-k equal the unchunked computation, one row at a time over
// the whole vocabulary.
#include "eval/vocab_chunks.h"

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dflash::eval {
namespace {

constexpr int64_t kVocab = 248320;
constexpr int64_t kHidden = 8;
constexpr int64_t kRows = 32 * 15;
constexpr int64_t kTopK = 4;

class VocabProjectorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    at::manual_seed(14);
    head_ = new at::Tensor(at::randn({kVocab, kHidden}));
    h_ = new at::Tensor(at::randn({kRows, kHidden}) * 3);
    labels_ = new at::Tensor(at::randint(0, kVocab, {kRows}, at::kLong));
  }
  static void TearDownTestSuite() {
    delete head_;
    delete h_;
    delete labels_;
  }

  // Over the whole vocabulary, 8 rows at a time: what an unchunked
  // projection gives.
  static void ExpectUnchunked(const SlotReductions& got, const LogitsTransform& t) {
    for (int64_t r0 = 0; r0 < kRows; r0 += 8) {
      SCOPED_TRACE(::testing::Message() << "rows from " << r0);
      at::Tensor x = at::mm(h_->narrow(0, r0, 8), head_->t()).to(at::kFloat);
      if (t.output_multiplier != 1.0) x = x * t.output_multiplier;
      if (t.softcap > 0) x = at::tanh(x / t.softcap) * t.softcap;
      const at::Tensor label = labels_->narrow(0, r0, 8);
      EXPECT_TRUE(at::equal(got.drafts.narrow(0, r0, 8), x.argmax(-1)));
      const at::Tensor ce = at::logsumexp(x, -1) - x.gather(-1, label.unsqueeze(-1)).squeeze(-1);
      EXPECT_TRUE(at::allclose(got.ce.narrow(0, r0, 8), ce, 1e-5, 1e-4));
      auto [tv, ti] = x.topk(kTopK, -1);
      EXPECT_TRUE(at::equal(got.top_ids.narrow(0, r0, 8), ti));
      EXPECT_TRUE(at::allclose(got.top_val.narrow(0, r0, 8), tv));
    }
  }

  static at::Tensor* head_;
  static at::Tensor* h_;
  static at::Tensor* labels_;
};

at::Tensor* VocabProjectorTest::head_ = nullptr;
at::Tensor* VocabProjectorTest::h_ = nullptr;
at::Tensor* VocabProjectorTest::labels_ = nullptr;

// 256 KiB: not even one row's logits (~2 MB with the temporary) fit, so the
// vocabulary itself is split and the reductions merged across chunks.
TEST_F(VocabProjectorTest, SplitsTheVocabularyUnderASmallBudget) {
  const int64_t budget = 256 << 10;
  const VocabProjector proj(*head_, {}, budget);
  EXPECT_EQ(proj.BytesPerElement(), 8);
  const VocabProjector::ChunkShape shape = proj.Shape(kRows, kTopK);
  EXPECT_EQ(shape.rows, 1);
  EXPECT_EQ(shape.columns, budget / 8);
  const SlotReductions got = proj.Reduce(*h_, *labels_, kTopK, /*cross_entropy=*/true);
  EXPECT_LE(got.peak_chunk_bytes, budget);
  EXPECT_GT(got.peak_chunk_bytes, budget / 2);
  ExpectUnchunked(got, {});
}

// 6 MiB: whole rows fit, three at a time; all rows at once would need
// kRows x V x 8 bytes (~950 MB).
TEST_F(VocabProjectorTest, ChunksRowsUnderTheBudgetWithTheTransform) {
  const int64_t budget = 6 << 20;
  const LogitsTransform t{0.5, 30.0};
  const VocabProjector proj(*head_, t, budget);
  const VocabProjector::ChunkShape shape = proj.Shape(kRows, kTopK);
  EXPECT_EQ(shape.columns, kVocab);
  EXPECT_EQ(shape.rows, 3);
  const SlotReductions got = proj.Reduce(*h_, *labels_, kTopK, /*cross_entropy=*/true);
  EXPECT_LE(got.peak_chunk_bytes, budget);
  EXPECT_LT(got.peak_chunk_bytes, kRows * kVocab * 4);
  ExpectUnchunked(got, t);
}

// bf16 heads are charged for the matmul output too; a budget under one
// chunk of k columns still makes progress (k columns at least).
TEST_F(VocabProjectorTest, ChargesTheMatmulDtypeAndKeepsKColumns) {
  const VocabProjector bf16(head_->to(at::kBFloat16), {}, 1 << 20);
  EXPECT_EQ(bf16.BytesPerElement(), 10);
  const VocabProjector tiny(*head_, {}, 1);
  EXPECT_EQ(tiny.Shape(kRows, kTopK).columns, kTopK);
  EXPECT_EQ(tiny.Shape(kRows, 0).columns, 1);
  // The default budget when none is given.
  const VocabProjector dflt(*head_, {}, 0);
  EXPECT_EQ(dflt.Shape(kRows, 0).rows, (int64_t{8} << 20) / kVocab);
}

// A reduced draft vocabulary (speculators' lm_head + d2t): the argmax over
// the draft rows becomes a target id through d2t, a label outside the draft
// vocabulary gets no cross entropy (NaN), one inside gets the draft
// distribution's; split under a small budget, as unsplit.
TEST_F(VocabProjectorTest, DraftVocabularyMapsDraftsAndLeavesUncoveredLabelsOut) {
  const int64_t Vd = 1000;
  const at::Tensor ids = std::get<0>(at::randperm(kVocab, at::kLong).narrow(0, 0, Vd).sort());
  const at::Tensor d2t = ids - at::arange(Vd, at::kLong);
  at::Tensor t2d = at::full({kVocab}, -1, at::kLong);
  t2d.index_put_({ids}, at::arange(Vd, at::kLong));
  const at::Tensor head_d = head_->index_select(0, ids);
  // Half the labels inside the draft vocabulary.
  at::Tensor labels = labels_->clone();
  labels.narrow(0, 0, kRows / 2)
      .copy_(ids.index_select(0, at::randint(0, Vd, {kRows / 2}, at::kLong)));
  for (const int64_t budget : {int64_t{4} << 10, int64_t{64} << 20}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    VocabProjector proj(head_d, {}, budget);
    proj.SetDraftVocab(ids, t2d);
    const SlotReductions got = proj.Reduce(*h_, labels, 0, /*cross_entropy=*/true);
    const at::Tensor x = at::mm(*h_, head_d.t());  // [rows, Vd]
    EXPECT_TRUE(at::equal(got.drafts, ids.index_select(0, x.argmax(-1))));
    EXPECT_TRUE(at::equal(got.drafts, x.argmax(-1) + d2t.index_select(0, x.argmax(-1))));
    const at::Tensor inside = proj.InVocab(labels);
    EXPECT_EQ(inside.sum().item<int64_t>(), kRows / 2 + (labels_->narrow(0, kRows / 2, kRows / 2)
                                                             .unsqueeze(1)
                                                             .eq(ids.unsqueeze(0))
                                                             .any(1)
                                                             .sum()
                                                             .item<int64_t>()));
    EXPECT_TRUE(at::equal(got.ce.isnan(), inside.logical_not()));
    const at::Tensor lab_d = t2d.index_select(0, labels).clamp_min(0);
    const at::Tensor ce = at::logsumexp(x, -1) - x.gather(-1, lab_d.unsqueeze(-1)).squeeze(-1);
    EXPECT_TRUE(at::allclose(got.ce.masked_select(inside), ce.masked_select(inside), 1e-5, 1e-4));
  }
  // Without a draft vocabulary every id is inside.
  const VocabProjector plain(*head_, {}, 0);
  EXPECT_TRUE(plain.InVocab(labels).all().item<bool>());
}

}  // namespace
}  // namespace dflash::eval
