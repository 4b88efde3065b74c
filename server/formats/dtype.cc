#include "formats/dtype.h"

#include <array>
#include <utility>

#include "absl/strings/str_cat.h"

namespace dflash::formats {
namespace {

constexpr std::array<std::pair<DType, absl::string_view>, 10> kNames = {{
    {DType::kF64, "F64"},
    {DType::kF32, "F32"},
    {DType::kF16, "F16"},
    {DType::kBF16, "BF16"},
    {DType::kI64, "I64"},
    {DType::kI32, "I32"},
    {DType::kI16, "I16"},
    {DType::kI8, "I8"},
    {DType::kU8, "U8"},
    {DType::kBool, "BOOL"},
}};

}  // namespace

absl::string_view DTypeName(DType dtype) {
  for (const auto& [d, name] : kNames) {
    if (d == dtype) return name;
  }
  return "?";
}

absl::StatusOr<DType> DTypeFromName(absl::string_view name) {
  for (const auto& [d, n] : kNames) {
    if (n == name) return d;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown dtype '", name, "'; known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL"));
}

int64_t DTypeSize(DType dtype) {
  switch (dtype) {
    case DType::kF64:
    case DType::kI64: return 8;
    case DType::kF32:
    case DType::kI32: return 4;
    case DType::kF16:
    case DType::kBF16:
    case DType::kI16: return 2;
    case DType::kI8:
    case DType::kU8:
    case DType::kBool: return 1;
  }
  return 1;
}

bool IsFloatingPoint(DType dtype) {
  return dtype == DType::kF64 || dtype == DType::kF32 || dtype == DType::kF16 ||
         dtype == DType::kBF16;
}

}  // namespace dflash::formats
