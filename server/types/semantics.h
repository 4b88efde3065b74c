// File: semantics.h
// The named rule sets a drafter block and the replay loop follow
// (shared/reference/dflash2-semantics.md §3-4). Every result names the one
// that produced it, so numbers from before z-lab's change stay comparable.
//
//   ASSIGN_OR_RETURN(Semantics s, ParseSemantics("zlab-2025"));
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dflash::types {

enum class Semantics {
  // z-lab dflash/model.py at 10129599: sliding layers causal inside the
  // block unless is_causal says otherwise, windows per query in both
  // directions when not causal, blocks shortened to the tokens left, and the
  // loop's produced = min(n + 1, L' - s - 1) (a sample adds up to L' - P - 1).
  kZlabCurrent,
  // The older rules (dflash-semantics.md §4-5): every layer bidirectional in
  // the block, sliding windows only towards earlier keys, full-length blocks,
  // each block records n + 1 (a sample adds up to L' - P).
  kZlab2025,
};

inline constexpr Semantics kDefaultSemantics = Semantics::kZlabCurrent;

// Header-only and torch-free: the store and the service name semantics too.

// "zlab-current" / "zlab-2025".
inline const char* SemanticsName(Semantics s) {
  return s == Semantics::kZlab2025 ? "zlab-2025" : "zlab-current";
}

// Where the rules come from, for results.
inline const char* SemanticsReference(Semantics s) {
  return s == Semantics::kZlab2025
             ? "z-lab/dflash dflash/model.py before 10129599 (dflash-semantics.md §4-5)"
             : "z-lab/dflash dflash/model.py @ 10129599dffb338ff38cfd235a53ca6d3667b4dd";
}

// Empty means the default. InvalidArgument names the known values.
inline absl::StatusOr<Semantics> ParseSemantics(absl::string_view name) {
  if (name.empty() || name == "zlab-current") return Semantics::kZlabCurrent;
  if (name == "zlab-2025") return Semantics::kZlab2025;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown semantics '", name, "' (known: zlab-current, zlab-2025)"));
}

}  // namespace dflash::types
