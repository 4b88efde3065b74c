// File: draft_keys.h
// Internal to model/: the draft keys of config.json (dflash2-semantics.md
// §1: dflash_config first, then the top level) and the check that no key of
// the file is ignored silently. Used by drafter_config.cc.
#pragma once

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "model/drafter_config.h"

namespace dflash::model::internal {

// `architectures` -> cfg.family (DFlash2DraftModel -> DFlash 2).
absl::Status ParseFamily(const nlohmann::json& root, DrafterConfig& cfg);

// block_size, target_layer_ids, mask_token_id, the scales and softcap, and
// the DFlash 2 keys, with their sources in cfg.draft_keys. Needs the shape
// fields (hidden_size, vocab_size, num_hidden_layers) already parsed.
absl::Status ParseDraftKeys(const nlohmann::json& root, DrafterConfig& cfg);

// Every top-level key is implemented, known not to change the computation
// (listed in cfg.skipped_keys), refused by name (InvalidArgument), or
// unknown (a warning naming it).
absl::Status CheckTopLevelKeys(const nlohmann::json& root, DrafterConfig& cfg);

}  // namespace dflash::model::internal
