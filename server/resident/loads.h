// File: loads.h (internal to resident/)
// Validating a checkpoint and loading one object into a ResidentSet: every
// path resolved inside the data roots, an unchanged resident copy (same
// name and source) reused unread, the budget checked on an estimate before
// anything is read and again on the real size, then the entry added. The
// Registry (registry.h) calls these and times and reports them; a
// different object under the same name is AlreadyExists.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "resident/data_roots.h"
#include "resident/load_request.h"
#include "resident/resident_set.h"
#include "weights/map_policy.h"
#include "weights/weight_report.h"

namespace dflash::resident {

// What every load reads under: the registry's settings.
struct LoadEnv {
  const DataRoots* roots = nullptr;
  std::string device = "cpu";      // where a load goes when it names none
  int64_t max_resident_bytes = 0;  // the budget; 0: no limit
  weights::MapPolicy map;          // which tensors are views of their files
};

// The checkpoint's weight map checked against its config (against the only
// resident target's hidden size, when there is one); nothing is kept.
absl::StatusOr<weights::WeightReport> ValidateCheckpointIn(const ResidentSet& r, const LoadEnv& env,
                                                           const ValidateParams& params);

// What makes a resident drafter the same as a load's: its resolved path,
// config path ("" for the checkpoint's own), placement and files on disk
// (DiskSignature); a drafter loaded from the same unchanged files is reused.
std::string DrafterSignature(const std::string& resolved, const std::string& config_path,
                             const std::string& dtype_name, const std::string& device);

absl::StatusOr<LoadResult> LoadDrafterInto(ResidentSet& r, const LoadEnv& env,
                                           const LoadDrafterParams& params);
absl::StatusOr<LoadResult> LoadTargetInto(ResidentSet& r, const LoadEnv& env,
                                          const LoadTargetParams& params);
// A dataset over the budget is streamed from disk unless the request
// refuses that (refuse_over_budget). Its target consistency is not computed
// here (Registry::LoadDataset does it).
absl::StatusOr<LoadResult> LoadDatasetInto(ResidentSet& r, const LoadEnv& env,
                                           const LoadDatasetParams& params);

}  // namespace dflash::resident
