// The checkpoint element types (formats/dtype.h): every safetensors spelling
// round-trips with its size and kind, and an unknown one is named.
#include "formats/dtype.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;

TEST(DTypeTest, EveryNameRoundTripsWithItsSize) {
  struct Row {
    DType dtype;
    const char* name;
    int64_t size;
    bool floating;
  };
  const Row rows[] = {
      {DType::kF64, "F64", 8, true},  {DType::kF32, "F32", 4, true},
      {DType::kF16, "F16", 2, true},  {DType::kBF16, "BF16", 2, true},
      {DType::kI64, "I64", 8, false}, {DType::kI32, "I32", 4, false},
      {DType::kI16, "I16", 2, false}, {DType::kI8, "I8", 1, false},
      {DType::kU8, "U8", 1, false},   {DType::kBool, "BOOL", 1, false},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(DTypeName(r.dtype), r.name);
    ASSERT_OK_AND_ASSIGN(DType parsed, DTypeFromName(r.name));
    EXPECT_EQ(parsed, r.dtype) << r.name;
    EXPECT_EQ(DTypeSize(r.dtype), r.size) << r.name;
    EXPECT_EQ(IsFloatingPoint(r.dtype), r.floating) << r.name;
  }
}

// Names are the safetensors spelling exactly: no lower case, no torch names.
TEST(DTypeTest, UnknownNamesAreRefusedByName) {
  for (const char* name : {"f32", "float32", "", "F8_E4M3"}) {
    EXPECT_THAT(DTypeFromName(name),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         ::testing::Eq(std::string("unknown dtype '") + name +
                                       "'; known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, "
                                       "BOOL")));
  }
}

}  // namespace
}  // namespace dflash::formats
