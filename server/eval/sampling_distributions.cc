#include "eval/sampling_distributions.h"

#include <algorithm>
#include <limits>
#include <optional>

#include <ATen/ATen.h>

#include "eval/target_consistency.h"
#include "eval/vocab_chunks.h"
#include "model/candidate_selector.h"

namespace dflash::eval {
namespace {

// The drafter's logits for hidden rows, as block_scorer computes them.
at::Tensor DrafterLogits(const at::Tensor& h, const weights::TargetTensors& target,
                         const config::DrafterConfig& cfg) {
  const LogitsTransform transform{cfg.output_multiplier, cfg.final_logit_softcapping};
  return transform.Apply(at::mm(h, target.lm_head.t()).to(at::kFloat));
}

at::Tensor OneHotArgmax(const at::Tensor& logits) {
  return at::zeros_like(logits).scatter_(-1, logits.argmax(-1, /*keepdim=*/true), 1.0);
}

// DFlash 2: the candidates of each row and their selector scores given the
// teacher-forced predecessors, as block_scorer's top-k and selector.
struct SelectorRows {
  at::Tensor cand, scores;  // [n, k]
};

SelectorRows ScoreCandidates(const model::SelectorWeights& w, const at::Tensor& h,
                             const at::Tensor& logits, const at::Tensor& pred) {
  auto [unary, cand] = logits.topk(w.top_k, -1);
  const at::Tensor eta = at::linear(h.to(w.projection.scalar_type()), w.projection).to(at::kFloat);
  return {cand, model::SelectorScores(w, eta, pred, unary, cand)};
}

// The selector's choice per row [n]: its greedy pick given the predecessor.
at::Tensor SelectorChoice(const SelectorRows& r) {
  return model::ChooseCandidate(r.scores, r.cand);
}

// q over the k candidates [n, k]: one-hot at the selector's choice for
// T = 0, else softmax(S / T).
at::Tensor SelectorQ(const SelectorRows& r, const types::SamplingSetting& s) {
  if (s.temperature <= 0) return r.cand.eq(SelectorChoice(r).unsqueeze(-1)).to(at::kFloat);
  return at::softmax(r.scores / s.temperature, -1);
}

// The drafter's processed q over the vocabulary: the request's truncation
// applies to it unless the preset truncates the target's p only.
at::Tensor DraftQ(const at::Tensor& dl, const types::SamplingSetting& s) {
  if (s.truncate_draft) return ProcessedProbs(dl, s);
  types::SamplingSetting plain = s;
  plain.top_p = 1.0;
  plain.top_k = 0;
  return ProcessedProbs(dl, plain);
}

// What one projection of a slice of rows gives every policy.
struct SliceRows {
  at::Tensor dl;     // drafter logits [n, V]
  SelectorRows sel;  // DFlash 2 only
  bool has_selector = false;
  at::Tensor proposal;  // the argmax policy's token [n], made once per slice
};

// The drafter's q of one setting, made on first use and shared by the
// policies of that setting (sample and match read the same q; its top-p
// sort is the costliest step after the projections).
class LazyQ {
 public:
  LazyQ(const at::Tensor& dl, const types::SamplingSetting& s) : dl_(dl), s_(s) {}
  const at::Tensor& get() {
    if (!q_.defined()) q_ = DraftQ(dl_, s_);
    return q_;
  }

 private:
  const at::Tensor& dl_;
  types::SamplingSetting s_;
  at::Tensor q_;
};

// alpha [n] of one setting and policy given the target's processed p [n, V].
at::Tensor PolicyAlpha(SliceRows& r, const at::Tensor& p, const types::SamplingSetting& s,
                       LazyQ& q) {
  switch (s.policy) {
    case types::ProposalPolicy::kArgmax: {
      if (!r.proposal.defined()) {
        r.proposal = r.has_selector ? SelectorChoice(r.sel) : r.dl.argmax(-1);
      }
      return p.gather(-1, r.proposal.unsqueeze(-1)).squeeze(-1);
    }
    case types::ProposalPolicy::kMatch:
      if (r.has_selector) return (p.gather(-1, r.sel.cand) * SelectorQ(r.sel, s)).sum(-1);
      return (p * q.get()).sum(-1);
    case types::ProposalPolicy::kSelector:
      return at::minimum(p.gather(-1, r.sel.cand), SelectorQ(r.sel, s)).sum(-1);
    case types::ProposalPolicy::kSample:
    case types::ProposalPolicy::kDefault: break;
  }
  return at::minimum(p, q.get()).sum(-1);
}

bool SameTruncation(const types::SamplingSetting& a, const types::SamplingSetting& b) {
  return a.temperature == b.temperature && a.top_p == b.top_p && a.top_k == b.top_k;
}

}  // namespace

at::Tensor ProcessedProbs(const at::Tensor& logits, const types::SamplingSetting& s) {
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

at::Tensor Dflash1Alpha(const at::Tensor& target_probs, const at::Tensor& drafter_logits,
                        const types::SamplingSetting& s) {
  SliceRows r;
  r.dl = drafter_logits.to(at::kFloat);
  LazyQ q(r.dl, s);
  return PolicyAlpha(r, target_probs, s, q);
}

at::Tensor SlotAlphas(const SlotAlphaInputs& in, const model::DrafterModel& drafter,
                      const weights::TargetTensors& target,
                      const std::vector<types::SamplingSetting>& settings,
                      int64_t max_logit_elements) {
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
    SliceRows r;
    r.dl = DrafterLogits(h, target, drafter.config());
    const at::Tensor tl = TargetLogits(target, in.target_hidden.narrow(0, r0, n), in.norm_applied);
    if (selector != nullptr) {
      r.sel = ScoreCandidates(*selector, h, r.dl, in.predecessors.narrow(0, r0, n));
      r.has_selector = true;
    }
    // One setting at a time (at most three [n, V] tensors alive); the
    // policies of one setting, adjacent in the list, share its p and q.
    at::Tensor p;
    std::optional<LazyQ> q;
    for (int64_t i = 0; i < S; ++i) {
      const bool same = i > 0 && SameTruncation(settings[i], settings[i - 1]);
      if (!same) p = ProcessedProbs(tl, settings[i]);
      if (!same || settings[i].truncate_draft != settings[i - 1].truncate_draft) {
        q.emplace(r.dl, settings[i]);
      }
      out.narrow(0, r0, n).select(1, i).copy_(PolicyAlpha(r, p, settings[i], *q));
    }
  }
  return out;
}

}  // namespace dflash::eval
