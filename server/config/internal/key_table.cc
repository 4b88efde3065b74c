#include "config/internal/key_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::config::internal {
namespace {

constexpr KeyKind kImplemented = KeyKind::kImplemented;
constexpr KeyKind kDraft = KeyKind::kDraft;
constexpr KeyKind kDFlash2Draft = KeyKind::kDFlash2Draft;
constexpr KeyKind kHarmless = KeyKind::kHarmless;
constexpr KeyKind kRefused = KeyKind::kRefused;

const char* KindName(KeyKind kind) {
  switch (kind) {
    case KeyKind::kImplemented: return "implemented";
    case KeyKind::kDraft: return "draft key";
    case KeyKind::kDFlash2Draft: return "DFlash 2 draft key";
    case KeyKind::kHarmless: return "harmless";
    case KeyKind::kRefused: return "refused";
  }
  return "?";
}

// The table itself: data at namespace scope, not a function body.
constexpr KeyRule kKeyRules[] = {
    // The decoder's shape (drafter_config_reader.cc).
    {"hidden_size", kImplemented},
    {"num_attention_heads", kImplemented},
    {"num_key_value_heads", kImplemented},
    {"head_dim", kImplemented},
    {"intermediate_size", kImplemented},
    {"num_hidden_layers", kImplemented},
    {"rms_norm_eps", kImplemented},
    {"attention_bias", kImplemented},
    {"vocab_size", kImplemented},
    {"draft_vocab_size", kImplemented},
    {"dtype", kImplemented},
    {"torch_dtype", kImplemented},
    // RoPE: 5.x rope_parameters or 4.x rope_theta + rope_scaling.
    {"rope_theta", kImplemented},
    {"rope_scaling", kImplemented},
    {"rope_parameters", kImplemented},
    {"partial_rotary_factor", kImplemented},
    {"max_position_embeddings", kImplemented},
    // Attention per layer.
    {"layer_types", kImplemented},
    {"sliding_window", kImplemented},
    {"use_sliding_window", kImplemented},
    {"max_window_layers", kImplemented},
    {"is_causal", kImplemented},
    // The draft keys' block, the family and the MLP (draft_keys.cc).
    {"dflash_config", kImplemented},
    {"num_target_layers", kImplemented},
    {"architectures", kImplemented},
    {"hidden_act", kImplemented},
    {"mlp_bias", kImplemented},
    // The draft keys (dflash2-semantics.md §1), in reading order.
    {"block_size", kDraft},
    {"target_layer_ids", kDraft},
    {"mask_token_id", kDraft},
    {"input_embedding_scale", kDraft},
    {"output_multiplier", kDraft},
    {"final_logit_softcapping", kDraft},
    {"conv_kernel_size", kDFlash2Draft},
    {"conv_group_size", kDFlash2Draft},
    {"selector_rank", kDFlash2Draft},
    {"selector_top_k", kDFlash2Draft},
    // Keys of HF/transformers configs that do not change a drafter's forward.
    {"model_type", kHarmless},
    {"transformers_version", kHarmless},
    {"_name_or_path", kHarmless},
    {"name_or_path", kHarmless},
    {"auto_map", kHarmless},
    {"attention_dropout", kHarmless},
    {"initializer_range", kHarmless},
    {"use_cache", kHarmless},
    {"tie_word_embeddings", kHarmless},
    {"bos_token_id", kHarmless},
    {"eos_token_id", kHarmless},
    {"pad_token_id", kHarmless},
    {"output_attentions", kHarmless},
    {"output_hidden_states", kHarmless},
    {"return_dict", kHarmless},
    {"torchscript", kHarmless},
    {"use_return_dict", kHarmless},
    {"pruned_heads", kHarmless},
    {"id2label", kHarmless},
    {"label2id", kHarmless},
    {"problem_type", kHarmless},
    {"tokenizer_class", kHarmless},
    {"is_encoder_decoder", kHarmless},
    {"chunk_size_feed_forward", kHarmless},
    {"task_specific_params", kHarmless},
    {"tf_legacy_loss", kHarmless},
    {"use_bfloat16", kHarmless},
    {"add_cross_attention", kHarmless},
    {"cross_attention_hidden_size", kHarmless},
    {"finetuning_task", kHarmless},
    {"prefix", kHarmless},
    {"sep_token_id", kHarmless},
    {"decoder_start_token_id", kHarmless},
    {"architectures_note", kHarmless},
    {"target_hidden_size", kHarmless},
    // Keys that change the computation in ways this service does not
    // implement (a null value is taken as absent).
    {"quantization_config", kRefused, "quantized checkpoints are not supported"},
    {"sliding_window_non_causal", kRefused,
     "a speculators key, but 'speculators_model_type' is absent; add it (\"dflash\" or "
     "\"dflash2\") if this is a speculators checkpoint"},
    {"aux_hidden_state_layer_ids", kRefused,
     "a speculators key (vLLM capture ids), but 'speculators_model_type' is absent; add it "
     "(\"dflash\" or \"dflash2\") if this is a speculators checkpoint"},
};

}  // namespace

const std::vector<KeyRule>& KeyTable() {
  static const std::vector<KeyRule> table(std::begin(kKeyRules), std::end(kKeyRules));
  return table;
}

const KeyRule* FindKeyRule(absl::string_view key) {
  const std::vector<KeyRule>& table = KeyTable();
  auto it = std::find_if(table.begin(), table.end(),
                         [key](const KeyRule& rule) { return key == rule.key; });
  return it == table.end() ? nullptr : &*it;
}

std::vector<std::string> KeysOfKind(std::initializer_list<KeyKind> kinds) {
  std::vector<std::string> keys;
  for (const KeyRule& rule : KeyTable()) {
    if (std::find(kinds.begin(), kinds.end(), rule.kind) != kinds.end())
      keys.emplace_back(rule.key);
  }
  return keys;
}

const std::vector<std::string>& DraftKeyNames() {
  static const std::vector<std::string> keys = KeysOfKind({kDraft, kDFlash2Draft});
  return keys;
}

const std::vector<std::string>& DFlash2KeyNames() {
  static const std::vector<std::string> keys = KeysOfKind({kDFlash2Draft});
  return keys;
}

absl::Status CheckReadable(absl::string_view key, std::initializer_list<KeyKind> kinds) {
  const KeyRule* rule = FindKeyRule(key);
  if (rule != nullptr && std::find(kinds.begin(), kinds.end(), rule->kind) != kinds.end()) {
    return absl::OkStatus();
  }
  std::vector<std::string> wanted;
  for (KeyKind kind : kinds) wanted.emplace_back(KindName(kind));
  return absl::InternalError(absl::StrCat(
      "config key '", key, "' is read but the key table (config/internal/key_table.cc) ",
      rule == nullptr ? "does not list it" : absl::StrCat("lists it as ", KindName(rule->kind)),
      "; a reader may read only keys declared as ", absl::StrJoin(wanted, " or ")));
}

}  // namespace dflash::config::internal
