// File: draft_keys.h
// Internal to config/: the draft keys of config.json (dflash2-semantics.md
// §1: dflash_config first, then the top level), the family, and the check
// that no key of the file is ignored silently, all by the key table
// (key_table.h). Used by drafter_config_reader.cc.
#pragma once

#include "absl/status/status.h"
#include "config/drafter_config.h"
#include "config/internal/config_fields.h"

namespace dflash::config::internal {

// `architectures` -> cfg.family (DFlash2DraftModel -> DFlash 2).
absl::Status ParseFamily(const TopLevel& root, DrafterConfig& cfg);

// block_size, target_layer_ids, mask_token_id, the scales and softcap, and
// the DFlash 2 keys, with their sources in cfg.draft_keys. Needs the shape
// fields (hidden_size, vocab_size, num_hidden_layers) already parsed.
absl::Status ParseDraftKeys(const TopLevel& root, DrafterConfig& cfg);

// Every top-level key is implemented, known not to change the computation
// (listed in cfg.skipped_keys), refused by name (InvalidArgument), or
// unknown (a warning naming it), as the key table says.
absl::Status CheckTopLevelKeys(const TopLevel& root, DrafterConfig& cfg);

}  // namespace dflash::config::internal
