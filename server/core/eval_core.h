// File: eval_core.h
// The service's core, as one interface over plain C++ types: no gRPC and no
// torch here. service/ translates proto <-> these types; tests substitute a
// fake. Implementation: eval_core_impl.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/server_info.h"
#include "eval/eval_part.h"
#include "eval/shard_plan.h"
#include "types/eval_params.h"
#include "types/eval_types.h"
#include "weights/weight_report.h"

namespace dflash::core {

enum class ResourceKind { kTarget, kDrafter, kDataset };
const char* ResourceKindName(ResourceKind kind);  // "target", "drafter", "dataset"

struct ResourceInfo {
  ResourceKind kind = ResourceKind::kDrafter;
  std::string name, source_path, device, dtype, fingerprint, summary;
  int64_t bytes = 0;
  // Of `bytes`, those that are views of the object's files (not copies);
  // they count against the budget all the same.
  int64_t mapped_bytes = 0;
  int64_t load_time_unix_micros = 0;
  double load_seconds = 0;
  bool has_selector = false;  // a DFlash 2 drafter (its candidate selector)
  // A streamed dataset: bytes is 0; its samples' bytes and chunk budget.
  bool streamed = false;
  int64_t stream_bytes = 0, stream_budget_bytes = 0;
};

struct ValidateParams {
  std::string path, config_path;
  bool allow_unexpected = false;
  bool compute_stats = false;
};

// dtype: "" (server default), "fp32", "bf16", "fp16". device: "" = default.
struct LoadDrafterParams {
  std::string name, path, config_path, dtype, device;
  bool allow_unexpected = false;
};

struct LoadTargetParams {
  std::string name, path, dtype, device;
  bool load_final_norm = false;
};

struct LoadDatasetParams {
  std::string name, path, dtype, device;
  std::map<std::string, std::vector<int>> layer_ids;
  int64_t max_samples = 0;
  bool skip_bad_samples = false;
  // A resident target: also compute the dataset's target consistency.
  std::string target;
  // Keep it on disk, read in chunks of at most stream_budget_bytes (0: the
  // default) by each evaluation (issue 30). A dataset over the resident
  // budget is streamed without asking.
  bool stream = false;
  int64_t stream_budget_bytes = 0;
  // Over the resident budget: ResourceExhausted rather than streamed (a
  // fleet's on-demand load first frees earlier on-demand loads).
  bool refuse_over_budget = false;
};

struct LoadResult {
  ResourceInfo resource;
  std::optional<weights::WeightReport> report;  // drafters
  bool reused = false;
  std::vector<std::string> warnings;
  std::vector<std::string> facts;
  // LoadDataset with a target: the pair's consistency (positions 0: none).
  types::TargetConsistency target_consistency;
  std::string consistency_target;
};

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
