// File: drafter_schema.h
// The tensors a DFlash drafter checkpoint must hold (dflash-semantics §1),
// by schema name and shape, for weights::ValidateWeightMap, and the tensors
// that may be present but are unused on purpose.
//
//   auto schema = DrafterSchema(cfg, /*target_hidden_size=*/5120);
//   ValidateWeightMap(src, schema, {.ignore = DrafterIgnoreRules()});
#pragma once

#include <cstdint>
#include <vector>

#include "model/drafter_config.h"
#include "weights/weight_spec.h"

namespace dflash::model {

// fc.weight is [H, K * target_hidden_size]; biases are listed (required)
// only when attention_bias is true.
std::vector<weights::TensorSpec> DrafterSchema(const DrafterConfig& config,
                                               int64_t target_hidden_size);

std::vector<weights::IgnoreRule> DrafterIgnoreRules();

}  // namespace dflash::model
