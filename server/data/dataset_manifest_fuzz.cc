// File: dataset_manifest_fuzz.cc
// libFuzzer target for the dataset manifest (dataset.json) parser and the
// layer-group check (torch-free): InvalidArgument or a checked manifest.
#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/dataset_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto manifest = dflash::data::ParseManifest(text, "fuzz/dataset.json");
  if (!manifest.ok()) {
    if (manifest.status().code() != absl::StatusCode::kInvalidArgument ||
        manifest.status().message().empty()) {
      __builtin_trap();
    }
    return 0;
  }
  // A parsed manifest holds every layer once.
  std::set<int> seen;
  for (const auto& group : manifest->features) {
    for (int id : group.second) {
      if (id < 0 || !seen.insert(id).second) __builtin_trap();
    }
  }
  return 0;
}
