// File: loading_core.h
// An EvalCore for the in-process tests of fleet/: FakeEvalCore whose target
// and dataset loads make the object resident (named as asked, with its
// path) within a budget of a few objects of each kind, and whose Unload
// removes it; every load and unload is recorded. A dataset over the budget
// that may be streamed (refuse_over_budget unset) is loaded all the same.
// Shards: PlanShards gives `plan`, FinishShards records the parts it merges.
#pragma once

#include <string>
#include <vector>

#include "fakes/fake_eval_core.h"

namespace dflash::testing {

class LoadingCore : public FakeEvalCore {
 public:
  // The budget, in objects of each kind.
  size_t target_capacity = 4, dataset_capacity = 4;
  // When set, every load fails with it.
  absl::Status load_error;

  std::vector<resident::LoadTargetParams> target_loads;
  std::vector<resident::LoadDatasetParams> dataset_loads;
  std::vector<std::string> unloads;  // "target t1"

  core::ShardPlan plan;
  absl::Status plan_error;
  // What FinishShards got: each part's context_positions, each place's
  // "first-end@server".
  std::vector<int64_t> merged_parts;
  std::vector<std::string> merged_where;

  absl::StatusOr<resident::LoadResult> LoadTarget(const resident::LoadTargetParams& p) override;
  absl::StatusOr<resident::LoadResult> LoadDataset(const resident::LoadDatasetParams& p) override;
  absl::StatusOr<resident::ResourceInfo> Unload(resident::ResourceKind kind,
                                                const std::string& name) override;
  absl::StatusOr<core::ShardPlan> PlanShards(const types::EvalParams& params) override;
  absl::StatusOr<types::EvalResult> FinishShards(const types::EvalParams& params,
                                                 std::vector<eval::EvalPart> parts,
                                                 std::vector<types::ShardPlacement> where,
                                                 double seconds) override;

 private:
  absl::StatusOr<resident::LoadResult> Load(resident::ResourceKind kind, const std::string& name,
                                            const std::string& path, size_t capacity);
};

}  // namespace dflash::testing
