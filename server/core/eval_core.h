// File: eval_core.h
// The service's core, as one interface over plain C++ types: no gRPC and no
// torch here. service/ translates proto <-> these types; tests substitute a
// fake. Implementation: eval_core_impl.h.
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

// The resident objects' vocabulary is the registry's (resident/); the
// core's API passes it through under the names its callers know.
using resident::LoadDatasetParams;
using resident::LoadDrafterParams;
using resident::LoadResult;
using resident::LoadTargetParams;
using resident::ResourceInfo;
using resident::ResourceKind;
using resident::ResourceKindName;
using resident::ValidateParams;

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
      const ValidateParams& params) = 0;
  virtual absl::StatusOr<LoadResult> LoadDrafter(const LoadDrafterParams& params) = 0;
  virtual absl::StatusOr<LoadResult> LoadTarget(const LoadTargetParams& params) = 0;
  virtual absl::StatusOr<LoadResult> LoadDataset(const LoadDatasetParams& params) = 0;
  virtual absl::StatusOr<ResourceInfo> Unload(ResourceKind kind, const std::string& name) = 0;
  // kind empty = every kind.
  virtual std::vector<ResourceInfo> ListResources(std::optional<ResourceKind> kind) const = 0;

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
