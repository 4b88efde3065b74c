#include "model/drafter_schema.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace dflash::model {

std::vector<weights::TensorSpec> DrafterSchema(const DrafterConfig& c,
                                               int64_t target_hidden_size) {
  const int64_t H = c.hidden_size;
  const int64_t d = c.head_dim;
  const int64_t q_out = c.num_attention_heads * d;
  const int64_t kv_out = c.num_key_value_heads * d;
  const int64_t I = c.intermediate_size;
  std::vector<weights::TensorSpec> s;
  s.push_back({"fc.weight", {H, c.num_target_features() * target_hidden_size}});
  s.push_back({"hidden_norm.weight", {H}});
  s.push_back({"norm.weight", {H}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = absl::StrCat("layers.", i, ".");
    s.push_back({p + "input_layernorm.weight", {H}});
    s.push_back({p + "post_attention_layernorm.weight", {H}});
    s.push_back({p + "self_attn.q_proj.weight", {q_out, H}});
    s.push_back({p + "self_attn.k_proj.weight", {kv_out, H}});
    s.push_back({p + "self_attn.v_proj.weight", {kv_out, H}});
    s.push_back({p + "self_attn.o_proj.weight", {H, q_out}});
    if (c.attention_bias) {
      s.push_back({p + "self_attn.q_proj.bias", {q_out}});
      s.push_back({p + "self_attn.k_proj.bias", {kv_out}});
      s.push_back({p + "self_attn.v_proj.bias", {kv_out}});
      s.push_back({p + "self_attn.o_proj.bias", {H}});
    }
    s.push_back({p + "self_attn.q_norm.weight", {d}});
    s.push_back({p + "self_attn.k_norm.weight", {d}});
    s.push_back({p + "mlp.gate_proj.weight", {I, H}});
    s.push_back({p + "mlp.up_proj.weight", {I, H}});
    s.push_back({p + "mlp.down_proj.weight", {H, I}});
  }
  return s;
}

std::vector<weights::IgnoreRule> DrafterIgnoreRules() {
  return {
      {"embed_tokens.weight",
       "the drafter borrows the target's embed_tokens (a copy saved with the "
       "drafter is not used)"},
      {"lm_head.weight",
       "the drafter borrows the target's lm_head (a copy saved with the "
       "drafter is not used)"},
      {"rotary_emb.inv_freq",
       "RoPE frequencies are recomputed from config.json"},
  };
}

}  // namespace dflash::model
