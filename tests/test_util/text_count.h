// File: text_count.h
// How often a string occurs in a page, a log or a CLI's output.
#pragma once

#include <string>

namespace dflash::testing {

// How often `what` occurs in `text` (overlapping occurrences too).
inline int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace dflash::testing
