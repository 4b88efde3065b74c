#include "model/drafter_schema.h"

#include <algorithm>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dflash::model {
namespace {

// When a per-layer tensor is part of the schema.
enum class Presence {
  kAlways,
  kWithBias,  // only with attention_bias
  kDflash2,   // only in DFlash 2
};

struct LayerTensorRow {
  const char* suffix;
  Presence presence;
};

// Indexed by LayerTensor.
constexpr LayerTensorRow kLayerTable[kNumLayerTensors] = {
    {"input_layernorm.weight", Presence::kAlways},
    {"post_attention_layernorm.weight", Presence::kAlways},
    {"self_attn.q_proj.weight", Presence::kAlways},
    {"self_attn.k_proj.weight", Presence::kAlways},
    {"self_attn.v_proj.weight", Presence::kAlways},
    {"self_attn.o_proj.weight", Presence::kAlways},
    {"self_attn.q_proj.bias", Presence::kWithBias},
    {"self_attn.k_proj.bias", Presence::kWithBias},
    {"self_attn.v_proj.bias", Presence::kWithBias},
    {"self_attn.o_proj.bias", Presence::kWithBias},
    {"self_attn.q_norm.weight", Presence::kAlways},
    {"self_attn.k_norm.weight", Presence::kAlways},
    {"mlp.gate_proj.weight", Presence::kAlways},
    {"mlp.up_proj.weight", Presence::kAlways},
    {"mlp.down_proj.weight", Presence::kAlways},
    {"attention_conv.base_kernel", Presence::kDflash2},
    {"attention_conv.kernel_projection.weight", Presence::kDflash2},
    {"mlp_conv.base_kernel", Presence::kDflash2},
    {"mlp_conv.kernel_projection.weight", Presence::kDflash2},
};

std::vector<int64_t> LayerShape(const config::DrafterConfig& c, LayerTensor t) {
  const int64_t H = c.hidden_size, d = c.head_dim, I = c.intermediate_size;
  const int64_t q_out = c.num_attention_heads * d, kv_out = c.num_key_value_heads * d;
  const int64_t K = c.conv_kernel_size, G = c.conv_groups();
  switch (t) {
    case kInputNorm:
    case kPostNorm:
    case kBo: return {H};
    case kWq: return {q_out, H};
    case kWk:
    case kWv: return {kv_out, H};
    case kWo: return {H, q_out};
    case kBq: return {q_out};
    case kBk:
    case kBv: return {kv_out};
    case kQNorm:
    case kKNorm: return {d};
    case kGate:
    case kUp: return {I, H};
    case kDown: return {H, I};
    case kAttnConvBase:
    case kMlpConvBase: return {2, K, H};  // [side, tap, channel]
    case kAttnConvProj:
    case kMlpConvProj: return {2 * K * G, H};  // rows (side, tap, group)
    case kNumLayerTensors: break;
  }
  return {};
}

bool IsDFlash2Name(const std::string& name) {
  return absl::StrContains(name, "attention_conv.") || absl::StrContains(name, "mlp_conv.") ||
         absl::StartsWith(name, "candidate_selector.");
}

bool IsLineAbout(const std::string& line, const char* what) {
  return absl::StartsWith(line, what) ||
         (absl::StartsWith(line, "... and ") && absl::StrContains(line, what));
}

}  // namespace

std::string LayerTensorName(int64_t layer, LayerTensor t) {
  return absl::StrCat("layers.", layer, ".", kLayerTable[t].suffix);
}

std::vector<weights::TensorSpec> DrafterSchema(const config::DrafterConfig& c,
                                               int64_t target_hidden_size) {
  const int64_t H = c.hidden_size;
  std::vector<weights::TensorSpec> s;
  s.push_back({kFcWeight, {H, c.num_target_features() * target_hidden_size}});
  s.push_back({kHiddenNorm, {H}});
  s.push_back({kFinalNorm, {H}});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    for (int t = 0; t < kNumLayerTensors; ++t) {
      const LayerTensorRow& row = kLayerTable[t];
      if ((row.presence == Presence::kWithBias && !c.attention_bias) ||
          (row.presence == Presence::kDflash2 && !c.is_dflash2())) {
        continue;
      }
      s.push_back({LayerTensorName(i, static_cast<LayerTensor>(t)),
                   LayerShape(c, static_cast<LayerTensor>(t))});
    }
  }
  if (c.is_dflash2()) {
    const int64_t r = c.selector_rank, V = c.vocab_size;
    s.push_back({kSelectorProjection, {r, H}});
    for (const char* book : {kPredecessorCodebook, kSuccessorCodebook}) {
      weights::TensorSpec spec{book, {V, r}};
      spec.aliases = {absl::StrCat(book, ".weight")};
      s.push_back(std::move(spec));
    }
  }
  if (c.draft_vocab_size > 0) {
    // Required for a reduced vocabulary; with the full one, optional (all
    // three, none, or the head alone: DrafterModel::Create checks).
    const bool required = c.reduced_vocab();
    s.push_back({kDraftLmHead, {c.draft_vocab_size, H}, required});
    s.push_back({kDraftToTarget, {c.draft_vocab_size}, required, {}, "I64"});
    s.push_back({kTargetToDraft, {c.vocab_size}, required, {}, "BOOL"});
  }
  return s;
}

std::vector<weights::IgnoreRule> DrafterIgnoreRules() {
  return {
      // speculators saves the verifier's final norm (and sometimes its head)
      // for training; the service uses the resident target's.
      {"verifier_norm.weight",
       "a speculators training copy of the target's final norm (the drafter does not use it)"},
      {"verifier_lm_head.weight",
       "a speculators training copy of the target's lm_head (the target's own is used)"},
      {"embed_tokens.weight",
       "the drafter borrows the target's embed_tokens (a copy saved with the "
       "drafter is not used)"},
      {"lm_head.weight",
       "the drafter borrows the target's lm_head (a copy saved with the "
       "drafter is not used)"},
      {"rotary_emb.inv_freq", "RoPE frequencies are recomputed from config.json"},
  };
}

void ExplainFamilyMismatch(const config::DrafterConfig& c, weights::WeightReport& report) {
  int missing2 = 0, unexpected2 = 0, schema2 = 0;
  for (const weights::TensorEntry& e : report.tensors) {
    if (!IsDFlash2Name(e.name)) continue;
    if (e.status == weights::EntryStatus::kUnexpected) ++unexpected2;
    if (e.status != weights::EntryStatus::kUnexpected &&
        e.status != weights::EntryStatus::kIgnored) {
      ++schema2;
      if (e.status == weights::EntryStatus::kMissing) ++missing2;
    }
  }
  std::string line;
  const char* drop = nullptr;
  if (c.is_dflash2() && schema2 > 0 && missing2 == schema2 && report.missing == missing2) {
    line = absl::StrCat(
        "config.json describes a DFlash 2 drafter (DFlash2DraftModel) but the checkpoint "
        "holds DFlash 1 weights: none of its ",
        schema2,
        " DFlash 2 tensors (layers.*.attention_conv.*, layers.*.mlp_conv.*, "
        "candidate_selector.*) is present");
    drop = "missing ";
  } else if (!c.is_dflash2() && unexpected2 > 0 && report.unexpected == unexpected2) {
    line = absl::StrCat(
        "the checkpoint holds ", unexpected2,
        " DFlash 2 tensors (attention_conv, mlp_conv, candidate_selector) but config.json "
        "describes a DFlash 1 drafter; a DFlash 2 checkpoint needs architectures "
        "[\"DFlash2DraftModel\"] and its draft keys in config.json");
    drop = "unexpected ";
  }
  if (line.empty()) return;
  auto& p = report.problems;
  p.erase(std::remove_if(p.begin(), p.end(),
                         [&](const std::string& l) { return IsLineAbout(l, drop); }),
          p.end());
  auto& f = report.facts;
  f.erase(std::remove_if(
              f.begin(), f.end(),
              [](const std::string& l) { return absl::StartsWith(l, "allowed: unexpected"); }),
          f.end());
  p.insert(p.begin(), line);
  report.ok = false;
}

}  // namespace dflash::model
