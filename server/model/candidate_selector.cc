#include "model/candidate_selector.h"

#include <limits>
#include <vector>

#include <ATen/ATen.h>

namespace dflash::model {

at::Tensor SelectorScores(const SelectorWeights& w, const at::Tensor& eta,
                          const at::Tensor& predecessors, const at::Tensor& unary,
                          const at::Tensor& candidates) {
  const int64_t nb = candidates.size(0), k = candidates.size(1);
  // (A[p] * eta) . Bc[b] for each candidate b: [nb, k].
  at::Tensor a = w.predecessor.index_select(0, predecessors).to(at::kFloat) * eta;  // [nb, r]
  at::Tensor bc = w.successor.index_select(0, candidates.reshape({-1}))
                      .to(at::kFloat)
                      .view({nb, k, -1});  // [nb, k, r]
  return unary + at::bmm(bc, a.unsqueeze(-1)).squeeze(-1);
}

at::Tensor ChooseCandidate(const at::Tensor& scores, const at::Tensor& candidates) {
  const at::Tensor best = std::get<0>(scores.max(-1, /*keepdim=*/true));
  const at::Tensor ids = at::where(scores.eq(best), candidates,
                                   at::full_like(candidates, std::numeric_limits<int64_t>::max()));
  return std::get<0>(ids.min(-1));
}

SelectorWalk WalkSelector(const SelectorWeights& w, const at::Tensor& hidden,
                          const at::Tensor& unary, const at::Tensor& candidates,
                          const at::Tensor& anchors, const at::Tensor& labels) {
  const int64_t J = hidden.size(1), k = candidates.size(2);
  const at::Tensor eta =
      at::linear(hidden.to(w.projection.scalar_type()), w.projection).to(at::kFloat);  // [nb, J, r]
  std::vector<at::Tensor> path, forced, near;
  at::Tensor p = anchors.to(at::kLong);
  for (int64_t j = 0; j < J; ++j) {
    const at::Tensor u = unary.select(1, j), cand = candidates.select(1, j);
    const at::Tensor e = eta.select(1, j);
    const at::Tensor s = SelectorScores(w, e, p, u, cand);
    const at::Tensor choice = ChooseCandidate(s, cand);
    if (k >= 2) {
      const at::Tensor top2 = std::get<0>(s.topk(2, -1));
      near.push_back((top2.select(1, 0) - top2.select(1, 1)).lt(kNearTieMargin));
    } else {
      near.push_back(at::zeros_like(choice, choice.options().dtype(at::kBool)));
    }
    // The gold predecessor: t_a for slot 1, else the label of slot j - 1
    // (clamped where absent; those slots are not counted).
    const at::Tensor gold = j == 0 ? anchors.to(at::kLong) : labels.select(1, j - 1).clamp_min(0);
    forced.push_back(ChooseCandidate(SelectorScores(w, e, gold, u, cand), cand));
    path.push_back(choice);
    p = choice;
  }
  return {at::stack(path, 1), at::stack(forced, 1), at::stack(near, 1)};
}

}  // namespace dflash::model
