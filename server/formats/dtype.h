// File: dtype.h
// Element types as checkpoints store them, independent of libtorch, so that
// header parsers (and their fuzzers) need no torch.
#pragma once

#include <cstdint>
#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"

namespace dflash::formats {

enum class DType { kF64, kF32, kF16, kBF16, kI64, kI32, kI16, kI8, kU8, kBool };

// The safetensors spelling: "F32", "BF16", "I64", "U8", "BOOL", ...
absl::string_view DTypeName(DType dtype);

// Parses the safetensors spelling. InvalidArgument names the unknown string.
absl::StatusOr<DType> DTypeFromName(absl::string_view name);

// Bytes per element.
int64_t DTypeSize(DType dtype);

bool IsFloatingPoint(DType dtype);

}  // namespace dflash::formats
