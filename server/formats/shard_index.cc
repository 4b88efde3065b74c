#include "formats/shard_index.h"

#include <exception>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace dflash::formats {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// True when `shard` names a file inside the index's directory.
bool StaysInside(const std::string& shard) {
  if (shard.empty()) return false;
  fs::path p = fs::path(shard).lexically_normal();
  if (p.is_absolute() || p.has_root_name() || p.has_root_directory()) return false;
  if (p.empty() || p == "." || !p.has_filename()) return false;
  return *p.begin() != "..";
}

}  // namespace

absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view json_text,
                                           const std::string& index_path) {
  Json j;
  try {
    j = Json::parse(json_text.begin(), json_text.end());
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (auto pos = what.find("] "); pos != std::string::npos) what.erase(0, pos + 2);
    return absl::InvalidArgumentError(
        absl::StrCat("'", index_path, "': index is not valid JSON: ", what));
  }
  if (!j.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", index_path, "': index JSON is not an object; expected {\"weight_map\": {...}}"));
  }
  auto wm = j.find("weight_map");
  if (wm == j.end() || !wm->is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", index_path, "': index has no \"weight_map\" object of tensor name -> shard file"));
  }

  ShardIndex index;
  for (const auto& [tensor, shard_json] : wm->items()) {
    if (!shard_json.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", index_path, "': weight_map entry '", tensor,
                       "' is not a string; expected a shard file name"));
    }
    std::string shard = shard_json.get<std::string>();
    if (!StaysInside(shard)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", index_path, "': shard '", shard, "' (for tensor '", tensor,
                       "') is not a file inside the index's directory"));
    }
    index.by_shard[shard].push_back(tensor);
    index.shard_of.emplace(tensor, shard);
    index.all_names.push_back(tensor);
  }
  return index;
}

}  // namespace dflash::formats
