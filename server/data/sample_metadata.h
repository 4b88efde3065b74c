// File: sample_metadata.h
// Per-sample metadata of a dataset, for the sliced results (docs/slices.md):
// a JSON-lines file in the dataset folder, sample_metadata.jsonl unless the
// manifest names another ("sample_metadata": "meta/slices.jsonl"), one
// object per sample:
//
//   {"index": 17, "category": "math", "language": "en", "thinking": true}
//
// "index" is the capture file's sample index (data_17.ckpt -> 17); the other
// fields are optional; unknown fields are ignored. Samples the file does not
// list, or a dataset without the file, have no metadata (no slice).
// Torch-free, so it is tested on its own.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::data {

inline constexpr char kSampleMetadataFile[] = "sample_metadata.jsonl";

struct SampleMetadata {
  std::string category, language;
  std::string thinking;  // "on", "off" or "" (not given)
};

// sample index -> metadata. InvalidArgument "sample metadata '<path>' line N:
// <defect>" for a line that is not an object, an index that is missing, not
// an integer >= 0 or listed twice, a category or language that is not a
// string, or a thinking that is not true/false.
absl::StatusOr<std::map<int64_t, SampleMetadata>> ParseSampleMetadata(absl::string_view text,
                                                                      absl::string_view path);

// Reads `relative` (kSampleMetadataFile when empty) below the dataset root.
// Absent: an empty map when `relative` is empty (the default file is
// optional), NotFound when the manifest named it.
absl::StatusOr<std::map<int64_t, SampleMetadata>> ReadSampleMetadata(absl::string_view root,
                                                                     absl::string_view relative);

}  // namespace dflash::data
