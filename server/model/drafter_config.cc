#include "model/drafter_config.h"

#include <cfenv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"

namespace dflash::model {
namespace {

using Json = nlohmann::json;

const char* JsonTypeName(const Json& j) { return j.type_name(); }

// Typed field readers. `where` is the dotted path used in messages
// ("rope_parameters.factor"). Absent or null fields leave *out untouched and
// return false.
absl::StatusOr<bool> ReadInt(const Json& obj, const std::string& key,
                             const std::string& where, int64_t* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_number_integer()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be an integer; got ",
                     JsonTypeName(*it), " ", it->dump()));
  }
  *out = it->get<int64_t>();
  return true;
}

absl::StatusOr<bool> ReadDouble(const Json& obj, const std::string& key,
                                const std::string& where, double* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_number()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be a number; got ",
                     JsonTypeName(*it), " ", it->dump()));
  }
  *out = it->get<double>();
  return true;
}

absl::StatusOr<bool> ReadBool(const Json& obj, const std::string& key,
                              const std::string& where, bool* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_boolean()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be a boolean; got ",
                     JsonTypeName(*it), " ", it->dump()));
  }
  *out = it->get<bool>();
  return true;
}

absl::StatusOr<bool> ReadString(const Json& obj, const std::string& key,
                                const std::string& where, std::string* out) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return false;
  if (!it->is_string()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be a string; got ",
                     JsonTypeName(*it), " ", it->dump()));
  }
  *out = it->get<std::string>();
  return true;
}

absl::Status Missing(const std::string& where) {
  return absl::InvalidArgumentError(
      absl::StrCat("config field '", where, "' is missing"));
}

absl::Status RequireInt(const Json& obj, const std::string& key,
                        const std::string& where, int64_t* out) {
  ASSIGN_OR_RETURN(bool found, ReadInt(obj, key, where, out));
  if (!found) return Missing(where);
  return absl::OkStatus();
}

absl::Status RequirePositive(const std::string& where, int64_t v) {
  if (v <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", where, "' must be positive; got ", v));
  }
  return absl::OkStatus();
}

// z-lab's build_target_layer_ids (Python round: half to even).
std::vector<int> ZLabTargetLayerIds(int64_t num_target_layers,
                                    int64_t num_draft_layers) {
  if (num_draft_layers == 1) {
    return {static_cast<int>(num_target_layers / 2)};
  }
  const int64_t start = 1;
  const int64_t end = num_target_layers - 3;
  const int64_t span = end - start;
  std::vector<int> ids;
  const int saved = std::fegetround();
  std::fesetround(FE_TONEAREST);
  for (int64_t i = 0; i < num_draft_layers; ++i) {
    const double v = static_cast<double>(start) +
                     static_cast<double>(i * span) /
                         static_cast<double>(num_draft_layers - 1);
    ids.push_back(static_cast<int>(std::nearbyint(v)));
  }
  std::fesetround(saved);
  return ids;
}

// Reads the rope block: 5.x `rope_parameters` or 4.x `rope_theta` +
// `rope_scaling`. Resolves HF's yarn conventions into `RopeConfig` so that
// rope.cc needs no other config field.
absl::Status ParseRope(const Json& root, DrafterConfig& cfg) {
  RopeConfig& rope = cfg.rope;
  const Json empty = Json::object();
  const Json* params = &empty;
  std::string prefix;
  auto rp = root.find("rope_parameters");
  auto rs = root.find("rope_scaling");
  if (rp != root.end() && !rp->is_null()) {
    if (!rp->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'rope_parameters' must be an object; got ",
                       JsonTypeName(*rp)));
    }
    if (rp->contains("full_attention") || rp->contains("sliding_attention")) {
      return absl::InvalidArgumentError(
          "config field 'rope_parameters' is per layer type; not supported");
    }
    params = &*rp;
    prefix = "rope_parameters.";
  } else if (rs != root.end() && !rs->is_null()) {
    if (!rs->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'rope_scaling' must be an object; got ",
                       JsonTypeName(*rs)));
    }
    params = &*rs;
    prefix = "rope_scaling.";
  }
  // theta: inside rope_parameters (5.x) or at top level (4.x).
  ASSIGN_OR_RETURN(bool has_theta,
                   ReadDouble(*params, "rope_theta", prefix + "rope_theta",
                              &rope.theta));
  if (!has_theta) {
    ASSIGN_OR_RETURN(has_theta,
                     ReadDouble(root, "rope_theta", "rope_theta", &rope.theta));
  }
  if (!has_theta) return Missing(prefix.empty() ? "rope_theta" : prefix + "rope_theta");
  if (!(rope.theta > 1.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'rope_theta' must be greater than 1; got ", rope.theta));
  }

  std::string type = "default";
  ASSIGN_OR_RETURN(bool has_type,
                   ReadString(*params, "rope_type", prefix + "rope_type", &type));
  if (!has_type) {
    ASSIGN_OR_RETURN(has_type, ReadString(*params, "type", prefix + "type", &type));
  }
  if (!has_type && !prefix.empty() && prefix != "rope_parameters.") {
    return Missing(prefix + "rope_type");
  }
  if (type != "default" && type != "linear" && type != "llama3" &&
      type != "yarn") {
    return absl::InvalidArgumentError(absl::StrCat(
        "unknown rope_type '", type, "' (known: default, linear, llama3, yarn)"));
  }
  rope.type = type;
  if (type == "default") return absl::OkStatus();

  ASSIGN_OR_RETURN(bool has_factor,
                   ReadDouble(*params, "factor", prefix + "factor", &rope.factor));
  if (!has_factor) return Missing(prefix + "factor");
  if (!(rope.factor > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field '", prefix, "factor' must be positive; got ", rope.factor));
  }
  double partial = 1.0;
  ASSIGN_OR_RETURN(bool has_partial,
                   ReadDouble(root, "partial_rotary_factor",
                              "partial_rotary_factor", &partial));
  if (has_partial && partial != 1.0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'partial_rotary_factor' is ", partial,
        "; only 1.0 is supported"));
  }
  if (type == "linear") return absl::OkStatus();

  int64_t max_pos = 0;
  ASSIGN_OR_RETURN(bool has_max_pos,
                   ReadInt(root, "max_position_embeddings",
                           "max_position_embeddings", &max_pos));
  ASSIGN_OR_RETURN(bool has_orig,
                   ReadInt(*params, "original_max_position_embeddings",
                           prefix + "original_max_position_embeddings",
                           &rope.original_max_position_embeddings));
  if (type == "llama3") {
    ASSIGN_OR_RETURN(bool has_low,
                     ReadDouble(*params, "low_freq_factor",
                                prefix + "low_freq_factor", &rope.low_freq_factor));
    if (!has_low) return Missing(prefix + "low_freq_factor");
    ASSIGN_OR_RETURN(bool has_high,
                     ReadDouble(*params, "high_freq_factor",
                                prefix + "high_freq_factor",
                                &rope.high_freq_factor));
    if (!has_high) return Missing(prefix + "high_freq_factor");
    if (!has_orig) return Missing(prefix + "original_max_position_embeddings");
    if (!(rope.high_freq_factor > rope.low_freq_factor) ||
        !(rope.low_freq_factor > 0.0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config fields '", prefix, "low_freq_factor' (", rope.low_freq_factor,
          ") and 'high_freq_factor' (", rope.high_freq_factor,
          ") must satisfy 0 < low < high"));
    }
    return RequirePositive(prefix + "original_max_position_embeddings",
                           rope.original_max_position_embeddings);
  }

  // yarn, as HF transformers' _compute_yarn_parameters reads it: with
  // original_max_position_embeddings present, factor becomes
  // max_position_embeddings / original; without it, original is
  // max_position_embeddings.
  if (has_orig) {
    RETURN_IF_ERROR(RequirePositive(prefix + "original_max_position_embeddings",
                                    rope.original_max_position_embeddings));
    if (has_max_pos) {
      const double derived = static_cast<double>(max_pos) /
                             rope.original_max_position_embeddings;
      if (derived != rope.factor) {
        cfg.warnings.push_back(absl::StrCat(
            "yarn factor ", rope.factor, " replaced by max_position_embeddings / "
            "original_max_position_embeddings = ", derived,
            " (as transformers does)"));
      }
      rope.factor = derived;
    }
  } else {
    if (!has_max_pos) return Missing(prefix + "original_max_position_embeddings");
    rope.original_max_position_embeddings = max_pos;
  }
  RETURN_IF_ERROR(ReadDouble(*params, "beta_fast", prefix + "beta_fast",
                             &rope.beta_fast).status());
  RETURN_IF_ERROR(ReadDouble(*params, "beta_slow", prefix + "beta_slow",
                             &rope.beta_slow).status());
  // HF: `get("beta_fast") or 32` — a zero means the default too.
  if (rope.beta_fast == 0.0) rope.beta_fast = 32.0;
  if (rope.beta_slow == 0.0) rope.beta_slow = 1.0;
  RETURN_IF_ERROR(ReadDouble(*params, "attention_factor",
                             prefix + "attention_factor", &rope.attention_factor)
                      .status());
  bool truncate = true;
  RETURN_IF_ERROR(ReadBool(*params, "truncate", prefix + "truncate", &truncate)
                      .status());
  if (!truncate) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field '", prefix, "truncate' is false; not supported"));
  }
  if (rope.attention_factor == 0.0) {
    double mscale = 0.0, mscale_all_dim = 0.0;
    RETURN_IF_ERROR(
        ReadDouble(*params, "mscale", prefix + "mscale", &mscale).status());
    RETURN_IF_ERROR(ReadDouble(*params, "mscale_all_dim",
                               prefix + "mscale_all_dim", &mscale_all_dim)
                        .status());
    if (mscale != 0.0 && mscale_all_dim != 0.0) {
      auto get_mscale = [&](double m) {
        return rope.factor <= 1.0 ? 1.0 : 0.1 * m * std::log(rope.factor) + 1.0;
      };
      rope.attention_factor = get_mscale(mscale) / get_mscale(mscale_all_dim);
    }
  }
  return absl::OkStatus();
}

absl::Status ParseLayerTypes(const Json& root, DrafterConfig& cfg) {
  const int64_t n = cfg.num_hidden_layers;
  auto lt = root.find("layer_types");
  cfg.sliding.assign(n, false);
  if (lt != root.end() && !lt->is_null()) {
    if (!lt->is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'layer_types' must be an array; got ",
                       JsonTypeName(*lt)));
    }
    if (static_cast<int64_t>(lt->size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'layer_types' has ", lt->size(),
          " entries; expected num_hidden_layers = ", n));
    }
    for (int64_t i = 0; i < n; ++i) {
      const Json& e = (*lt)[i];
      const std::string where = absl::StrCat("layer_types[", i, "]");
      if (!e.is_string()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config field '", where, "' must be a string; got ", JsonTypeName(e)));
      }
      const std::string s = e.get<std::string>();
      if (s == "sliding_attention") {
        cfg.sliding[i] = true;
      } else if (s != "full_attention") {
        return absl::InvalidArgumentError(absl::StrCat(
            "config field '", where, "' is '", s,
            "' (known: full_attention, sliding_attention)"));
      }
    }
  } else {
    // Qwen2 convention: layers >= max_window_layers slide when enabled.
    bool use_sliding = false;
    ASSIGN_OR_RETURN(bool has_use,
                     ReadBool(root, "use_sliding_window", "use_sliding_window",
                              &use_sliding));
    if (has_use && use_sliding) {
      int64_t max_window_layers = 0;
      RETURN_IF_ERROR(ReadInt(root, "max_window_layers", "max_window_layers",
                              &max_window_layers).status());
      for (int64_t i = max_window_layers; i < n; ++i) cfg.sliding[i] = true;
    }
  }
  RETURN_IF_ERROR(ReadInt(root, "sliding_window", "sliding_window",
                          &cfg.sliding_window).status());
  bool any_sliding = false;
  for (bool s : cfg.sliding) any_sliding |= s;
  if (any_sliding && cfg.sliding_window <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'sliding_window' must be positive when layers use "
        "sliding_attention; got ", cfg.sliding_window));
  }
  if (!any_sliding) cfg.sliding_window = 0;
  return absl::OkStatus();
}

absl::Status ParseDFlash(const Json& root, DrafterConfig& cfg) {
  const Json empty = Json::object();
  const Json* dc = &empty;
  auto it = root.find("dflash_config");
  if (it != root.end() && !it->is_null()) {
    if (!it->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'dflash_config' must be an object; got ",
                       JsonTypeName(*it)));
    }
    dc = &*it;
  }
  // block_size: top level wins over dflash_config.
  ASSIGN_OR_RETURN(bool has_b,
                   ReadInt(root, "block_size", "block_size", &cfg.block_size));
  if (!has_b) {
    ASSIGN_OR_RETURN(has_b, ReadInt(*dc, "block_size", "dflash_config.block_size",
                                    &cfg.block_size));
  }
  if (!has_b) {
    cfg.block_size = 16;
    cfg.warnings.push_back(
        "block_size absent (neither top level nor dflash_config); using 16");
  }
  RETURN_IF_ERROR(RequirePositive("block_size", cfg.block_size));

  ASSIGN_OR_RETURN(bool has_mask,
                   ReadInt(*dc, "mask_token_id", "dflash_config.mask_token_id",
                           &cfg.mask_token_id));
  if (!has_mask) return Missing("dflash_config.mask_token_id");
  if (cfg.mask_token_id < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'dflash_config.mask_token_id' must be >= 0; got ",
        cfg.mask_token_id));
  }

  ASSIGN_OR_RETURN(bool has_nt,
                   ReadInt(root, "num_target_layers", "num_target_layers",
                           &cfg.num_target_layers));
  auto ids = dc->find("target_layer_ids");
  if (ids != dc->end() && !ids->is_null()) {
    if (!ids->is_array()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'dflash_config.target_layer_ids' must be an array of "
          "integers; got ", JsonTypeName(*ids)));
    }
    if (ids->empty()) {
      return absl::InvalidArgumentError(
          "config field 'dflash_config.target_layer_ids' is empty");
    }
    for (size_t i = 0; i < ids->size(); ++i) {
      const Json& e = (*ids)[i];
      if (!e.is_number_integer() || e.get<int64_t>() < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "config field 'dflash_config.target_layer_ids[", i,
            "]' must be a non-negative integer; got ", e.dump()));
      }
      cfg.target_layer_ids.push_back(static_cast<int>(e.get<int64_t>()));
    }
    return absl::OkStatus();
  }
  if (!has_nt) {
    return absl::InvalidArgumentError(
        "config field 'dflash_config.target_layer_ids' is missing, and "
        "'num_target_layers' is missing too (cannot apply z-lab's fallback)");
  }
  RETURN_IF_ERROR(RequirePositive("num_target_layers", cfg.num_target_layers));
  cfg.target_layer_ids =
      ZLabTargetLayerIds(cfg.num_target_layers, cfg.num_hidden_layers);
  cfg.target_layer_ids_guessed = true;
  cfg.warnings.push_back(absl::StrCat(
      "dflash_config.target_layer_ids is missing; GUESSED [",
      absl::StrJoin(cfg.target_layer_ids, ", "),
      "] with z-lab's build_target_layer_ids(num_target_layers=",
      cfg.num_target_layers, ", num_hidden_layers=", cfg.num_hidden_layers,
      "); check these against the layers the drafter was trained on"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DrafterConfig> ParseDrafterConfig(const std::string& json_text) {
  Json root;
  try {
    root = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("config is not valid JSON: ", e.what()));
  }
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config must be a JSON object; got ", JsonTypeName(root)));
  }
  DrafterConfig cfg;
  RETURN_IF_ERROR(RequireInt(root, "hidden_size", "hidden_size", &cfg.hidden_size));
  RETURN_IF_ERROR(RequirePositive("hidden_size", cfg.hidden_size));
  RETURN_IF_ERROR(RequireInt(root, "num_attention_heads", "num_attention_heads",
                             &cfg.num_attention_heads));
  RETURN_IF_ERROR(RequirePositive("num_attention_heads", cfg.num_attention_heads));
  ASSIGN_OR_RETURN(bool has_kv,
                   ReadInt(root, "num_key_value_heads", "num_key_value_heads",
                           &cfg.num_key_value_heads));
  if (!has_kv) cfg.num_key_value_heads = cfg.num_attention_heads;
  RETURN_IF_ERROR(RequirePositive("num_key_value_heads", cfg.num_key_value_heads));
  if (cfg.num_attention_heads % cfg.num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'num_attention_heads' (", cfg.num_attention_heads,
        ") is not a multiple of 'num_key_value_heads' (",
        cfg.num_key_value_heads, ")"));
  }
  ASSIGN_OR_RETURN(bool has_hd,
                   ReadInt(root, "head_dim", "head_dim", &cfg.head_dim));
  if (!has_hd) {
    if (cfg.hidden_size % cfg.num_attention_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'head_dim' is missing and hidden_size (",
          cfg.hidden_size, ") is not divisible by num_attention_heads (",
          cfg.num_attention_heads, ")"));
    }
    cfg.head_dim = cfg.hidden_size / cfg.num_attention_heads;
  }
  RETURN_IF_ERROR(RequirePositive("head_dim", cfg.head_dim));
  if (cfg.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'head_dim' must be even for RoPE; got ", cfg.head_dim));
  }
  RETURN_IF_ERROR(RequireInt(root, "intermediate_size", "intermediate_size",
                             &cfg.intermediate_size));
  RETURN_IF_ERROR(RequirePositive("intermediate_size", cfg.intermediate_size));
  RETURN_IF_ERROR(RequireInt(root, "num_hidden_layers", "num_hidden_layers",
                             &cfg.num_hidden_layers));
  RETURN_IF_ERROR(RequirePositive("num_hidden_layers", cfg.num_hidden_layers));
  RETURN_IF_ERROR(
      ReadDouble(root, "rms_norm_eps", "rms_norm_eps", &cfg.rms_norm_eps).status());
  if (!(cfg.rms_norm_eps > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'rms_norm_eps' must be positive; got ", cfg.rms_norm_eps));
  }
  RETURN_IF_ERROR(ReadBool(root, "attention_bias", "attention_bias",
                           &cfg.attention_bias).status());
  RETURN_IF_ERROR(ReadInt(root, "vocab_size", "vocab_size", &cfg.vocab_size).status());
  ASSIGN_OR_RETURN(bool has_dtype, ReadString(root, "dtype", "dtype", &cfg.dtype));
  if (!has_dtype) {
    RETURN_IF_ERROR(
        ReadString(root, "torch_dtype", "torch_dtype", &cfg.dtype).status());
  }
  RETURN_IF_ERROR(ParseRope(root, cfg));
  RETURN_IF_ERROR(ParseLayerTypes(root, cfg));
  RETURN_IF_ERROR(ParseDFlash(root, cfg));
  return cfg;
}

absl::StatusOr<DrafterConfig> ParseDrafterConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat("drafter config '", path, "' cannot be opened"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  ASSIGN_OR_RETURN(DrafterConfig cfg, ParseDrafterConfig(ss.str()),
                   "drafter config '", path, "'");
  return cfg;
}

std::string DescribeConfig(const DrafterConfig& c) {
  int64_t n_sliding = 0;
  for (bool s : c.sliding) n_sliding += s ? 1 : 0;
  const int64_t n_full = c.num_hidden_layers - n_sliding;
  std::string layers =
      n_sliding > 0
          ? absl::StrCat(n_sliding, " sliding W=", c.sliding_window, ", ",
                         n_full, " full")
          : absl::StrCat(n_full, " full");
  std::string out = absl::StrCat(
      c.num_hidden_layers, " layers (", layers, "), H=", c.hidden_size, ", ",
      c.num_attention_heads, "/", c.num_key_value_heads, " heads x ",
      c.head_dim, ", I=", c.intermediate_size, ", B=", c.block_size,
      ", target layers [", absl::StrJoin(c.target_layer_ids, ", "), "]",
      c.target_layer_ids_guessed ? " (GUESSED)" : "", ", mask ",
      c.mask_token_id);
  if (c.rope.type != "default") {
    absl::StrAppend(&out, ", rope ", c.rope.type, " x", c.rope.factor);
  }
  return out;
}

}  // namespace dflash::model
