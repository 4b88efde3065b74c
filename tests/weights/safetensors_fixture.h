// File: safetensors_fixture.h
// The fixture of the single-file safetensors reader's tests
// (safetensors_file_test.cc, safetensors_defects_test.cc): a temporary
// folder and opening hand-written bytes from it.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "test_util/temp_dir.h"
#include "weights/safetensors_file.h"

namespace dflash::weights::testing {

class SafetensorsFileTest : public ::testing::Test {
 protected:
  // Writes `bytes` as a file and opens it.
  absl::StatusOr<TensorSourcePtr> OpenBytes(const std::string& bytes);
  // A one-tensor header around `entry` with `data_bytes` zero bytes of data.
  absl::StatusOr<TensorSourcePtr> OpenHeader(const std::string& header, size_t data_bytes);

  dflash::testing::TempDir dir_;
};

}  // namespace dflash::weights::testing
