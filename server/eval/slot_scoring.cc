#include "eval/slot_scoring.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "model/candidate_selector.h"

namespace dflash::eval {
namespace {

// One slice of the selector's walk (the loop of model::WalkSelector, resumed
// mid-block): path and gold predecessors [n] carry over from the previous
// slice. hidden [n, w, H]; unary, cand [n, w, k]; labels [n, w] (-1 absent).
struct SliceWalk {
  at::Tensor path, forced, near;  // [n, w]
};
SliceWalk WalkSlice(const model::SelectorWeights& s, const at::Tensor& hidden,
                    const at::Tensor& unary, const at::Tensor& cand, at::Tensor path_prev,
                    const at::Tensor& gold_prev, const at::Tensor& labels) {
  const int64_t w = hidden.size(1), k = cand.size(2);
  const at::Tensor eta =
      at::linear(hidden.to(s.projection.scalar_type()), s.projection).to(at::kFloat);
  std::vector<at::Tensor> path, forced, near;
  for (int64_t j = 0; j < w; ++j) {
    const at::Tensor u = unary.select(1, j), c = cand.select(1, j), e = eta.select(1, j);
    const at::Tensor scores = model::SelectorScores(s, e, path_prev, u, c);
    const at::Tensor choice = model::ChooseCandidate(scores, c);
    if (k >= 2) {
      const at::Tensor top2 = std::get<0>(scores.topk(2, -1));
      near.push_back((top2.select(1, 0) - top2.select(1, 1)).lt(model::kNearTieMargin));
    } else {
      near.push_back(at::zeros_like(choice, choice.options().dtype(at::kBool)));
    }
    const at::Tensor gold = j == 0 ? gold_prev : labels.select(1, j - 1).clamp_min(0);
    forced.push_back(model::ChooseCandidate(model::SelectorScores(s, e, gold, u, c), c));
    path.push_back(choice);
    path_prev = choice;
  }
  return {at::stack(path, 1), at::stack(forced, 1), at::stack(near, 1)};
}

// Host copies of one slice's verdicts, [n, w] each (DFlash 2 fields
// undefined for DFlash 1).
struct SliceVerdicts {
  at::Tensor correct, ce, unary, covered, tf, near;
  at::Tensor path;  // [n, w] int64: the path's drafts (the next slice's predecessors)
};

// Scores slots [j0, j0 + w) of the blocks `rows` (device indices).
SliceVerdicts ScoreSlice(const at::Tensor& hidden, const SlotInputs& in,
                         const VocabProjector& projector, const at::Tensor& rows, int64_t j0,
                         int64_t w, const at::Tensor& path_prev, bool cross_entropy) {
  const c10::Device device = hidden.device();
  const int64_t n = rows.size(0);
  const at::Tensor h = hidden.index_select(0, rows).narrow(1, j0, w);  // [n, w, H]
  const at::Tensor lab = in.labels.narrow(1, j0, w).index_select(0, rows.cpu()).to(device);
  const int64_t k = in.selector != nullptr ? in.selector->top_k : 0;
  const SlotReductions red =
      projector.Reduce(h.reshape({n * w, -1}), lab.reshape({-1}).clamp_min(0), k, cross_entropy);
  const at::Tensor unary = red.drafts.view({n, w});
  at::Tensor path = unary;
  SliceVerdicts v;
  const auto host = [](const at::Tensor& t) { return t.to(at::kCPU, at::kByte).contiguous(); };
  if (k > 0) {
    const at::Tensor top_ids = red.top_ids.view({n, w, k});
    const at::Tensor gold_prev =
        j0 == 0 ? in.anchors.index_select(0, rows.cpu()).to(device)
                : in.labels.select(1, j0 - 1).index_select(0, rows.cpu()).clamp_min(0).to(device);
    const SliceWalk walk =
        WalkSlice(*in.selector, h, red.top_val.view({n, w, k}), top_ids, path_prev, gold_prev, lab);
    path = walk.path;
    const at::Tensor covered = top_ids.eq(lab.unsqueeze(-1)).any(-1);
    v.unary = host(unary.eq(lab));
    v.covered = host(covered);
    v.tf = host(walk.forced.eq(lab) & covered);
    v.near = host(walk.near);
  }
  v.correct = host(path.eq(lab));
  v.path = path;
  if (cross_entropy) v.ce = red.ce.view({n, w}).to(at::kCPU).contiguous();
  return v;
}

// Appends slice row r's verdicts for slots j0.. < b.positions to b.
// Returns whether some chain the block is kept for is still unbroken.
bool Append(BlockScore& b, const SliceVerdicts& v, int64_t r, int64_t j0, int64_t w, bool dflash2) {
  const int64_t end = std::min(w, b.positions - j0);
  const auto at_ = [&](const at::Tensor& t, int64_t j) { return t.data_ptr<uint8_t>()[r * w + j]; };
  for (int64_t j = 0; j < end; ++j) {
    b.correct.push_back(at_(v.correct, j));
    if (v.ce.defined()) b.cross_entropy.push_back(v.ce.data_ptr<float>()[r * w + j]);
    if (!dflash2) continue;
    b.unary_correct.push_back(at_(v.unary, j));
    b.covered.push_back(at_(v.covered, j));
    b.tf_correct.push_back(at_(v.tf, j));
    b.near_ties += at_(v.near, j);
  }
  const auto unbroken = [](const std::vector<uint8_t>& x) {
    return std::all_of(x.begin(), x.end(), [](uint8_t c) { return c != 0; });
  };
  return unbroken(b.correct) || (dflash2 && (unbroken(b.unary_correct) || unbroken(b.covered)));
}

// Each block's scored positions (slots before the first absent label) and
// the labels of those the drafter can draft; labels [nb, J] host int64.
std::vector<BlockScore> StartScores(const at::Tensor& labels, const VocabProjector& projector,
                                    c10::Device device) {
  const int64_t nb = labels.size(0), J = labels.size(1);
  std::vector<BlockScore> out(nb);
  const int64_t* lab = labels.data_ptr<int64_t>();
  for (int64_t b = 0; b < nb; ++b) {
    while (out[b].positions < J && lab[b * J + out[b].positions] >= 0) ++out[b].positions;
  }
  const at::Tensor in_vocab =
      projector.InVocab(labels.clamp_min(0).to(device)).to(at::kCPU, at::kByte).contiguous();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* row = in_vocab.data_ptr<uint8_t>() + b * J;
    for (int64_t j = 0; j < out[b].positions; ++j) out[b].labels_in_vocab += row[j];
  }
  return out;
}

}  // namespace

std::vector<PendingSlots> StartPending(const at::Tensor& hidden, const at::Tensor& heads,
                                       const at::Tensor& labels, const VocabProjector& projector) {
  std::vector<BlockScore> scores = StartScores(labels, projector, hidden.device());
  const int64_t J = labels.size(1);
  std::vector<PendingSlots> out(scores.size());
  for (size_t b = 0; b < scores.size(); ++b) {
    out[b].hidden = hidden[static_cast<int64_t>(b)];
    if (heads.defined()) out[b].heads = heads[static_cast<int64_t>(b)];
    const int64_t* row = labels.data_ptr<int64_t>() + static_cast<int64_t>(b) * J;
    out[b].labels.assign(row, row + J);
    out[b].score = std::move(scores[b]);
  }
  return out;
}

void ScoreNextSlices(const std::vector<PendingSlots*>& items, const VocabProjector& projector,
                     int64_t width, const model::DrafterModel* drafter) {
  std::vector<at::Tensor> rows, heads;  // heads: the deferred items' (all of them or none)
  std::vector<int64_t> labels;
  std::vector<std::pair<PendingSlots*, int64_t>> taken;  // item, slots in this pass
  for (PendingSlots* p : items) {
    if (p->done()) continue;
    const int64_t j0 = p->score.measured();
    const int64_t w = std::min(std::max<int64_t>(width, 1), p->score.positions - j0);
    rows.push_back(p->hidden.narrow(0, j0, w));
    if (p->heads.defined()) heads.push_back(p->heads.narrow(0, j0, w));
    labels.insert(labels.end(), p->labels.begin() + j0, p->labels.begin() + j0 + w);
    taken.emplace_back(p, w);
  }
  if (rows.empty()) return;
  at::Tensor hidden = at::cat(rows, 0);
  if (!heads.empty()) {  // one tail for every row of the pass
    TORCH_CHECK(heads.size() == rows.size() && drafter != nullptr,
                "a pass finishes deferred slots of one drafter, all of them deferred");
    hidden = drafter->FinishRows(hidden, at::cat(heads, 0)).to(projector.dtype());
  }
  const at::Tensor lab = at::tensor(labels, at::kLong);
  const SlotReductions red = projector.Reduce(hidden, lab.to(hidden.device()), /*top_k=*/0, false);
  const at::Tensor drafts = red.drafts.to(at::kCPU).contiguous();
  const int64_t* d = drafts.data_ptr<int64_t>();
  size_t r = 0;
  for (auto& [p, w] : taken) {
    for (int64_t j = 0; j < w; ++j, ++r) p->score.correct.push_back(d[r] == labels[r] ? 1 : 0);
  }
}

std::vector<BlockScore> ScoreSlots(const at::Tensor& hidden, const SlotInputs& in,
                                   const VocabProjector& projector, Positions positions,
                                   bool cross_entropy, int64_t slice_width) {
  const int64_t nb = hidden.size(0), J = hidden.size(1);
  const bool dflash2 = in.selector != nullptr && in.selector->top_k > 0;
  const int64_t width =
      positions == Positions::kAll ? std::max<int64_t>(J, 1) : std::max<int64_t>(slice_width, 1);
  std::vector<BlockScore> out = StartScores(in.labels, projector, hidden.device());
  std::vector<int64_t> live;  // blocks still scored
  for (int64_t b = 0; b < nb; ++b) {
    if (out[b].positions > 0) live.push_back(b);
  }
  // Per block (all nb rows), the path's draft at the slot before the slice.
  at::Tensor path_prev = in.anchors.clone().to(hidden.device());
  for (int64_t j0 = 0; j0 < J && !live.empty(); j0 += width) {
    const int64_t w = std::min(width, J - j0);
    const at::Tensor rows = at::tensor(live, at::kLong).to(hidden.device());
    const SliceVerdicts v = ScoreSlice(hidden, in, projector, rows, j0, w,
                                       path_prev.index_select(0, rows), cross_entropy);
    if (dflash2) path_prev.index_copy_(0, rows, v.path.select(1, w - 1));
    std::vector<int64_t> next;
    for (size_t r = 0; r < live.size(); ++r) {
      BlockScore& b = out[live[r]];
      const bool keep = Append(b, v, static_cast<int64_t>(r), j0, w, dflash2);
      if (j0 + w < b.positions && (keep || positions == Positions::kAll)) next.push_back(live[r]);
    }
    live = std::move(next);
  }
  return out;
}

}  // namespace dflash::eval
