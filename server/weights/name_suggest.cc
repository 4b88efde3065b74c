// TEMPORARY stand-in until wt-safetensors' implementation is merged.
#include "weights/name_suggest.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace dflash::weights {
namespace {
int SharedSuffixParts(absl::string_view a, absl::string_view b) {
  int n = 0;
  while (!a.empty() && !b.empty()) {
    size_t pa = a.rfind('.'), pb = b.rfind('.');
    absl::string_view sa = pa == a.npos ? a : a.substr(pa + 1);
    absl::string_view sb = pb == b.npos ? b : b.substr(pb + 1);
    if (sa != sb) break;
    ++n;
    a = pa == a.npos ? absl::string_view() : a.substr(0, pa);
    b = pb == b.npos ? absl::string_view() : b.substr(0, pb);
  }
  return n;
}
size_t Edit(absl::string_view a, absl::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] != b[j - 1])});
      prev = cur;
    }
  }
  return row[b.size()];
}
}  // namespace

std::vector<std::string> NearestNames(absl::string_view wanted,
                                      const std::vector<std::string>& present,
                                      int limit) {
  std::vector<std::tuple<int, size_t, std::string>> scored;
  for (const std::string& p : present) {
    scored.emplace_back(-SharedSuffixParts(wanted, p), Edit(wanted, p), p);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (auto& s : scored) {
    if (static_cast<int>(out.size()) >= limit) break;
    out.push_back(std::get<2>(s));
  }
  return out;
}

std::string QuoteList(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  return absl::StrCat("'", absl::StrJoin(names, "', '"), "'");
}

}  // namespace dflash::weights
