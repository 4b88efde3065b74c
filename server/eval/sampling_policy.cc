#include "eval/sampling_policy.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "eval/sampled_acceptance.h"
#include "types/proposal_policy.h"

namespace dflash::eval {

const std::vector<EnginePreset>& EnginePresets() {
  // Each row is sourced in docs/served-acceptance.md (file and commit).
  static const std::vector<EnginePreset> kPresets = {
      {"vllm", types::ProposalPolicy::kArgmax, types::ProposalPolicy::kArgmax,
       /*truncate_draft=*/false,
       /*negative_top_k_off=*/true, /*top_p_top_k=*/true,
       "greedy drafts, no draft probabilities: accept x with the target's processed p(x)"},
      {"sglang", types::ProposalPolicy::kArgmax, types::ProposalPolicy::kArgmax,
       /*truncate_draft=*/false,
       /*negative_top_k_off=*/true, /*top_p_top_k=*/true,
       "target-only verification of the drafter's top-1 chain: accept x with p(x)"},
      {"zlab", types::ProposalPolicy::kMatch, types::ProposalPolicy::kMatch,
       /*truncate_draft=*/true,
       /*negative_top_k_off=*/false, /*top_p_top_k=*/false,
       "drafts and the target's tokens sampled apart at T, accepted while they are equal"},
  };
  return kPresets;
}

absl::StatusOr<const EnginePreset*> FindEnginePreset(absl::string_view name) {
  std::vector<std::string> known;
  for (const EnginePreset& p : EnginePresets()) {
    if (name == p.name) return &p;
    known.push_back(p.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown engine '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
}

const char* GreedyEquivalent(types::ProposalPolicy p, bool has_selector) {
  return has_selector && p == types::ProposalPolicy::kSample ? "unary" : "greedy";
}

namespace {

// The preset's top-k/top-p conventions on one setting.
absl::Status ApplyConventions(const EnginePreset* preset, types::SamplingSetting& s) {
  if (s.top_k < 0) {
    if (preset == nullptr || !preset->negative_top_k_off) {
      return absl::InvalidArgumentError(absl::StrCat(
          "sampling '", SamplingSettingText(s), "': top_k ", s.top_k,
          preset == nullptr ? " is negative; 0 = off (-1 = off only under --engine vllm or sglang)"
                            : absl::StrCat(" is negative; engine ", preset->name, " has 0 = off")));
    }
    s.top_k = 0;
  }
  if (preset != nullptr && !preset->top_p_top_k && (s.top_k > 0 || s.top_p != 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling '", SamplingSettingText(s), "': engine ", preset->name,
                     " applies no top-p or top-k (", preset->rule, "); drop p= and k="));
  }
  if (preset != nullptr) {
    s.truncate_draft = preset->truncate_draft;
    s.engine = preset->name;
  }
  return CheckSamplingSetting(s);
}

}  // namespace

absl::StatusOr<std::vector<types::SamplingSetting>> ResolveSampling(
    const types::EvalOptions& options, std::optional<bool> has_selector) {
  const EnginePreset* preset = nullptr;
  if (!options.engine.empty()) {
    ASSIGN_OR_RETURN(preset, FindEnginePreset(options.engine));
  }
  std::vector<types::SamplingSetting> out;
  if (options.sampling.empty()) {
    if (!options.policies.empty() || preset != nullptr) {
      return absl::InvalidArgumentError(
          "a policy or engine applies to sampled acceptance: add a sampling setting "
          "(e.g. --sampling t=0.7)");
    }
    return out;
  }
  std::vector<types::ProposalPolicy> policies = options.policies;
  for (size_t i = 0; i < policies.size(); ++i) {
    for (size_t k = 0; k < i; ++k) {
      if (policies[k] == policies[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("policy ", types::PolicyName(policies[i]), " is given twice"));
      }
    }
  }
  if (policies.empty()) {
    policies.push_back(preset == nullptr || !has_selector.has_value()
                           ? types::ProposalPolicy::kDefault
                       : *has_selector ? preset->dflash2
                                       : preset->dflash1);
  }
  for (const types::SamplingSetting& in : options.sampling) {
    for (types::ProposalPolicy policy : policies) {
      types::SamplingSetting s = in;
      s.policy = policy;
      if (policy == types::ProposalPolicy::kDefault && has_selector.has_value()) {
        s.policy =
            *has_selector ? types::ProposalPolicy::kSelector : types::ProposalPolicy::kSample;
        if (preset != nullptr) s.policy = *has_selector ? preset->dflash2 : preset->dflash1;
      }
      if (s.policy == types::ProposalPolicy::kSelector && has_selector == false) {
        return absl::InvalidArgumentError(
            "policy selector needs a DFlash 2 drafter (its candidate selector proposes); this "
            "drafter is DFlash 1: use sample, argmax or match");
      }
      RETURN_IF_ERROR(ApplyConventions(preset, s));
      out.push_back(std::move(s));
    }
  }
  return out;
}

}  // namespace dflash::eval
