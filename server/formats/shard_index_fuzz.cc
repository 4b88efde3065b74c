// File: shard_index_fuzz.cc
// libFuzzer target for the sharded-checkpoint index parser (torch-free):
// InvalidArgument with a message, or a weight map whose shards all stay
// inside the index's directory and whose three views agree.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "formats/shard_index.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto index = dflash::formats::ParseShardIndex(text, "fuzz/model.safetensors.index.json");
  if (!index.ok()) {
    if (index.status().code() != absl::StatusCode::kInvalidArgument ||
        index.status().message().empty()) {
      __builtin_trap();
    }
    return 0;
  }
  size_t placed = 0;
  for (const auto& [shard, tensors] : index->by_shard) {
    const std::filesystem::path p = std::filesystem::path(shard).lexically_normal();
    if (shard.empty() || p.is_absolute() || p.has_root_directory() || *p.begin() == "..") {
      __builtin_trap();
    }
    for (const std::string& t : tensors) {
      auto it = index->shard_of.find(t);
      if (it == index->shard_of.end() || it->second != shard) __builtin_trap();
    }
    placed += tensors.size();
  }
  if (placed != index->shard_of.size() || placed != index->all_names.size()) __builtin_trap();
  return 0;
}
