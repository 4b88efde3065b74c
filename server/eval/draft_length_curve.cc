#include "eval/draft_length_curve.h"

#include <algorithm>

namespace dflash::eval {

std::vector<double> DraftLengthCurve(const std::vector<int64_t>& histogram) {
  int64_t blocks = 0;
  for (int64_t c : histogram) blocks += c;
  std::vector<double> out;
  if (blocks == 0 || histogram.size() < 2) return out;
  for (size_t k = 1; k < histogram.size(); ++k) {
    double sum = 0;
    for (size_t n = 0; n < histogram.size(); ++n) {
      sum += static_cast<double>(histogram[n]) * static_cast<double>(std::min(n, k) + 1);
    }
    out.push_back(sum / blocks);
  }
  return out;
}

}  // namespace dflash::eval
