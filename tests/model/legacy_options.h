// File: legacy_options.h
// The block options under which the plain references of these tests
// (reference_drafter.h, the pyref fixtures) are compared: they implement the
// older rules (every layer bidirectional in the block, one-sided windows),
// so zlab-2025. zlab-current is checked against tools/dflash_ref in the e2e
// tests.
#pragma once

#include "model/drafter_model.h"
#include "types/semantics.h"

namespace dflash::model::testing {

inline BlockOptions Legacy() {
  BlockOptions o;
  o.semantics = types::Semantics::kZlab2025;
  return o;
}

}  // namespace dflash::model::testing
