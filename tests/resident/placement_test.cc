// resident/placement: dtype and device names from requests, the disk signature
// that lets an unchanged checkpoint be reused, and default resident names.
#include "resident/placement.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/device.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::testing::Eq;
using ::testing::HasSubstr;

class PlacementTest : public ::testing::Test {};

TEST_F(PlacementTest, ParseDType) {
  ASSERT_OK_AND_ASSIGN(c10::ScalarType f, ParseDType("fp32"));
  EXPECT_EQ(f, c10::kFloat);
  ASSERT_OK_AND_ASSIGN(c10::ScalarType b, ParseDType("bf16"));
  EXPECT_EQ(b, c10::kBFloat16);
  ASSERT_OK_AND_ASSIGN(c10::ScalarType h, ParseDType("fp16"));
  EXPECT_EQ(h, c10::kHalf);
  for (const char* bad : {"float32", "", "FP32", "fp64"}) {
    EXPECT_THAT(ParseDType(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq(std::string("dtype '") + bad + "' is not one of fp32, bf16, fp16")));
  }
}

TEST_F(PlacementTest, DTypeLabel) {
  EXPECT_EQ(DTypeLabel(c10::kFloat), "fp32");
  EXPECT_EQ(DTypeLabel(c10::kBFloat16), "bf16");
  EXPECT_EQ(DTypeLabel(c10::kHalf), "fp16");
  EXPECT_EQ(DTypeLabel(c10::kDouble), "Double");  // c10's own name otherwise
}

TEST_F(PlacementTest, DefaultsFollowTheServerDevice) {
  ASSERT_OK_AND_ASSIGN(Placement cpu, ResolvePlacement("", "", "cpu"));
  EXPECT_EQ(cpu.device, "cpu");
  EXPECT_EQ(cpu.dtype_name, "fp32");
  EXPECT_EQ(cpu.dtype, c10::kFloat);
  // The server's device is already resolved: it is not checked again.
  ASSERT_OK_AND_ASSIGN(Placement gpu, ResolvePlacement("", "", "cuda:0"));
  EXPECT_EQ(gpu.device, "cuda:0");
  EXPECT_EQ(gpu.dtype_name, "bf16");
  EXPECT_EQ(gpu.dtype, c10::kBFloat16);
  ASSERT_OK_AND_ASSIGN(Placement half, ResolvePlacement("cpu", "fp16", "cuda:0"));
  EXPECT_EQ(half.device, "cpu");
  EXPECT_EQ(half.dtype_name, "fp16");
}

TEST_F(PlacementTest, BadRequestDevices) {
  EXPECT_THAT(ResolvePlacement("auto", "", "cpu"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("device 'auto' is for the server flag; give cpu or cuda:N")));
  for (const char* bad : {"gpu", "cuda:x", "cuda:-1", "CPU"}) {
    EXPECT_THAT(ResolveRequestDevice(bad, "cpu"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq(std::string("device '") + bad + "' is not one of cpu, cuda, cuda:N")));
  }
  EXPECT_THAT(ResolvePlacement("cpu", "int8", "cpu"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("dtype 'int8' is not one of fp32, bf16, fp16")));
}

TEST_F(PlacementTest, CudaRequestWithoutCuda) {
  if (CudaAvailable()) {
    ASSERT_OK_AND_ASSIGN(std::string d, ResolveRequestDevice("cuda", "cpu"));
    EXPECT_EQ(d, "cuda:0");
    return;
  }
  EXPECT_THAT(
      ResolveRequestDevice("cuda:0", "cpu"),
      StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("cuda:0: CUDA is not available")));
  ASSERT_OK_AND_ASSIGN(std::string d, ResolveRequestDevice("cpu", "cuda:0"));
  EXPECT_EQ(d, "cpu");
}

TEST_F(PlacementTest, DiskSignatureChangesWithTheFiles) {
  TempDir dir;
  const std::string ckpt = dir.Join("step-4000");
  dir.WriteFile("step-4000/config.json", "{}");
  dir.WriteFile("step-4000/model.safetensors", "abcd");
  const std::string a = DiskSignature(ckpt);
  EXPECT_THAT(a, HasSubstr(ckpt + "/config.json:2:"));
  EXPECT_THAT(a, HasSubstr(ckpt + "/model.safetensors:4:"));
  // Sorted by name: config.json first.
  EXPECT_LT(a.find("config.json"), a.find("model.safetensors"));
  EXPECT_EQ(DiskSignature(ckpt), a);
  dir.WriteFile("step-4000/model.safetensors", "abcdef");
  const std::string b = DiskSignature(ckpt);
  EXPECT_NE(b, a);
  EXPECT_THAT(b, HasSubstr(ckpt + "/model.safetensors:6:"));
  // A file: its own entry; nothing there: empty.
  EXPECT_THAT(DiskSignature(ckpt + "/config.json"), HasSubstr(ckpt + "/config.json:2:"));
  EXPECT_EQ(DiskSignature(dir.Join("absent")), "");
}

TEST_F(PlacementTest, DefaultName) {
  TempDir dir;
  dir.WriteFile("run-a/step-4000/ckpt.pt", "x");
  EXPECT_EQ(DefaultName(dir.Join("run-a/step-4000")), "step-4000");
  EXPECT_EQ(DefaultName(dir.Join("run-a/step-4000") + "/"), "step-4000");
  EXPECT_EQ(DefaultName(dir.Join("run-a/step-4000/ckpt.pt")), "step-4000");
  EXPECT_EQ(DefaultName("ckpt.pt"), "ckpt");  // a bare file name: its stem
}

TEST_F(PlacementTest, NowUnixMicrosIsNow) {
  const int64_t a = NowUnixMicros();
  EXPECT_GT(a, int64_t{1700000000} * 1000000);  // after 2023
  EXPECT_GE(NowUnixMicros(), a);
}

}  // namespace
}  // namespace dflash::resident
