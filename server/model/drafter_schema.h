// File: drafter_schema.h
// The tensors a DFlash drafter checkpoint must hold (dflash-semantics §1 and,
// for DFlash 2, dflash2-semantics §2), by schema name and shape, for
// weights::ValidateWeightMap; the one table the model binds its weights from;
// and the tensors that may be present but are unused on purpose.
//
//   auto schema = DrafterSchema(cfg, /*target_hidden_size=*/5120);
//   ValidateWeightMap(src, schema, {.ignore = DrafterIgnoreRules()});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/drafter_config.h"
#include "weights/weight_report.h"
#include "weights/weight_spec.h"

namespace dflash::model {

// Per-layer tensors, in schema order. Biases exist only with attention_bias;
// the convs only in DFlash 2.
enum LayerTensor : int {
  kInputNorm,
  kPostNorm,
  kWq,
  kWk,
  kWv,
  kWo,
  kBq,
  kBk,
  kBv,
  kBo,
  kQNorm,
  kKNorm,
  kGate,
  kUp,
  kDown,
  kAttnConvBase,
  kAttnConvProj,
  kMlpConvBase,
  kMlpConvProj,
  kNumLayerTensors
};

// "layers.3.self_attn.q_proj.weight".
std::string LayerTensorName(int64_t layer, LayerTensor t);

// Whole-model tensors.
inline constexpr const char* kFcWeight = "fc.weight";
inline constexpr const char* kHiddenNorm = "hidden_norm.weight";
inline constexpr const char* kFinalNorm = "norm.weight";
inline constexpr const char* kSelectorProjection = "candidate_selector.hidden_projection.weight";
// Released files name the codebooks without ".weight"; some trainers add it
// (an alias in the schema).
inline constexpr const char* kPredecessorCodebook = "candidate_selector.predecessor_codebook";
inline constexpr const char* kSuccessorCodebook = "candidate_selector.successor_codebook";
// speculators' own head and vocabulary maps (config::DrafterConfig::draft_vocab_size):
// d2t [V_draft] int64 and t2d [V] bool are read as stored, never cast.
inline constexpr const char* kDraftLmHead = "lm_head.weight";
inline constexpr const char* kDraftToTarget = "d2t";
inline constexpr const char* kTargetToDraft = "t2d";

// fc.weight is [H, K * target_hidden_size]; biases are listed (required)
// only when attention_bias is true.
std::vector<weights::TensorSpec> DrafterSchema(const config::DrafterConfig& config,
                                               int64_t target_hidden_size);

std::vector<weights::IgnoreRule> DrafterIgnoreRules();

// A DFlash 2 config over DFlash 1 weights, or DFlash 2 weights under a DFlash
// 1 config, becomes one problem line (instead of one per tensor), and the
// report is not ok even when unexpected tensors are allowed.
void ExplainFamilyMismatch(const config::DrafterConfig& config, weights::WeightReport& report);

}  // namespace dflash::model
