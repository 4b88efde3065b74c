// File: foreign_config.h
// Internal to config/: config.json files written by the other DFlash
// trainers, rewritten into z-lab's layout before ParseDrafterConfig reads
// them, with every step of the mapping recorded for the validate report.
//
// - vllm-project/speculators (`speculators_model_type` dflash / dflash2):
//   the decoder shape is nested in `transformer_layer_config` (a Qwen3Config
//   diff: omitted fields take Qwen3Config's defaults), the draft keys are
//   flat, `aux_hidden_state_layer_ids` count vLLM capture ids (id 0 = the
//   embeddings, id k+1 = the output of layer k), and
//   `sliding_window_non_causal` makes sliding layers bidirectional.
// - NVIDIA Model-Optimizer exports: z-lab's layout plus
//   `dflash_config.causal` and `use_swa` / `swa_window_size`.
// Detected by those keys, never by `architectures` (both may read
// DFlashDraftModel). Variants this service does not compute are refused by
// name.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace dflash::config::internal {

struct ConfigLayout {
  // "z-lab", "speculators dflash", "speculators dflash2", "Model-Optimizer".
  std::string name = "z-lab";
  std::vector<std::string> notes;  // the mapping applied, one line each
};

// The z-lab-layout JSON for `root` (a copy of it for z-lab files).
// InvalidArgument names a refused variant or a malformed foreign key.
absl::StatusOr<nlohmann::json> ToZlabLayout(const nlohmann::json& root, ConfigLayout* layout);

}  // namespace dflash::config::internal
