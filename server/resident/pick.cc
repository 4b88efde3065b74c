// File: pick.cc
#include "resident/pick.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/fix_hint.h"

namespace dflash::resident {
namespace {

FixHint LoadOne(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kTarget: return FixHint::kLoadTarget;
    case ResourceKind::kDataset: return FixHint::kLoadDataset;
    case ResourceKind::kDrafter: return FixHint::kLoadDrafter;
  }
  return FixHint::kLoadDrafter;
}

FixHint NameOne(ResourceKind kind) {
  switch (kind) {
    case ResourceKind::kTarget: return FixHint::kNameTarget;
    case ResourceKind::kDataset: return FixHint::kNameDataset;
    case ResourceKind::kDrafter: return FixHint::kNameDrafter;
  }
  return FixHint::kNameDrafter;
}

}  // namespace

absl::StatusOr<size_t> PickResident(ResourceKind kind, const std::vector<std::string>& resident,
                                    const std::string& name) {
  const char* k = ResourceKindName(kind);
  const std::string names = resident.empty() ? "none" : absl::StrJoin(resident, ", ");
  if (!name.empty()) {
    for (size_t i = 0; i < resident.size(); ++i) {
      if (resident[i] == name) return i;
    }
    return absl::NotFoundError(
        absl::StrCat("no resident ", k, " named '", name, "' (resident: ", names, ")"));
  }
  if (resident.size() == 1) return size_t{0};
  if (resident.empty()) {
    return WithFixHint(
        absl::FailedPreconditionError(absl::StrCat("no ", k, " is loaded; load one first")),
        LoadOne(kind));
  }
  return WithFixHint(absl::InvalidArgumentError(
                         absl::StrCat("several ", k, "s are resident (", names, "); name one")),
                     NameOne(kind));
}

}  // namespace dflash::resident
