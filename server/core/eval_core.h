// File: eval_core.h
// The service's core, as one interface over plain C++ types: no gRPC and no
// torch here. service/ translates proto <-> these types; tests substitute a
// fake. Loads and resources speak resident/'s types (load_request.h,
// resource.h) under their one name. Implementation: eval_core_impl.h.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/server_info.h"
#include "eval/eval_part.h"
#include "eval/shard_plan.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "types/eval_params.h"
#include "types/eval_types.h"
#include "weights/weight_report.h"

namespace dflash::core {

// A fleet job split into shard jobs (issue 30, fleet/fleet_shards.h): the
// sample ranges, and the fingerprint of this server's copy of the dataset.
struct ShardPlan {
  std::vector<eval::SampleRange> ranges;  // dataset positions, in order
  std::string dataset_fingerprint;
};

class EvalCore {
 public:
  virtual ~EvalCore() = default;

  virtual ServerInfo GetServerInfo() const = 0;

  virtual absl::StatusOr<weights::WeightReport> ValidateCheckpoint(
      const resident::ValidateParams& params) = 0;
  virtual absl::StatusOr<resident::LoadResult> LoadDrafter(
      const resident::LoadDrafterParams& params) = 0;
  virtual absl::StatusOr<resident::LoadResult> LoadTarget(
      const resident::LoadTargetParams& params) = 0;
  virtual absl::StatusOr<resident::LoadResult> LoadDataset(
      const resident::LoadDatasetParams& params) = 0;
  virtual absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                        const std::string& name) = 0;
  // kind empty = every kind.
  virtual std::vector<resident::ResourceInfo> ListResources(
      std::optional<resident::ResourceKind> kind) const = 0;

  virtual absl::StatusOr<types::EvalResult> RunEval(const types::EvalParams& params,
                                                    const types::ProgressFn& progress) = 0;

  // Fleet shards (issue 30). The evaluation `params` names split into
  // params.options.shards contiguous ranges sized by tokens, as Evaluate
  // splits its own samples.
  virtual absl::StatusOr<ShardPlan> PlanShards(const types::EvalParams& params) {
    (void)params;
    return absl::UnimplementedError("this core does not split evaluations into fleet shards");
  }
  // The result of `params`'s evaluation from its shards' parts (in sample
  // order, each from a RunEval with a shard range: EvalResult::part_state)
  // and where they ran, finished as RunEval finishes its own; `seconds`
  // since the evaluation began.
  virtual absl::StatusOr<types::EvalResult> FinishShards(const types::EvalParams& params,
                                                         std::vector<eval::EvalPart> parts,
                                                         std::vector<types::ShardPlacement> where,
                                                         double seconds) {
    (void)params, (void)parts, (void)where, (void)seconds;
    return absl::UnimplementedError("this core does not merge fleet shards");
  }
};

using EvalCorePtr = std::unique_ptr<EvalCore>;

}  // namespace dflash::core
