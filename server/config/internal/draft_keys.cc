#include "config/internal/draft_keys.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "config/internal/key_table.h"

namespace dflash::config::internal {
namespace {

using Json = nlohmann::json;

// One draft key looked up as z-lab's _draft_value does.
struct Found {
  const Json* value = nullptr;
  std::string where;   // "dflash_config.block_size" or "block_size"
  std::string source;  // "dflash_config" or "top level"
};

// Reads only the keys the key table declares as draft keys (InternalError
// for any other: our bug).
class DraftKeyReader {
 public:
  DraftKeyReader(const Json& root, const Json& dc, DrafterConfig& cfg)
      : root_(root), dc_(dc), cfg_(cfg) {}

  absl::StatusOr<Found> Find(const std::string& key) const {
    RETURN_IF_ERROR(CheckReadable(key, {KeyKind::kDraft, KeyKind::kDFlash2Draft}));
    auto it = dc_.find(key);
    if (it != dc_.end() && !it->is_null()) {
      return Found{&*it, "dflash_config." + key, "dflash_config"};
    }
    it = root_.find(key);
    if (it != root_.end() && !it->is_null()) return Found{&*it, key, "top level"};
    return Found{};
  }

  // Where `key` was found, for a message about a value already read.
  std::string Where(const std::string& key) const {
    absl::StatusOr<Found> f = Find(key);
    return f.ok() ? f->where : key;
  }

  // Integer key: false when absent (nothing recorded).
  absl::StatusOr<bool> Int(const std::string& key, int64_t* out) {
    ASSIGN_OR_RETURN(const Found f, Find(key));
    if (f.value == nullptr) return false;
    if (!f.value->is_number_integer()) return WrongType(f, "an integer");
    *out = f.value->get<int64_t>();
    Record(key, f.value->dump(), f.source);
    return true;
  }

  absl::StatusOr<bool> Number(const std::string& key, double* out) {
    ASSIGN_OR_RETURN(const Found f, Find(key));
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
  if (*out <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Where(key), "' must be positive; got ", *out));
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
  ASSIGN_OR_RETURN(const Found f, r.Find("target_layer_ids"));
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
          absl::StrCat("config field '", r.Where(key), "' must be positive; got ", *out));
    }
  }
  ASSIGN_OR_RETURN(bool has_cap, r.Number("final_logit_softcapping", &cfg.final_logit_softcapping));
  if (!has_cap) {
    r.Default("final_logit_softcapping", "none");
  } else if (!(cfg.final_logit_softcapping > 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field '", r.Where("final_logit_softcapping"), "' must be positive when set; got ",
        cfg.final_logit_softcapping, " (null or absent disables the softcap)"));
  }
  return absl::OkStatus();
}

absl::Status ParseDFlash2Keys(DraftKeyReader& r, DrafterConfig& cfg) {
  if (!cfg.is_dflash2()) {
    for (const std::string& key : DFlash2KeyNames()) {
      ASSIGN_OR_RETURN(const Found f, r.Find(key));
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
    auto field = fields.find(key);
    if (field == fields.end()) {
      return absl::InternalError(absl::StrCat("DFlash 2 draft key '", key,
                                              "' of the key table has no DrafterConfig field"));
    }
    int64_t* out = field->second;
    ASSIGN_OR_RETURN(bool has, r.Int(key, out));
    if (!has) return MissingDraftKey(key, "required for a DFlash 2 drafter");
    RETURN_IF_ERROR(PositiveDraftInt(r, key, out));
  }
  if (cfg.hidden_size % cfg.conv_group_size != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Where("conv_group_size"), "' (", cfg.conv_group_size,
                     ") does not divide hidden_size (", cfg.hidden_size, ")"));
  }
  if (cfg.vocab_size <= 0) {
    return absl::InvalidArgumentError(
        "config field 'vocab_size' is missing; a DFlash 2 drafter's codebooks are "
        "[vocab_size, selector_rank]");
  }
  if (cfg.selector_top_k > cfg.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", r.Where("selector_top_k"), "' (", cfg.selector_top_k,
                     ") is above the vocabulary size (", cfg.vocab_size, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseFamily(const TopLevel& root, DrafterConfig& cfg) {
  ASSIGN_OR_RETURN(const Json* arch, root.Find("architectures"));
  if (arch == nullptr) return absl::OkStatus();
  if (!arch->is_array()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'architectures' must be an array of strings; got ", arch->type_name()));
  }
  bool dflash1 = false, dflash2 = false;
  for (const Json& e : *arch) {
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
    cfg.warnings.push_back(absl::StrCat("architectures ", arch->dump(),
                                        " names neither DFlashDraftModel nor "
                                        "DFlash2DraftModel; reading it as DFlash 1"));
  }
  return absl::OkStatus();
}

absl::Status ParseDraftKeys(const TopLevel& root, DrafterConfig& cfg) {
  const Json empty = Json::object();
  const Json* dc = &empty;
  ASSIGN_OR_RETURN(const Json* block, root.Find("dflash_config"));
  if (block != nullptr) {
    if (!block->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'dflash_config' must be an object; got ", block->type_name()));
    }
    dc = block;
  }
  const std::vector<std::string>& known = DraftKeyNames();
  for (const auto& [key, value] : dc->items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'dflash_config.", key, "' is not a draft key this service knows (",
          absl::StrJoin(known, ", "), "); refusing rather than ignoring it"));
    }
  }
  DraftKeyReader r(root.json(), *dc, cfg);
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
    return absl::InvalidArgumentError(absl::StrCat("config field '", r.Where("mask_token_id"),
                                                   "' must be >= 0; got ", cfg.mask_token_id));
  }
  RETURN_IF_ERROR(ParseScales(r, cfg));
  return ParseDFlash2Keys(r, cfg);
}

absl::Status CheckTopLevelKeys(const TopLevel& root, DrafterConfig& cfg) {
  std::string act = "silu";
  RETURN_IF_ERROR(root.String("hidden_act", &act).status());
  if (act != "silu") {
    return absl::InvalidArgumentError(absl::StrCat("config field 'hidden_act' is '", act,
                                                   "'; only silu (Qwen3's MLP) is implemented"));
  }
  bool mlp_bias = false;
  RETURN_IF_ERROR(root.Bool("mlp_bias", &mlp_bias).status());
  if (mlp_bias) {
    return absl::InvalidArgumentError(
        "config field 'mlp_bias' is true; MLP biases are not implemented");
  }
  // Implemented and draft keys were read above; a refused key set to null
  // counts as absent.
  std::vector<std::string> unknown;
  for (const auto& [key, value] : root.json().items()) {
    const KeyRule* rule = FindKeyRule(key);
    if (rule == nullptr) {
      unknown.push_back(key);
    } else if (rule->kind == KeyKind::kRefused && !value.is_null()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field '", key, "' is present: ", rule->why));
    } else if (rule->kind == KeyKind::kHarmless) {
      cfg.skipped_keys.push_back(key);
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

}  // namespace dflash::config::internal
