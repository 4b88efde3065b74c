#include "eval/vocab_chunks.h"

#include <algorithm>
#include <cmath>

#include <ATen/ATen.h>

namespace dflash::eval {
namespace {

// A chunk also stays under this many elements even when the budget allows
// more: a buffer this size is reused by the allocator from chunk to chunk
// instead of being mapped (and page-faulted) afresh each time.
constexpr int64_t kMaxReusedElements = int64_t{8} << 20;

// Running reductions of one row chunk across vocabulary chunks.
struct Running {
  at::Tensor best_val, best_idx;  // [n] fp32 / int64
  at::Tensor lse, label_logit;    // [n] fp32
  at::Tensor top_val, top_ids;    // [n, k]
};

}  // namespace

VocabProjector::VocabProjector(const at::Tensor& lm_head, LogitsTransform transform,
                               int64_t budget_bytes)
    : head_t_(lm_head.t()),
      transform_(transform),
      budget_bytes_(budget_bytes > 0 ? budget_bytes : kDefaultLogitsBudgetBytes),
      vocab_size_(lm_head.size(0)) {}

void VocabProjector::SetDraftVocab(const at::Tensor& draft_to_target,
                                   const at::Tensor& target_to_draft) {
  draft_to_target_ = draft_to_target;
  target_to_draft_ = target_to_draft;
}

at::Tensor VocabProjector::InVocab(const at::Tensor& target_ids) const {
  if (!target_to_draft_.defined())
    return at::ones_like(target_ids, target_ids.options().dtype(at::kBool));
  return target_to_draft_.index_select(0, target_ids.reshape({-1})).ge(0).view(target_ids.sizes());
}

int64_t VocabProjector::BytesPerElement() const {
  // The matmul output (unless it already is fp32), its fp32 copy and one
  // temporary of the same shape (softcap, exp inside logsumexp).
  const int64_t raw = head_t_.scalar_type() == at::kFloat ? 0 : head_t_.element_size();
  return raw + 2 * static_cast<int64_t>(sizeof(float));
}

VocabProjector::ChunkShape VocabProjector::Shape(int64_t rows, int64_t k) const {
  const int64_t elements =
      std::max<int64_t>(1, std::min(kMaxReusedElements, budget_bytes_ / BytesPerElement()));
  ChunkShape s;
  if (elements >= vocab_size_) {
    s.columns = vocab_size_;
    s.rows = std::clamp<int64_t>(elements / vocab_size_, 1, std::max<int64_t>(rows, 1));
  } else {
    s.rows = 1;
    s.columns = std::min(vocab_size_, std::max<int64_t>({elements, k, 1}));
  }
  return s;
}

at::Tensor LogitsTransform::Apply(at::Tensor x) const {
  if (output_multiplier != 1.0) x = x * output_multiplier;
  if (softcap > 0) x = at::tanh(x / softcap) * softcap;
  return x;
}

SlotReductions VocabProjector::Reduce(const at::Tensor& h, const at::Tensor& labels, int64_t top_k,
                                      bool cross_entropy) const {
  const int64_t rows = h.size(0), V = vocab_size_, k = top_k;
  const ChunkShape shape = Shape(rows, k);
  const at::TensorOptions lopt = at::TensorOptions().dtype(at::kLong).device(h.device());
  const at::TensorOptions fopt = lopt.dtype(at::kFloat);
  SlotReductions red;
  red.drafts = at::empty({rows}, lopt);
  red.ce = at::zeros({rows}, fopt);
  if (k > 0) {
    red.top_val = at::empty({rows, k}, fopt);
    red.top_ids = at::empty({rows, k}, lopt);
  }
  // Labels as draft indices (-1: outside the draft vocabulary).
  const bool mapped = draft_to_target_.defined();
  const at::Tensor labels_d =
      cross_entropy && mapped ? target_to_draft_.index_select(0, labels) : labels;
  const auto logits_of = [&](const at::Tensor& hr, int64_t v0, int64_t nv) {
    at::Tensor x = transform_.Apply(at::mm(hr, head_t_.narrow(1, v0, nv)).to(at::kFloat));
    red.peak_chunk_bytes = std::max(red.peak_chunk_bytes, x.numel() * BytesPerElement());
    return x;  // [n, nv] fp32
  };
  for (int64_t r0 = 0; r0 < rows; r0 += shape.rows) {
    const int64_t n = std::min(shape.rows, rows - r0);
    const at::Tensor hr = h.narrow(0, r0, n);
    const at::Tensor lab = cross_entropy ? labels_d.narrow(0, r0, n) : at::Tensor();
    Running run;
    for (int64_t v0 = 0; v0 < V; v0 += shape.columns) {
      const int64_t nv = std::min(shape.columns, V - v0);
      const at::Tensor logits = logits_of(hr, v0, nv);
      const at::Tensor idx = logits.argmax(-1);  // the first maximum
      const at::Tensor val = logits.gather(-1, idx.unsqueeze(-1)).squeeze(-1);
      if (v0 == 0) {
        run.best_val = val;
        run.best_idx = idx;
      } else {  // strictly greater: ties keep the lower id of an earlier chunk
        const at::Tensor better = val.gt(run.best_val);
        run.best_val = at::where(better, val, run.best_val);
        run.best_idx = at::where(better, idx + v0, run.best_idx);
      }
      if (k > 0) {
        auto [tv, ti] = logits.topk(std::min(k, nv), -1);
        ti = ti + v0;
        if (v0 > 0) {
          const at::Tensor cv = at::cat({run.top_val, tv}, -1), ci = at::cat({run.top_ids, ti}, -1);
          std::tie(tv, ti) = cv.topk(std::min<int64_t>(k, cv.size(-1)), -1);
          ti = ci.gather(-1, ti);
        }
        run.top_val = tv;
        run.top_ids = ti;
      }
      if (cross_entropy) {
        const at::Tensor lse = at::logsumexp(logits, -1);
        run.lse = v0 == 0 ? lse : at::logaddexp(run.lse, lse);
        const at::Tensor inside = lab.ge(v0) & lab.lt(v0 + nv);
        const at::Tensor g =
            logits.gather(-1, (lab - v0).clamp(0, nv - 1).unsqueeze(-1)).squeeze(-1);
        run.label_logit = v0 == 0 ? at::where(inside, g, at::zeros_like(g))
                                  : at::where(inside, g, run.label_logit);
      }
    }
    red.drafts.narrow(0, r0, n).copy_(mapped ? draft_to_target_.index_select(0, run.best_idx)
                                             : run.best_idx);
    if (k > 0) {
      red.top_val.narrow(0, r0, n).copy_(run.top_val);
      red.top_ids.narrow(0, r0, n).copy_(run.top_ids);
    }
    if (cross_entropy) {
      at::Tensor ce = run.lse - run.label_logit;
      if (mapped) ce = at::where(lab.ge(0), ce, at::full_like(ce, NAN));
      red.ce.narrow(0, r0, n).copy_(ce);
    }
  }
  return red;
}

}  // namespace dflash::eval
