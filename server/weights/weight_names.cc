#include "weights/weight_names.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace dflash::weights {
namespace {

// Leading wrappers added by training frameworks, in any order and nesting.
constexpr absl::string_view kWrapperPrefixes[] = {"module.", "_orig_mod.", "_fsdp_wrapped_module.",
                                                  "model.", "draft_model."};
// Wrapper segments FSDP / activation checkpointing insert inside names.
constexpr absl::string_view kInfixWrappers[] = {"_fsdp_wrapped_module",
                                                "_checkpoint_wrapped_module"};

bool HasInfixWrapper(const std::string& name) {
  for (absl::string_view w : kInfixWrappers) {
    if (absl::StrContains(name, absl::StrCat(".", w, "."))) return true;
  }
  return false;
}

}  // namespace

std::string Normalise(const std::string& name, const Normalisation& n) {
  std::string rest = absl::StartsWith(name, n.prefix) ? name.substr(n.prefix.size()) : name;
  if (!n.drop_infix) return rest;
  std::vector<absl::string_view> parts = absl::StrSplit(rest, '.');
  parts.erase(std::remove_if(parts.begin(), parts.end(),
                             [](absl::string_view p) {
                               for (absl::string_view w : kInfixWrappers) {
                                 if (p == w) return true;
                               }
                               return false;
                             }),
              parts.end());
  return absl::StrJoin(parts, ".");
}

Normalisation ChooseNormalisation(const std::vector<TensorInfo>& stored,
                                  const std::vector<TensorSpec>& schema) {
  std::set<std::string> prefixes = {""};
  bool any_infix = false;
  for (const TensorInfo& t : stored) {
    any_infix = any_infix || HasInfixWrapper(t.name);
    std::string chain;
    for (int depth = 0; depth < 6; ++depth) {
      bool extended = false;
      for (absl::string_view w : kWrapperPrefixes) {
        if (absl::StartsWith(absl::string_view(t.name).substr(chain.size()), w)) {
          absl::StrAppend(&chain, w);
          prefixes.insert(chain);
          extended = true;
          break;
        }
      }
      if (!extended) break;
    }
  }
  Normalisation best;
  int best_matches = -1;
  size_t best_cost = 0;
  for (const std::string& prefix : prefixes) {
    for (bool drop : {false, true}) {
      if (drop && !any_infix) continue;
      Normalisation n{prefix, drop};
      std::set<std::string> names;
      for (const TensorInfo& t : stored) names.insert(Normalise(t.name, n));
      int matches = 0;
      for (const TensorSpec& s : schema) {
        bool hit = names.count(s.name) > 0;
        for (const std::string& a : s.aliases) hit = hit || names.count(a) > 0;
        matches += hit ? 1 : 0;
      }
      const size_t cost = prefix.size() + (drop ? 1 : 0);
      if (matches > best_matches || (matches == best_matches && cost < best_cost)) {
        best = n;
        best_matches = matches;
        best_cost = cost;
      }
    }
  }
  return best;
}

bool SplitLayer(absl::string_view name, int* layer, std::string* rest) {
  size_t pos = 0;
  while (true) {
    pos = name.find("layers.", pos);
    if (pos == absl::string_view::npos) return false;
    if (pos == 0 || name[pos - 1] == '.') break;
    pos += 7;
  }
  absl::string_view tail = name.substr(pos + 7);
  const size_t dot = tail.find('.');
  if (dot == absl::string_view::npos) return false;
  if (!absl::SimpleAtoi(tail.substr(0, dot), layer)) return false;
  *rest = std::string(tail.substr(dot + 1));
  return true;
}

std::string LayerRange(const std::set<int>& layers) {
  if (layers.empty()) return "no layers";
  const int lo = *layers.begin(), hi = *layers.rbegin();
  if (static_cast<int>(layers.size()) == hi - lo + 1) {
    return absl::StrCat(layers.size(), " layers (", lo, "..", hi, ")");
  }
  return absl::StrCat(layers.size(), " layers (", absl::StrJoin(layers, ", "), ")");
}

}  // namespace dflash::weights
