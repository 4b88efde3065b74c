#include "weights/name_suggest.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dflash::weights {
namespace {

// How many trailing '.'-separated parts two names share:
// "model.layers.0.mlp.up.weight" vs "layers.0.mlp.up.weight" -> 5.
int SharedSuffixParts(absl::string_view a, absl::string_view b) {
  std::vector<absl::string_view> pa = absl::StrSplit(a, '.');
  std::vector<absl::string_view> pb = absl::StrSplit(b, '.');
  int n = 0;
  while (n < static_cast<int>(pa.size()) && n < static_cast<int>(pb.size()) &&
         pa[pa.size() - 1 - n] == pb[pb.size() - 1 - n]) {
    ++n;
  }
  return n;
}

// Levenshtein distance, two rows.
size_t EditDistance(absl::string_view a, absl::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

}  // namespace

std::vector<std::string> NearestNames(absl::string_view wanted,
                                      const std::vector<std::string>& present, int limit) {
  if (limit <= 0) return {};
  struct Scored {
    int suffix;
    size_t distance;
    const std::string* name;
  };
  std::vector<Scored> scored;
  scored.reserve(present.size());
  for (const std::string& p : present) {
    scored.push_back({SharedSuffixParts(wanted, p), EditDistance(wanted, p), &p});
  }
  auto better = [](const Scored& x, const Scored& y) {
    // More shared suffix parts first, then fewer edits, then by name.
    return std::tie(y.suffix, x.distance, *x.name) < std::tie(x.suffix, y.distance, *y.name);
  };
  size_t keep = std::min(scored.size(), static_cast<size_t>(limit));
  std::partial_sort(scored.begin(), scored.begin() + keep, scored.end(), better);
  std::vector<std::string> out;
  for (size_t i = 0; i < keep; ++i) {
    // A name listed twice in `present` is suggested once.
    if (!out.empty() && out.back() == *scored[i].name) continue;
    out.push_back(*scored[i].name);
  }
  return out;
}

std::string QuoteList(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  return absl::StrJoin(names, ", ", [](std::string* out, const std::string& n) {
    absl::StrAppend(out, "'", n, "'");
  });
}

}  // namespace dflash::weights
