// File: pick_listed.h
// The resident object a request means, picked from an EvalCore's listing
// (resident/pick.h's rules): how a submit checks a request before its job
// is queued, here or on a fleet's server.
//
//   ASSIGN_OR_RETURN(ResourceInfo t, PickListed(core, ResourceKind::kTarget, r.target));
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "core/eval_core.h"
#include "resident/resource.h"

namespace dflash::core {

// PickResident over `core`'s listing of `kind`: the object's listing.
absl::StatusOr<resident::ResourceInfo> PickListed(const EvalCore& core, resident::ResourceKind kind,
                                                  const std::string& name);

}  // namespace dflash::core
