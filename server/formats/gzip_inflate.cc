#include "formats/gzip_inflate.h"

#include <zlib.h>

#include <algorithm>
#include <limits>
#include <new>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dflash::formats {
namespace {

constexpr size_t kChunk = size_t{1} << 30;  // z_stream counts are 32-bit

struct Inflater {
  z_stream zs{};
  bool open = false;
  ~Inflater() {
    if (open) inflateEnd(&zs);
  }
};

}  // namespace

bool IsGzip(absl::string_view data) {
  return data.size() >= 2 && static_cast<uint8_t>(data[0]) == 0x1f &&
         static_cast<uint8_t>(data[1]) == 0x8b;
}

absl::StatusOr<std::string> Gunzip(absl::string_view data, absl::string_view what,
                                   int64_t max_output) {
  if (!IsGzip(data)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", what, "' is not gzip data (no 1f 8b magic)"));
  }
  Inflater inf;
  if (inflateInit2(&inf.zs, 16 + MAX_WBITS) != Z_OK) {
    return absl::InternalError("gzip: inflateInit2 failed");
  }
  inf.open = true;
  std::string out;
  const size_t limit = static_cast<size_t>(std::max<int64_t>(max_output, 0));
  size_t in_pos = 0, out_len = 0;
  try {
    // Grow geometrically, one byte past the limit so that overflow is seen.
    out.resize(std::min(limit + 1, std::max<size_t>(data.size() * 4, 4096)));
    while (true) {
      if (out_len == out.size()) {
        if (out.size() > limit) {
          return absl::ResourceExhaustedError(
              absl::StrCat("'", what, "' decompresses to more than ", limit,
                           " bytes (the limit for gzip-compressed checkpoints)"));
        }
        out.resize(std::min(limit + 1, out.size() * 2));
      }
      size_t in_n = std::min(kChunk, data.size() - in_pos);
      size_t out_n = std::min(kChunk, out.size() - out_len);
      inf.zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data() + in_pos));
      inf.zs.avail_in = static_cast<uInt>(in_n);
      inf.zs.next_out = reinterpret_cast<Bytef*>(&out[out_len]);
      inf.zs.avail_out = static_cast<uInt>(out_n);
      int rc = inflate(&inf.zs, Z_NO_FLUSH);
      in_pos += in_n - inf.zs.avail_in;
      out_len += out_n - inf.zs.avail_out;
      if (rc == Z_STREAM_END) {
        // Another member follows (gzip allows concatenation); else stop.
        if (!IsGzip(data.substr(in_pos))) break;
        if (inflateReset(&inf.zs) != Z_OK) {
          return absl::InternalError("gzip: inflateReset failed");
        }
        continue;
      }
      if (rc == Z_BUF_ERROR && in_pos == data.size() && inf.zs.avail_out > 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", what, "' is a truncated gzip file (ends after ", data.size(), " bytes)"));
      }
      if (rc != Z_OK && rc != Z_BUF_ERROR) {
        return absl::InvalidArgumentError(absl::StrCat(
            "'", what,
            "' is a corrupt gzip file: ", inf.zs.msg != nullptr ? inf.zs.msg : "inflate failed"));
      }
    }
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(absl::StrCat("out of memory decompressing '", what, "'"));
  }
  out.resize(out_len);
  return out;
}

}  // namespace dflash::formats
