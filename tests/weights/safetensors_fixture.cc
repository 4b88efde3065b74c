#include "weights/safetensors_fixture.h"

#include "test_util/safetensors_writer.h"

namespace dflash::weights::testing {

absl::StatusOr<TensorSourcePtr> SafetensorsFileTest::OpenBytes(const std::string& bytes) {
  return OpenSafetensors(dir_.WriteFile("t.safetensors", bytes));
}

absl::StatusOr<TensorSourcePtr> SafetensorsFileTest::OpenHeader(const std::string& header,
                                                                size_t data_bytes) {
  return OpenBytes(dflash::testing::RawSafetensors(header, std::string(data_bytes, '\0')));
}

}  // namespace dflash::weights::testing
