#include "fleet/fleet_objects.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "resident/load_request.h"
#include "resident/placement.h"
#include "resident/resource.h"

namespace dflash::fleet {
namespace {

using core::EvalCore;
using types::EvalParams;

namespace fs = std::filesystem;

// An absolute path as the core will see it once resolved (symlinks followed).
absl::StatusOr<std::string> Canonical(const char* field, const std::string& path) {
  if (!fs::path(path).is_absolute()) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " '", path, "' is not absolute; every server of the fleet loads it from its own ",
        "file system, so give the absolute path"));
  }
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(path, ec);
  return ec ? path : canonical.string();
}

// One object of the job: the name it runs under and the path (if any) it
// loads from. A config name with a relative path keeps it (the loading
// server resolves it against its data roots).
absl::Status RecordOne(const char* field, const std::string& config_path, std::string& name,
                       std::string& path) {
  if (!path.empty()) {
    ASSIGN_OR_RETURN(path, Canonical(field, path));
    if (name.empty()) name = resident::DefaultName(path);
    return absl::OkStatus();
  }
  if (config_path.empty()) return absl::OkStatus();
  path = config_path;
  if (!fs::path(path).is_absolute()) return absl::OkStatus();
  ASSIGN_OR_RETURN(path, Canonical(field, path));
  return absl::OkStatus();
}

template <typename Params>
std::string ConfigPath(const std::map<std::string, Params>& config, const std::string& name) {
  auto it = config.find(name);
  return it == config.end() ? "" : it->second.path;
}

// The resident name to evaluate with: a resident object loaded from `path`,
// else `name` loaded now (the config's parameters when it names it; the
// core reuses an object of that name and path, and refuses a different one).
template <typename Params, typename Load>
absl::StatusOr<std::string> Ensure(EvalCore& core, resident::ResourceKind kind,
                                   const std::string& name, const std::string& path,
                                   const std::map<std::string, Params>& config,
                                   const std::string& server, const OnDemandHooks& hooks,
                                   Load load) {
  if (path.empty()) return name;  // resident here: the claim checked it
  for (const resident::ResourceInfo& r : core.ListResources(kind)) {
    if (r.source_path == path) return r.name;
  }
  Params params;
  if (auto it = config.find(name); it != config.end()) params = it->second;
  params.name = name;
  if (params.path.empty()) params.path = path;
  absl::StatusOr<resident::LoadResult> loaded = load(params);
  if (absl::IsResourceExhausted(loaded.status()) && hooks.free_space && hooks.free_space() > 0) {
    loaded = load(params);
  }
  if (loaded.ok() && !loaded->reused && hooks.loaded) hooks.loaded(kind, loaded->resource.name);
  if (!loaded.ok()) {
    return absl::Status(loaded.status().code(),
                        absl::StrCat("loading ", resident::ResourceKindName(kind), " '", name,
                                     "' from '", params.path, "' on demand on server ", server,
                                     ": ", loaded.status().message()));
  }
  return loaded->resource.name;
}

}  // namespace

FleetObjects MakeFleetObjects(const std::vector<resident::LoadTargetParams>& targets,
                              const std::vector<resident::LoadDatasetParams>& datasets) {
  FleetObjects objects;
  for (const resident::LoadTargetParams& t : targets) {
    objects.targets[t.name.empty() ? resident::DefaultName(t.path) : t.name] = t;
  }
  for (const resident::LoadDatasetParams& d : datasets) {
    objects.datasets[d.name.empty() ? resident::DefaultName(d.path) : d.name] = d;
  }
  return objects;
}

absl::Status RecordFleetPaths(const FleetObjects& objects, types::JobRequest& request) {
  types::EvalParams& p = request.params;
  RETURN_IF_ERROR(RecordOne("target_path", ConfigPath(objects.targets, p.target), p.target,
                            request.target_path));
  return RecordOne("dataset_path", ConfigPath(objects.datasets, p.dataset), p.dataset,
                   request.dataset_path);
}

absl::StatusOr<types::EvalParams> LoadOnDemand(EvalCore& core, const FleetObjects& objects,
                                               const types::JobRequest& request,
                                               const std::string& server,
                                               const OnDemandHooks& hooks) {
  types::EvalParams p = request.params;
  // The target first: a dataset load checks its token ids against it.
  ASSIGN_OR_RETURN(p.target,
                   Ensure(core, resident::ResourceKind::kTarget, p.target, request.target_path,
                          objects.targets, server, hooks,
                          [&](const resident::LoadTargetParams& t) { return core.LoadTarget(t); }));
  // A dataset over the budget is first made room for (earlier on-demand
  // loads no running job uses are unloaded), and only then streamed.
  bool refuse = true;
  const auto load_dataset = [&](resident::LoadDatasetParams d) {
    d.refuse_over_budget = refuse;
    return core.LoadDataset(d);
  };
  absl::StatusOr<std::string> dataset =
      Ensure(core, resident::ResourceKind::kDataset, p.dataset, request.dataset_path,
             objects.datasets, server, hooks, load_dataset);
  if (absl::IsResourceExhausted(dataset.status())) {
    refuse = false;
    dataset = Ensure(core, resident::ResourceKind::kDataset, p.dataset, request.dataset_path,
                     objects.datasets, server, OnDemandHooks{hooks.loaded, nullptr}, load_dataset);
  }
  RETURN_IF_ERROR(dataset.status());
  p.dataset = *std::move(dataset);
  return p;
}

bool UsesObject(const types::JobRequest& request, resident::ResourceKind kind,
                const std::string& name, const std::string& path) {
  const types::EvalParams& p = request.params;
  switch (kind) {
    case resident::ResourceKind::kTarget:
      return p.target.empty() || p.target == name || request.target_path == path;
    case resident::ResourceKind::kDataset:
      return p.dataset == name || request.dataset_path == path ||
             std::count(request.suite_datasets.begin(), request.suite_datasets.end(), name) > 0;
    case resident::ResourceKind::kDrafter: return p.drafter == name;
  }
  return true;
}

store::ClaimRequest ResidentNames(const EvalCore& core) {
  store::ClaimRequest names;
  for (const resident::ResourceInfo& r : core.ListResources(std::nullopt)) {
    switch (r.kind) {
      case resident::ResourceKind::kTarget:
        names.targets.push_back(r.name);
        names.target_paths.push_back(r.source_path);
        break;
      case resident::ResourceKind::kDataset:
        names.datasets.push_back(r.name);
        names.dataset_paths.push_back(r.source_path);
        break;
      case resident::ResourceKind::kDrafter: names.drafters.push_back(r.name); break;
    }
  }
  return names;
}

}  // namespace dflash::fleet
