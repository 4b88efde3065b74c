// File: dataset_manifest.cc
#include "data/dataset_manifest.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace dflash::data {
namespace {

using nlohmann::json;

int KeyRank(const std::string& key) {
  if (key == "hidden_states") return 0;
  if (key == "aux_hidden_state") return 1;
  if (key == "hidden_state") return 2;
  return 3;
}

absl::Status Bad(absl::string_view label, absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat(label, ": ", what));
}

// {"key": "hidden_state", "norm_applied": false}; a feature key named here
// must hold exactly one layer (its columns are then [L, H_t]).
absl::StatusOr<FinalHiddenSpec> ParseFinalHidden(const json& v,
                                                 const std::vector<LayerGroup>& features) {
  constexpr char kExample[] = R"({"key": "hidden_state", "norm_applied": false})";
  if (!v.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat("'final_hidden_state' must be an object such as ", kExample));
  }
  FinalHiddenSpec spec;
  spec.key = "hidden_state";
  if (auto k = v.find("key"); k != v.end() && !k->is_null()) {
    if (!k->is_string() || k->get<std::string>().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'final_hidden_state.key' must be a non-empty string; got ", k->dump()));
    }
    spec.key = k->get<std::string>();
  }
  if (spec.key == "input_ids" || spec.key == "loss_mask") {
    return absl::InvalidArgumentError(
        absl::StrCat("'final_hidden_state.key' cannot be '", spec.key, "'"));
  }
  auto n = v.find("norm_applied");
  if (n == v.end() || !n->is_boolean()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'final_hidden_state.norm_applied' must be true or false (was the target's final norm "
        "applied before capture? HF hidden_states[-1] is after it), e.g. ",
        kExample));
  }
  spec.norm_applied = n->get<bool>();
  for (const auto& [key, ids] : features) {
    if (key == spec.key && ids.size() != 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("'final_hidden_state.key' names feature '", key, "', which holds ",
                       ids.size(), " layers; the final hidden state is one layer wide"));
    }
  }
  return spec;
}

absl::StatusOr<ResponsePositions> ParseResponsePositions(const json& doc,
                                                         absl::string_view source) {
  ResponsePositions r;
  if (auto it = doc.find("loss_mask"); it != doc.end() && !it->is_null()) {
    if (*it != "all-positions") {
      return Bad(source, absl::StrCat("'loss_mask' can only be \"all-positions\" (every position "
                                      "counts as a response); got ",
                                      it->dump()));
    }
    r.all_positions = true;
  }
  if (auto it = doc.find("prompt_lengths"); it != doc.end() && !it->is_null()) {
    if (r.all_positions) {
      return Bad(source, "declares both 'prompt_lengths' and 'loss_mask'; keep one");
    }
    if (!it->is_array() || it->empty()) {
      return Bad(source, "'prompt_lengths' must be a non-empty list (one per sample index)");
    }
    for (const json& v : *it) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0) {
        return Bad(source,
                   absl::StrCat("'prompt_lengths' holds ", v.dump(), "; expected integers >= 0"));
      }
      r.prompt_lengths.push_back(v.get<int64_t>());
    }
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<LayerGroup>> CheckLayerGroups(
    const std::map<std::string, std::vector<int>>& groups, absl::string_view label) {
  const absl::string_view source = label;
  if (groups.empty()) return Bad(source, "declares no feature keys");
  std::vector<LayerGroup> out(groups.begin(), groups.end());
  std::stable_sort(out.begin(), out.end(), [](const LayerGroup& a, const LayerGroup& b) {
    return KeyRank(a.first) < KeyRank(b.first);
  });
  std::map<int, std::string> seen;  // layer -> key that holds it
  for (const auto& [key, ids] : out) {
    if (key.empty() || key == "input_ids" || key == "loss_mask") {
      return Bad(source, absl::StrCat("'", key, "' cannot be a feature key"));
    }
    if (ids.empty()) {
      return Bad(source, absl::StrCat("feature '", key, "' lists no layers"));
    }
    for (int id : ids) {
      if (id < 0) {
        return Bad(source, absl::StrCat("feature '", key, "' lists layer ", id,
                                        "; layer ids must be >= 0"));
      }
      auto [it, fresh] = seen.emplace(id, key);
      if (!fresh) {
        return Bad(source, absl::StrCat("layer ", id, " is declared twice (in '", it->second,
                                        "' and '", key, "')"));
      }
    }
  }
  return out;
}

absl::StatusOr<DatasetManifest> ParseManifest(absl::string_view json_text, absl::string_view path) {
  const std::string label = absl::StrCat("manifest '", path, "'");
  const absl::string_view source = label;
  json doc = json::parse(json_text.begin(), json_text.end(), nullptr,
                         /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad(source, "is not valid JSON");
  if (!doc.is_object()) return Bad(source, "must be a JSON object");
  DatasetManifest m;
  if (auto it = doc.find("name"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return Bad(source, "'name' must be a string");
    m.name = it->get<std::string>();
  }
  if (auto it = doc.find("hidden_size"); it != doc.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() <= 0) {
      return Bad(source,
                 absl::StrCat("'hidden_size' must be a positive integer; got ", it->dump()));
    }
    m.hidden_size = it->get<int64_t>();
  }
  auto features = doc.find("features");
  if (features == doc.end() || !features->is_object()) {
    return Bad(source,
               "needs an object 'features' mapping each feature key to its layer "
               "ids, e.g. {\"features\": {\"hidden_states\": [1, 16, 31, 46, 61]}}");
  }
  if (auto it = doc.find("layer_numbering"); it != doc.end() && !it->is_null()) {
    if (!it->is_string()) return Bad(source, "'layer_numbering' must be a string");
    auto n = ParseNumbering(it->get<std::string>());
    if (!n.ok()) return Bad(source, n.status().message());
    m.numbering = *n;
  }
  std::map<std::string, std::vector<int>> groups;
  for (auto it = features->begin(); it != features->end(); ++it) {
    if (!it->is_array()) {
      return Bad(source, absl::StrCat("feature '", it.key(), "' must be a list of layer ids; got ",
                                      it->dump()));
    }
    std::vector<int>& ids = groups[it.key()];
    for (const json& v : *it) {
      if (!v.is_number_integer() || v.get<int64_t>() > std::numeric_limits<int>::max() ||
          v.get<int64_t>() < std::numeric_limits<int>::min()) {
        return Bad(source, absl::StrCat("feature '", it.key(), "' holds a non-integer layer id ",
                                        v.dump()));
      }
      ids.push_back(static_cast<int>(v.get<int64_t>()));
    }
    auto hf = ToHfLayers(ids, m.numbering, absl::StrCat("feature '", it.key(), "'"));
    if (!hf.ok()) return Bad(source, hf.status().message());
    ids = std::move(hf).value();
  }
  if (auto it = doc.find("sample_metadata"); it != doc.end() && !it->is_null()) {
    if (!it->is_string() || it->get<std::string>().empty()) {
      return Bad(source, absl::StrCat("'sample_metadata' must be a file name relative to the "
                                      "dataset folder; got ",
                                      it->dump()));
    }
    m.sample_metadata = it->get<std::string>();
  }
  auto responses = ParseResponsePositions(doc, source);
  if (!responses.ok()) return responses.status();
  m.responses = std::move(responses).value();
  auto checked = CheckLayerGroups(groups, source);
  if (!checked.ok()) return checked.status();
  m.features = std::move(checked).value();
  if (auto it = doc.find("final_hidden_state"); it != doc.end() && !it->is_null()) {
    auto spec = ParseFinalHidden(*it, m.features);
    if (!spec.ok()) return Bad(source, spec.status().message());
    m.final_hidden = *std::move(spec);
  }
  return m;
}

std::string MissingManifestMessage(absl::string_view dataset_path) {
  return absl::StrCat(
      "dataset '", dataset_path, "' does not say which target layers its features hold; ",
      "capture files record no layer ids. Declare them in the request (layer_ids per "
      "feature key) or write ",
      dataset_path, "/", kManifestFile, ", e.g. ",
      R"({"name": "my-dataset", "hidden_size": 5120, "features": {"hidden_states": [1, 16, 31, 46, 61]}})",
      " (EAGLE-3 layout: ",
      R"("features": {"aux_hidden_state": [1, 16, 31, 46], "hidden_state": [61]})", ")");
}

}  // namespace dflash::data
