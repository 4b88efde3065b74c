// resident/device: the --device list, entry by entry.
#include "resident/device.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::HasSubstr;

TEST(DeviceTest, ResolveDevicesReadsAList) {
  ASSERT_OK_AND_ASSIGN(std::vector<DeviceChoice> two, ResolveDevices("cpu,cpu"));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].device, "cpu");
  EXPECT_EQ(two[1].device, "cpu");
  EXPECT_THAT(ResolveDevices("cpu,,cpu"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("--device 'cpu,,cpu' has an empty entry; list devices as cpu,cpu or "
                          "cuda:0,cuda:1")));
  EXPECT_THAT(ResolveDevices("cpu,gpu"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("--device 'gpu' is not one of auto, cpu, cuda, cuda:N")));
  if (!CudaAvailable()) {
    EXPECT_THAT(ResolveDevices("cpu,cuda:1"), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                       HasSubstr("CUDA is not available")));
  }
}

}  // namespace
}  // namespace dflash::resident
