// File: drafter_config.h
// A DFlash drafter's config.json as a typed struct. Accepts the transformers
// 4.x spellings (rope_theta + rope_scaling, torch_dtype) and the 5.x ones
// (rope_parameters, dtype); see shared/reference/dflash-semantics.md §1.
//
//   ASSIGN_OR_RETURN(DrafterConfig cfg, ParseDrafterConfigFile(path));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dflash::model {

struct RopeConfig {
  std::string type = "default";  // default | linear | llama3 | yarn
  double theta = 10000.0;
  double factor = 1.0;           // linear, llama3, yarn
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;  // llama3, yarn
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double attention_factor = 0.0;  // 0 = derived (0.1 * ln(factor) + 1)
};

struct DrafterConfig {
  int64_t hidden_size = 0;           // H
  int64_t num_attention_heads = 0;   // nh
  int64_t num_key_value_heads = 0;   // nkv
  int64_t head_dim = 0;              // d (default H / nh)
  int64_t intermediate_size = 0;     // I
  int64_t num_hidden_layers = 0;     // n
  double rms_norm_eps = 1e-6;
  bool attention_bias = false;
  RopeConfig rope;
  std::vector<bool> sliding;         // per layer: true = sliding_attention
  int64_t sliding_window = 0;        // W (0 = none)
  int64_t block_size = 16;           // B
  std::vector<int> target_layer_ids; // K ids, in order
  bool target_layer_ids_guessed = false;  // filled by z-lab's formula; warn
  int64_t mask_token_id = -1;
  int64_t num_target_layers = 0;
  int64_t vocab_size = 0;            // informational; the target decides
  std::string dtype;                 // stored dtype as written ("bfloat16")
  std::vector<std::string> warnings; // e.g. the guessed target_layer_ids

  int64_t num_target_features() const {
    return static_cast<int64_t>(target_layer_ids.size());
  }
};

// Parses config.json text. InvalidArgument names the field and what was wrong
// (missing, wrong type, unknown rope_type, inconsistent head_dim ...).
absl::StatusOr<DrafterConfig> ParseDrafterConfig(const std::string& json_text);

// Reads and parses a file; NotFound when absent, errors prefixed with the path.
absl::StatusOr<DrafterConfig> ParseDrafterConfigFile(const std::string& path);

// One line: "5 layers (4 sliding W=2048, 1 full), H=5120, 32/8 heads x 128,
// I=17408, B=16, target layers [1, 16, 31, 46, 61], mask 248077".
std::string DescribeConfig(const DrafterConfig& config);

}  // namespace dflash::model
