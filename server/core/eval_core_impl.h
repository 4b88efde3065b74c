// File: eval_core_impl.h
// The real EvalCore: runs evaluations (whole, or a fleet's shards) on the
// objects of its registry of resident objects (resident/registry.h), which
// does the loads, unloads, listing and picks. Every evaluation is reported
// to the ops observer (common/ops_observer.h); the registry reports loads.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "resident/registry.h"

namespace dflash::core {

struct CoreOptions {
  // The registry's settings (resident/registry.h): its device, resolved, is
  // also the server's default; data_roots empty here means
  // state_dir/models and state_dir/datasets.
  resident::RegistryOptions registry;
  // Every --device entry (issue 30), registry.device first: an evaluation's
  // shards run on each. Empty: registry.device alone.
  std::vector<std::string> eval_devices;
  int threads = 1;  // intra-op threads (already applied)
  std::string state_dir;
  // Blocks one evaluation may score; more is ResourceExhausted before any
  // is scored. 0: no limit.
  int64_t max_eval_blocks = 0;
  // Bytes of one logits chunk in an evaluation (eval/vocab_chunks.h); 0: default.
  int64_t logits_budget_bytes = 0;
  // Sampled acceptance needs at least this target consistency.
  double min_target_consistency = 0.90;
};

class EvalCoreImpl final : public EvalCore {
 public:
  static absl::StatusOr<std::unique_ptr<EvalCoreImpl>> Create(CoreOptions options);
  ~EvalCoreImpl() override;

  ServerInfo GetServerInfo() const override;
  absl::StatusOr<weights::WeightReport> ValidateCheckpoint(
      const resident::ValidateParams& params) override;
  absl::StatusOr<resident::LoadResult> LoadDrafter(
      const resident::LoadDrafterParams& params) override;
  absl::StatusOr<resident::LoadResult> LoadTarget(
      const resident::LoadTargetParams& params) override;
  absl::StatusOr<resident::LoadResult> LoadDataset(
      const resident::LoadDatasetParams& params) override;
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override;
  std::vector<resident::ResourceInfo> ListResources(
      std::optional<resident::ResourceKind> kind) const override;
  absl::StatusOr<types::EvalResult> RunEval(const types::EvalParams& params,
                                            const types::ProgressFn& progress) override;
  absl::StatusOr<ShardPlan> PlanShards(const types::EvalParams& params) override;
  absl::StatusOr<types::EvalResult> FinishShards(const types::EvalParams& params,
                                                 std::vector<eval::EvalPart> parts,
                                                 std::vector<types::ShardPlacement> where,
                                                 double seconds) override;

  // The server's default dtype on its device: fp32 on CPU, bf16 on CUDA.
  std::string default_dtype() const;

 private:
  EvalCoreImpl(CoreOptions options, std::unique_ptr<resident::Registry> registry);

  absl::StatusOr<types::EvalResult> DoRunEval(const types::EvalParams& params,
                                              const types::ProgressFn& progress);
  // DoRunEval's steps: the resident objects it names, the drafter from its
  // checkpoint (a resident copy of the same files, else a one-shot load),
  // and the evaluation within the server's block limit.
  struct EvalInputs;
  absl::Status PickInputs(const types::EvalParams& params, EvalInputs& in) const;
  absl::Status DrafterFromCheckpoint(const types::EvalParams& params, EvalInputs& in);
  // What every finished result carries of its inputs: device, dtype,
  // fingerprints, the target consistency and the intervals.
  void StampResult(const types::EvalParams& params, const EvalInputs& in,
                   const types::TargetConsistency& consistency, types::EvalResult& result) const;
  absl::StatusOr<types::EvalResult> EvaluateWithinLimit(const types::EvalParams& params,
                                                        const EvalInputs& in,
                                                        const types::ProgressFn& progress) const;
  // Sampled acceptance needs a consistent pair: FailedPrecondition otherwise.
  absl::StatusOr<types::TargetConsistency> RequireConsistentPair(const EvalInputs& in);

  CoreOptions options_;
  std::chrono::system_clock::time_point start_time_;
  std::chrono::steady_clock::time_point start_steady_;
  std::unique_ptr<resident::Registry> registry_;
};

}  // namespace dflash::core
