// libFuzzer target: the restricted unpickler must turn any bytes into a value
// or an InvalidArgument, never a crash, leak or unbounded allocation.
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "formats/pickle_reader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto result =
      dflash::formats::ParsePickle(absl::string_view(reinterpret_cast<const char*>(data), size));
  if (result.ok()) (void)dflash::formats::DescribePickleValue(**result);
  return 0;
}
