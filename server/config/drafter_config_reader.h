// File: drafter_config_reader.h
// Reads a DFlash drafter's config.json into a DrafterConfig. Accepts the
// transformers 4.x spellings (rope_theta + rope_scaling, torch_dtype) and the
// 5.x ones (rope_parameters, dtype), and the files of the other trainers
// (speculators, Model-Optimizer; docs/other-trainers.md), rewritten into
// z-lab's layout first. No key is ignored silently: the key table
// (internal/key_table.h) says of every top-level key whether it is
// implemented, a draft key, known not to change the computation
// (skipped_keys) or refused by name; any other is a warning.
//
//   ASSIGN_OR_RETURN(DrafterConfig cfg, ParseDrafterConfigFile(path));
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "config/drafter_config.h"

namespace dflash::config {

// Parses config.json text. InvalidArgument names the field and what was wrong
// (missing, wrong type, unknown rope_type, inconsistent head_dim ...).
absl::StatusOr<DrafterConfig> ParseDrafterConfig(const std::string& json_text);

// Reads and parses a file; NotFound when absent, errors prefixed with the path.
absl::StatusOr<DrafterConfig> ParseDrafterConfigFile(const std::string& path);

}  // namespace dflash::config
