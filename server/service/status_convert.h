// File: status_convert.h
// The one place absl codes become gRPC codes (they share numbering, so the
// conversion is a cast). The message passes through unchanged up to
// kMaxStatusMessageBytes: a status travels in HTTP/2 headers, and a client
// refuses headers over its metadata limit (8 KiB by default) with
// RESOURCE_EXHAUSTED "received initial metadata size exceeds limit", losing
// the real code and message. Longer messages are cut, saying so.
#pragma once

#include <string>

#include <grpcpp/support/status.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash::service {

inline constexpr size_t kMaxStatusMessageBytes = 4096;

// A status carrying a FixHint (common/fix_hint.h) gets the fix in words,
// with this server's and client's flag names, after its message.
grpc::Status ToGrpcStatus(const absl::Status& status);

// `message`, or its first kMaxStatusMessageBytes (never half a UTF-8
// character) and "... (N more bytes)".
std::string BoundedMessage(absl::string_view message);

}  // namespace dflash::service
