#include "formats/zip_archive.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dflash::formats {
namespace {

constexpr uint32_t kEndSig = 0x06054b50;       // end of central directory
constexpr uint32_t kEnd64LocSig = 0x07064b50;  // zip64 end locator
constexpr uint32_t kEnd64Sig = 0x06064b50;     // zip64 end of central directory
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint64_t kEndBytes = 22, kEnd64LocBytes = 20, kEnd64Bytes = 56;
constexpr uint64_t kCentralBytes = 46, kLocalBytes = 30;
constexpr uint64_t kMaxComment = 0xffff;
constexpr uint32_t kFar32 = 0xffffffffu;  // "see the zip64 extra field"
constexpr uint64_t kMaxDeflateRatio = 1032;

// zip is little-endian, and so are our hosts.
uint16_t Le16(const char* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
uint32_t Le32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t Le64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(what);
}

// Fills the sizes and offset that the central header left at 0xffffffff
// from the entry's zip64 extra field (tag 1, those fields in that order).
absl::Status ApplyZip64(absl::string_view extra, ZipEntry* e) {
  const bool need_u = e->uncompressed_size == kFar32, need_c = e->compressed_size == kFar32,
             need_o = e->local_header_offset == kFar32;
  if (!need_u && !need_c && !need_o) return absl::OkStatus();
  for (size_t x = 0; x + 4 <= extra.size();) {
    const uint16_t id = Le16(extra.data() + x), len = Le16(extra.data() + x + 2);
    if (x + 4 + len > extra.size()) break;
    if (id == 1) {
      const char* f = extra.data() + x + 4;
      const size_t want = 8 * (size_t{need_u} + need_c + need_o);
      if (len < want) break;
      if (need_u) e->uncompressed_size = Le64(f), f += 8;
      if (need_c) e->compressed_size = Le64(f), f += 8;
      if (need_o) e->local_header_offset = Le64(f);
      return absl::OkStatus();
    }
    x += 4 + len;
  }
  return Bad(absl::StrCat("entry '", e->name, "' says its sizes are in a zip64 extra field, ",
                          "which is missing or too short"));
}

// Where the central directory lies, from the end record (zip64 when its
// locator is there), checked against the limits and the file.
struct Directory {
  uint64_t count = 0;   // entries
  uint64_t size = 0;    // bytes
  uint64_t offset = 0;  // from the start of the archive
};

absl::StatusOr<Directory> LocateDirectory(absl::string_view bytes) {
  const uint64_t size = bytes.size();
  const char* b = bytes.data();
  if (size < kEndBytes) {
    return Bad(absl::StrCat("zip archive of ", size, " bytes is too short for an end record"));
  }
  // The end record is the last signature within the final 22 + 65535 bytes
  // (the same search as miniz and Python's zipfile).
  uint64_t end = size - kEndBytes + 1;
  const uint64_t lowest = size > kEndBytes + kMaxComment ? size - kEndBytes - kMaxComment : 0;
  bool found = false;
  while (end-- > lowest) {
    if (Le32(b + end) == kEndSig) {
      found = true;
      break;
    }
  }
  if (!found) return Bad("no zip end-of-central-directory record (truncated file?)");
  uint64_t disk = Le16(b + end + 4), cd_disk = Le16(b + end + 6);
  uint64_t count = Le16(b + end + 10), cd_size = Le32(b + end + 12), cd_offset = Le32(b + end + 16);
  uint64_t cd_limit = end;  // the directory ends before the end record(s)
  if (end >= kEnd64LocBytes && Le32(b + end - kEnd64LocBytes) == kEnd64LocSig) {
    const uint64_t at = Le64(b + end - kEnd64LocBytes + 8);
    if (at > end - kEnd64LocBytes || end - kEnd64LocBytes - at < kEnd64Bytes ||
        Le32(b + at) != kEnd64Sig) {
      return Bad(absl::StrCat("zip64 end record offset ", at, " does not point at one"));
    }
    disk = Le32(b + at + 16);
    cd_disk = Le32(b + at + 20);
    count = Le64(b + at + 32);
    cd_size = Le64(b + at + 40);
    cd_offset = Le64(b + at + 48);
    cd_limit = at;
  }
  if (disk != 0 || cd_disk != 0) return Bad("multi-disk zip archives are not supported");
  if (count > kMaxZipEntries) {
    return Bad(absl::StrCat("zip central directory lists ", count, " entries; the limit is ",
                            kMaxZipEntries));
  }
  if (cd_size > kMaxZipDirectoryBytes) {
    return Bad(absl::StrCat("zip central directory is ", cd_size, " bytes; the limit is ",
                            kMaxZipDirectoryBytes));
  }
  if (cd_offset > cd_limit || cd_size > cd_limit - cd_offset) {
    return Bad(absl::StrCat("zip central directory (offset ", cd_offset, ", ", cd_size,
                            " bytes) runs past its end record at ", cd_limit,
                            " (truncated file?)"));
  }
  return Directory{count, cd_size, cd_offset};
}

// An entry's local header and data must lie before the central directory
// (at `cd_offset`), and a deflated entry cannot claim more than deflate makes.
absl::Status CheckEntryBounds(const ZipEntry& e, uint64_t cd_offset) {
  if (e.compressed_size > cd_offset || e.local_header_offset > cd_offset - e.compressed_size ||
      cd_offset - e.compressed_size - e.local_header_offset < kLocalBytes) {
    return Bad(absl::StrCat("zip entry '", e.name, "' (local header at ", e.local_header_offset,
                            ", ", e.compressed_size, " bytes) lies past the data (", cd_offset,
                            " bytes)"));
  }
  // Deflate turns at most 258 bytes into 2 bits (1032:1): a larger claim
  // is a lie meant to make a reader allocate, refused before it can.
  if (e.method == 8 && e.uncompressed_size / kMaxDeflateRatio > e.compressed_size + 1) {
    return Bad(absl::StrCat("zip entry '", e.name, "' declares ", e.uncompressed_size,
                            " bytes from ", e.compressed_size,
                            " compressed, more than deflate can produce"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ZipArchive> ZipArchive::Open(absl::string_view bytes) {
  absl::StatusOr<Directory> dir = LocateDirectory(bytes);
  if (!dir.ok()) return dir.status();
  const uint64_t count = dir->count, cd_size = dir->size, cd_offset = dir->offset;

  ZipArchive zip;
  zip.bytes_ = bytes;
  zip.entries_.reserve(count);
  const char* cd = bytes.data() + cd_offset;
  uint64_t p = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (cd_size - p < kCentralBytes || Le32(cd + p) != kCentralSig) {
      return Bad(absl::StrCat("zip central directory entry ", i, " of ", count,
                              " is truncated or has no signature"));
    }
    const char* h = cd + p;
    const uint64_t name_len = Le16(h + 28), extra_len = Le16(h + 30), comment_len = Le16(h + 32);
    if (cd_size - p - kCentralBytes < name_len + extra_len + comment_len) {
      return Bad(absl::StrCat("zip central directory entry ", i, " of ", count,
                              " runs past the directory"));
    }
    ZipEntry e;
    e.name.assign(h + kCentralBytes, name_len);
    e.method = Le16(h + 10);
    e.crc32 = Le32(h + 16);
    e.compressed_size = Le32(h + 20);
    e.uncompressed_size = Le32(h + 24);
    e.local_header_offset = Le32(h + 42);
    if ((Le16(h + 8) & 1) != 0) {
      return Bad(absl::StrCat("zip entry '", e.name, "' is encrypted"));
    }
    absl::Status st = ApplyZip64(absl::string_view(h + kCentralBytes + name_len, extra_len), &e);
    if (!st.ok()) return st;
    st = CheckEntryBounds(e, cd_offset);
    if (!st.ok()) return st;
    if (!zip.index_.emplace(e.name, zip.entries_.size()).second) {
      return Bad(absl::StrCat("zip entry '", e.name, "' appears twice"));
    }
    zip.entries_.push_back(std::move(e));
    p += kCentralBytes + name_len + extra_len + comment_len;
  }
  return zip;
}

const ZipEntry* ZipArchive::Find(absl::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

absl::StatusOr<uint64_t> ZipArchive::DataOffset(const ZipEntry& e) const {
  const uint64_t size = bytes_.size(), at = e.local_header_offset;
  if (at > size || size - at < kLocalBytes || Le32(bytes_.data() + at) != kLocalSig) {
    return Bad(absl::StrCat("zip entry '", e.name, "' has no local header at ", at));
  }
  const char* h = bytes_.data() + at;
  const uint64_t name_len = Le16(h + 26), extra_len = Le16(h + 28);
  const uint64_t data = at + kLocalBytes + name_len + extra_len;
  if (data > size || e.compressed_size > size - data) {
    return Bad(absl::StrCat("zip entry '", e.name, "' (", e.compressed_size, " bytes at ", data,
                            ") runs past the end of the archive (", size, " bytes)"));
  }
  if (absl::string_view(h + kLocalBytes, name_len) != e.name) {
    return Bad(
        absl::StrCat("zip entry '", e.name, "': its local header at ", at, " names another entry"));
  }
  return data;
}

absl::Status ZipArchive::ReadInto(const ZipEntry& e, char* out, uint64_t size) const {
  if (e.uncompressed_size != size) {
    return Bad(absl::StrCat("zip entry '", e.name, "' holds ", e.uncompressed_size,
                            " bytes; expected ", size));
  }
  absl::StatusOr<uint64_t> data = DataOffset(e);
  if (!data.ok()) return data.status();
  const absl::string_view in = bytes_.substr(*data, e.compressed_size);
  if (e.method == 0) {
    if (e.compressed_size != size) {
      return Bad(absl::StrCat("stored zip entry '", e.name, "' has ", e.compressed_size,
                              " bytes but declares ", size));
    }
    if (size > 0) std::memcpy(out, in.data(), size);
  } else if (e.method == 8) {
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) return absl::InternalError("inflateInit2 failed");
    // z_stream counts are 32-bit: feed and drain in chunks of at most 1 GiB.
    constexpr uint64_t kChunk = uint64_t{1} << 30;
    uint64_t in_pos = 0, out_pos = 0;
    int rc = Z_OK;
    char spare;  // one byte past `size`: output there means the entry is longer
    while (rc == Z_OK) {
      const uint64_t in_n = std::min(kChunk, in.size() - in_pos);
      const uint64_t out_n = out_pos < size ? std::min(kChunk, size - out_pos) : 1;
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      zs.avail_in = static_cast<uInt>(in_n);
      zs.next_out = reinterpret_cast<Bytef*>(out_pos < size ? out + out_pos : &spare);
      zs.avail_out = static_cast<uInt>(out_n);
      rc = inflate(&zs, Z_NO_FLUSH);
      in_pos += in_n - zs.avail_in;
      out_pos += out_n - zs.avail_out;
      if (out_pos > size) break;
      if (rc == Z_BUF_ERROR && in_pos == in.size()) break;  // input ran out
      if (rc == Z_BUF_ERROR) rc = Z_OK;                     // made no progress this round
    }
    const char* msg = zs.msg;
    inflateEnd(&zs);
    if (out_pos > size) {
      return Bad(absl::StrCat("zip entry '", e.name, "' inflates to more than its declared ", size,
                              " bytes"));
    }
    if (rc != Z_STREAM_END) {
      return Bad(absl::StrCat("zip entry '", e.name, "' is corrupt deflate data",
                              msg != nullptr ? absl::StrCat(" (", msg, ")") : "", " after ",
                              out_pos, " of ", size, " bytes"));
    }
    if (out_pos != size) {
      return Bad(absl::StrCat("zip entry '", e.name, "' inflates to ", out_pos,
                              " bytes; it declares ", size));
    }
  } else {
    return Bad(absl::StrCat("zip entry '", e.name, "' uses compression method ", e.method,
                            "; only stored (0) and deflate (8) are supported"));
  }
  // crc32 takes a 32-bit length; run it in chunks.
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t at = 0; at < size;) {
    const uint64_t n = std::min<uint64_t>(size - at, uint64_t{1} << 30);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(out + at), static_cast<uInt>(n));
    at += n;
  }
  if (static_cast<uint32_t>(crc) != e.crc32) {
    return Bad(absl::StrCat("zip entry '", e.name, "' fails its CRC-32 check (corrupt file)"));
  }
  return absl::OkStatus();
}

}  // namespace dflash::formats
