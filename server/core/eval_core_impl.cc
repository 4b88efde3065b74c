// EvalCoreImpl: the server's information and evaluations (whole, or a
// fleet's shards) on what its registry picks; loads and the rest of the
// resident objects' API go to the registry as they are.
#include "core/eval_core_impl.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <ATen/ATen.h>

#include "absl/strings/str_cat.h"
#include "common/fix_hint.h"
#include "common/ops_observer.h"
#include "common/status_macros.h"
#include "core/eval_placement.h"
#include "core/request_check.h"
#include "dflash/build_info.h"
#include "eval/bootstrap.h"
#include "eval/evaluator.h"
#include "eval/shard_plan.h"
#include "eval/target_consistency.h"
#include "resident/device.h"

namespace dflash::core {
namespace fs = std::filesystem;

using Clock = std::chrono::steady_clock;

absl::StatusOr<std::unique_ptr<EvalCoreImpl>> EvalCoreImpl::Create(CoreOptions options) {
  std::error_code ec;
  fs::create_directories(options.state_dir, ec);
  if (ec) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create state directory '", options.state_dir, "': ", ec.message()));
  }
  resident::RegistryOptions& registry = options.registry;
  if (registry.data_roots.empty()) {
    registry.data_roots = {options.state_dir + "/models", options.state_dir + "/datasets"};
  }
  ASSIGN_OR_RETURN(std::unique_ptr<resident::Registry> r, resident::Registry::Create(registry));
  return std::unique_ptr<EvalCoreImpl>(new EvalCoreImpl(std::move(options), std::move(r)));
}

EvalCoreImpl::EvalCoreImpl(CoreOptions options, std::unique_ptr<resident::Registry> registry)
    : options_(std::move(options)),
      start_time_(std::chrono::system_clock::now()),
      start_steady_(Clock::now()),
      registry_(std::move(registry)) {}

EvalCoreImpl::~EvalCoreImpl() = default;

std::string EvalCoreImpl::default_dtype() const {
  return options_.registry.device == "cpu" ? "fp32" : "bf16";
}

ServerInfo EvalCoreImpl::GetServerInfo() const {
  ServerInfo info;
  info.server_version = kVersion;
  info.git_sha = kGitSha;
  info.libtorch_version = resident::LibtorchVersion();
  info.cuda_available = resident::CudaAvailable();
  info.devices = resident::ListDevices(options_.threads);
  info.default_device = options_.registry.device;
  info.eval_devices = SlotNames(options_.eval_devices);
  info.default_dtype = default_dtype();
  info.intra_op_threads = options_.threads;
  info.blas = resident::DescribeBlas();
  info.start_time_unix_micros =
      std::chrono::duration_cast<std::chrono::microseconds>(start_time_.time_since_epoch()).count();
  info.uptime_seconds = std::chrono::duration<double>(Clock::now() - start_steady_).count();
  info.data_roots = registry_->roots().roots();
  info.state_dir = options_.state_dir;
  for (const resident::ResourceInfo& r : registry_->List(std::nullopt)) {  // one snapshot
    switch (r.kind) {
      case resident::ResourceKind::kTarget: ++info.resident_targets; break;
      case resident::ResourceKind::kDrafter: ++info.resident_drafters; break;
      case resident::ResourceKind::kDataset: ++info.resident_datasets; break;
    }
    for (resident::DeviceInfo& d : info.devices) {
      if (r.device == d.name) d.used_memory_bytes += r.bytes;
    }
  }
  return info;
}

absl::StatusOr<weights::WeightReport> EvalCoreImpl::ValidateCheckpoint(
    const resident::ValidateParams& params) {
  return registry_->ValidateCheckpoint(params);
}

absl::StatusOr<resident::LoadResult> EvalCoreImpl::LoadDrafter(
    const resident::LoadDrafterParams& params) {
  return registry_->LoadDrafter(params);
}

absl::StatusOr<resident::LoadResult> EvalCoreImpl::LoadTarget(
    const resident::LoadTargetParams& params) {
  return registry_->LoadTarget(params);
}

absl::StatusOr<resident::LoadResult> EvalCoreImpl::LoadDataset(
    const resident::LoadDatasetParams& params) {
  return registry_->LoadDataset(params);
}

absl::StatusOr<resident::ResourceInfo> EvalCoreImpl::Unload(resident::ResourceKind kind,
                                                            const std::string& name) {
  return registry_->Unload(kind, name);
}

std::vector<resident::ResourceInfo> EvalCoreImpl::ListResources(
    std::optional<resident::ResourceKind> kind) const {
  return registry_->List(kind);
}

absl::StatusOr<types::EvalResult> EvalCoreImpl::RunEval(const types::EvalParams& params,
                                                        const types::ProgressFn& progress) {
  const Clock::time_point start = Clock::now();
  absl::StatusOr<types::EvalResult> result = DoRunEval(params, progress);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  if (result.ok()) {
    const EvalCounts counts{result->blocks, result->tokens_scored, result->compute_seconds};
    Ops().OnEval(absl::StatusCode::kOk, seconds, &counts);
  } else {
    Ops().OnEval(result.status().code(), seconds, nullptr);
  }
  return result;
}

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

  void UseDrafter(resident::Registry::Held<model::DrafterModel> held) {
    drafter = std::move(held.object);
    mappings.push_back(std::move(held.mapping));
    drafter_fingerprint = held.info.fingerprint;
    device = held.info.device;
    dtype = held.info.dtype;
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

absl::Status EvalCoreImpl::PickInputs(const types::EvalParams& params, EvalInputs& in) const {
  ASSIGN_OR_RETURN(resident::Registry::Picked p,
                   registry_->Pick(params.target, params.dataset, params.drafter));
  in.target = std::move(p.target.object);
  in.mappings.push_back(std::move(p.target.mapping));
  in.target_name = p.target.info.name;
  in.target_fingerprint = p.target.info.fingerprint;
  in.dataset = std::move(p.dataset.object);
  in.mappings.push_back(std::move(p.dataset.mapping));
  in.dataset_name = p.dataset.info.name;
  in.dataset_fingerprint = p.dataset.info.fingerprint;
  if (p.drafter.object) in.UseDrafter(std::move(p.drafter));
  return absl::OkStatus();
}

absl::Status EvalCoreImpl::DrafterFromCheckpoint(const types::EvalParams& params, EvalInputs& in) {
  ASSIGN_OR_RETURN(resident::Registry::Held<model::DrafterModel> held,
                   registry_->DrafterFromCheckpoint(params.checkpoint_path, *in.target));
  in.UseDrafter(std::move(held));
  return absl::OkStatus();
}

absl::StatusOr<types::TargetConsistency> EvalCoreImpl::RequireConsistentPair(const EvalInputs& in) {
  ASSIGN_OR_RETURN(types::TargetConsistency c,
                   registry_->TargetConsistencyOf(in.dataset_name, in.dataset, in.target));
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
