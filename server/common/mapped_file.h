// File: mapped_file.h
// A whole regular file mapped into memory, private and never written back:
// the one home of the mmap rules the weight readers share (safetensors
// files and shards, torch.save archives). Torch-free.
//
//   ASSIGN_OR_RETURN(std::shared_ptr<MappedFile> f, MappedFile::Open(path));
//   ParseHeader(f->bytes());
//
// Mappings are writable but private (MAP_PRIVATE | MAP_NORESERVE): an
// in-place op on a tensor over them copies its page instead of faulting, the
// file is never written, and a big file is not charged as committed memory.
// Under strict overcommit, where that is refused, they fall back to
// read-only.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash {

// What a file was when it was opened, to tell later whether it was
// rewritten in place (the danger for a mapping of it) or replaced.
struct FileStamp {
  std::string path;
  uint64_t size = 0, dev = 0, ino = 0;
  int64_t mtime_ns = 0;  // st_mtim, ns since the epoch

  // Seconds since that modification (negative for an mtime in the future).
  double AgeSeconds() const;
  // FailedPrecondition when `path` still names this inode but its size or
  // mtime changed: it was truncated or written in place, so what was read
  // may be torn, and a page of a mapping past the new end raises SIGBUS
  // when read. Ok when the path now names another file or none: renamed
  // over or removed, the old inode lives on under its mappings, unchanged.
  absl::Status CheckUnchanged() const;
};

// mmap(fd, offset, size) under the rules above; nullptr on failure (errno set).
void* MapPrivate(int fd, size_t size, off_t offset);

class MappedFile {
 public:
  // kKeepOpen keeps the descriptor for MapPages (one more open file).
  enum class Descriptor { kClose, kKeepOpen };

  // NotFound for a missing file; InvalidArgument for a directory or other
  // non-regular file; the errno's code otherwise. An empty file maps to no
  // bytes.
  static absl::StatusOr<std::shared_ptr<MappedFile>> Open(
      const std::string& path, Descriptor descriptor = Descriptor::kClose);

  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const std::string& path() const { return stamp_.path; }
  size_t size() const { return size_; }
  const FileStamp& stamp() const { return stamp_; }
  absl::string_view bytes() const {
    return absl::string_view(static_cast<const char*>(addr_), size_);
  }

  // A mapping of its own of `length` bytes at `offset` (page-aligned around
  // it, populated now where the kernel can), for a record that should
  // outlive this file's mapping. Needs Descriptor::kKeepOpen; nullopt when
  // mmap fails. Release it with Unmap().
  struct Pages {
    void* base = nullptr;  // what munmap takes
    size_t length = 0;
    char* data = nullptr;  // the byte at `offset`
  };
  std::optional<Pages> MapPages(uint64_t offset, uint64_t length) const;

  // Gives back the resident pages behind [offset, offset + length), widened
  // to whole pages. The mapping is private and file-backed and nothing writes
  // it, so a later read of any byte there (a neighbour's included) reads the
  // file again: only memory is released, never data.
  void ReleasePages(uint64_t offset, uint64_t length) const;
  static void Unmap(const Pages& pages);

 private:
  MappedFile() = default;

  FileStamp stamp_;
  void* addr_ = nullptr;
  size_t size_ = 0;
  int fd_ = -1;
};

}  // namespace dflash
