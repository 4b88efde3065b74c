// libFuzzer target: whatever the unpickler accepts, flattening it into
// tensor records (training wrappers, nested dicts, storages) ends in records
// or an InvalidArgument, never a crash, leak or unbounded allocation.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "formats/pickle_flatten.h"
#include "formats/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto value =
      dflash::formats::ParsePickle(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (value.ok()) (void)dflash::formats::FlattenPickle(**value);
  return 0;
}
