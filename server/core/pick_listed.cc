#include "core/pick_listed.h"

#include <vector>

#include "resident/pick.h"

namespace dflash::core {

absl::StatusOr<ResourceInfo> PickListed(const EvalCore& core, ResourceKind kind,
                                        const std::string& name) {
  std::vector<ResourceInfo> all = core.ListResources(kind);
  std::vector<std::string> names;
  names.reserve(all.size());
  for (const ResourceInfo& r : all) names.push_back(r.name);
  absl::StatusOr<size_t> i = resident::PickResident(kind, names, name);
  if (!i.ok()) return i.status();
  return all[*i];
}

}  // namespace dflash::core
