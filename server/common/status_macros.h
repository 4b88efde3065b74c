// File: status_macros.h
// Propagation helpers for absl::Status / absl::StatusOr. Debian's abseil
// (20220623) has no status_macros.h, so we keep small local versions.
//
//   RETURN_IF_ERROR(ReadHeader(path));
//   ASSIGN_OR_RETURN(auto file, OpenSafetensors(path));
//   RETURN_IF_ERROR(Check(x), "loading '", path, "'");   // prefixes context
#pragma once

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace dflash {

// Returns `status` with `context: ` prepended to its message (code unchanged).
template <typename... Args>
absl::Status WithContext(const absl::Status& status, const Args&... context) {
  // No context (plain RETURN_IF_ERROR(expr)): pass the status through as is.
  if constexpr (sizeof...(Args) == 0) return status;
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(context..., ": ", status.message()));
}

namespace internal {
inline const absl::Status& AsStatus(const absl::Status& s) {
  return s;
}
template <typename T>
const absl::Status& AsStatus(const absl::StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace dflash

#define DFLASH_CONCAT_INNER(a, b) a##b
#define DFLASH_CONCAT(a, b) DFLASH_CONCAT_INNER(a, b)

// RETURN_IF_ERROR(expr) or RETURN_IF_ERROR(expr, context pieces...).
#define RETURN_IF_ERROR(expr, ...)                                             \
  do {                                                                         \
    const ::absl::Status dflash_status_ = ::dflash::internal::AsStatus(expr);  \
    if (!dflash_status_.ok()) {                                                \
      return ::dflash::WithContext(dflash_status_ __VA_OPT__(, ) __VA_ARGS__); \
    }                                                                          \
  } while (0)

#define DFLASH_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr, ...)                  \
  auto tmp = (expr);                                                       \
  if (!tmp.ok()) {                                                         \
    return ::dflash::WithContext(tmp.status() __VA_OPT__(, ) __VA_ARGS__); \
  }                                                                        \
  lhs = std::move(tmp).value()

// ASSIGN_OR_RETURN(lhs, expr) or ASSIGN_OR_RETURN(lhs, expr, context...).
#define ASSIGN_OR_RETURN(lhs, expr, ...)                                       \
  DFLASH_ASSIGN_OR_RETURN_IMPL(DFLASH_CONCAT(dflash_statusor_, __LINE__), lhs, \
                               expr __VA_OPT__(, ) __VA_ARGS__)
