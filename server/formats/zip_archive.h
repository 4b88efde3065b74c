// File: zip_archive.h
// A zip reader over bytes already in memory (a mapping or a buffer), for
// torch.save archives. Torch-free so that it can be fuzzed on its own.
//
// Why not libtorch's PyTorchStreamReader: it allocates a record's declared
// uncompressed size before anything can check it, so one small deflated
// record (a zip bomb) could make the server allocate and fill gigabytes.
// Here the central directory is parsed first, every size is checked against
// the archive's bounds, and a record is only ever inflated into a buffer of
// the size its reader expects, never more.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::formats {

// Limits on what a central directory may list (a torch.save file has a few
// records per tensor; a million entries or 256 MiB of directory is abuse).
inline constexpr uint64_t kMaxZipEntries = uint64_t{1} << 20;
inline constexpr uint64_t kMaxZipDirectoryBytes = uint64_t{256} << 20;

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0 stored, 8 deflated; others are refused on read
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t uncompressed_size = 0;
  uint64_t local_header_offset = 0;
};

class ZipArchive {
 public:
  // Parses the central directory of `bytes`, which must outlive the archive.
  // InvalidArgument, with what is wrong and where, for anything malformed:
  // no end record, a directory or entry past the end of the data, multi-disk
  // archives, more entries than kMaxZipEntries, duplicate names.
  static absl::StatusOr<ZipArchive> Open(absl::string_view bytes);

  const std::vector<ZipEntry>& entries() const { return entries_; }
  // nullptr when no entry has exactly this name.
  const ZipEntry* Find(absl::string_view name) const;

  // Where the entry's data starts, from its local header (checked: signature,
  // name, data inside the archive).
  absl::StatusOr<uint64_t> DataOffset(const ZipEntry& entry) const;

  // Copies (stored) or inflates (deflated) the entry into out[0, size),
  // where `size` is what the caller expects; an entry that declares or
  // produces any other number of bytes, or whose CRC-32 differs, is refused
  // without writing past `size`.
  absl::Status ReadInto(const ZipEntry& entry, char* out, uint64_t size) const;

 private:
  absl::string_view bytes_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace dflash::formats
