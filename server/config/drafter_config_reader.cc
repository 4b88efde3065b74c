#include "config/drafter_config_reader.h"

#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "config/internal/config_fields.h"
#include "config/internal/draft_keys.h"
#include "config/internal/foreign_config.h"

namespace dflash::config {
namespace {

using Json = nlohmann::json;
using internal::Missing;
using internal::ReadBool;
using internal::ReadDouble;
using internal::ReadInt;
using internal::ReadString;
using internal::RequirePositive;
using internal::TopLevel;

const char* JsonTypeName(const Json& j) {
  return j.type_name();
}

// Where the rope fields live: in `rope_parameters` (5.x) or `rope_scaling`
// (4.x), named in messages with `prefix` ("rope_scaling."); or in neither
// (params is an empty object, prefix "").
struct RopeFields {
  const Json* params;
  std::string prefix;
};

absl::StatusOr<RopeFields> FindRopeFields(const TopLevel& root, const Json& empty) {
  ASSIGN_OR_RETURN(const Json* rp, root.Find("rope_parameters"));
  ASSIGN_OR_RETURN(const Json* rs, root.Find("rope_scaling"));
  if (rp != nullptr) {
    if (!rp->is_object()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'rope_parameters' must be an object; got ", JsonTypeName(*rp)));
    }
    if (rp->contains("full_attention") || rp->contains("sliding_attention")) {
      return absl::InvalidArgumentError(
          "config field 'rope_parameters' is per layer type; not supported");
    }
    return RopeFields{rp, "rope_parameters."};
  }
  if (rs != nullptr) {
    if (!rs->is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'rope_scaling' must be an object; got ", JsonTypeName(*rs)));
    }
    return RopeFields{rs, "rope_scaling."};
  }
  return RopeFields{&empty, ""};
}

// theta: inside rope_parameters (5.x) or at top level (4.x).
absl::Status ParseRopeTheta(const TopLevel& root, const RopeFields& f, RopeConfig& rope) {
  ASSIGN_OR_RETURN(bool has_theta,
                   ReadDouble(*f.params, "rope_theta", f.prefix + "rope_theta", &rope.theta));
  if (!has_theta) {
    ASSIGN_OR_RETURN(has_theta, root.Double("rope_theta", &rope.theta));
  }
  if (!has_theta) return Missing(f.prefix.empty() ? "rope_theta" : f.prefix + "rope_theta");
  if (!(rope.theta > 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field 'rope_theta' must be greater than 1; got ", rope.theta));
  }
  return absl::OkStatus();
}

// `rope_type` (or 4.x `type`): default, linear, llama3 or yarn.
absl::StatusOr<std::string> ParseRopeType(const RopeFields& f) {
  std::string type = "default";
  ASSIGN_OR_RETURN(bool has_type,
                   ReadString(*f.params, "rope_type", f.prefix + "rope_type", &type));
  if (!has_type) {
    ASSIGN_OR_RETURN(has_type, ReadString(*f.params, "type", f.prefix + "type", &type));
  }
  if (!has_type && !f.prefix.empty() && f.prefix != "rope_parameters.") {
    return Missing(f.prefix + "rope_type");
  }
  if (type != "default" && type != "linear" && type != "llama3" && type != "yarn") {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown rope_type '", type, "' (known: default, linear, llama3, yarn)"));
  }
  return type;
}

// Every scaled type: a positive `factor`, and no partial rotary embedding.
absl::Status ParseRopeFactor(const TopLevel& root, const RopeFields& f, RopeConfig& rope) {
  ASSIGN_OR_RETURN(bool has_factor,
                   ReadDouble(*f.params, "factor", f.prefix + "factor", &rope.factor));
  if (!has_factor) return Missing(f.prefix + "factor");
  if (!(rope.factor > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", f.prefix, "factor' must be positive; got ", rope.factor));
  }
  double partial = 1.0;
  ASSIGN_OR_RETURN(bool has_partial, root.Double("partial_rotary_factor", &partial));
  if (has_partial && partial != 1.0) {
    return absl::InvalidArgumentError(absl::StrCat("config field 'partial_rotary_factor' is ",
                                                   partial, "; only 1.0 is supported"));
  }
  return absl::OkStatus();
}

// The context lengths llama3 and yarn read: max_position_embeddings (top
// level) and original_max_position_embeddings (in the rope block; stored in
// rope.original_max_position_embeddings when present).
struct RopeLengths {
  std::optional<int64_t> max_pos;
  bool has_original = false;
};

absl::StatusOr<RopeLengths> ReadRopeLengths(const TopLevel& root, const RopeFields& f,
                                            RopeConfig& rope) {
  int64_t max_pos = 0;
  ASSIGN_OR_RETURN(bool has_max_pos, root.Int("max_position_embeddings", &max_pos));
  RopeLengths lengths;
  if (has_max_pos) lengths.max_pos = max_pos;
  ASSIGN_OR_RETURN(lengths.has_original, ReadInt(*f.params, "original_max_position_embeddings",
                                                 f.prefix + "original_max_position_embeddings",
                                                 &rope.original_max_position_embeddings));
  return lengths;
}

absl::Status ParseLlama3(const RopeFields& f, const RopeLengths& lengths, RopeConfig& rope) {
  const std::string& prefix = f.prefix;
  ASSIGN_OR_RETURN(bool has_low, ReadDouble(*f.params, "low_freq_factor",
                                            prefix + "low_freq_factor", &rope.low_freq_factor));
  if (!has_low) return Missing(prefix + "low_freq_factor");
  ASSIGN_OR_RETURN(bool has_high, ReadDouble(*f.params, "high_freq_factor",
                                             prefix + "high_freq_factor", &rope.high_freq_factor));
  if (!has_high) return Missing(prefix + "high_freq_factor");
  if (!lengths.has_original) return Missing(prefix + "original_max_position_embeddings");
  if (!(rope.high_freq_factor > rope.low_freq_factor) || !(rope.low_freq_factor > 0.0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config fields '", prefix, "low_freq_factor' (", rope.low_freq_factor,
        ") and 'high_freq_factor' (", rope.high_freq_factor, ") must satisfy 0 < low < high"));
  }
  return RequirePositive(prefix + "original_max_position_embeddings",
                         rope.original_max_position_embeddings);
}

// yarn's beta_fast/beta_slow, truncate and attention factor (or mscale and
// mscale_all_dim), with HF's defaults.
absl::Status ParseYarnScaling(const RopeFields& f, RopeConfig& rope) {
  const Json& params = *f.params;
  const std::string& prefix = f.prefix;
  RETURN_IF_ERROR(ReadDouble(params, "beta_fast", prefix + "beta_fast", &rope.beta_fast).status());
  RETURN_IF_ERROR(ReadDouble(params, "beta_slow", prefix + "beta_slow", &rope.beta_slow).status());
  // HF: `get("beta_fast") or 32` — a zero means the default too.
  if (rope.beta_fast == 0.0) rope.beta_fast = 32.0;
  if (rope.beta_slow == 0.0) rope.beta_slow = 1.0;
  RETURN_IF_ERROR(
      ReadDouble(params, "attention_factor", prefix + "attention_factor", &rope.attention_factor)
          .status());
  bool truncate = true;
  RETURN_IF_ERROR(ReadBool(params, "truncate", prefix + "truncate", &truncate).status());
  if (!truncate) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field '", prefix, "truncate' is false; not supported"));
  }
  if (rope.attention_factor == 0.0) {
    double mscale = 0.0, mscale_all_dim = 0.0;
    RETURN_IF_ERROR(ReadDouble(params, "mscale", prefix + "mscale", &mscale).status());
    RETURN_IF_ERROR(
        ReadDouble(params, "mscale_all_dim", prefix + "mscale_all_dim", &mscale_all_dim).status());
    if (mscale != 0.0 && mscale_all_dim != 0.0) {
      auto get_mscale = [&](double m) {
        return rope.factor <= 1.0 ? 1.0 : 0.1 * m * std::log(rope.factor) + 1.0;
      };
      rope.attention_factor = get_mscale(mscale) / get_mscale(mscale_all_dim);
    }
  }
  return absl::OkStatus();
}

// yarn, as HF transformers' _compute_yarn_parameters reads it: with
// original_max_position_embeddings present, factor becomes
// max_position_embeddings / original; without it, original is
// max_position_embeddings.
absl::Status ParseYarn(const RopeFields& f, const RopeLengths& lengths, DrafterConfig& cfg) {
  RopeConfig& rope = cfg.rope;
  if (lengths.has_original) {
    RETURN_IF_ERROR(RequirePositive(f.prefix + "original_max_position_embeddings",
                                    rope.original_max_position_embeddings));
    if (lengths.max_pos.has_value()) {
      const double derived =
          static_cast<double>(*lengths.max_pos) / rope.original_max_position_embeddings;
      if (derived != rope.factor) {
        cfg.warnings.push_back(absl::StrCat("yarn factor ", rope.factor,
                                            " replaced by max_position_embeddings / "
                                            "original_max_position_embeddings = ",
                                            derived, " (as transformers does)"));
      }
      rope.factor = derived;
    }
  } else {
    if (!lengths.max_pos.has_value()) {
      return Missing(f.prefix + "original_max_position_embeddings");
    }
    rope.original_max_position_embeddings = *lengths.max_pos;
  }
  return ParseYarnScaling(f, rope);
}

// Reads the rope block: 5.x `rope_parameters` or 4.x `rope_theta` +
// `rope_scaling`. Resolves HF's yarn conventions into `RopeConfig` so that
// rope.cc needs no other config field.
absl::Status ParseRope(const TopLevel& root, DrafterConfig& cfg) {
  RopeConfig& rope = cfg.rope;
  const Json empty = Json::object();
  ASSIGN_OR_RETURN(const RopeFields fields, FindRopeFields(root, empty));
  RETURN_IF_ERROR(ParseRopeTheta(root, fields, rope));
  ASSIGN_OR_RETURN(rope.type, ParseRopeType(fields));
  if (rope.type == "default") return absl::OkStatus();
  RETURN_IF_ERROR(ParseRopeFactor(root, fields, rope));
  if (rope.type == "linear") return absl::OkStatus();
  ASSIGN_OR_RETURN(const RopeLengths lengths, ReadRopeLengths(root, fields, rope));
  if (rope.type == "llama3") return ParseLlama3(fields, lengths, rope);
  return ParseYarn(fields, lengths, cfg);
}

absl::Status ParseLayerTypes(const TopLevel& root, DrafterConfig& cfg) {
  const int64_t n = cfg.num_hidden_layers;
  ASSIGN_OR_RETURN(const Json* lt, root.Find("layer_types"));
  cfg.sliding.assign(n, false);
  if (lt != nullptr) {
    if (!lt->is_array()) {
      return absl::InvalidArgumentError(
          absl::StrCat("config field 'layer_types' must be an array; got ", JsonTypeName(*lt)));
    }
    if (static_cast<int64_t>(lt->size()) != n) {
      return absl::InvalidArgumentError(absl::StrCat("config field 'layer_types' has ", lt->size(),
                                                     " entries; expected num_hidden_layers = ", n));
    }
    for (int64_t i = 0; i < n; ++i) {
      const Json& e = (*lt)[i];
      const std::string where = absl::StrCat("layer_types[", i, "]");
      if (!e.is_string()) {
        return absl::InvalidArgumentError(
            absl::StrCat("config field '", where, "' must be a string; got ", JsonTypeName(e)));
      }
      const std::string s = e.get<std::string>();
      if (s == "sliding_attention") {
        cfg.sliding[i] = true;
      } else if (s != "full_attention") {
        return absl::InvalidArgumentError(absl::StrCat(
            "config field '", where, "' is '", s, "' (known: full_attention, sliding_attention)"));
      }
    }
  }
  // Qwen3Config: use_sliding_window false sets sliding_window to none, so
  // no layer has a window; without layer_types, layers >= max_window_layers
  // slide when it is true (Qwen2 convention).
  bool use_sliding = true;
  ASSIGN_OR_RETURN(bool has_use, root.Bool("use_sliding_window", &use_sliding));
  cfg.use_sliding_window = !has_use || use_sliding;
  if (lt == nullptr && has_use && use_sliding) {
    int64_t max_window_layers = 0;
    RETURN_IF_ERROR(root.Int("max_window_layers", &max_window_layers).status());
    for (int64_t i = max_window_layers; i < n; ++i) cfg.sliding[i] = true;
  }
  RETURN_IF_ERROR(root.Int("sliding_window", &cfg.sliding_window).status());
  bool is_causal = false;
  ASSIGN_OR_RETURN(bool has_causal, root.Bool("is_causal", &is_causal));
  if (has_causal) cfg.is_causal = is_causal;
  bool any_sliding = false;
  for (bool s : cfg.sliding) any_sliding |= s;
  if (!cfg.use_sliding_window) {
    cfg.sliding_window = 0;
  } else if (any_sliding && cfg.sliding_window <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field 'sliding_window' must be positive when layers use "
                     "sliding_attention; got ",
                     cfg.sliding_window));
  }
  if (!any_sliding) cfg.sliding_window = 0;
  return absl::OkStatus();
}

// draft_vocab_size: 1..vocab_size; below it only for DFlash 1 (DFlash 2's
// codebooks and top-k walk are over the target vocabulary).
absl::Status ParseDraftVocab(const TopLevel& root, DrafterConfig& cfg) {
  ASSIGN_OR_RETURN(bool has, root.Int("draft_vocab_size", &cfg.draft_vocab_size));
  if (!has) return absl::OkStatus();
  if (cfg.draft_vocab_size <= 0 || cfg.vocab_size <= 0 || cfg.draft_vocab_size > cfg.vocab_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field 'draft_vocab_size' is ", cfg.draft_vocab_size,
                     "; expected 1 .. vocab_size (", cfg.vocab_size, ")"));
  }
  if (cfg.reduced_vocab() && cfg.is_dflash2()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'draft_vocab_size' is ", cfg.draft_vocab_size,
        " below the target vocabulary (", cfg.vocab_size,
        ") in a DFlash 2 drafter: a reduced draft vocabulary with the candidate selector "
        "(codebooks over the target vocabulary) is not evaluated by this service"));
  }
  return absl::OkStatus();
}

// The decoder's shape: H, heads (nh, nkv, d), I, n, eps, biases, the
// vocabulary and the stored dtype.
absl::Status ParseShape(const TopLevel& root, DrafterConfig& cfg) {
  RETURN_IF_ERROR(root.RequireInt("hidden_size", &cfg.hidden_size));
  RETURN_IF_ERROR(RequirePositive("hidden_size", cfg.hidden_size));
  RETURN_IF_ERROR(root.RequireInt("num_attention_heads", &cfg.num_attention_heads));
  RETURN_IF_ERROR(RequirePositive("num_attention_heads", cfg.num_attention_heads));
  ASSIGN_OR_RETURN(bool has_kv, root.Int("num_key_value_heads", &cfg.num_key_value_heads));
  if (!has_kv) cfg.num_key_value_heads = cfg.num_attention_heads;
  RETURN_IF_ERROR(RequirePositive("num_key_value_heads", cfg.num_key_value_heads));
  if (cfg.num_attention_heads % cfg.num_key_value_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "config field 'num_attention_heads' (", cfg.num_attention_heads,
        ") is not a multiple of 'num_key_value_heads' (", cfg.num_key_value_heads, ")"));
  }
  ASSIGN_OR_RETURN(bool has_hd, root.Int("head_dim", &cfg.head_dim));
  if (!has_hd) {
    if (cfg.hidden_size % cfg.num_attention_heads != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "config field 'head_dim' is missing and hidden_size (", cfg.hidden_size,
          ") is not divisible by num_attention_heads (", cfg.num_attention_heads, ")"));
    }
    cfg.head_dim = cfg.hidden_size / cfg.num_attention_heads;
  }
  RETURN_IF_ERROR(RequirePositive("head_dim", cfg.head_dim));
  if (cfg.head_dim % 2 != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field 'head_dim' must be even for RoPE; got ", cfg.head_dim));
  }
  RETURN_IF_ERROR(root.RequireInt("intermediate_size", &cfg.intermediate_size));
  RETURN_IF_ERROR(RequirePositive("intermediate_size", cfg.intermediate_size));
  RETURN_IF_ERROR(root.RequireInt("num_hidden_layers", &cfg.num_hidden_layers));
  RETURN_IF_ERROR(RequirePositive("num_hidden_layers", cfg.num_hidden_layers));
  RETURN_IF_ERROR(root.Double("rms_norm_eps", &cfg.rms_norm_eps).status());
  if (!(cfg.rms_norm_eps > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("config field 'rms_norm_eps' must be positive; got ", cfg.rms_norm_eps));
  }
  RETURN_IF_ERROR(root.Bool("attention_bias", &cfg.attention_bias).status());
  RETURN_IF_ERROR(root.Int("vocab_size", &cfg.vocab_size).status());
  ASSIGN_OR_RETURN(bool has_dtype, root.String("dtype", &cfg.dtype));
  if (!has_dtype) {
    RETURN_IF_ERROR(root.String("torch_dtype", &cfg.dtype).status());
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<DrafterConfig> ParseDrafterConfig(const std::string& json_text) {
  Json written;
  try {
    written = Json::parse(json_text);
  } catch (const Json::exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("config is not valid JSON: ", e.what()));
  }
  if (!written.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("config must be a JSON object; got ", JsonTypeName(written)));
  }
  // Other trainers' files (speculators, Model-Optimizer) in z-lab's layout.
  internal::ConfigLayout layout;
  ASSIGN_OR_RETURN(const Json zlab, internal::ToZlabLayout(written, &layout));
  const TopLevel root(zlab);
  DrafterConfig cfg;
  cfg.layout = layout.name;
  cfg.layout_notes = std::move(layout.notes);
  RETURN_IF_ERROR(ParseShape(root, cfg));
  RETURN_IF_ERROR(ParseRope(root, cfg));
  RETURN_IF_ERROR(ParseLayerTypes(root, cfg));
  RETURN_IF_ERROR(root.Int("num_target_layers", &cfg.num_target_layers).status());
  RETURN_IF_ERROR(internal::ParseFamily(root, cfg));
  RETURN_IF_ERROR(internal::ParseDraftKeys(root, cfg));
  RETURN_IF_ERROR(internal::CheckTopLevelKeys(root, cfg));
  RETURN_IF_ERROR(ParseDraftVocab(root, cfg));
  return cfg;
}

absl::StatusOr<DrafterConfig> ParseDrafterConfigFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("drafter config '", path, "' cannot be opened"));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  ASSIGN_OR_RETURN(DrafterConfig cfg, ParseDrafterConfig(ss.str()), "drafter config '", path, "'");
  return cfg;
}

}  // namespace dflash::config
