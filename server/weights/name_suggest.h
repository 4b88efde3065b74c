// File: name_suggest.h
// "Did you mean": the names present that are nearest to a name that was not
// found, so every failed lookup can say what does exist.
#pragma once

#include <string>
#include <vector>
#include "absl/strings/string_view.h"

namespace dflash::weights {

// Up to `limit` names from `present`, best first: longest shared dot-suffix,
// then smallest edit distance.
std::vector<std::string> NearestNames(absl::string_view wanted,
                                      const std::vector<std::string>& present, int limit = 3);

// "'a', 'b', 'c'" or "(none)".
std::string QuoteList(const std::vector<std::string>& names);

}  // namespace dflash::weights
