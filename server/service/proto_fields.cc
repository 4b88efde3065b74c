#include "service/proto_fields.h"

#include <google/protobuf/util/time_util.h>

#include <map>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status_macros.h"
#include "dflash/eval/v1/label_key.h"

namespace dflash::service {

absl::Status CheckName(absl::string_view field, absl::string_view value) {
  if (value.size() > kMaxNameBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, " is ", value.size(), " bytes long; at most ", kMaxNameBytes, " are allowed"));
  }
  for (size_t i = 0; i < value.size(); ++i) {
    const auto c = static_cast<unsigned char>(value[i]);
    if (c < 0x20 || c == 0x7F) {
      return absl::InvalidArgumentError(absl::StrCat(field, " contains control character ",
                                                     absl::StrFormat("0x%02x", c), " at byte ", i));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckId(absl::string_view field, absl::string_view value) {
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(field, " is empty"));
  return CheckName(field, value);
}

absl::Status NonNegative(absl::string_view field, int64_t value) {
  if (value < 0) {
    return absl::InvalidArgumentError(absl::StrCat(field, " must be >= 0; got ", value));
  }
  return absl::OkStatus();
}

absl::Status CheckLabels(const google::protobuf::Map<std::string, std::string>& labels) {
  if (labels.size() > kMaxLabels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "labels has ", labels.size(), " entries; at most ", kMaxLabels, " are allowed"));
  }
  // Sorted, so the first bad label reported does not depend on hashing.
  const std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  for (const auto& [key, value] : sorted) {
    if (!pb::IsValidLabelKey(key)) {
      return absl::InvalidArgumentError(
          absl::StrCat("labels key '", absl::CHexEscape(key),
                       "' is not 1 to 63 letters, digits, '_', '-', '.', '/'"));
    }
    RETURN_IF_ERROR(CheckName(absl::StrCat("labels['", key, "']"), value));
  }
  return absl::OkStatus();
}

google::protobuf::Timestamp FromUnixMicros(int64_t micros) {
  return google::protobuf::util::TimeUtil::MicrosecondsToTimestamp(micros);
}

}  // namespace dflash::service
