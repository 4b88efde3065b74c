#include "config/internal/foreign_config.h"

#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "config/internal/key_table.h"

namespace dflash::config::internal {
namespace {

using Json = nlohmann::json;

absl::Status Invalid(const std::string& message) {
  return absl::InvalidArgumentError(message);
}

bool Has(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

// Qwen3Config's defaults: speculators saves transformer_layer_config as a
// diff against them (to_diff_dict), so an omitted field means this value.
const std::vector<std::pair<const char*, Json>>& Qwen3Defaults() {
  static const std::vector<std::pair<const char*, Json>> d = {{"vocab_size", 151936},
                                                              {"hidden_size", 4096},
                                                              {"intermediate_size", 22016},
                                                              {"num_hidden_layers", 32},
                                                              {"num_attention_heads", 32},
                                                              {"num_key_value_heads", 32},
                                                              {"head_dim", 128},
                                                              {"hidden_act", "silu"},
                                                              {"rms_norm_eps", 1e-6},
                                                              {"attention_bias", false},
                                                              {"use_sliding_window", false},
                                                              {"sliding_window", 4096},
                                                              {"max_window_layers", 28},
                                                              {"max_position_embeddings", 32768}};
  return d;
}

// Top-level speculators keys that do not change the drafted tokens (training
// schedules, the Domino-only sizes, the speculators wrapper's metadata).
const std::set<std::string>& SpeculatorsUnusedKeys() {
  static const std::set<std::string> keys = {
      "speculators_config", "speculators_version", "pure_draft_prefix_len", "emb_dim",
      "gru_hidden_dim", "lambda_base_start", "lambda_base_decay_ratio", "auf",
      "has_no_defaults_at_init", "transformers_version", "_name_or_path", "name_or_path",
      // read below (refused when they change the computation)
      "projector_type", "sample_from_anchor", "shift_label"};
  return keys;
}

absl::Status RefuseSpeculatorsVariants(const Json& root) {
  if (Has(root, "projector_type")) {
    const Json& p = root["projector_type"];
    if (!p.is_string() || p.get<std::string>() != "dflash") {
      return Invalid(absl::StrCat(
          "config field 'projector_type' is ", p.dump(),
          ": speculators' Domino projector (a causal correction head) is not computed by this "
          "service; only 'dflash' is"));
    }
  }
  if (Has(root, "sample_from_anchor") && root["sample_from_anchor"] == true) {
    return Invalid(
        "config field 'sample_from_anchor' is true: drafting the anchor slot as well (speculators' "
        "DSpark convention) is not computed by this service");
  }
  if (Has(root, "shift_label") && root["shift_label"] == true) {
    return Invalid(
        "config field 'shift_label' is true: targets shifted by one position (speculators' "
        "Domino convention) are not computed by this service");
  }
  return absl::OkStatus();
}

// transformer_layer_config with Qwen3Config's defaults filled in, one note
// per filled field.
absl::StatusOr<Json> DecoderShape(const Json& root, ConfigLayout* layout) {
  auto tl = root.find("transformer_layer_config");
  if (tl == root.end() || !tl->is_object()) {
    return Invalid(
        "speculators config (speculators_model_type present) has no 'transformer_layer_config' "
        "object: the decoder shape is missing");
  }
  Json out = *tl;
  const std::string model_type = out.value("model_type", std::string("qwen3"));
  if (model_type != "qwen3") {
    return Invalid(absl::StrCat("config field 'transformer_layer_config.model_type' is '",
                                model_type,
                                "': only Qwen3 decoder layers (Qwen3DFlashDecoderLayer) are "
                                "computed by this service"));
  }
  std::vector<std::string> filled;
  for (const auto& [key, value] : Qwen3Defaults()) {
    if (Has(out, key)) continue;
    out[key] = value;
    filled.push_back(absl::StrCat(key, "=", value.dump()));
  }
  const bool theta_nested = Has(out, "rope_parameters") && out["rope_parameters"].is_object() &&
                            Has(out["rope_parameters"], "rope_theta");
  if (!Has(out, "rope_theta") && !theta_nested) {
    out["rope_theta"] = 10000.0;
    filled.push_back("rope_theta=10000.0");
  }
  if (!filled.empty()) {
    layout->notes.push_back(absl::StrCat(
        "transformer_layer_config omits fields equal to Qwen3Config's defaults; used: ",
        absl::StrJoin(filled, ", ")));
  }
  out.erase("architectures");
  return out;
}

// aux_hidden_state_layer_ids (vLLM capture ids) -> target_layer_ids (HF
// layer index k = capture id - 1).
absl::StatusOr<Json> ShiftLayerIds(const Json& root, ConfigLayout* layout) {
  if (!Has(root, "aux_hidden_state_layer_ids")) {
    return Invalid(
        "config field 'aux_hidden_state_layer_ids' is missing: a speculators DFlash config "
        "names the target layers it reads there");
  }
  const Json& ids = root["aux_hidden_state_layer_ids"];
  if (!ids.is_array() || ids.empty()) {
    return Invalid(absl::StrCat(
        "config field 'aux_hidden_state_layer_ids' must be a non-empty array; got ", ids.dump()));
  }
  Json shifted = Json::array();
  std::vector<std::string> pairs;
  for (size_t i = 0; i < ids.size(); ++i) {
    const Json& e = ids[i];
    if (!e.is_number_integer() || e.get<int64_t>() < 1) {
      return Invalid(absl::StrCat(
          "config field 'aux_hidden_state_layer_ids[", i, "]' is ", e.dump(),
          ": vLLM capture ids of target layers start at 1 (id 0 is the embeddings, which no "
          "DFlash drafter reads)"));
    }
    shifted.push_back(e.get<int64_t>() - 1);
    pairs.push_back(absl::StrCat(e.get<int64_t>(), "->", e.get<int64_t>() - 1));
  }
  layout->notes.push_back(absl::StrCat(
      "layer numbering: aux_hidden_state_layer_ids ", ids.dump(),
      " (vllm-capture-id: id 0 = embeddings, id k+1 = output of layer k) -> target_layer_ids ",
      shifted.dump(), " (hf-layer: output of layer k = hidden_states[k+1]); capture id->hf layer ",
      absl::StrJoin(pairs, ", ")));
  return shifted;
}

// draft_vocab_size is passed on (ParseDrafterConfig checks its range and
// refuses it below the vocabulary for DFlash 2): below the target vocabulary
// the checkpoint's own lm_head, d2t and t2d draft in the reduced vocabulary.
absl::Status CheckDraftVocab(const Json& root, Json& out, ConfigLayout* layout) {
  if (!Has(root, "draft_vocab_size")) return absl::OkStatus();
  const Json& dv = root["draft_vocab_size"];
  const Json& v = out["vocab_size"];
  if (!dv.is_number_integer()) {
    return Invalid(
        absl::StrCat("config field 'draft_vocab_size' must be an integer; got ", dv.dump()));
  }
  out["draft_vocab_size"] = dv;
  if (dv == v) {
    layout->notes.push_back(absl::StrCat(
        "draft_vocab_size ", dv.dump(),
        " = the target vocabulary: the drafter's own lm_head.weight when the checkpoint holds "
        "one (d2t and t2d optional; without them the identity), else the target's lm_head"));
    return absl::OkStatus();
  }
  layout->notes.push_back(absl::StrCat(
      "draft_vocab_size ", dv.dump(), " < the target vocabulary ", v.dump(),
      ": reduced draft vocabulary; drafts from the checkpoint's lm_head.weight [", dv.dump(),
      ", H], mapped to target ids by d2t (target id = draft index + d2t[index]); labels outside "
      "it (t2d false) can never be drafted"));
  return absl::OkStatus();
}

// sliding_window_non_causal (default false for dflash, true for dflash2):
// true makes every layer bidirectional (is_causal false); false is z-lab's
// default rule (sliding layers causal, full layers bidirectional).
absl::Status MapCausality(const Json& root, bool dflash2, Json& out, ConfigLayout* layout) {
  bool non_causal = dflash2;
  std::string why =
      absl::StrCat("absent: speculators' default for ", dflash2 ? "dflash2" : "dflash", " is ",
                   dflash2 ? "true" : "false");
  if (Has(root, "sliding_window_non_causal")) {
    const Json& v = root["sliding_window_non_causal"];
    if (!v.is_boolean()) {
      return Invalid(absl::StrCat(
          "config field 'sliding_window_non_causal' must be a boolean; got ", v.dump()));
    }
    non_causal = v.get<bool>();
    why = "as written";
  }
  if (non_causal) out["is_causal"] = false;
  layout->notes.push_back(absl::StrCat(
      "sliding_window_non_causal ", non_causal ? "true" : "false", " (", why, ") -> ",
      non_causal ? "is_causal false: every layer bidirectional inside the block"
                 : "is_causal absent: sliding layers causal, full layers bidirectional"));
  return absl::OkStatus();
}

absl::StatusOr<Json> FromSpeculators(const Json& root, ConfigLayout* layout) {
  const Json& type = root["speculators_model_type"];
  const std::string t = type.is_string() ? type.get<std::string>() : type.dump();
  if (t != "dflash" && t != "dflash2") {
    return Invalid(absl::StrCat("config field 'speculators_model_type' is '", t,
                                "': not computed by this service (it reads speculators 'dflash' "
                                "and 'dflash2' checkpoints)"));
  }
  const bool dflash2 = t == "dflash2";
  layout->name = absl::StrCat("speculators ", t);
  RETURN_IF_ERROR(RefuseSpeculatorsVariants(root));
  ASSIGN_OR_RETURN(Json out, DecoderShape(root, layout));
  out["architectures"] = Json::array({dflash2 ? "DFlash2DraftModel" : "DFlashDraftModel"});
  Json dc = Json::object();
  ASSIGN_OR_RETURN(dc["target_layer_ids"], ShiftLayerIds(root, layout));
  std::vector<std::string> draft = {"block_size", "mask_token_id"};
  if (dflash2) draft.insert(draft.end(), DFlash2KeyNames().begin(), DFlash2KeyNames().end());
  for (const std::string& key : draft) {
    if (Has(root, key.c_str())) dc[key] = root[key];
  }
  out["dflash_config"] = dc;
  RETURN_IF_ERROR(CheckDraftVocab(root, out, layout));
  RETURN_IF_ERROR(MapCausality(root, dflash2, out, layout));
  // What is left: metadata (noted) or keys the parser judges (copied).
  std::set<std::string> handled = {"speculators_model_type", "transformer_layer_config",
                                   "architectures",          "aux_hidden_state_layer_ids",
                                   "draft_vocab_size",       "sliding_window_non_causal"};
  handled.insert(draft.begin(), draft.end());
  std::vector<std::string> unused;
  for (const auto& [key, value] : root.items()) {
    if (handled.count(key)) continue;
    if (SpeculatorsUnusedKeys().count(key)) {
      unused.push_back(key);
    } else if (!out.contains(key)) {
      out[key] = value;
    }
  }
  if (!unused.empty()) {
    layout->notes.push_back(absl::StrCat(
        "speculators keys that do not change the drafts, not used: ", absl::StrJoin(unused, ", ")));
  }
  return out;
}

bool IsModelOpt(const Json& root) {
  const Json* dc = Has(root, "dflash_config") && root["dflash_config"].is_object()
                       ? &root["dflash_config"]
                       : nullptr;
  for (const char* key : {"causal", "use_swa", "swa_window_size"}) {
    if (Has(root, key) || (dc != nullptr && Has(*dc, key))) return true;
  }
  return false;
}

// Takes `key` out of dflash_config or the top level (dflash_config first).
Json Take(Json& out, const char* key) {
  Json v;
  if (out.contains("dflash_config") && out["dflash_config"].is_object() &&
      Has(out["dflash_config"], key)) {
    v = out["dflash_config"][key];
  } else if (Has(out, key)) {
    v = out[key];
  }
  if (out.contains("dflash_config") && out["dflash_config"].is_object()) {
    out["dflash_config"].erase(key);
  }
  out.erase(key);
  return v;
}

absl::Status MapSwa(Json& out, ConfigLayout* layout) {
  const Json use = Take(out, "use_swa");
  const Json window = Take(out, "swa_window_size");
  if (use.is_null()) {
    if (window.is_null()) return absl::OkStatus();
    return Invalid(
        "config field 'swa_window_size' is set without 'use_swa': whether the "
        "window applies is not recorded");
  }
  if (!use.is_boolean()) {
    return Invalid(absl::StrCat("config field 'use_swa' must be a boolean; got ", use.dump()));
  }
  if (!use.get<bool>()) {
    out["use_sliding_window"] = false;
    layout->notes.push_back("use_swa false -> use_sliding_window false: no layer has a window");
    return absl::OkStatus();
  }
  if (!window.is_number_integer() || window.get<int64_t>() <= 0) {
    return Invalid(absl::StrCat(
        "config field 'swa_window_size' must be a positive integer when use_swa is true; got ",
        window.dump()));
  }
  bool any_sliding = false;
  if (out.contains("layer_types") && out["layer_types"].is_array()) {
    for (const Json& e : out["layer_types"]) any_sliding |= e == "sliding_attention";
  }
  if (!any_sliding) {
    return Invalid(
        "config field 'use_swa' is true but 'layer_types' names no sliding_attention layer: which "
        "layers use the window is not recorded");
  }
  out["use_sliding_window"] = true;
  out["sliding_window"] = window;
  layout->notes.push_back(absl::StrCat("use_swa true, swa_window_size ", window.dump(),
                                       " -> sliding_window ", window.dump(),
                                       " on the layer_types sliding_attention layers"));
  return absl::OkStatus();
}

absl::StatusOr<Json> FromModelOpt(const Json& root, ConfigLayout* layout) {
  layout->name = "Model-Optimizer";
  if (Has(root, "quantization_config")) {
    const Json& q = root["quantization_config"];
    const std::string method =
        q.is_object() && q.contains("quant_method") ? q["quant_method"].dump() : q.dump();
    return Invalid(absl::StrCat("config field 'quantization_config' is present (quant_method ",
                                method,
                                "): quantized Model-Optimizer exports are not supported; "
                                "evaluate the export made before quantization"));
  }
  Json out = root;
  const Json causal = Take(out, "causal");
  if (!causal.is_null()) {
    if (!causal.is_boolean()) {
      return Invalid(absl::StrCat("config field 'dflash_config.causal' must be a boolean; got ",
                                  causal.dump()));
    }
    out["is_causal"] = causal;
    layout->notes.push_back(absl::StrCat(
        "dflash_config.causal ", causal.dump(), " -> is_causal ", causal.dump(), ": every layer ",
        causal.get<bool>() ? "causal" : "bidirectional", " inside the block"));
  }
  RETURN_IF_ERROR(MapSwa(out, layout));
  layout->notes.push_back(
      "layer numbering: target_layer_ids as written (hf-layer: output of layer k = "
      "hidden_states[k+1], as z-lab's)");
  return out;
}

}  // namespace

absl::StatusOr<Json> ToZlabLayout(const Json& root, ConfigLayout* layout) {
  *layout = ConfigLayout();
  if (Has(root, "speculators_model_type")) return FromSpeculators(root, layout);
  if (Has(root, "projector_type")) {
    const Json& p = root["projector_type"];
    return Invalid(
        absl::StrCat("config field 'projector_type' is ", p.dump(),
                     ": projector variants (DSpark, Domino, LiLiCorr) are not supported yet"));
  }
  if (IsModelOpt(root)) return FromModelOpt(root, layout);
  return root;
}

}  // namespace dflash::config::internal
