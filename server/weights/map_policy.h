// File: map_policy.h
// When a resident tensor may stay a view of its checkpoint's file mapping
// instead of owning a copy, and a tally of the bytes that did.
//
// A view costs no allocation, no page zeroing and no copy: a load runs at
// the page cache's speed and the pages are shared with it. The danger is a
// file truncated or written in place under the mapping: reading a page past
// its new end raises SIGBUS, which kills the server. What prevents that:
//  - a file modified less than min_age_seconds ago is copied (a trainer may
//    still be writing it, or may write it again right away);
//  - every mapped file is checked (size, mtime, inode) after the load and
//    before each evaluation that reads it: a file rewritten in place fails
//    the load or the job (FailedPrecondition), it is never read;
//  - the contract (docs/server.md): checkpoints are written to a temporary
//    name and renamed into place; a rename leaves the old inode alive under
//    the mapping, so resident tensors keep their values.
// Not prevented: a writer that truncates a mapped file in place while an
// evaluation is reading it. Run with --no-mmap when writers do that.
//
//   MapTally tally;
//   if (MayAlias(source, name, t, dtype, device, policy)) tally.AddMapped(...)
#pragma once

#include <cstdint>
#include <vector>

#include <ATen/core/Tensor.h>

#include "absl/status/status.h"
#include "common/mapped_file.h"
#include "weights/tensor_source.h"

namespace dflash::weights {

struct MapPolicy {
  bool enabled = true;          // false: --no-mmap, every resident tensor is a copy
  double min_age_seconds = 10;  // --mmap-min-age-seconds
};

// The stamp of the file `t` (what source.Read(name) returned) is a view of,
// when `t` may stay resident as it is: the policy allows it, `t` is already
// `dtype`, contiguous, the device is the CPU, and its file was last modified
// at least min_age_seconds ago. nullopt: copy it.
std::optional<FileStamp> MayAlias(const TensorSource& source, absl::string_view name,
                                  const at::Tensor& t, c10::ScalarType dtype,
                                  const c10::Device& device, const MapPolicy& policy);

// Which bytes of a resident object are views of files, and those files.
class MapTally {
 public:
  void AddMapped(const FileStamp& file, int64_t nbytes);
  void AddCopied(int64_t nbytes) { copied_bytes_ += nbytes; }
  void Merge(const MapTally& other);

  int64_t mapped_bytes() const { return mapped_bytes_; }
  int64_t copied_bytes() const { return copied_bytes_; }
  const std::vector<FileStamp>& files() const { return files_; }
  // The first mapped file written in place since it was opened
  // (FileStamp::CheckUnchanged), else Ok.
  absl::Status CheckUnchanged() const;

 private:
  int64_t mapped_bytes_ = 0, copied_bytes_ = 0;
  std::vector<FileStamp> files_;  // each once
};

}  // namespace dflash::weights
