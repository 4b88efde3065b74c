// File: label_key.h
// What a job label key may be, part of the API: the server enforces it
// (CheckLabels, service/proto_fields.cc) and the client checks --label before sending.
// 1 to 63 ASCII letters, digits, '_', '-', '.', '/'.
#pragma once

#include <cstddef>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace dflash::eval::v1 {

inline constexpr size_t kMaxLabelKeyBytes = 63;

inline bool IsValidLabelKey(absl::string_view key) {
  if (key.empty() || key.size() > kMaxLabelKeyBytes) return false;
  for (char c : key) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.' &&
        c != '/') {
      return false;
    }
  }
  return true;
}

}  // namespace dflash::eval::v1
