// File: part_state.h
// An EvalPart as JSON (issue 30, fleet shards): a shard run by one server
// stores its part in its job record, and the parent job's server rebuilds
// it to merge. Counts are written as exact integers and sums as doubles
// that read back to the same bits, so a part read back merges to exactly
// the numbers the part held. Loop masks are not kept: they only classify
// blocks as they are added, and a stored part takes no more blocks.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "eval/eval_part.h"

namespace dflash::eval {

std::string PartToJson(const EvalPart& part);

// InvalidArgument naming what is missing or malformed.
absl::StatusOr<EvalPart> PartFromJson(const std::string& text);

}  // namespace dflash::eval
