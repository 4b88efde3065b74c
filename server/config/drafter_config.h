// File: drafter_config.h
// A DFlash drafter's config.json as a typed struct (what the model, the
// evaluator and the reports use), and its one-line and per-key
// descriptions. Reading the file is drafter_config_reader.h's job: it
// accepts the transformers 4.x and 5.x spellings and the other trainers'
// layouts; see shared/reference/dflash-semantics.md §1 and, for DFlash 2 and
// the draft keys z-lab added, dflash2-semantics.md §1.
//
//   ASSIGN_OR_RETURN(DrafterConfig cfg, ParseDrafterConfigFile(path));  // the reader
//   report.facts.push_back(DescribeConfig(cfg));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace dflash::config {

struct RopeConfig {
  std::string type = "default";  // default | linear | llama3 | yarn
  double theta = 10000.0;
  double factor = 1.0;  // linear, llama3, yarn
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 0;  // llama3, yarn
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double attention_factor = 0.0;  // 0 = derived (0.1 * ln(factor) + 1)
};

enum class DrafterFamily { kDFlash1, kDFlash2 };

// "DFlash 1" / "DFlash 2".
const char* FamilyName(DrafterFamily f);

// One draft key as read: the value and where it came from ("dflash_config",
// "top level" or "default"), for the validate report.
struct DraftKey {
  std::string key;
  std::string value;
  std::string source;
};

struct DrafterConfig {
  DrafterFamily family = DrafterFamily::kDFlash1;  // from `architectures`
  int64_t hidden_size = 0;                         // H
  int64_t num_attention_heads = 0;                 // nh
  int64_t num_key_value_heads = 0;                 // nkv
  int64_t head_dim = 0;                            // d (default H / nh)
  int64_t intermediate_size = 0;                   // I
  int64_t num_hidden_layers = 0;                   // n
  double rms_norm_eps = 1e-6;
  bool attention_bias = false;
  RopeConfig rope;
  std::vector<bool> sliding;   // per layer: true = sliding_attention
  int64_t sliding_window = 0;  // W (0 = none)
  // Top-level is_causal: absent = sliding layers causal, full layers
  // bidirectional (zlab-current); true/false = every layer.
  std::optional<bool> is_causal;
  // use_sliding_window false: no layer has a window (the layer types still
  // decide causality under zlab-current).
  bool use_sliding_window = true;
  int64_t block_size = 16;            // B
  std::vector<int> target_layer_ids;  // K ids, in order
  int64_t mask_token_id = -1;
  // Draft keys of DFlash 1 and 2 (dflash_config first, then top level).
  double input_embedding_scale = 1.0;  // multiplies the block's embeddings
  double output_multiplier = 1.0;      // multiplies the lm_head logits
  double final_logit_softcapping = 0;  // c > 0: logits = c * tanh(logits / c)
  // DFlash 2 only (0 for DFlash 1).
  int64_t conv_kernel_size = 0;           // K taps
  int64_t conv_group_size = 0;            // gs channels per dynamic coefficient
  int64_t selector_rank = 0;              // r
  int64_t selector_top_k = 0;             // k candidates per slot
  std::vector<DraftKey> draft_keys;       // every draft key, in reading order
  std::vector<std::string> skipped_keys;  // present, known not to matter
  int64_t num_target_layers = 0;
  int64_t vocab_size = 0;  // informational; the target decides
  // speculators' draft_vocab_size (0: not given). Given, the checkpoint may
  // hold its own lm_head.weight [draft_vocab_size, H] with d2t (int64: target
  // id = draft index + d2t[index]) and t2d (bool [vocab_size]); required
  // when draft_vocab_size < vocab_size (a reduced draft vocabulary).
  int64_t draft_vocab_size = 0;
  std::string dtype;                  // stored dtype as written ("bfloat16")
  std::vector<std::string> warnings;  // e.g. unknown top-level keys
  // The trainer's layout the file was written in ("z-lab", "speculators
  // dflash", "speculators dflash2", "Model-Optimizer") and, for the others,
  // the mapping onto z-lab's keys (layer numbering first), for validate.
  std::string layout = "z-lab";
  std::vector<std::string> layout_notes;

  int64_t num_target_features() const { return static_cast<int64_t>(target_layer_ids.size()); }
  bool is_dflash2() const { return family == DrafterFamily::kDFlash2; }
  bool reduced_vocab() const { return draft_vocab_size > 0 && draft_vocab_size < vocab_size; }
  int64_t conv_groups() const { return conv_group_size > 0 ? hidden_size / conv_group_size : 0; }
};

// Report lines: the family and every draft key with its value and source
// ("draft key block_size = 16 (dflash_config)").
std::vector<std::string> DescribeDraftKeys(const DrafterConfig& config);

// One line: "5 layers (4 sliding W=2048, 1 full), H=5120, 32/8 heads x 128,
// I=17408, B=16, target layers [1, 16, 31, 46, 61], mask 248077".
std::string DescribeConfig(const DrafterConfig& config);

}  // namespace dflash::config
