// File: request_check.cc
#include "core/request_check.h"

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "eval/bootstrap.h"
#include "eval/sampling_policy.h"

namespace dflash::core {

absl::Status CheckDrafterSource(const types::EvalParams& params) {
  if (params.drafter.empty() != params.checkpoint_path.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(
      params.drafter.empty() ? "give a resident drafter name or a checkpoint path"
                             : "give a resident drafter name or a checkpoint path, not both");
}

absl::Status CheckDatasetNamed(const types::EvalParams& params, bool dataset_by_path) {
  if (params.dataset.empty() && !dataset_by_path) {
    return absl::InvalidArgumentError("dataset is required");
  }
  return absl::OkStatus();
}

absl::Status CheckModeOptions(const types::EvalOptions& options) {
  if (!options.sampling.empty() && options.mode != types::Mode::kAnchor) {
    return absl::InvalidArgumentError(
        "sampling settings need mode anchor (sampled acceptance is teacher-forced)");
  }
  if (options.max_new_tokens > 0 && options.mode != types::Mode::kReplay) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_new_tokens (", options.max_new_tokens,
                     ") needs mode replay (it cuts replay's walk; anchor mode scores fixed "
                     "blocks)"));
  }
  return absl::OkStatus();
}

absl::Status CheckSampling(const types::EvalOptions& options,
                           std::optional<bool> drafter_has_selector) {
  // The rules that hold for any drafter first, so their words do not depend
  // on whether it is resident (RunEval and SubmitEval by path or by name
  // then say the same); then those that need to know the drafter.
  RETURN_IF_ERROR(eval::ResolveSampling(options, std::nullopt).status());
  if (!drafter_has_selector.has_value()) return absl::OkStatus();
  return eval::ResolveSampling(options, drafter_has_selector).status();
}

absl::Status CheckEvalRequest(const types::EvalParams& params, const RequestFacts& facts) {
  RETURN_IF_ERROR(CheckDrafterSource(params));
  RETURN_IF_ERROR(CheckDatasetNamed(params, facts.dataset_by_path));
  RETURN_IF_ERROR(CheckModeOptions(params.options));
  return CheckSampling(params.options, facts.drafter_has_selector);
}

absl::Status CheckGate(const types::GateSpec& gate, const std::string& run) {
  if (gate.reference.empty()) {
    const types::GateSpec none;
    if (gate.metric != none.metric || gate.min_delta != none.min_delta ||
        gate.allow_recipe_mismatch || gate.has_floor) {
      return absl::InvalidArgumentError(
          "gate_metric, gate_min_delta, gate_allow_recipe_mismatch and gate_floor need gate");
    }
    return absl::OkStatus();
  }
  if (run.empty() && (gate.reference == "best" || gate.reference == "previous")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gate '", gate.reference, "' looks for the reference among the run's jobs; give run"));
  }
  // The block size is not known before the run: bound j loosely here; the
  // gate checks it against the result's positions.
  return eval::ParseMetric(gate.metric, 1 << 20).status();
}

absl::Status CheckJobRequest(const types::JobRequest& request,
                             std::optional<bool> drafter_has_selector) {
  RequestFacts facts;
  facts.dataset_by_path = !request.dataset_path.empty();
  facts.drafter_has_selector = drafter_has_selector;
  RETURN_IF_ERROR(CheckEvalRequest(request.params, facts));
  return CheckGate(request.gate, request.run);
}

}  // namespace dflash::core
