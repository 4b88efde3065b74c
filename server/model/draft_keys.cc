#include "model/draft_keys.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "model/config_fields.h"

namespace dflash::model::internal {
namespace {

using Json = nlohmann::json;

// Keys this service reads (here or in drafter_config.cc).
const std::set<std::string>& ImplementedKeys() {
  static const std::set<std::string> keys = {"hidden_size",
                                             "num_attention_heads",
                                             "num_key_value_heads",
                                             "head_dim",
                                             "intermediate_size",
                                             "num_hidden_layers",
                                             "rms_norm_eps",
                                             "attention_bias",
                                             "vocab_size",
                                             "draft_vocab_size",
                                             "dtype",
                                             "torch_dtype",
                                             "rope_theta",
                                             "rope_scaling",
                                             "rope_parameters",
                                             "partial_rotary_factor",
                                             "max_position_embeddings",
                                             "layer_types",
                                             "sliding_window",
                                             "use_sliding_window",
                                             "max_window_layers",
                                             "is_causal",
                                             "dflash_config",
                                             "num_target_layers",
                                             "architectures",
                                             "hidden_act",
                                             "mlp_bias"};
  return keys;
}

// The draft keys: read from dflash_config, else the top level.
const std::vector<std::string>& DraftKeyNames() {
  static const std::vector<std::string> keys = {
      "block_size",        "target_layer_ids",        "mask_token_id",    "input_embedding_scale",
      "output_multiplier", "final_logit_softcapping", "conv_kernel_size", "conv_group_size",
      "selector_rank",     "selector_top_k"};
  return keys;
}
const std::vector<std::string>& DFlash2KeyNames() {
  static const std::vector<std::string> keys = {"conv_kernel_size", "conv_group_size",
                                                "selector_rank", "selector_top_k"};
  return keys;
}

// Keys of HF/transformers configs that do not change a drafter's forward.
const std::set<std::string>& HarmlessKeys() {
  static const std::set<std::string> keys = {"model_type",
                                             "transformers_version",
                                             "_name_or_path",
                                             "name_or_path",
                                             "auto_map",
                                             "attention_dropout",
                                             "initializer_range",
                                             "use_cache",
                                             "tie_word_embeddings",
                                             "bos_token_id",
                                             "eos_token_id",
                                             "pad_token_id",
                                             "output_attentions",
                                             "output_hidden_states",
                                             "return_dict",
                                             "torchscript",
                                             "use_return_dict",
                                             "pruned_heads",
                                             "id2label",
                                             "label2id",
                                             "problem_type",
                                             "tokenizer_class",
                                             "is_encoder_decoder",
                                             "chunk_size_feed_forward",
                                             "task_specific_params",
                                             "tf_legacy_loss",
                                             "use_bfloat16",
                                             "add_cross_attention",
                                             "cross_attention_hidden_size",
                                             "finetuning_task",
                                             "prefix",
                                             "sep_token_id",
                                             "decoder_start_token_id",
                                             "architectures_note",
                                             "target_hidden_size"};
  return keys;
}

// Keys that change the computation in ways this service does not implement:
// refused by name, with why.
const std::map<std::string, std::string>& RefusedKeys() {
  static const std::map<std::string, std::string> keys = {
      {"quantization_config", "quantized checkpoints are not supported"},
      {"sliding_window_non_causal",
       "a speculators key, but 'speculators_model_type' is absent; add it (\"dflash\" or "
       "\"dflash2\") if this is a speculators checkpoint"},
      {"aux_hidden_state_layer_ids",
       "a speculators key (vLLM capture ids), but 'speculators_model_type' is absent; add it "
       "(\"dflash\" or \"dflash2\") if this is a speculators checkpoint"},
  };
  return keys;
}

// One draft key looked up as z-lab's _draft_value does.
struct Found {
  const Json* value = nullptr;
  std::string where;   // "dflash_config.block_size" or "block_size"
  std::string source;  // "dflash_config" or "top level"
};

class DraftKeyReader {
 public:
  DraftKeyReader(const Json& root, const Json& dc, DrafterConfig& cfg)
      : root_(root), dc_(dc), cfg_(cfg) {}

  Found Find(const std::string& key) const {
    auto it = dc_.find(key);
    if (it != dc_.end() && !it->is_null()) return {&*it, "dflash_config." + key, "dflash_config"};
    it = root_.find(key);
    if (it != root_.end() && !it->is_null()) return {&*it, key, "top level"};
    return {};
  }

  // Integer key: false when absent (nothing recorded).
  absl::StatusOr<bool> Int(const std::string& key, int64_t* out) {
    const Found f = Find(key);
    if (f.value == nullptr) return false;
    if (!f.value->is_number_integer()) return WrongType(f, "an integer");
    *out = f.value->get<int64_t>();
    Record(key, f.value->dump(), f.source);
    return true;
  }

  absl::StatusOr<bool> Number(const std::string& key, double* out) {
    const Found f = Find(key);
    if (f.value == nullptr) return false;
    if (!f.value->is_number()) return WrongType(f, "a number");
    *out = f.value->get<double>();
    if (!std::isfinite(*out)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field '", f.where, "' must be finite; got ", f.value->dump()));
    }
    Record(key, f.value->dump(), f.source);
    return true;
  }

  void Record(const std::string& key, const std::string& value, const std::string& source) {
    cfg_.draft_keys.push_back({key, value, source});
  }
  void Default(const std::string& key, const std::string& value) { Record(key, value, "default"); }

 private:
  absl::Status WrongType(const Found& f, const char* wanted) const {
    return absl::InvalidArgumentError(absl::StrCat("config field '", f.where, "' must be ", wanted,
                                                   "; got ", f.value->type_name(), " ",
                                                   f.value->dump()));
  }

  const Json& root_;
  const Json& dc_;
  DrafterConfig& cfg_;
};

absl::Status MissingDraftKey(const std::string& key, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(
      "config field '", key, "' is missing (looked in dflash_config and at the top level)",
      why.empty() ? "" : "; ", why));
}

absl::Status PositiveDraftInt(DraftKeyReader& r, const std::string& key, int64_t* out) {
  const Found f = r.Find(key);
  if (*out <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", f.where, "' must be positive; got ", *out));
  }
  return absl::OkStatus();
}

// z-lab's old build_target_layer_ids (Python round: half to even), only to
// say in the error what the removed fallback would have chosen.
std::vector<int> OldFormulaLayerIds(int64_t num_target_layers, int64_t num_draft_layers) {
  if (num_draft_layers == 1) return {static_cast<int>(num_target_layers / 2)};
  const int64_t start = 1, span = num_target_layers - 3 - start;
  std::vector<int> ids;
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  for (int64_t i = 0; i < num_draft_layers; ++i) {
    ids.push_back(static_cast<int>(std::nearbyint(
        start + static_cast<double>(i * span) / static_cast<double>(num_draft_layers - 1))));
  }
  std::fesetround(saved);
  return ids;
}

absl::Status ParseTargetLayerIds(DraftKeyReader& r, DrafterConfig& cfg) {
  const Found f = r.Find("target_layer_ids");
  if (f.value == nullptr) {
    std::string why = "z-lab's current model.py requires it (the formula fallback is gone)";
    if (cfg.num_target_layers > 0) {
      absl::StrAppend(
          &why, "; the old formula would have guessed [",
          absl::StrJoin(OldFormulaLayerIds(cfg.num_target_layers, cfg.num_hidden_layers), ", "),
          "]: add the list the drafter was trained on to dflash_config");
    }
    return MissingDraftKey("target_layer_ids", why);
  }
  if (!f.value->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field '", f.where, "' must be an array of integers; got ", f.value->type_name()));
  }
  if (f.value->empty()) {
    return absl::InvalidArgumentError(absl::StrCat("config field '", f.where, "' is empty"));
  }
  for (size_t i = 0; i < f.value->size(); ++i) {
    const Json& e = (*f.value)[i];
    if (!e.is_number_integer() || e.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field '", f.where, "[", i, "]' must be a non-negative integer; got ", e.dump()));
    }
    cfg.target_layer_ids.push_back(static_cast<int>(e.get<int64_t>()));
  }
  r.Record("target_layer_ids", f.value->dump(), f.source);
  return absl::OkStatus();
}

absl::Status ParseScales(DraftKeyReader& r, DrafterConfig& cfg) {
  for (auto [key, out] :
       {std::pair<const char*, double*>{"input_embedding_scale", &cfg.input_embedding_scale},
        {"output_multiplier", &cfg.output_multiplier}}) {
    ASSIGN_OR_RETURN(bool has, r.Number(key, out));
    if (!has) {
      r.Default(key, "1.0");
    } else if (!(*out > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field '", r.Find(key).where, "' must be positive; got ", *out));
    }
  }
  ASSIGN_OR_RETURN(bool has_cap, r.Number("final_logit_softcapping", &cfg.final_logit_softcapping));
  if (!has_cap) {
    r.Default("final_logit_softcapping", "none");
  } else if (!(cfg.final_logit_softcapping > 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Find("final_logit_softcapping").where,
                     "' must be positive when set; got ", cfg.final_logit_softcapping,
                     " (null or absent disables the softcap)"));
  }
  return absl::OkStatus();
}

absl::Status ParseDFlash2Keys(DraftKeyReader& r, DrafterConfig& cfg) {
  if (!cfg.is_dflash2()) {
    for (const std::string& key : DFlash2KeyNames()) {
      const Found f = r.Find(key);
      if (f.value != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config field '", f.where,
            "' is a DFlash 2 key, but architectures does not name "
            "DFlash2DraftModel; set architectures to [\"DFlash2DraftModel\"] if this is a "
            "DFlash 2 drafter"));
      }
    }
    return absl::OkStatus();
  }
  const std::map<std::string, int64_t*> fields = {{"conv_kernel_size", &cfg.conv_kernel_size},
                                                  {"conv_group_size", &cfg.conv_group_size},
                                                  {"selector_rank", &cfg.selector_rank},
                                                  {"selector_top_k", &cfg.selector_top_k}};
  for (const std::string& key : DFlash2KeyNames()) {
    int64_t* out = fields.at(key);
    ASSIGN_OR_RETURN(bool has, r.Int(key, out));
    if (!has) return MissingDraftKey(key, "required for a DFlash 2 drafter");
    RETURN_IF_ERROR(PositiveDraftInt(r, key, out));
  }
  if (cfg.hidden_size % cfg.conv_group_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Find("conv_group_size").where, "' (", cfg.conv_group_size,
                     ") does not divide hidden_size (", cfg.hidden_size, ")"));
  }
  if (cfg.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        "config field 'vocab_size' is missing; a DFlash 2 drafter's codebooks are "
        "[vocab_size, selector_rank]");
  }
  if (cfg.selector_top_k > cfg.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Find("selector_top_k").where, "' (", cfg.selector_top_k,
                     ") is above the vocabulary size (", cfg.vocab_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseFamily(const Json& root, DrafterConfig& cfg) {
  auto it = root.find("architectures");
  if (it == root.end() || it->is_null()) return absl::OkStatus();
  if (!it->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'architectures' must be an array of strings; got ", it->type_name()));
  }
  bool dflash1 = false, dflash2 = false;
  for (const Json& e : *it) {
    if (!e.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'architectures' must be an array of strings; got ", e.dump()));
    }
    dflash1 |= e.get<std::string>() == "DFlashDraftModel";
    dflash2 |= e.get<std::string>() == "DFlash2DraftModel";
  }
  if (dflash1 && dflash2) {
    return absl::InvalidArgumentError(
        "config field 'architectures' names both DFlashDraftModel and DFlash2DraftModel");
  }
  cfg.family = dflash2 ? DrafterFamily::kDFlash2 : DrafterFamily::kDFlash1;
  if (!dflash1 && !dflash2) {
    cfg.warnings.push_back(absl::StrCat("architectures ", it->dump(),
                                        " names neither DFlashDraftModel nor "
                                        "DFlash2DraftModel; reading it as DFlash 1"));
  }
  return absl::OkStatus();
}

absl::Status ParseDraftKeys(const Json& root, DrafterConfig& cfg) {
  const Json empty = Json::object();
  const Json* dc = &empty;
  auto it = root.find("dflash_config");
  if (it != root.end() && !it->is_null()) {
    if (!it->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'dflash_config' must be an object; got ", it->type_name()));
    }
    dc = &*it;
  }
  const std::vector<std::string>& known = DraftKeyNames();
  for (const auto& [key, value] : dc->items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'dflash_config.", key, "' is not a draft key this service knows (",
          absl::StrJoin(known, ", "), "); refusing rather than ignoring it"));
    }
  }
  DraftKeyReader r(root, *dc, cfg);
  ASSIGN_OR_RETURN(bool has_b, r.Int("block_size", &cfg.block_size));
  if (!has_b) {
    cfg.block_size = 16;
    r.Default("block_size", "16");
  }
  RETURN_IF_ERROR(PositiveDraftInt(r, "block_size", &cfg.block_size));
  RETURN_IF_ERROR(ParseTargetLayerIds(r, cfg));
  ASSIGN_OR_RETURN(bool has_mask, r.Int("mask_token_id", &cfg.mask_token_id));
  if (!has_mask) return MissingDraftKey("mask_token_id", "");
  if (cfg.mask_token_id < 0) {
    return absl::InvalidArgumentError(absl::StrCat("config field '", r.Find("mask_token_id").where,
                                                   "' must be >= 0; got ", cfg.mask_token_id));
  }
  RETURN_IF_ERROR(ParseScales(r, cfg));
  return ParseDFlash2Keys(r, cfg);
}

absl::Status CheckTopLevelKeys(const Json& root, DrafterConfig& cfg) {
  std::string act = "silu";
  RETURN_IF_ERROR(config_fields::ReadString(root, "hidden_act", "hidden_act", &act).status());
  if (act != "silu") {
    return absl::InvalidArgumentError(absl::StrCat("config field 'hidden_act' is '", act,
                                                   "'; only silu (Qwen3's MLP) is implemented"));
  }
  bool mlp_bias = false;
  RETURN_IF_ERROR(config_fields::ReadBool(root, "mlp_bias", "mlp_bias", &mlp_bias).status());
  if (mlp_bias) {
    return absl::InvalidArgumentError(
        "config field 'mlp_bias' is true; MLP biases are not implemented");
  }
  const std::vector<std::string>& draft = DraftKeyNames();
  std::vector<std::string> unknown;
  for (const auto& [key, value] : root.items()) {
    auto refused = RefusedKeys().find(key);
    if (refused != RefusedKeys().end() && !value.is_null()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field '", key, "' is present: ", refused->second));
    }
    if (ImplementedKeys().count(key) || std::find(draft.begin(), draft.end(), key) != draft.end() ||
        refused != RefusedKeys().end()) {
      continue;
    }
    if (HarmlessKeys().count(key)) {
      cfg.skipped_keys.push_back(key);
    } else {
      unknown.push_back(key);
    }
  }
  for (const std::string& key : unknown) {
    cfg.warnings.push_back(absl::StrCat(
        "config key '", key,
        "' is not known to this service and was not used; check that it does not change "
        "the drafter's computation"));
  }
  return absl::OkStatus();
}

}  // namespace dflash::model::internal
