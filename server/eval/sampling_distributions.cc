#include "eval/sampling_distributions.h"

#include <algorithm>
#include <limits>

#include <ATen/ATen.h>

#include "eval/target_consistency.h"
#include "model/candidate_selector.h"

namespace dflash::eval {
namespace {

// The drafter's logits for hidden rows, as block_scorer computes them.
at::Tensor DrafterLogits(const at::Tensor& h, const weights::TargetTensors& target,
                         const model::DrafterConfig& cfg) {
  at::Tensor logits = at::mm(h, target.lm_head.t()).to(at::kFloat);
  if (cfg.output_multiplier != 1.0) logits = logits * cfg.output_multiplier;
  if (cfg.final_logit_softcapping > 0) {
    const double c = cfg.final_logit_softcapping;
    logits = at::tanh(logits / c) * c;
  }
  return logits;
}

at::Tensor OneHotArgmax(const at::Tensor& logits) {
  return at::zeros_like(logits).scatter_(-1, logits.argmax(-1, /*keepdim=*/true), 1.0);
}

// DFlash 2: alpha per row for each setting, q over the k candidates.
at::Tensor SelectorAlphas(const model::SelectorWeights& w, const at::Tensor& h,
                          const at::Tensor& logits, const at::Tensor& pred,
                          const std::vector<at::Tensor>& p,
                          const std::vector<SamplingSetting>& ss) {
  auto [unary, cand] = logits.topk(w.top_k, -1);  // as block_scorer: [n, k]
  const at::Tensor eta = at::linear(h.to(w.projection.scalar_type()), w.projection).to(at::kFloat);
  const at::Tensor scores = model::SelectorScores(w, eta, pred, unary, cand);  // [n, k]
  std::vector<at::Tensor> cols;
  for (size_t i = 0; i < ss.size(); ++i) {
    at::Tensor q;
    if (ss[i].temperature <= 0) {
      const at::Tensor choice = model::ChooseCandidate(scores, cand);  // ties: lower id
      q = cand.eq(choice.unsqueeze(-1)).to(at::kFloat);
    } else {
      q = at::softmax(scores / ss[i].temperature, -1);
    }
    cols.push_back(at::minimum(p[i].gather(-1, cand), q).sum(-1));
  }
  return at::stack(cols, 1);
}

}  // namespace

at::Tensor ProcessedProbs(const at::Tensor& logits, const SamplingSetting& s) {
  if (s.temperature <= 0) return OneHotArgmax(logits);
  at::Tensor x = logits.to(at::kFloat) / s.temperature;
  const int64_t V = x.size(-1);
  if (s.top_k > 0 && s.top_k < V) {
    const at::Tensor kth = std::get<0>(x.topk(s.top_k, -1)).narrow(-1, s.top_k - 1, 1);
    x = x.masked_fill(x.lt(kth), -std::numeric_limits<float>::infinity());
  }
  at::Tensor probs = at::softmax(x, -1);
  if (s.top_p < 1.0) {
    // Keep a token when the mass strictly above it (descending) is < top_p:
    // the smallest set of largest probabilities that reaches top_p.
    auto [sorted, order] = probs.sort(-1, /*descending=*/true);
    const at::Tensor above = sorted.cumsum(-1) - sorted;
    const at::Tensor keep_sorted = above.lt(s.top_p);
    const at::Tensor keep = at::zeros_like(keep_sorted).scatter_(-1, order, keep_sorted);
    probs = probs * keep.to(at::kFloat);
    probs = probs / probs.sum(-1, /*keepdim=*/true);
  }
  return probs;
}

at::Tensor SlotAlphas(const SlotAlphaInputs& in, const model::DrafterModel& drafter,
                      const weights::TargetTensors& target,
                      const std::vector<SamplingSetting>& settings, int64_t max_logit_elements) {
  const int64_t rows = in.drafter_hidden.size(0);
  const int64_t S = static_cast<int64_t>(settings.size());
  const model::SelectorWeights* selector = drafter.selector();
  // As block_scorer slices its rows, so the drafter's logits are the same.
  const int64_t slice = std::max<int64_t>(
      1, std::min<int64_t>(rows, max_logit_elements / std::max<int64_t>(1, target.vocab_size)));
  at::Tensor out = at::empty({rows, S}, in.drafter_hidden.options().dtype(at::kFloat));
  for (int64_t r0 = 0; r0 < rows; r0 += slice) {
    const int64_t n = std::min(slice, rows - r0);
    const at::Tensor h = in.drafter_hidden.narrow(0, r0, n);
    const at::Tensor dl = DrafterLogits(h, target, drafter.config());
    const at::Tensor tl = TargetLogits(target, in.target_hidden.narrow(0, r0, n), in.norm_applied);
    std::vector<at::Tensor> p;
    for (const SamplingSetting& s : settings) p.push_back(ProcessedProbs(tl, s));
    if (selector != nullptr) {
      out.narrow(0, r0, n).copy_(
          SelectorAlphas(*selector, h, dl, in.predecessors.narrow(0, r0, n), p, settings));
      continue;
    }
    for (int64_t i = 0; i < S; ++i) {
      const at::Tensor q = ProcessedProbs(dl, settings[i]);
      out.narrow(0, r0, n).select(1, i).copy_(at::minimum(p[i], q).sum(-1));
    }
  }
  return out;
}

}  // namespace dflash::eval
