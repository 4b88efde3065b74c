#include "eval/layer_offset_check.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "eval/anchor_run.h"
#include "eval/block_scorer.h"
#include "eval/run_inputs.h"

namespace dflash::eval {

absl::StatusOr<std::vector<std::string>> LayerOffsetWarnings(const model::DrafterModel& drafter,
                                                             const weights::TargetTensors& target,
                                                             const data::EvalDataset& dataset,
                                                             const types::EvalOptions& options) {
  const std::vector<int>& ids = drafter.config().target_layer_ids;
  types::EvalOptions small = options;
  small.mode = types::Mode::kAnchor;
  small.max_samples = 4;
  small.max_blocks = 8;
  small.anchors = types::AnchorStrategy::kEven;
  small.metrics = types::MetricSet::kAcceptance;
  small.full_positions = false;
  small.sampling.clear();
  std::vector<std::string> out;
  for (const int shift : {-1, 1}) {
    std::vector<int> other;
    other.reserve(ids.size());
    for (const int id : ids) other.push_back(id + shift);
    if (*std::min_element(other.begin(), other.end()) < 0 || !dataset.CheckLayers(other).ok()) {
      continue;
    }
    double accuracy[2] = {0, 0};
    int64_t blocks = 0, samples = 0;
    for (int k = 0; k < 2; ++k) {
      BlockScorer scorer(drafter, target, dataset, BlockSize(drafter, small),
                         small.max_chunk_elements, small.semantics, small.logits_budget_bytes);
      if (k == 1) scorer.UseLayerIds(other);
      ASSIGN_OR_RETURN(EvalPart part, RunAnchor(scorer, dataset, small, nullptr));
      const types::EvalResult r = part.metrics.Finish(types::Mode::kAnchor);
      // Scored to the first miss: position 1's accuracy is its accepted rate.
      const types::PositionMetrics* p1 = r.positions.empty() ? nullptr : &r.positions[0];
      accuracy[k] = p1 != nullptr && p1->counted > 0
                        ? static_cast<double>(p1->accepted) / static_cast<double>(p1->counted)
                        : 0;
      blocks = r.blocks;
      samples = r.samples;
    }
    const std::string by = shift > 0 ? "+1" : "-1";
    out.push_back(absl::StrCat(
        "layer numbering check: the dataset also holds the drafter's layers shifted by ", by, " ([",
        absl::StrJoin(other, ", "), "]); first-position accuracy on ", samples, " sample(s), ",
        blocks, " block(s): ", absl::StrFormat("%.4f", accuracy[0]), " as declared ([",
        absl::StrJoin(ids, ", "), "], hf-layer) vs ", absl::StrFormat("%.4f", accuracy[1]),
        " shifted by ", by, "; ",
        accuracy[1] > accuracy[0]
            ? "the shifted reading scores higher: check the layer numbering declared by the "
              "drafter and by the dataset (the declared one was used; nothing was switched)"
            : "the declared reading scores at least as high (it was used)"));
  }
  return out;
}

}  // namespace dflash::eval
