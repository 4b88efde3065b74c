// EvalCoreImpl::RunEval: resolve the three resident objects (or load a
// checkpoint for this one evaluation), check they fit, evaluate.
#include <algorithm>
#include <chrono>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/fix_hint.h"
#include "common/status_macros.h"
#include "core/eval_core_impl.h"
#include "core/eval_placement.h"
#include "core/placement.h"
#include "core/request_check.h"
#include "core/resident.h"
#include "core/resident_pick.h"
#include "eval/bootstrap.h"
#include "eval/evaluator.h"
#include "eval/shard_plan.h"
#include "eval/target_consistency.h"
#include "model/drafter_schema.h"
#include "weights/checkpoint_open.h"
#include "weights/weight_map.h"

namespace dflash::core {

// What one evaluation runs on, held for its whole run: shared pointers keep
// an object alive even if it is unloaded meanwhile.
struct EvalCoreImpl::EvalInputs {
  std::shared_ptr<const weights::TargetTensors> target;
  std::shared_ptr<const data::EvalDataset> dataset;
  std::shared_ptr<const model::DrafterModel> drafter;
  std::string drafter_fingerprint, dataset_fingerprint, target_fingerprint, device, dtype;
  std::string target_name, dataset_name;
  // The files the three objects' tensors are views of (weights/map_policy.h).
  std::vector<std::shared_ptr<const weights::MapTally>> mappings;

  // FailedPrecondition naming the first file written in place since it was
  // loaded: reading its mapping could raise SIGBUS, so nothing is evaluated.
  absl::Status CheckMappedFiles() const {
    for (const auto& m : mappings) {
      if (m == nullptr) continue;
      if (absl::Status s = m->CheckUnchanged(); !s.ok()) {
        return absl::FailedPreconditionError(
            absl::StrCat(s.message(), "; unload and load it again to evaluate the new file"));
      }
    }
    return absl::OkStatus();
  }

  void UseDrafter(std::shared_ptr<const model::DrafterModel> model, const ResourceInfo& info,
                  std::shared_ptr<const weights::MapTally> mapping) {
    drafter = std::move(model);
    mappings.push_back(std::move(mapping));
    drafter_fingerprint = info.fingerprint;
    device = info.device;
    dtype = info.dtype;
  }
};

absl::StatusOr<types::EvalResult> EvalCoreImpl::DoRunEval(const types::EvalParams& params,
                                                          const types::ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(CheckEvalRequest(params));
  EvalInputs in;
  RETURN_IF_ERROR(PickInputs(params, in));
  if (!in.drafter) RETURN_IF_ERROR(DrafterFromCheckpoint(params, in));
  RETURN_IF_ERROR(in.CheckMappedFiles());
  RETURN_IF_ERROR(eval::CheckCompatible(*in.drafter, *in.target, *in.dataset, params.options));
  types::TargetConsistency consistency;
  if (!params.options.sampling.empty()) {
    ASSIGN_OR_RETURN(consistency, RequireConsistentPair(in));
  }
  const double setup =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSIGN_OR_RETURN(types::EvalResult result, EvaluateWithinLimit(params, in, progress));
  result.setup_seconds += setup;
  StampResult(params, in, consistency, result);
  return result;
}

void EvalCoreImpl::StampResult(const types::EvalParams& params, const EvalInputs& in,
                               const types::TargetConsistency& consistency,
                               types::EvalResult& result) const {
  result.device = in.device;
  result.dtype = in.dtype;
  result.drafter_fingerprint = in.drafter_fingerprint;
  result.dataset_fingerprint = in.dataset_fingerprint;
  result.target_fingerprint = in.target_fingerprint;
  result.target_consistency = consistency;
  eval::AddIntervals(params.options, &result);
}

absl::StatusOr<ShardPlan> EvalCoreImpl::PlanShards(const types::EvalParams& params) {
  RETURN_IF_ERROR(CheckEvalRequest(params));
  EvalInputs in;
  RETURN_IF_ERROR(PickInputs(params, in));
  const data::EvalDataset& dataset = *in.dataset;
  const size_t n = params.options.max_samples > 0
                       ? std::min(dataset.size(), static_cast<size_t>(params.options.max_samples))
                       : dataset.size();
  std::vector<int64_t> tokens(n);
  for (size_t i = 0; i < n; ++i) tokens[i] = dataset.sample_tokens(i);
  ShardPlan plan;
  plan.ranges = eval::SplitEvenly(tokens, params.options.shards);
  plan.dataset_fingerprint = in.dataset_fingerprint;
  return plan;
}

absl::StatusOr<types::EvalResult> EvalCoreImpl::FinishShards(
    const types::EvalParams& params, std::vector<eval::EvalPart> parts,
    std::vector<types::ShardPlacement> where, double seconds) {
  // The same inputs RunEval would pick here: the finish reads the drafter
  // (family, layer-numbering check) and the dataset (slices, notes).
  EvalInputs in;
  RETURN_IF_ERROR(PickInputs(params, in));
  if (!in.drafter) RETURN_IF_ERROR(DrafterFromCheckpoint(params, in));
  RETURN_IF_ERROR(in.CheckMappedFiles());
  types::TargetConsistency consistency;
  if (!params.options.sampling.empty()) {
    ASSIGN_OR_RETURN(consistency, RequireConsistentPair(in));
  }
  types::EvalOptions options = params.options;
  options.logits_budget_bytes = options_.logits_budget_bytes;
  ASSIGN_OR_RETURN(EvalSlots slots,
                   MakeEvalSlots({}, in.drafter, in.target, options_.threads, ThisServer()));
  const auto start = std::chrono::steady_clock::now() -
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                         std::chrono::duration<double>(seconds));
  ASSIGN_OR_RETURN(types::EvalResult result,
                   eval::FinishParts(slots.placement, *in.dataset, options, std::move(parts),
                                     std::move(where), start));
  StampResult(params, in, consistency, result);
  return result;
}

absl::Status EvalCoreImpl::PickInputs(const types::EvalParams& params, EvalInputs& in) {
  std::lock_guard<std::mutex> lock(resident_->mu);
  ASSIGN_OR_RETURN(auto t, PickEntry(resident_->targets, params.target, ResourceKind::kTarget));
  in.target = t->second.tensors;
  in.mappings.emplace_back(in.target, &in.target->mapping);  // aliasing: lives with the target
  in.target_name = t->first;
  in.target_fingerprint = t->second.info.fingerprint;
  ASSIGN_OR_RETURN(auto d, PickEntry(resident_->datasets, params.dataset, ResourceKind::kDataset));
  in.dataset = d->second.dataset;
  in.mappings.emplace_back(in.dataset, &in.dataset->mapping());
  in.dataset_name = d->first;
  in.dataset_fingerprint = d->second.info.fingerprint;
  if (!params.drafter.empty()) {
    ASSIGN_OR_RETURN(auto m,
                     PickEntry(resident_->drafters, params.drafter, ResourceKind::kDrafter));
    in.UseDrafter(m->second.model, m->second.info, m->second.mapping);
  }
  return absl::OkStatus();
}

absl::Status EvalCoreImpl::DrafterFromCheckpoint(const types::EvalParams& params, EvalInputs& in) {
  // A resident drafter loaded from the same unchanged files, in the
  // target's placement, is the same weights: use it, load nothing.
  ASSIGN_OR_RETURN(std::string resolved, roots_.Resolve(params.checkpoint_path, "checkpoint_path"));
  const std::string signature =
      absl::StrCat(resolved, "||", DTypeLabel(in.target->embed.scalar_type()), "|",
                   in.target->embed.device().str(), "|", DiskSignature(resolved));
  {
    std::lock_guard<std::mutex> lock(resident_->mu);
    for (const auto& [name, entry] : resident_->drafters) {
      if (entry.disk_signature != signature) continue;
      in.UseDrafter(entry.model, entry.info, entry.mapping);
      return absl::OkStatus();
    }
  }
  // One-shot: load the checkpoint for this evaluation only, in the
  // target's placement, strictly validated.
  LoadDrafterParams load;
  load.path = params.checkpoint_path;
  load.device = in.target->embed.device().str();
  load.dtype = DTypeLabel(in.target->embed.scalar_type());
  load.name = absl::StrCat("__oneshot__", NowUnixMicros());
  ASSIGN_OR_RETURN(LoadResult loaded, DoLoadDrafter(load));
  std::lock_guard<std::mutex> lock(resident_->mu);
  auto it = resident_->drafters.find(loaded.resource.name);
  if (it == resident_->drafters.end()) return absl::InternalError("one-shot drafter vanished");
  in.UseDrafter(it->second.model, loaded.resource, it->second.mapping);
  resident_->drafters.erase(it);
  return absl::OkStatus();
}

absl::StatusOr<types::TargetConsistency> EvalCoreImpl::RequireConsistentPair(const EvalInputs& in) {
  ASSIGN_OR_RETURN(types::TargetConsistency c,
                   TargetConsistencyOf(in.dataset_name, in.dataset, in.target));
  RETURN_IF_ERROR(eval::RequireTargetConsistency(c, options_.min_target_consistency, in.target_name,
                                                 in.dataset_name));
  return c;
}

absl::StatusOr<types::EvalResult> EvalCoreImpl::EvaluateWithinLimit(
    const types::EvalParams& params, const EvalInputs& in,
    const types::ProgressFn& progress) const {
  // The evaluator reports its totals before scoring anything: refuse there.
  // Replay's first total is the most its walks can take: refused on that,
  // since it is what the evaluation may cost.
  int64_t too_many_blocks = 0;
  bool up_to = false;
  const int64_t max_blocks = options_.max_eval_blocks;
  auto limited = [&](const types::EvalProgress& p) {
    if (max_blocks > 0 && p.blocks_total > max_blocks) {
      too_many_blocks = p.blocks_total;
      up_to = p.blocks_total_is_bound;
      return false;
    }
    return progress ? progress(p) : true;
  };
  types::EvalOptions options = params.options;
  options.logits_budget_bytes = options_.logits_budget_bytes;
  ASSIGN_OR_RETURN(EvalSlots slots, MakeEvalSlots(options_.eval_devices, in.drafter, in.target,
                                                  options_.threads, ThisServer()));
  slots.placement.compatibility_checked = true;  // DoRunEval checked the pair
  absl::StatusOr<types::EvalResult> evaluated =
      eval::Evaluate(slots.placement, *in.dataset, options, limited);
  if (too_many_blocks > 0) {
    return WithFixHint(absl::ResourceExhaustedError(absl::StrCat(
                           "this evaluation would score ", up_to ? "up to " : "", too_many_blocks,
                           " blocks; the server allows at most ", max_blocks,
                           " per evaluation; lower max_samples or max_blocks")),
                       FixHint::kEvalBlockLimit);
  }
  return evaluated;
}

}  // namespace dflash::core
