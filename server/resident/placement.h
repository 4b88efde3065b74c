// File: placement.h
// Request strings -> torch placement: dtype names and device names.
#pragma once

#include <string>

#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include "absl/status/statusor.h"

namespace dflash::resident {

// "fp32" | "bf16" | "fp16" -> scalar type; InvalidArgument otherwise.
absl::StatusOr<c10::ScalarType> ParseDType(const std::string& dtype);
// kFloat -> "fp32" ...
std::string DTypeLabel(c10::ScalarType type);
// Where and in what dtype a load puts its tensors.
struct Placement {
  std::string device;      // "cpu" | "cuda:N"
  std::string dtype_name;  // "fp32" | "bf16" | "fp16"
  c10::ScalarType dtype;
};

// Request device/dtype ("" = defaults: the server's device; fp32 on CPU,
// bf16 on CUDA) checked and resolved.
absl::StatusOr<Placement> ResolvePlacement(const std::string& device, const std::string& dtype,
                                           const std::string& server_device);

// "" -> `fallback`; "cpu" | "cuda:N" checked against the machine.
absl::StatusOr<std::string> ResolveRequestDevice(const std::string& requested,
                                                 const std::string& fallback);

// Size and mtime of every file under `path` (or of the file): a cheap
// identity of a checkpoint on disk, so an unchanged one is reused unread.
std::string DiskSignature(const std::string& path);

// The resident name a load gets when none is given: the directory's name
// (for a single checkpoint file, its folder's name: "step-4000/ckpt.pt").
std::string DefaultName(const std::string& path);

int64_t NowUnixMicros();

}  // namespace dflash::resident
