#include "sample_configs.h"

#include "config/drafter_config_reader.h"

namespace dflash::config::samples {

using Json = nlohmann::json;

Json Qwen36Config() {
  return Json::parse(R"({
    "architectures": ["DFlashDraftModel"],
    "hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 17408, "num_hidden_layers": 5,
    "rms_norm_eps": 1e-06, "attention_bias": false,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention", "full_attention"],
    "sliding_window": 2048, "block_size": 16, "num_target_layers": 64,
    "vocab_size": 248320, "dtype": "bfloat16", "max_position_embeddings": 262144,
    "rope_parameters": {"rope_theta": 10000000, "rope_type": "default"},
    "dflash_config": {"mask_token_id": 248077, "target_layer_ids": [1, 16, 31, 46, 61]}
  })");
}

Json V4Config() {
  return Json::parse(R"({
    "hidden_size": 64, "num_attention_heads": 4, "intermediate_size": 128,
    "num_hidden_layers": 2, "rope_theta": 1000000.0, "rope_scaling": null,
    "torch_dtype": "float32", "num_target_layers": 36,
    "dflash_config": {"mask_token_id": 151669, "target_layer_ids": [1, 17, 33],
                      "block_size": 8}
  })");
}

Json DFlash2Config() {
  return Json::parse(R"({
    "architectures": ["DFlash2DraftModel"],
    "hidden_size": 6656, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 19968, "num_hidden_layers": 5,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention", "sliding_attention"],
    "sliding_window": 2048, "use_sliding_window": true, "is_causal": false,
    "vocab_size": 202048, "rope_theta": 1000000.0, "rms_norm_eps": 1e-06,
    "hidden_act": "silu", "transformers_version": "4.57.0",
    "output_multiplier": 0.1961, "final_logit_softcapping": 20.0,
    "dflash_config": {"block_size": 16, "target_layer_ids": [1, 13, 25, 37, 49],
                      "mask_token_id": 200000, "conv_kernel_size": 2,
                      "conv_group_size": 16, "selector_rank": 256, "selector_top_k": 16}
  })");
}

absl::StatusOr<DrafterConfig> Parse(const Json& j) {
  return ParseDrafterConfig(j.dump());
}

}  // namespace dflash::config::samples
