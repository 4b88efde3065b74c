#include "weights/byte_scan.h"

#include <cmath>
#include <cstdint>
#include <limits>

#include <ATen/ATen.h>

#include "gtest/gtest.h"
#include "weights/fingerprint.h"

namespace dflash::weights {
namespace {

// 300000 elements: several 256 KiB pieces and a short last one in every
// dtype, so a piece boundary falls inside the tensor.
constexpr int64_t kNumel = 300000;

uint64_t Scan(const at::Tensor& t, bool* finite) {
  ByteHasher h(42);
  *finite = true;
  HashAndCheckFinite(t.data_ptr(), static_cast<int64_t>(t.nbytes()), t.scalar_type(), h, finite);
  return h.Finish();
}

TEST(ByteScanTest, HashEqualsOnePassAndFindsNonFiniteInAnyPiece) {
  for (const at::ScalarType dt : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(dt));
    ASSERT_TRUE(HasFiniteBitTest(dt));
    const at::Tensor t = at::randn({kNumel}).to(dt);
    bool finite = false;
    EXPECT_EQ(Scan(t, &finite), HashBytes64(t.data_ptr(), t.nbytes(), 42));
    EXPECT_TRUE(finite);
    // First element, past the first piece, the very last element.
    for (const int64_t pos : {int64_t{0}, int64_t{140000}, kNumel - 1}) {
      for (const double bad : {std::nan(""), HUGE_VAL, -HUGE_VAL}) {
        at::Tensor u = t.clone();
        u[pos] = bad;
        EXPECT_EQ(Scan(u, &finite), HashBytes64(u.data_ptr(), u.nbytes(), 42))
            << "at " << pos << " value " << bad;
        EXPECT_FALSE(finite) << "at " << pos << " value " << bad;
      }
    }
  }
}

TEST(ByteScanTest, EmptyAndIntegerTensors) {
  bool finite = false;
  const at::Tensor empty = at::zeros({0});
  EXPECT_EQ(Scan(empty, &finite), HashBytes64(nullptr, 0, 42));
  EXPECT_TRUE(finite);
  const at::Tensor ints = at::arange(100000, at::kLong);
  EXPECT_TRUE(HasFiniteBitTest(at::kLong));
  EXPECT_EQ(Scan(ints, &finite), HashBytes64(ints.data_ptr(), ints.nbytes(), 42));
  EXPECT_TRUE(finite);
  // Complex values have no bit test: the load checks them with at::isfinite.
  EXPECT_FALSE(HasFiniteBitTest(at::kComplexFloat));
}

}  // namespace
}  // namespace dflash::weights
