#include "eval/shard_plan.h"

#include <algorithm>

namespace dflash::eval {

std::vector<SampleRange> SplitEvenly(const std::vector<int64_t>& weights, int64_t parts) {
  const size_t n = weights.size();
  std::vector<SampleRange> out;
  if (n == 0) return out;
  parts = std::clamp<int64_t>(parts, 1, static_cast<int64_t>(n));
  long double total = 0;
  for (int64_t w : weights) total += static_cast<long double>(std::max<int64_t>(w, 0));
  size_t begin = 0;
  long double running = 0;
  for (int64_t k = 0; k < parts && begin < n; ++k) {
    // The last range takes the rest; every other keeps at least one sample
    // and leaves one for each range after it.
    const size_t last_end = n - static_cast<size_t>(parts - 1 - k);
    size_t end = begin;
    const long double goal = total * static_cast<long double>(k + 1) / parts;
    if (k + 1 == parts) {
      end = n;
    } else {
      do {
        running += static_cast<long double>(std::max<int64_t>(weights[end], 0));
        ++end;
      } while (end < last_end && running < goal);
    }
    out.push_back({begin, end});
    begin = end;
  }
  return out;
}

std::vector<SampleRange> SplitUnderCap(const std::vector<int64_t>& weights, int64_t cap) {
  std::vector<SampleRange> out;
  size_t begin = 0;
  int64_t sum = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (i > begin && sum + weights[i] > cap) {
      out.push_back({begin, i});
      begin = i;
      sum = 0;
    }
    sum += weights[i];
  }
  if (begin < weights.size()) out.push_back({begin, weights.size()});
  return out;
}

}  // namespace dflash::eval
