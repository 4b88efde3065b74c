#include "loading_core.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dflash::testing {

absl::StatusOr<resident::LoadResult> LoadingCore::Load(resident::ResourceKind kind,
                                                       const std::string& name,
                                                       const std::string& path, size_t capacity) {
  if (!load_error.ok()) return load_error;
  const std::vector<resident::ResourceInfo> same_kind = ListResources(kind);
  for (const resident::ResourceInfo& r : same_kind) {
    if (r.name != name) continue;
    if (r.source_path != path) {
      return absl::AlreadyExistsError(absl::StrCat("'", name, "' is resident from another path"));
    }
    resident::LoadResult reused;
    reused.resource = r;
    reused.reused = true;
    return reused;
  }
  if (same_kind.size() >= capacity) {
    return absl::ResourceExhaustedError(absl::StrCat("needs 100 bytes; ", same_kind.size() * 100,
                                                     " of ", capacity * 100, " in use"));
  }
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.source_path = path;
  r.device = "cpu";
  r.fingerprint = "h64:" + name;
  resources.push_back(r);
  resident::LoadResult loaded;
  loaded.resource = r;
  return loaded;
}

absl::StatusOr<resident::LoadResult> LoadingCore::LoadTarget(const resident::LoadTargetParams& p) {
  target_loads.push_back(p);
  return Load(resident::ResourceKind::kTarget, p.name, p.path, target_capacity);
}

absl::StatusOr<resident::LoadResult> LoadingCore::LoadDataset(
    const resident::LoadDatasetParams& p) {
  dataset_loads.push_back(p);
  return Load(resident::ResourceKind::kDataset, p.name, p.path,
              p.refuse_over_budget ? dataset_capacity : std::numeric_limits<size_t>::max());
}

absl::StatusOr<resident::ResourceInfo> LoadingCore::Unload(resident::ResourceKind kind,
                                                           const std::string& name) {
  auto it = std::find_if(resources.begin(), resources.end(), [&](const resident::ResourceInfo& r) {
    return r.kind == kind && r.name == name;
  });
  if (it == resources.end()) {
    return absl::NotFoundError(
        absl::StrCat("no resident ", resident::ResourceKindName(kind), " named '", name, "'"));
  }
  unloads.push_back(absl::StrCat(resident::ResourceKindName(kind), " ", name));
  resident::ResourceInfo gone = *it;
  resources.erase(it);
  return gone;
}

absl::StatusOr<core::ShardPlan> LoadingCore::PlanShards(const types::EvalParams&) {
  if (!plan_error.ok()) return plan_error;
  return plan;
}

absl::StatusOr<types::EvalResult> LoadingCore::FinishShards(
    const types::EvalParams&, std::vector<eval::EvalPart> parts,
    std::vector<types::ShardPlacement> where, double) {
  for (const eval::EvalPart& p : parts) merged_parts.push_back(p.context_positions);
  for (const types::ShardPlacement& w : where) {
    merged_where.push_back(absl::StrCat(w.first, "-", w.end, "@", w.server));
  }
  types::EvalResult merged;
  merged.samples = static_cast<int64_t>(parts.size());
  merged.device = "merged";
  return merged;
}

}  // namespace dflash::testing
