// File: gzip_inflate.h
// In-memory gzip decompression with a hard output limit (zip-bomb safety),
// for gzip-compressed torch.save files such as data_0.ckpt.gz.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dflash::formats {

// 16 GiB: larger than any capture file we expect, small enough to refuse bombs.
inline constexpr int64_t kMaxGunzipBytes = int64_t{16} << 30;

// True when `data` starts with the gzip magic bytes 1f 8b.
bool IsGzip(absl::string_view data);

// Decompresses every gzip member of `data`. Output above max_output bytes ->
// ResourceExhausted; corrupt or truncated data -> InvalidArgument. `what`
// names the input in messages.
absl::StatusOr<std::string> Gunzip(absl::string_view data, absl::string_view what,
                                   int64_t max_output = kMaxGunzipBytes);

}  // namespace dflash::formats
