// File: recipe.h
// A job's recipe: everything besides the drafter that determines its numbers
// (docs/recipe.md). Two jobs are comparable, and one can gate the other, only
// when their recipes are equal; the fingerprint is the one string to check.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "types/job_types.h"

namespace dflash::core {

struct RecipeField {
  std::string name, value;
};

struct Recipe {
  std::vector<RecipeField> fields;  // fixed order (docs/recipe.md)
  std::string fingerprint;          // "r64:<16 hex>" over the fields
};

// The recipe of a finished job (`job.result` set): the dataset and target
// fingerprints, semantics, mode, block size, sample limit, anchors or replay
// limit, sampling settings, policies and engine preset.
Recipe RecipeOf(const types::JobRecord& job);

// "name: a vs b" for each field where `b` differs from `a`; empty when equal.
std::vector<std::string> RecipeDifferences(const Recipe& a, const Recipe& b);

// OK when every job has jobs[0]'s recipe; else FailedPrecondition naming each
// differing job and field, and the flag that accepts it (`what` starts the
// message: "compare", "gate").
absl::Status RequireSameRecipe(const std::vector<types::JobRecord>& jobs, const std::string& what);

}  // namespace dflash::core
