// File: safetensors_header_fuzz.cc
// libFuzzer target for the safetensors header parser (torch-free). Each
// input is tried as a whole file (8-byte length + header + data) and as bare
// header JSON. Besides crashes and sanitizer reports it traps when an
// accepted layout breaks the promises the reader relies on: ranges that
// tile the data section exactly, byte counts equal to numel x element size,
// and InvalidArgument as the only error code.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "formats/safetensors_header.h"

namespace {

using dflash::formats::DTypeSize;
using dflash::formats::SafetensorsEntry;

void CheckError(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument || status.message().empty()) {
    __builtin_trap();
  }
}

void CheckEntries(const std::vector<SafetensorsEntry>& entries, uint64_t data_bytes) {
  uint64_t covered = 0;
  for (const SafetensorsEntry& e : entries) {
    if (e.begin != covered || e.end < e.begin || e.end > data_bytes) __builtin_trap();
    uint64_t bytes = static_cast<uint64_t>(DTypeSize(e.dtype));
    for (int64_t d : e.shape) {
      if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
        __builtin_trap();
      }
    }
    if (bytes != e.nbytes()) __builtin_trap();
    covered = e.end;
  }
  if (covered != data_bytes) __builtin_trap();
}

void TryHeader(absl::string_view json, uint64_t data_bytes) {
  auto entries = dflash::formats::ParseSafetensorsHeader(json, data_bytes);
  if (entries.ok())
    CheckEntries(*entries, data_bytes);
  else
    CheckError(entries.status());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);

  auto layout = dflash::formats::ParseSafetensorsBytes(bytes);
  if (layout.ok()) {
    if (layout->data_start != 8 + layout->header_bytes ||
        layout->data_start + layout->data_bytes != size) {
      __builtin_trap();
    }
    CheckEntries(layout->entries, layout->data_bytes);
  } else {
    CheckError(layout.status());
  }

  // Bare header JSON against an empty and a non-empty data section.
  TryHeader(bytes, 0);
  TryHeader(bytes, size);
  return 0;
}
