// File: sampling_policy.h
// The one home of the sampling request's rules (issue 26 item 1, issue 27
// item 1): setting ranges, proposal policies, engine presets and their
// top-k/top-p conventions. Torch-free, so the job service checks a request
// at submit with the same function the evaluator runs. Every policy and
// setting of a request is scored from one forward (sampling_distributions.h).
#pragma once

#include <optional>
#include <string>
#include <vector>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "types/eval_types.h"
#include "types/proposal_policy.h"

namespace dflash::eval {

// A serving engine's way of proposing and verifying a draft at T > 0, read
// from its source (docs/served-acceptance.md cites file and commit).
struct EnginePreset {
  const char* name;
  types::ProposalPolicy dflash1, dflash2;  // the policy it serves each family with
  bool truncate_draft;                     // top-k/top-p also truncate q (else p only)
  bool negative_top_k_off;                 // top_k -1 means off, as its API allows
  bool top_p_top_k;                        // it applies top-p/top-k at all
  const char* rule;                        // one line: what the engine does
};

// InvalidArgument "unknown engine 'x' (known: vllm, sglang, zlab)".
absl::StatusOr<const EnginePreset*> FindEnginePreset(absl::string_view name);
const std::vector<EnginePreset>& EnginePresets();

// The request's settings x policies, each with its policy resolved and the
// preset's conventions applied, in request order (a setting's policies
// adjacent). `has_selector`: the drafter is DFlash 2; nullopt when not yet
// known (a checkpoint named by path at submit), which skips the checks that
// need it. InvalidArgument names the setting and what is wrong.
absl::StatusOr<std::vector<types::SamplingSetting>> ResolveSampling(
    const types::EvalOptions& options, std::optional<bool> has_selector);

// The greedy equivalent a policy's T = 0 numbers equal: "greedy" (the drafts
// the result reports) or, for DFlash 2's sample policy, "unary".
const char* GreedyEquivalent(types::ProposalPolicy p, bool has_selector);

}  // namespace dflash::eval
