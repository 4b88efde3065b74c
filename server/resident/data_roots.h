// File: data_roots.h
// The server reads files only under its data roots. Every path in a request
// is resolved (symlinks and '..' included) and must lie inside a root;
// otherwise PermissionDenied, with the same message whether or not the path
// exists, so a caller learns nothing about the rest of the file system.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace dflash::resident {

class DataRoots {
 public:
  // Roots are created if missing, then canonicalised. Empty list: error.
  static absl::StatusOr<DataRoots> Create(const std::vector<std::string>& roots);

  // The canonical path of `path` if it lies inside a root. Relative paths are
  // taken relative to the first root. InvalidArgument for empty paths, NUL
  // bytes or more than kMaxPathBytes; PermissionDenied outside every root.
  // Messages name the request's field: `field` ("path", "config_path", ...).
  absl::StatusOr<std::string> Resolve(const std::string& path, const char* field = "path") const;

  // PATH_MAX: no longer path names anything (and would be echoed in errors).
  static constexpr size_t kMaxPathBytes = 4096;

  // For paths inside files (index shards, config.json, dataset samples):
  // Ok when no symbolic link in `resolved` (a directory: every entry below
  // it; a file: the config.json beside it) leads outside the roots.
  // PermissionDenied naming the link otherwise; ResourceExhausted past
  // `max_entries` entries.
  absl::Status CheckLinks(const std::string& resolved, int64_t max_entries = 1'000'000) const;

  const std::vector<std::string>& roots() const { return roots_; }

 private:
  std::vector<std::string> roots_;
};

}  // namespace dflash::resident
