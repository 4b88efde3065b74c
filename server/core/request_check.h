// File: request_check.h
// The rules an evaluation request must meet before anything is looked up,
// loaded or queued, each in one function. RunEval (eval_core_impl.cc),
// SubmitEval and ResubmitEval (job_service_impl.cc, the fleet's submit
// included) call CheckEvalRequest / CheckJobRequest, so a mistake gets the
// same code and words whichever way it arrives; the client checks only its
// command line and the service only the wire (field ranges and sizes).
// Torch-free.
//
//   RETURN_IF_ERROR(CheckEvalRequest(params));
//   RETURN_IF_ERROR(CheckJobRequest(request, /*drafter_has_selector=*/true));
#pragma once

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "types/eval_params.h"
#include "types/eval_types.h"
#include "types/job_types.h"

namespace dflash::core {

// What the caller knows beyond the request's own fields.
struct RequestFacts {
  // A fleet job names its dataset by path (JobRequest::dataset_path): then
  // the name may be empty (the folder's name is used).
  bool dataset_by_path = false;
  // The drafter is DFlash 2 (has a candidate selector); nullopt when not yet
  // known (a checkpoint named by path), which skips the checks that need it.
  std::optional<bool> drafter_has_selector;
};

// InvalidArgument "give a resident drafter name or a checkpoint path" (none)
// or "..., not both" (both): exactly one names the drafter.
absl::Status CheckDrafterSource(const types::EvalParams& params);

// InvalidArgument "dataset is required" unless a name or a path is given.
absl::Status CheckDatasetNamed(const types::EvalParams& params, bool dataset_by_path);

// Options that belong to one mode: sampling settings need mode anchor
// (sampled acceptance is teacher-forced); max_new_tokens needs mode replay
// (it cuts replay's walk; anchor mode has none). InvalidArgument.
absl::Status CheckModeOptions(const types::EvalOptions& options);

// The sampling settings, policies and engine preset by the rules the
// evaluator applies (eval/sampling_policy.h: ranges via
// eval::CheckSamplingSetting, presets' conventions). InvalidArgument; the
// rules that need no drafter are checked first, so their words are the
// same whether or not the drafter is known.
absl::Status CheckSampling(const types::EvalOptions& options,
                           std::optional<bool> drafter_has_selector);

// All of the above, in that order: the first broken rule's status.
absl::Status CheckEvalRequest(const types::EvalParams& params, const RequestFacts& facts = {});

// The regression gate's request rules (InvalidArgument): gate_metric,
// gate_min_delta, gate_allow_recipe_mismatch and gate_floor need a gate;
// "best" and "previous" need the run; the metric parses. Whether the
// reference job exists and succeeded is the job service's (it needs the
// queue).
absl::Status CheckGate(const types::GateSpec& gate, const std::string& run);

// CheckEvalRequest and CheckGate for a job's request.
absl::Status CheckJobRequest(const types::JobRequest& request,
                             std::optional<bool> drafter_has_selector);

}  // namespace dflash::core
