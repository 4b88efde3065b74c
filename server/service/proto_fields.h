// File: proto_fields.h
// What every proto converter shares: the namespace alias `pb`, the shape
// checks on caller-chosen fields (names, ids, labels, counts) and
// timestamps. Split out of proto_convert so the resource, eval and job
// converters each hold one concept and use these once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <google/protobuf/map.h>
#include <google/protobuf/timestamp.pb.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace dflash::eval::v1 {}

namespace dflash::service {

namespace pb = ::dflash::eval::v1;

// Longest resource name, job id, run or label value a request may carry.
inline constexpr size_t kMaxNameBytes = 256;
// Most labels one job may carry or one listing may filter on.
inline constexpr int kMaxLabels = 64;

// A caller-chosen name or id in field `field`: at most kMaxNameBytes, no
// control characters (they would reach log lines). Empty is allowed.
absl::Status CheckName(absl::string_view field, absl::string_view value);
// The same, and empty is INVALID_ARGUMENT "<field> is empty".
absl::Status CheckId(absl::string_view field, absl::string_view value);
// INVALID_ARGUMENT "<field> must be >= 0; got V" for a negative count.
absl::Status NonNegative(absl::string_view field, int64_t value);
// Label keys by the API's rule (label_key.h); values as names. At most
// kMaxLabels.
absl::Status CheckLabels(const google::protobuf::Map<std::string, std::string>& labels);

google::protobuf::Timestamp FromUnixMicros(int64_t micros);

}  // namespace dflash::service
