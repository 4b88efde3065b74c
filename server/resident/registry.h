// File: registry.h
// The registry of resident objects: the targets, drafters and datasets a
// server holds on its device, under one memory budget, read only from its
// data roots. It loads (reusing an unchanged copy), unloads (never what an
// evaluation still holds), lists, picks the objects a request means (by
// name, or the only one of a kind) and keeps each dataset's target
// consistency per target. Every load is timed and reported to the ops
// observer (common/ops_observer.h). Evaluations are not run here
// (core/eval_core_impl.h runs them on what Pick returns).
//
//   ASSIGN_OR_RETURN(auto registry, Registry::Create(options));
//   ASSIGN_OR_RETURN(LoadResult t, registry->LoadTarget(params));
//   ASSIGN_OR_RETURN(Registry::Picked p, registry->Pick("t", "d", ""));
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "resident/data_roots.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "types/eval_types.h"
#include "weights/weight_report.h"

namespace dflash::data {
class EvalDataset;
}  // namespace dflash::data
namespace dflash::model {
class DrafterModel;
}  // namespace dflash::model
namespace dflash::weights {
struct TargetTensors;
class MapTally;
}  // namespace dflash::weights

namespace dflash::resident {

struct ResidentSet;  // resident_set.h (holds torch types)
struct LoadEnv;      // loads.h

struct RegistryOptions {
  std::string device = "cpu";           // where loads go by default: "cpu" or "cuda:N"
  std::vector<std::string> data_roots;  // created if missing; must not be empty
  // Bytes all resident objects may hold together; a load that would pass it
  // is ResourceExhausted, checked on an estimate before reading. 0: no limit.
  int64_t max_resident_bytes = 0;
  // Resident tensors stored in their resident dtype are views of their
  // files (weights/map_policy.h) unless `no_mmap`, or the file was modified
  // less than `mmap_min_age_seconds` ago.
  bool no_mmap = false;
  double mmap_min_age_seconds = 10;
};

class Registry {
 public:
  // One resident object as an evaluation holds it: the shared pointer keeps
  // it alive (and Unload refuses it) until the evaluation lets go.
  template <typename T>
  struct Held {
    std::shared_ptr<const T> object;  // null: none (a drafter not named)
    ResourceInfo info;
    // The files its tensors are views of (weights/map_policy.h).
    std::shared_ptr<const weights::MapTally> mapping;
  };
  struct Picked {
    Held<weights::TargetTensors> target;
    Held<data::EvalDataset> dataset;
    Held<model::DrafterModel> drafter;
  };

  // InvalidArgument or PermissionDenied for data roots that cannot be made.
  static absl::StatusOr<std::unique_ptr<Registry>> Create(RegistryOptions options);
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  absl::StatusOr<weights::WeightReport> ValidateCheckpoint(const ValidateParams& params) const;
  absl::StatusOr<LoadResult> LoadDrafter(const LoadDrafterParams& params);
  absl::StatusOr<LoadResult> LoadTarget(const LoadTargetParams& params);
  // With params.target: also the pair's target consistency (the dataset
  // stays resident when that fails).
  absl::StatusOr<LoadResult> LoadDataset(const LoadDatasetParams& params);
  // NotFound naming the resident ones; FailedPrecondition while in use.
  absl::StatusOr<ResourceInfo> Unload(ResourceKind kind, const std::string& name);
  // kind empty = every kind; targets, drafters, datasets, each in name order.
  std::vector<ResourceInfo> List(std::optional<ResourceKind> kind) const;

  // The target and dataset named ("" = the only one; resident/pick.h's
  // errors), and the drafter when `drafter` is not empty.
  absl::StatusOr<Picked> Pick(const std::string& target, const std::string& dataset,
                              const std::string& drafter) const;
  // The drafter in `checkpoint_path` in the target's device and dtype: a
  // resident drafter loaded from the same unchanged files, else loaded for
  // this caller alone (strictly validated, never resident).
  absl::StatusOr<Held<model::DrafterModel>> DrafterFromCheckpoint(
      const std::string& checkpoint_path, const weights::TargetTensors& target);
  // The target consistency of a resident dataset (by name) with a target,
  // computed once per target fingerprint while that dataset stays resident.
  absl::StatusOr<types::TargetConsistency> TargetConsistencyOf(
      const std::string& dataset_name, const std::shared_ptr<const data::EvalDataset>& dataset,
      const std::shared_ptr<const weights::TargetTensors>& target);

  const DataRoots& roots() const { return roots_; }

 private:
  Registry(RegistryOptions options, DataRoots roots);
  LoadEnv Env() const;  // what loads.h's functions read under
  // LoadDataset with a target: the consistency of the loaded dataset with it.
  absl::Status AddTargetConsistency(const std::string& target, LoadResult& loaded);

  RegistryOptions options_;
  DataRoots roots_;
  std::unique_ptr<ResidentSet> set_;
};

}  // namespace dflash::resident
