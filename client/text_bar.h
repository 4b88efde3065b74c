// File: text_bar.h
// A fraction drawn as a fixed-width bar of '#' and '.', for the per-position
// accuracy table, the histogram and a job's progress line.
//
//   TextBar(0.5, 10)  // "#####....."
#pragma once

#include <algorithm>
#include <cmath>
#include <string>

namespace dflash::client {

// `fraction` is clamped to [0, 1]; NaN and infinities draw an empty bar.
inline std::string TextBar(double fraction, int width) {
  if (!std::isfinite(fraction)) fraction = 0;
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int full = static_cast<int>(std::lround(fraction * width));
  return std::string(full, '#') + std::string(width - full, '.');
}

}  // namespace dflash::client
