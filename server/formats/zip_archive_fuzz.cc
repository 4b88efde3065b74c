// File: zip_archive_fuzz.cc
// libFuzzer target for the zip reader under torch.save files (torch-free):
// Open and every read either succeed or say InvalidArgument with a message;
// a read never writes past the buffer it was given (ASan checks) and a
// successful one returns exactly the declared bytes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "formats/zip_archive.h"

namespace {

bool Refused(const absl::Status& st) {
  return st.code() == absl::StatusCode::kInvalidArgument && !st.message().empty();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using dflash::formats::ZipArchive;
  const absl::string_view bytes(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<ZipArchive> zip = ZipArchive::Open(bytes);
  if (!zip.ok()) {
    if (!Refused(zip.status())) __builtin_trap();
    return 0;
  }
  for (const auto& e : zip->entries()) {
    if (zip->Find(e.name) != &e) __builtin_trap();
    absl::StatusOr<uint64_t> at = zip->DataOffset(e);
    if (!at.ok() ? !Refused(at.status()) : *at + e.compressed_size > size) __builtin_trap();
    if (e.uncompressed_size > (uint64_t{1} << 20)) continue;  // the caller's limits apply
    std::string out(e.uncompressed_size, '\0');
    absl::Status st = zip->ReadInto(e, out.data(), out.size());
    if (!st.ok() && !Refused(st)) __builtin_trap();
  }
  return 0;
}
