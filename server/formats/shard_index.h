// File: shard_index.h
// The sharded-checkpoint index (model.safetensors.index.json) parsed into
// tensor name -> shard file, with every shard checked to stay inside the
// index's directory. Torch-free, so it can be fuzzed on its own.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::formats {

struct ShardIndex {
  // shard -> the tensors the index puts there (both sorted).
  std::map<std::string, std::vector<std::string>> by_shard;
  // tensor -> its shard, as the index says.
  std::map<std::string, std::string> shard_of;
  // Every tensor the index names, sorted.
  std::vector<std::string> all_names;
};

// Parses the index text; `index_path` only names the file in messages.
// InvalidArgument when the text is not JSON, not an object, has no
// "weight_map" object, or an entry is not a string naming a file inside the
// index's directory (no absolute path, no "..", not empty).
absl::StatusOr<ShardIndex> ParseShardIndex(absl::string_view json_text,
                                           const std::string& index_path);

}  // namespace dflash::formats
