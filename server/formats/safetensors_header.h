// File: safetensors_header.h
// The safetensors layout, parsed and validated without I/O and without
// torch (absl + nlohmann_json + dtype.h only), so the fuzz target can link it
// alone. The checks follow the reference Rust crate, in this order:
//
//   8-byte LE header length -> length <= kMaxSafetensorsHeaderBytes ->
//   8 + length <= file size -> JSON well formed -> an object ->
//   "__metadata__" (optional) an object of strings -> per tensor (by name):
//   known dtype, shape of non-negative ints with a product that fits,
//   data_offsets [begin, end] with begin <= end <= data size and
//   end - begin == numel * element size -> sorted by begin: no overlaps and
//   no gaps, the ranges covering the data section from 0 to its end.
//
// Every defect is one InvalidArgument whose message names the tensor:
//   tensor 'fc.weight': data_offsets [0, 100] hold 100 bytes; shape [5, 4] of F32 needs 80
//
//   ASSIGN_OR_RETURN(SafetensorsLayout layout, ParseSafetensorsBytes(file));
//   for (const SafetensorsEntry& e : layout.entries) ...  // file order
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "formats/dtype.h"

namespace dflash::formats {

// Largest header accepted (safetensors' own limit is 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100ull << 20;

// One tensor of a header. Offsets are relative to the data section.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::kF32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;

  uint64_t nbytes() const { return end - begin; }
};

// Parses and validates a header's JSON given the size of the data section
// that follows it. Entries come back in file order (sorted by begin, then
// end, then name).
absl::StatusOr<std::vector<SafetensorsEntry>> ParseSafetensorsHeader(absl::string_view header_json,
                                                                     uint64_t data_section_bytes);

// A whole file's layout: where the data section starts and what it holds.
struct SafetensorsLayout {
  uint64_t header_bytes = 0;                    // the JSON's length as the file states it
  uint64_t data_start = 0;                      // 8 + header_bytes: file offset of the data
  uint64_t data_bytes = 0;                      // file size - data_start
  std::vector<SafetensorsEntry> entries;        // file order
  std::map<std::string, std::string> metadata;  // "__metadata__", may be empty
};

// Validates a whole file's bytes (length prefix, cap, bounds, then the
// header as above). Touches only the first 8 + header_bytes bytes of `file`,
// so a memory map of a large file stays unread.
absl::StatusOr<SafetensorsLayout> ParseSafetensorsBytes(absl::string_view file);

}  // namespace dflash::formats
