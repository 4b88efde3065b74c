// File: status_convert.h
// The one place absl codes become gRPC codes (they share numbering, so the
// conversion is a cast; the message passes through unchanged).
#pragma once

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace dflash::service {

grpc::Status ToGrpcStatus(const absl::Status& status);

}  // namespace dflash::service
