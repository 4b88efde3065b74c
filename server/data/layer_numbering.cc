#include "data/layer_numbering.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::data {

namespace {

std::vector<int> Plus(const std::vector<int>& ids, int d) {
  std::vector<int> out;
  out.reserve(ids.size());
  for (int id : ids) out.push_back(id + d);
  return out;
}

bool AllHeld(const std::vector<int>& ids, const std::vector<int>& held) {
  return std::all_of(ids.begin(), ids.end(),
                     [&](int id) { return std::find(held.begin(), held.end(), id) != held.end(); });
}

}  // namespace

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
  return absl::StrCat("hf-layer [", absl::StrJoin(hf_ids, ", "), "] = vllm-capture-id [",
                      absl::StrJoin(Plus(hf_ids, 1), ", "), "]");
}

std::string MismatchInBothNumberings(const std::vector<int>& wanted,
                                     const std::vector<int>& missing,
                                     const std::vector<int>& held) {
  std::string out =
      absl::StrCat(" (hf-layer; as vllm-capture-id: needs ", absl::StrJoin(Plus(missing, 1), ", "),
                   ", holds [", absl::StrJoin(Plus(held, 1), ", "), "])");
  for (int d : {1, -1}) {
    if (!AllHeld(Plus(wanted, d), held)) continue;
    absl::StrAppend(&out, "; the dataset holds every layer the drafter needs shifted by ",
                    d > 0 ? "+1" : "-1",
                    ": check the layer numbering declared by the drafter (speculators "
                    "aux_hidden_state_layer_ids count vllm-capture-id) and by the dataset "
                    "(dataset.json 'layer_numbering')");
    break;
  }
  return out;
}

}  // namespace dflash::data
