#include "eval/sampled_alphas.h"

#include <algorithm>

#include <ATen/ATen.h>

#include "eval/sampling_distributions.h"

namespace dflash::eval {

void AddSampledAlphas(const std::vector<BlockRequest>& blocks, const at::Tensor& h,
                      const model::DrafterModel& drafter, const weights::TargetTensors& target,
                      const std::vector<types::SamplingSetting>& settings, bool norm_applied,
                      std::vector<BlockScore>& scores) {
  const int64_t nb = static_cast<int64_t>(blocks.size());
  if (nb == 0) return;
  const int64_t J = h.size(0) / nb;  // B - 1 slots per block
  std::vector<at::Tensor> rows;
  std::vector<int64_t> keep, pred;
  for (int64_t b = 0; b < nb; ++b) {
    const BlockRequest& r = blocks[b];
    if (r.final_hidden == nullptr) continue;
    std::vector<int64_t> pos(J);
    for (int64_t j = 1; j <= J; ++j) {
      // Slot j predicts t[a + j] from position a + j - 1; absent slots
      // (a + j >= end) reuse the anchor's row and are never read back.
      const int64_t p = r.anchor + j < r.end ? r.anchor + j - 1 : r.anchor;
      pos[j - 1] = p;
      pred.push_back((*r.tokens)[p]);
    }
    const at::Tensor idx = at::tensor(pos, at::kLong).to(r.final_hidden->device());
    rows.push_back(r.final_hidden->index_select(0, idx));
    keep.push_back(b);
  }
  if (keep.empty()) return;
  const at::Tensor keep_rows =
      (at::tensor(keep, at::kLong).unsqueeze(1) * J + at::arange(J, at::kLong)).view({-1});
  SlotAlphaInputs in;
  in.drafter_hidden = h.index_select(0, keep_rows.to(h.device()));
  in.target_hidden = at::cat(rows, 0);
  in.norm_applied = norm_applied;
  in.predecessors = at::tensor(pred, at::kLong).to(h.device());
  const at::Tensor alpha = SlotAlphas(in, drafter, target, settings).to(at::kCPU).contiguous();
  const float* a = alpha.data_ptr<float>();
  const int64_t S = static_cast<int64_t>(settings.size());
  for (size_t i = 0; i < keep.size(); ++i) {
    BlockScore& sc = scores[keep[i]];
    const int64_t m = static_cast<int64_t>(sc.correct.size());
    sc.alpha.assign(S, std::vector<float>(m));
    for (int64_t j = 0; j < m; ++j) {
      for (int64_t s = 0; s < S; ++s) sc.alpha[s][j] = a[(i * J + j) * S + s];
    }
  }
}

}  // namespace dflash::eval
