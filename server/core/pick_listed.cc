#include "core/pick_listed.h"

#include <vector>

#include "resident/pick.h"
#include "resident/resource.h"

namespace dflash::core {

absl::StatusOr<resident::ResourceInfo> PickListed(const EvalCore& core, resident::ResourceKind kind,
                                                  const std::string& name) {
  std::vector<resident::ResourceInfo> all = core.ListResources(kind);
  std::vector<std::string> names;
  names.reserve(all.size());
  for (const resident::ResourceInfo& r : all) names.push_back(r.name);
  absl::StatusOr<size_t> i = resident::PickResident(kind, names, name);
  if (!i.ok()) return i.status();
  return all[*i];
}

}  // namespace dflash::core
