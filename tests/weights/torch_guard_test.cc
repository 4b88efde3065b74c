// TorchGuard (common/torch_guard.h) at the weights boundary: an allocation
// failure, on CUDA or the host, becomes ResourceExhausted (the job fails, the
// server keeps serving); any other libtorch error is Internal.
#include "common/torch_guard.h"

#include <new>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

class TorchGuardTest : public ::testing::Test {};

TEST_F(TorchGuardTest, CudaOutOfMemoryIsResourceExhausted) {
  // What the CUDA caching allocator throws (its message, line one kept).
  absl::Status s = TorchGuard("scoring block 3", [] {
    throw c10::OutOfMemoryError(
        {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
        "CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.35 GiB total capacity)");
  });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted,
                          HasSubstr("scoring block 3: CUDA out of memory. Tried to allocate "
                                    "2.00 GiB (GPU 0; 79.35 GiB total capacity)")));
}

TEST_F(TorchGuardTest, OutOfMemoryErrorIsKnownByTypeNotOnlyByMessage) {
  absl::Status s = TorchGuard("converting", [] {
    throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                                "allocator refused 8 bytes");
  });
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kResourceExhausted,
                          HasSubstr("converting: out of memory (allocator refused 8 bytes")));
}

TEST_F(TorchGuardTest, HostBadAllocIsResourceExhausted) {
  absl::Status s = TorchGuard("reading", [] { throw std::bad_alloc(); });
  EXPECT_THAT(
      s, StatusIs(absl::StatusCode::kResourceExhausted, "reading: out of memory (std::bad_alloc)"));
}

TEST_F(TorchGuardTest, OtherTorchErrorsAreInternal) {
  absl::StatusOr<at::Tensor> t = TorchGuard("multiplying", [] {
    return at::matmul(at::ones({2, 3}), at::ones({2, 3}));
  });
  EXPECT_THAT(t.status(), StatusIs(absl::StatusCode::kInternal, HasSubstr("multiplying: ")));
}

}  // namespace
}  // namespace dflash
