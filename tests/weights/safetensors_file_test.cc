// The safetensors reader on good files: every dtype bit-exact, file order,
// zero-size and scalar tensors, metadata, alignment and the shared mapping,
// tensors outliving their source, and released bytes leaving RSS.
#include "weights/safetensors_file.h"

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "weights/safetensors_fixture.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::RawSafetensors;
using ::dflash::testing::SafetensorsWriter;
using ::dflash::weights::testing::SafetensorsFileTest;
using ::testing::ElementsAre;

std::string U16Bytes(const std::vector<uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

std::string TensorBytes(const at::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
}

// ---- happy paths ---------------------------------------------------------

TEST_F(SafetensorsFileTest, EveryDtypeReadsBackBitExact) {
  const std::string f16 = U16Bytes({0x3c00, 0x7c00, 0x0001, 0xfbff, 0x8000, 0x7e00});
  const std::string bf16 = U16Bytes({0x3f80, 0x7f80, 0x0001, 0xff7f, 0x8000, 0x7fc1});
  SafetensorsWriter w;
  w.AddValues("f64", "F64", {2}, {1.0 / 3.0, -1e300})
      .AddValues("f32", "F32", {2, 2}, {1.5, -2.25, 3.0e-38, 65504})
      .Add("f16", "F16", {2, 3}, f16)
      .Add("bf16", "BF16", {3, 2}, bf16)
      .AddValues("i64", "I64", {2}, {-9007199254740991.0, 42})
      .AddValues("i32", "I32", {3}, {-2147483648.0, 0, 2147483647.0})
      .AddValues("i16", "I16", {2}, {-32768, 32767})
      .AddValues("i8", "I8", {2}, {-128, 127})
      .AddValues("u8", "U8", {3}, {0, 128, 255})
      .AddValues("bool", "BOOL", {1, 3}, {1, 0, 1});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src,
                       OpenSafetensors(w.WriteTo(dir_.Join("all.safetensors"))));

  struct Want {
    const char* name;
    at::ScalarType type;
    std::vector<int64_t> shape;
  };
  const std::vector<Want> wants = {
      {"f64", at::kDouble, {2}},       {"f32", at::kFloat, {2, 2}}, {"f16", at::kHalf, {2, 3}},
      {"bf16", at::kBFloat16, {3, 2}}, {"i64", at::kLong, {2}},     {"i32", at::kInt, {3}},
      {"i16", at::kShort, {2}},        {"i8", at::kChar, {2}},      {"u8", at::kByte, {3}},
      {"bool", at::kBool, {1, 3}},
  };
  const std::string file = w.Bytes();
  size_t data_start = 8 + w.HeaderJson().size();
  size_t offset = 0;
  for (const Want& want : wants) {
    SCOPED_TRACE(want.name);
    ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read(want.name));
    EXPECT_EQ(t.scalar_type(), want.type);
    EXPECT_EQ(t.sizes().vec(), want.shape);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.device().type(), at::kCPU);
    const std::string stored = file.substr(data_start + offset, t.nbytes());
    EXPECT_EQ(TensorBytes(t), stored);
    offset += t.nbytes();
  }
  ASSERT_OK_AND_ASSIGN(at::Tensor f16_t, src->Read("f16"));
  EXPECT_EQ(f16_t.flatten()[0].item<float>(), 1.0f);
  EXPECT_TRUE(std::isinf(f16_t.flatten()[1].item<float>()));
  ASSERT_OK_AND_ASSIGN(at::Tensor bf16_t, src->Read("bf16"));
  EXPECT_EQ(bf16_t.flatten()[0].item<float>(), 1.0f);
  ASSERT_OK_AND_ASSIGN(at::Tensor f64_t, src->Read("f64"));
  EXPECT_EQ(f64_t[0].item<double>(), 1.0 / 3.0);
  ASSERT_OK_AND_ASSIGN(at::Tensor i64_t, src->Read("i64"));
  EXPECT_EQ(i64_t[0].item<int64_t>(), -9007199254740991LL);
}

TEST_F(SafetensorsFileTest, WriterHalfConversionMatchesTorch) {
  const std::vector<double> values = {0.1, -3.14159, 65504, 1e-7, 70000, 1.0009765625, -0.0};
  SafetensorsWriter w;
  w.AddValues("h", "F16", {7}, values).AddValues("b", "BF16", {7}, values);
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  at::Tensor ref = at::tensor(std::vector<float>(values.begin(), values.end()));
  ASSERT_OK_AND_ASSIGN(at::Tensor h, src->Read("h"));
  ASSERT_OK_AND_ASSIGN(at::Tensor b, src->Read("b"));
  EXPECT_EQ(TensorBytes(h), TensorBytes(ref.to(at::kHalf)));
  EXPECT_EQ(TensorBytes(b), TensorBytes(ref.to(at::kBFloat16)));
}

TEST_F(SafetensorsFileTest, ListsTensorsInFileOrder) {
  SafetensorsWriter w;
  w.AddValues("z.weight", "F32", {2, 3}, {1, 2, 3, 4, 5, 6})
      .AddValues("a.bias", "BF16", {3}, {1, 2, 3});
  const std::string path = w.WriteTo(dir_.Join("m.safetensors"));
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenSafetensors(path));
  EXPECT_EQ(src->format(), "safetensors");
  EXPECT_EQ(src->path(), path);
  EXPECT_THAT(src->names(), ElementsAre("z.weight", "a.bias"));
  const TensorInfo* info = src->Find("a.bias");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->dtype, formats::DType::kBF16);
  EXPECT_EQ(info->shape, std::vector<int64_t>({3}));
  EXPECT_EQ(info->nbytes, 6);
  EXPECT_EQ(info->file, path);
}

TEST_F(SafetensorsFileTest, ZeroSizeAndScalarTensors) {
  SafetensorsWriter w;
  w.Add("empty", "F32", {0, 4}, "").AddValues("scalar", "F32", {}, {7.5});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  ASSERT_OK_AND_ASSIGN(at::Tensor e, src->Read("empty"));
  EXPECT_EQ(e.sizes().vec(), std::vector<int64_t>({0, 4}));
  EXPECT_EQ(e.numel(), 0);
  ASSERT_OK_AND_ASSIGN(at::Tensor s, src->Read("scalar"));
  EXPECT_EQ(s.dim(), 0);
  EXPECT_EQ(s.item<float>(), 7.5f);
}

TEST_F(SafetensorsFileTest, EmptyFileHeaderIsValid) {
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(RawSafetensors("{}", "")));
  EXPECT_TRUE(src->tensors().empty());
}

TEST_F(SafetensorsFileTest, MetadataIsTolerated) {
  SafetensorsWriter w;
  w.Metadata("format", "pt").Metadata("note", "x").AddValues("w", "F32", {1}, {2});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  EXPECT_THAT(src->names(), ElementsAre("w"));
}

TEST_F(SafetensorsFileTest, MisalignedDataIsCopiedAligned) {
  SafetensorsWriter w;  // "pad" puts "w" at an odd offset
  w.AddValues("pad", "U8", {1}, {9}).AddValues("w", "F32", {3}, {1.5, -2, 3.25});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read("w"));
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.data_ptr()) % 4, 0u);
  EXPECT_EQ(t[0].item<float>(), 1.5f);
  EXPECT_EQ(t[1].item<float>(), -2.0f);
  EXPECT_EQ(t[2].item<float>(), 3.25f);
}

TEST_F(SafetensorsFileTest, AlignedReadsShareTheMapping) {
  SafetensorsWriter w;
  w.AddValues("w", "F32", {4}, {1, 2, 3, 4});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  ASSERT_OK_AND_ASSIGN(at::Tensor a, src->Read("w"));
  ASSERT_OK_AND_ASSIGN(at::Tensor b, src->Read("w"));
  EXPECT_EQ(a.data_ptr(), b.data_ptr());  // zero-copy
}

TEST_F(SafetensorsFileTest, TensorOutlivesItsSource) {
  SafetensorsWriter w;
  w.AddValues("w", "F32", {2, 2}, {1, 2, 3, 4});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read("w"));
  src.reset();  // the mapping must stay alive through the tensor
  EXPECT_EQ(t.sum().item<float>(), 10.0f);
  EXPECT_EQ(t[1][1].item<float>(), 4.0f);
}

TEST_F(SafetensorsFileTest, InPlaceWritesNeverReachTheFile) {
  SafetensorsWriter w;
  w.AddValues("w", "F32", {2}, {1, 2});
  const std::string path = w.WriteTo(dir_.Join("m.safetensors"));
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenSafetensors(path));
  ASSERT_OK_AND_ASSIGN(at::Tensor t, src->Read("w"));
  t.add_(100);
  EXPECT_EQ(t[0].item<float>(), 101.0f);
  EXPECT_EQ(::dflash::testing::ReadFileOrEmpty(path), w.Bytes());
}

// RssFile of this process, in bytes (the mapped file pages it holds).
int64_t RssFileBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("RssFile:", 0) == 0) return std::stoll(line.substr(8)) * 1024;
  }
  return -1;
}

// A load copies each tensor and then releases its mapped pages, so its peak
// is what it keeps, not that plus the file. The data stays readable.
TEST_F(SafetensorsFileTest, ReleasedBytesLeaveRssAndReadAgainFromTheFile) {
  const int64_t n = 4 << 20;  // 16 MiB of F32
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[static_cast<size_t>(i)] = static_cast<double>(i % 1000);
  SafetensorsWriter w;
  w.AddValues("big", "F32", {n}, values).AddValues("next", "F32", {3}, {7, 8, 9});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src,
                       OpenSafetensors(w.WriteTo(dir_.Join("big.safetensors"))));
  ASSERT_OK_AND_ASSIGN(at::Tensor big, src->Read("big"));
  ASSERT_OK_AND_ASSIGN(at::Tensor next, src->Read("next"));
  const double sum = big.sum(at::kDouble).item<double>();  // faults every page in
  const int64_t before = RssFileBytes();
  ASSERT_GT(before, 0);
  src->ReleaseBytes("big");
  const int64_t after = RssFileBytes();
  EXPECT_GE(before - after, 12 << 20) << "RssFile " << before << " -> " << after;
  EXPECT_EQ(big.sum(at::kDouble).item<double>(), sum);
  EXPECT_EQ(next[2].item<float>(), 9.0f);  // the shared boundary page reads back
  src->ReleaseBytes("no such tensor");     // ignored
}

// ---- one test per defect -------------------------------------------------
}  // namespace
}  // namespace dflash::weights
