// File: fleet_objects.h
// The targets and datasets a fleet job may have any server load: the ones
// it names by absolute path, and the names the fleet's config (its preload
// list, shared by every server) maps to a path. At submit the job records
// each such path (so the claim lets any server take it); the server that
// claims it loads what it lacks, through the same core loads as the
// LoadTarget/LoadDataset RPCs and within the same resident budget.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "resident/load_request.h"
#include "resident/resource.h"
#include "store/result_store.h"
#include "types/job_types.h"

namespace dflash::fleet {

struct FleetObjects {
  // By name (the entry's name, else its folder's): how the config loads it.
  std::map<std::string, resident::LoadTargetParams> targets;
  std::map<std::string, resident::LoadDatasetParams> datasets;
};

FleetObjects MakeFleetObjects(const std::vector<resident::LoadTargetParams>& targets,
                              const std::vector<resident::LoadDatasetParams>& datasets);

// At submit: a path must be absolute (each server resolves it on its own file
// system) and is recorded canonical; a missing name becomes the folder's
// name; a name the config maps gets the config's path. InvalidArgument for a
// relative path.
absl::Status RecordFleetPaths(const FleetObjects& objects, types::JobRequest& request);

// What the server does around on-demand loads: `loaded` hears of each new
// object; `free_space`, called when a load would pass the budget, unloads
// earlier on-demand objects no running job uses and returns how many (the
// load is then tried once more).
struct OnDemandHooks {
  std::function<void(resident::ResourceKind kind, const std::string& name)> loaded;
  std::function<int()> free_space;
};

// On the server that claimed the job: its parameters naming resident objects,
// after loading the target and the dataset named by path when absent here (a
// resident object from the same path is used whatever its name). A failed
// load keeps its code (ResourceExhausted over the budget, with the bytes
// needed and in use) and says which object, path and server.
absl::StatusOr<types::EvalParams> LoadOnDemand(core::EvalCore& core, const FleetObjects& objects,
                                               const types::JobRequest& request,
                                               const std::string& server,
                                               const OnDemandHooks& hooks);

// The names (and source paths) resident on `core` now: what its runners'
// claims offer (FleetOptions::resident).
store::ClaimRequest ResidentNames(const core::EvalCore& core);

// Whether `request` uses the resident object `name` loaded from `path`.
bool UsesObject(const types::JobRequest& request, resident::ResourceKind kind,
                const std::string& name, const std::string& path);

}  // namespace dflash::fleet
