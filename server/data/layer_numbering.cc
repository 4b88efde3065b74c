#include "data/layer_numbering.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::data {

const char* NumberingName(LayerNumbering n) {
  return n == LayerNumbering::kVllmCaptureId ? "vllm-capture-id" : "hf-layer";
}

absl::StatusOr<LayerNumbering> ParseNumbering(absl::string_view text) {
  if (text == "hf-layer") return LayerNumbering::kHfLayer;
  if (text == "vllm-capture-id") return LayerNumbering::kVllmCaptureId;
  return absl::InvalidArgumentError(absl::StrCat(
      "'layer_numbering' is '", text,
      "'; expected 'hf-layer' (output of layer k = k: z-lab, SpecForge, Model-Optimizer) or "
      "'vllm-capture-id' (output of layer k = k+1, id 0 = embeddings: vLLM, speculators)"));
}

absl::StatusOr<std::vector<int>> ToHfLayers(const std::vector<int>& ids, LayerNumbering n,
                                            absl::string_view where) {
  if (n == LayerNumbering::kHfLayer) return ids;
  std::vector<int> out;
  for (int id : ids) {
    if (id < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, " lists capture id ", id,
          " (vllm-capture-id: id 0 is the embeddings, which no DFlash drafter reads; target "
          "layers start at 1)"));
    }
    out.push_back(id - 1);
  }
  return out;
}

std::string BothNumberings(const std::vector<int>& hf_ids) {
  std::vector<int> capture;
  for (int id : hf_ids) capture.push_back(id + 1);
  return absl::StrCat("hf-layer [", absl::StrJoin(hf_ids, ", "), "] = vllm-capture-id [",
                      absl::StrJoin(capture, ", "), "]");
}

}  // namespace dflash::data
