// File: pick.h
// Which resident object a request means: the one it names, or, when it
// names none, the only one of its kind. The registry picks under its lock
// and SubmitEval from the listing (core/pick_listed.h) before a job is
// queued; both call this one function, so an unknown name or an ambiguous
// request reads the same wherever it is refused. The fixes (load one, name one) travel as
// FixHints (common/fix_hint.h) for the service or the client to word with
// their own flags: no flag name is written here. Torch-free.
//
//   ASSIGN_OR_RETURN(size_t i, PickResident(ResourceKind::kTarget, names, ""));
#pragma once

#include <cstddef>
#include <iterator>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "resident/resource.h"

namespace dflash::resident {

// The index in `resident` (the names of the resident objects of `kind`, in
// listing order) of the object `name` means:
// - `name` given and resident: its index; not resident: NotFound "no
//   resident drafter named 'x' (resident: a, b)" ("none" when empty).
// - `name` empty: the only one; none resident: FailedPrecondition "no target
//   is loaded; load one first" with FixHint kLoad<Kind>; several:
//   InvalidArgument "several targets are resident (t, t2); name one" with
//   FixHint kName<Kind>.
absl::StatusOr<size_t> PickResident(ResourceKind kind, const std::vector<std::string>& resident,
                                    const std::string& name);

// PickResident over the registry's map of that kind (keyed by name, in name
// order): the entry's iterator.
template <typename Map>
absl::StatusOr<typename Map::const_iterator> PickEntry(const Map& map, const std::string& name,
                                                       ResourceKind kind) {
  std::vector<std::string> names;
  names.reserve(map.size());
  for (const auto& [n, _] : map) names.push_back(n);
  absl::StatusOr<size_t> i = PickResident(kind, names, name);
  if (!i.ok()) return i.status();
  return std::next(map.begin(), static_cast<std::ptrdiff_t>(*i));
}

}  // namespace dflash::resident
