#include "types/proposal_policy.h"

#include "absl/strings/str_cat.h"

namespace dflash::types {

const char* PolicyName(ProposalPolicy p) {
  switch (p) {
    case ProposalPolicy::kSample: return "sample";
    case ProposalPolicy::kArgmax: return "argmax";
    case ProposalPolicy::kSelector: return "selector";
    case ProposalPolicy::kMatch: return "match";
    case ProposalPolicy::kDefault: break;
  }
  return "default";
}

absl::StatusOr<ProposalPolicy> ParsePolicy(absl::string_view name) {
  for (ProposalPolicy p : {ProposalPolicy::kSample, ProposalPolicy::kArgmax,
                           ProposalPolicy::kSelector, ProposalPolicy::kMatch}) {
    if (name == PolicyName(p)) return p;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown policy '", name, "' (known: sample, argmax, selector (DFlash 2), match)"));
}

}  // namespace dflash::types
