// File: proposal_policy.h
// The proposal policies' names (types/eval_types.h, ProposalPolicy), one
// spelling for the wire, the store and the CLI.
#pragma once

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "types/eval_types.h"

namespace dflash::types {

// "sample", "argmax", "selector", "match"; "default" for kDefault.
const char* PolicyName(ProposalPolicy p);
// The four names above (not "default"); InvalidArgument names the known ones.
absl::StatusOr<ProposalPolicy> ParsePolicy(absl::string_view name);

}  // namespace dflash::types
