// File: dataset_manifest.h
// The dataset.json manifest of a cached-feature dataset (dflash-semantics §3),
// parsed without torch so that it can be fuzzed:
//
//   {"name": "gsm8k-qwen3", "hidden_size": 5120,
//    "features": {"hidden_states": [1, 16, 31, 46, 61]}}
//
// "layer_numbering": "hf-layer" (default) or "vllm-capture-id" says how the
// ids are counted (data/layer_numbering.h); capture ids are converted here.
// "name" and "hidden_size" are optional (the hidden size is then derived from
// the stored width). Unknown top-level fields are ignored. Feature groups are
// returned in a canonical order: hidden_states, aux_hidden_state,
// hidden_state, then any other key alphabetically.
//
// Optionally the target's final hidden state (the input of its final norm, or
// its output when "norm_applied" is true), for the target-consistency check
// and sampled acceptance (docs/decision-metrics.md):
//
//   "final_hidden_state": {"key": "hidden_state", "norm_applied": false}
//
// "key" defaults to "hidden_state" (the EAGLE-3 layout); it may be one of the
// feature keys (then it must hold exactly one layer) or a key of its own.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "data/layer_numbering.h"

namespace dflash::data {

inline constexpr char kManifestFile[] = "dataset.json";

// One feature key and the target layers its columns hold, in column order.
using LayerGroup = std::pair<std::string, std::vector<int>>;

// Where a sample holds the target's final hidden state [L, H_t].
struct FinalHiddenSpec {
  std::string key;            // tensor key in each capture file
  bool norm_applied = false;  // true: already passed through the final norm
};

// Where responses start in captures that record no loss mask (vLLM's
// hs_{i}.safetensors): "prompt_lengths" (one per sample index; positions
// >= P are responses) or "loss_mask": "all-positions".
struct ResponsePositions {
  bool all_positions = false;
  std::vector<int64_t> prompt_lengths;  // by sample index
  bool declared() const { return all_positions || !prompt_lengths.empty(); }
};

struct DatasetManifest {
  std::string name;                  // empty when absent
  int64_t hidden_size = 0;           // 0 when absent
  std::vector<LayerGroup> features;  // in hf-layer numbering (converted)
  // "layer_numbering" as declared ("hf-layer" when absent); with
  // vllm-capture-id, `features` holds the ids minus one.
  LayerNumbering numbering = LayerNumbering::kHfLayer;
  ResponsePositions responses;
  std::optional<FinalHiddenSpec> final_hidden;  // absent: the data holds none
  // "sample_metadata": the per-sample metadata file (data/sample_metadata.h)
  // relative to the dataset root; empty: the default file, when present.
  std::string sample_metadata;
};

// InvalidArgument "manifest '<path>': <defect>".
absl::StatusOr<DatasetManifest> ParseManifest(absl::string_view json_text, absl::string_view path);

// Orders groups canonically and checks them: at least one group, every list
// non-empty, layer ids >= 0, no key "input_ids"/"loss_mask", and no layer
// held twice (within or across keys). InvalidArgument "<label>: <defect>",
// label naming the origin ("manifest '/d/dataset.json'", "request layer_ids").
absl::StatusOr<std::vector<LayerGroup>> CheckLayerGroups(
    const std::map<std::string, std::vector<int>>& groups, absl::string_view label);

// The message for a dataset that declares no layers: what to write, with an
// example manifest.
std::string MissingManifestMessage(absl::string_view dataset_path);

}  // namespace dflash::data
