// File: safetensors_file.h
// safetensors readers: one file, or a sharded checkpoint through
// model.safetensors.index.json. Memory-mapped; Read() touches only the byte
// range of the tensor asked for. The header is validated in a fixed order
// before anything is trusted: 8-byte LE length -> size cap -> length within
// the file -> JSON -> per tensor: known dtype, numel x size == byte range,
// range inside the data section -> ranges do not overlap.
#pragma once

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/statusor.h"
#include "weights/tensor_source.h"

namespace dflash::weights {

// Largest header accepted (safetensors' own limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// Parses and validates a header's JSON given the size of the data section
// that follows it. Pure (no I/O, no torch): the fuzz target's entry point.
// TensorInfo::file is left empty; offsets are relative to the data section.
struct SafetensorsEntry {
  TensorInfo info;
  uint64_t begin = 0;  // data-section relative
  uint64_t end = 0;
};
absl::StatusOr<std::vector<SafetensorsEntry>> ParseSafetensorsHeader(
    absl::string_view header_json, uint64_t data_section_bytes);

// Opens one .safetensors file. NotFound if absent; InvalidArgument naming the
// path and the defect if malformed.
absl::StatusOr<TensorSourcePtr> OpenSafetensors(const std::string& path);

// Opens a sharded checkpoint from its index JSON. A shard missing on disk, or
// a tensor the index names but its shard lacks, is an error naming both.
// Shards are opened lazily only when `names` is non-empty (then only those
// shards holding the listed tensors are opened); otherwise all are opened.
absl::StatusOr<TensorSourcePtr> OpenShardedSafetensors(
    const std::string& index_path, const std::vector<std::string>& names = {});

}  // namespace dflash::weights
