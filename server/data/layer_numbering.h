// File: layer_numbering.h
// The two ways target layers are numbered, and the conversion between them.
// Torch-free (the manifest parser, which is fuzzed, uses it).
//
//   hf-layer         "the output of layer k" is k: Hugging Face
//                    hidden_states[k+1]; z-lab, SpecForge, Model-Optimizer.
//   vllm-capture-id  the same output is k+1: id 0 is the embeddings, id N
//                    the last layer before the final norm; vLLM captures and
//                    speculators' aux_hidden_state_layer_ids.
//
// The service works in hf-layer; a dataset declared in capture ids is
// converted once, at load.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::data {

enum class LayerNumbering { kHfLayer, kVllmCaptureId };

// "hf-layer" / "vllm-capture-id".
const char* NumberingName(LayerNumbering n);

// InvalidArgument naming both accepted values.
absl::StatusOr<LayerNumbering> ParseNumbering(absl::string_view text);

// ids as declared -> hf-layer ids. Capture id 0 (the embeddings) is
// InvalidArgument "<where> lists capture id 0 ...".
absl::StatusOr<std::vector<int>> ToHfLayers(const std::vector<int>& ids, LayerNumbering n,
                                            absl::string_view where);

// "hf-layer [1, 16] = vllm-capture-id [2, 17]".
std::string BothNumberings(const std::vector<int>& hf_ids);

// What a "drafter needs layer X; dataset holds [...]" error adds: the same
// in capture ids and, when the dataset holds every wanted layer shifted by
// one, that the declared numbering is likely off by one:
// " (hf-layer; as vllm-capture-id: needs 4, holds [2, 3, 5])".
std::string MismatchInBothNumberings(const std::vector<int>& wanted,
                                     const std::vector<int>& missing, const std::vector<int>& held);

}  // namespace dflash::data
