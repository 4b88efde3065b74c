// File: vocab_chunks.h
// The target's vocabulary projection and its reductions under a byte budget.
// Hidden rows h [rows, H] go through lm_head [V, H] (times output_multiplier,
// then the softcap) and are reduced to what scoring needs: the argmax, the
// cross entropy against a label, the top-k candidates (DFlash 2). The
// logits are never materialised for all rows: a chunk of rows x vocabulary
// columns at a time, the chunk sized so that its logits (the matmul output,
// its fp32 copy and one temporary of that shape) stay within the budget.
// When one row's logits do not fit, the vocabulary is split too and the
// reductions are merged across vocabulary chunks (running max with the
// lowest index on ties, log-add-exp, top-k of the merged candidates).
//
//   VocabProjector proj(target.lm_head, {cfg.output_multiplier, cfg.final_logit_softcapping},
//                       256 << 20);
//   SlotReductions r = proj.Reduce(h, labels, /*top_k=*/0, /*cross_entropy=*/true);
#pragma once

#include <cstdint>

#include <ATen/core/Tensor.h>

namespace dflash::eval {

// Default for --logits-budget-bytes.
inline constexpr int64_t kDefaultLogitsBudgetBytes = int64_t{256} << 20;

// What the logits of each row are reduced to.
struct SlotReductions {
  at::Tensor drafts;            // [rows] int64 argmax (lowest id on ties)
  at::Tensor ce;                // [rows] fp32 cross entropy (zeros when not asked)
  at::Tensor top_val, top_ids;  // [rows, k] fp32 / int64 when top_k > 0
  // With a draft vocabulary the drafts are target ids (mapped through d2t),
  // and ce is NaN where the label is outside the draft vocabulary (the
  // drafter gives it probability 0); MetricsAccumulator leaves those out.
  // The largest logits chunk this call held, in the budget's accounting
  // (rows x columns x bytes per element); for tests and benchmarks.
  int64_t peak_chunk_bytes = 0;
};

// How the raw head output becomes the logits (dflash-semantics §4).
struct LogitsTransform {
  double output_multiplier = 1.0;
  double softcap = 0;  // c > 0: c * tanh(x / c)

  // fp32 head output x -> logits: times output_multiplier, then the softcap.
  at::Tensor Apply(at::Tensor x) const;
};

class VocabProjector {
 public:
  // lm_head [V, H]; budget_bytes <= 0 means the default.
  VocabProjector(const at::Tensor& lm_head, LogitsTransform transform, int64_t budget_bytes);

  // A drafter's own (reduced) vocabulary: lm_head above is its head
  // [V_draft, H]; draft_to_target [V_draft] and target_to_draft [V] (-1
  // outside) are model::DraftVocab's. The one place draft indices become
  // target ids: Reduce maps the argmax, and labels for the cross entropy.
  void SetDraftVocab(const at::Tensor& draft_to_target, const at::Tensor& target_to_draft);
  // [n] bool: which target ids the drafter can draft (all without a draft
  // vocabulary). ids on lm_head's device, >= 0.
  at::Tensor InVocab(const at::Tensor& target_ids) const;

  // Rows and vocabulary columns of one chunk for `rows` rows and top-k k
  // (a chunk has at least max(1, k) columns even under a tiny budget).
  struct ChunkShape {
    int64_t rows = 1, columns = 1;
  };
  ChunkShape Shape(int64_t rows, int64_t k) const;
  // Budget bytes charged per logits element.
  int64_t BytesPerElement() const;
  // The head's dtype: hidden rows are cast to it.
  c10::ScalarType dtype() const { return head_t_.scalar_type(); }

  // h [rows, H] in lm_head's dtype and device; labels [rows] int64 >= 0
  // (read only with cross_entropy). Throws c10::Error (callers guard).
  SlotReductions Reduce(const at::Tensor& h, const at::Tensor& labels, int64_t top_k,
                        bool cross_entropy) const;

 private:
  at::Tensor head_t_;  // [H, V]
  LogitsTransform transform_;
  int64_t budget_bytes_;
  int64_t vocab_size_;
  at::Tensor draft_to_target_, target_to_draft_;  // undefined: the target's vocabulary
};

}  // namespace dflash::eval
