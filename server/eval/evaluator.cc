// The evaluation's outer steps (evaluator.h): the compatibility check, the
// sampling settings resolved, the parts run (parts_run.h) and finished into
// one result. The modes themselves: anchor_run.h and replay_run.h.
#include "eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/torch_guard.h"
#include "eval/draft_length_curve.h"
#include "eval/eval_part.h"
#include "eval/layer_offset_check.h"
#include "eval/metrics.h"
#include "eval/part_state.h"
#include "eval/parts_run.h"
#include "eval/result_invariants.h"
#include "eval/run_inputs.h"
#include "eval/sampled_acceptance.h"
#include "eval/sampling_policy.h"
#include "eval/shard_plan.h"
#include "eval/slices.h"
#include "eval/target_consistency.h"

namespace dflash::eval {
namespace {

using Clock = std::chrono::steady_clock;

}  // namespace

absl::Status CheckCompatible(const model::DrafterModel& drafter,
                             const weights::TargetTensors& target, const data::EvalDataset& dataset,
                             const types::EvalOptions& options) {
  const config::DrafterConfig& cfg = drafter.config();
  RETURN_IF_ERROR(dataset.CheckLayers(cfg.target_layer_ids));
  const int64_t k = cfg.num_target_features();
  if (dataset.hidden_size() != target.hidden_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("dataset hidden size ", dataset.hidden_size(), " does not match the target's ",
                     target.hidden_size, " (embed_tokens [", target.vocab_size, ", ",
                     target.hidden_size, "]): the features were captured from another model"));
  }
  if (drafter.fc_in_features() != k * dataset.hidden_size()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter fc takes ", drafter.fc_in_features(), " input features; its ", k,
        " target layers [", absl::StrJoin(cfg.target_layer_ids, ", "), "] x dataset hidden size ",
        dataset.hidden_size(), " give ", k * dataset.hidden_size()));
  }
  if (cfg.hidden_size != target.hidden_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter hidden size ", cfg.hidden_size, " does not match the target's ",
        target.hidden_size, ": the drafter cannot use this target's embed_tokens and lm_head"));
  }
  if (cfg.mask_token_id < 0 || cfg.mask_token_id >= target.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat("drafter mask_token_id ", cfg.mask_token_id,
                                                      " is outside the target's vocabulary [0, ",
                                                      target.vocab_size, ")"));
  }
  const int64_t B = BlockSize(drafter, options);
  if (B < 2 || B > cfg.block_size) {
    return absl::InvalidArgumentError(absl::StrCat("block_size ", B, " must be in [2, ",
                                                   cfg.block_size, "] (the drafter's block size)"));
  }
  if (cfg.is_dflash2() && options.semantics == types::Semantics::kZlab2025) {
    return absl::FailedPreconditionError(
        "semantics 'zlab-2025' predates DFlash 2; evaluate a DFlash 2 drafter under "
        "'zlab-current'");
  }
  if (cfg.is_dflash2() && cfg.vocab_size != target.vocab_size) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter's candidate selector codebooks cover ", cfg.vocab_size,
                     " tokens (vocab_size); the target's vocabulary has ", target.vocab_size));
  }
  if (const model::DraftVocab* v = drafter.draft_vocab();
      v != nullptr && v->target_to_draft.size(0) != target.vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "drafter's t2d covers ", v->target_to_draft.size(0),
        " target ids (its target vocabulary); this target's vocabulary has ", target.vocab_size));
  }
  if (drafter.device() != target.embed.device()) {
    return absl::FailedPreconditionError(
        absl::StrCat("drafter is on ", drafter.device().str(), " but the target is on ",
                     target.embed.device().str(), "; load both on one device"));
  }
  return absl::OkStatus();
}

absl::StatusOr<types::EvalResult> Evaluate(const model::DrafterModel& drafter,
                                           const weights::TargetTensors& target,
                                           const data::EvalDataset& dataset,
                                           const types::EvalOptions& options,
                                           const types::ProgressFn& progress) {
  Placement placement;
  placement.slots.push_back({&drafter, &target, drafter.device().str()});
  return Evaluate(placement, dataset, options, progress);
}

absl::StatusOr<types::EvalResult> Evaluate(const Placement& placement,
                                           const data::EvalDataset& dataset,
                                           const types::EvalOptions& options,
                                           const types::ProgressFn& progress) {
  if (placement.slots.empty()) return absl::InvalidArgumentError("no device slot to evaluate on");
  const model::DrafterModel& drafter = *placement.slots[0].drafter;
  const weights::TargetTensors& target = *placement.slots[0].target;
  if (!placement.compatibility_checked) {
    RETURN_IF_ERROR(CheckCompatible(drafter, target, dataset, options));
  }
  const Clock::time_point start = Clock::now();
  types::EvalOptions resolved = options;
  ASSIGN_OR_RETURN(resolved.sampling, ResolveSampling(options, drafter.selector() != nullptr));
  if (!resolved.sampling.empty()) {
    if (options.mode != types::Mode::kAnchor) {
      return absl::InvalidArgumentError(
          "sampled acceptance is computed in anchor mode only (teacher-forced positions); "
          "drop the sampling settings or use mode anchor");
    }
    if (drafter.draft_vocab() != nullptr) {
      return absl::FailedPreconditionError(
          "sampled acceptance with a drafter vocabulary of its own (speculators lm_head + d2t) is "
          "not computed by this service; drop the sampling settings");
    }
    RETURN_IF_ERROR(CheckTargetDistributionInputs(target, dataset));
  }
  SampleRange within{0, NumSamples(dataset, options)};
  const bool fleet_shard = options.sample_end > 0;
  if (fleet_shard) {
    within = {std::min<size_t>(options.sample_begin, within.end),
              std::min<size_t>(options.sample_end, within.end)};
    if (within.size() == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("shard range [", options.sample_begin, ", ", options.sample_end,
                       ") holds no sample of the dataset's ", NumSamples(dataset, options)));
    }
  }
  ASSIGN_OR_RETURN(PartsRun run, RunParts(placement, dataset, resolved, within, progress));
  std::string part_state;
  if (fleet_shard) {  // one part, kept for the parent job to merge
    ASSIGN_OR_RETURN(EvalPart merged, MergeParts(std::move(run.parts)));
    part_state = PartToJson(merged);
    run.parts.clear();
    run.parts.push_back(std::move(merged));
  }
  ASSIGN_OR_RETURN(
      types::EvalResult result,
      FinishParts(placement, dataset, options, std::move(run.parts), std::move(run.where), start));
  result.part_state = std::move(part_state);
  return result;
}

absl::StatusOr<EvalPart> MergeParts(std::vector<EvalPart> parts) {
  if (parts.empty()) return absl::InvalidArgumentError("no evaluated part to merge");
  EvalPart merged = std::move(parts[0]);
  for (size_t k = 1; k < parts.size(); ++k) {
    RETURN_IF_ERROR(merged.metrics.Merge(parts[k].metrics));
    RETURN_IF_ERROR(merged.sampled.Merge(parts[k].sampled));
    merged.context_positions += parts[k].context_positions;
  }
  return merged;
}

absl::StatusOr<types::EvalResult> FinishParts(const Placement& placement,
                                              const data::EvalDataset& dataset,
                                              const types::EvalOptions& options,
                                              std::vector<EvalPart> parts,
                                              std::vector<types::ShardPlacement> where,
                                              std::chrono::steady_clock::time_point start) {
  if (placement.slots.empty()) return absl::InvalidArgumentError("no device slot to finish on");
  const model::DrafterModel& drafter = *placement.slots[0].drafter;
  const weights::TargetTensors& target = *placement.slots[0].target;
  ASSIGN_OR_RETURN(EvalPart merged, MergeParts(std::move(parts)));
  absl::StatusOr<types::EvalResult> result = merged.metrics.Finish(options.mode);
  result->context_positions = merged.context_positions;
  if (options.mode == types::Mode::kAnchor) {
    result->draft_length_curve = DraftLengthCurve(result->accepted_histogram);
    result->sampling = merged.sampled.Finish(
        options.ci == types::CiMethod::kNone ? 0 : options.ci_resamples, options.seed);
  }
  result->shards = std::move(where);
  absl::StatusOr<absl::StatusOr<std::vector<std::string>>> offset =
      TorchGuard("checking the layer numbering", [&]() -> absl::StatusOr<std::vector<std::string>> {
        if (!dataset.streamed()) return LayerOffsetWarnings(drafter, target, dataset, options);
        // Its first samples, read again (the check scores at most four).
        ASSIGN_OR_RETURN(data::EvalDataset first,
                         dataset.Part(0, std::min<size_t>(4, dataset.size()), drafter.device()));
        return LayerOffsetWarnings(drafter, target, first, options);
      });
  if (!offset.ok()) return offset.status();
  if (!offset->ok()) return offset->status();
  for (std::string& w : **offset) result->warnings.push_back(std::move(w));
  // A capture read under a declared numbering or declared responses says so
  // in its result, not only in `ls` (issue 18).
  if (std::string notes = dataset.capture_notes(); !notes.empty()) {
    result->warnings.push_back(absl::StrCat("dataset: ", notes));
  }
  result->compute_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  result->tokens_per_second =
      result->compute_seconds > 0 ? result->tokens_scored / result->compute_seconds : 0;
  result->device = drafter.device().str();
  const config::DrafterConfig& cfg = drafter.config();
  result->family = config::FamilyName(cfg.family);
  result->semantics = types::SemanticsName(options.semantics);
  result->semantics_reference = types::SemanticsReference(options.semantics);
  result->selector_top_k = cfg.selector_top_k;
  if (const model::DraftVocab* v = drafter.draft_vocab(); v != nullptr) {
    result->draft_vocab_size = v->size();
  } else {
    result->labels_in_draft_vocab = 0;  // no draft vocabulary: not reported
  }
  if (ScoredPositions(options) == Positions::kToFirstMiss) {
    MetricsAccumulator::MarkPositionsToFirstMiss(*result);
  }
  if (options.semantics == types::Semantics::kZlab2025 && cfg.is_causal.has_value()) {
    result->warnings.push_back(
        absl::StrCat("config sets is_causal ", *cfg.is_causal ? "true" : "false",
                     "; zlab-2025 ignores it (every layer bidirectional in the block)"));
  }
  for (types::SampledAcceptance& s : result->sampling) {
    s.approximations = {"teacher-forced prefix (position j sees the data's tokens, not the drafts)",
                        "independent positions (a block's acceptance is the product of alphas)"};
    s.greedy_equivalent = GreedyEquivalent(s.setting.policy, drafter.selector() != nullptr);
  }
  AddSlices(options, &*result);
  RETURN_IF_ERROR(CheckResultInvariants(*result));
  return result;
}

}  // namespace dflash::eval
