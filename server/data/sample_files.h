// File: sample_files.h
// Finds the capture files of a dataset directory and puts them in sample
// order. Torch-free.
//
// Files: *.ckpt, *.pt, *.pth, *.ckpt.gz anywhere below the root (symlinked
// folders are not followed; names starting with '.' are skipped; anything
// else, dataset.json included, is ignored).
//
// Order (never the directory listing order):
//   1. Every file name carries an integer (the LAST run of digits in the name
//      without its extension: data_17.ckpt -> 17) and no two are equal: order
//      by that integer; it is the sample index.
//   2. Otherwise (a name without digits, or the same integer in two folders,
//      as in rows_0-5000/data_17.ckpt and rows_5000-10000/data_17.ckpt):
//      order by the folder path, comparing folder components one by one by
//      (first integer in the component, or -1 when it has none; then the
//      component's text), then by the file integer (-1 when none), then by
//      the file name. The sample index is then the position in that order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::data {

struct SampleFile {
  std::string relative;  // path below the root, '/'-separated
  int64_t index = 0;     // sample index (see the ordering rule above)
};

// True for the capture file extensions above.
bool IsCaptureFileName(absl::string_view name);

// The last run of digits in a file name without its capture extension, or -1.
int64_t FileNameIndex(absl::string_view file_name);

// The first run of digits in a folder name, or -1.
int64_t FolderIndex(absl::string_view folder_name);

// Orders relative paths by the rule above and assigns sample indices.
std::vector<SampleFile> OrderSampleFiles(const std::vector<std::string>& relative_paths);

// Lists and orders the capture files below `root`. NotFound when `root` is
// not a directory; an empty list when it holds no capture file.
absl::StatusOr<std::vector<SampleFile>> ListSampleFiles(const std::string& root);

}  // namespace dflash::data
