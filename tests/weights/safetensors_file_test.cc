#include "weights/safetensors_file.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::RawSafetensors;
using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::WriteShardedSafetensors;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Code = absl::StatusCode;

std::string U16Bytes(const std::vector<uint16_t>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * 2);
}

std::string TensorBytes(const at::Tensor& t) {
  return std::string(static_cast<const char*>(t.data_ptr()), t.nbytes());
}

class SafetensorsFileTest : public ::testing::Test {
 protected:
  // Writes `bytes` as a file and opens it.
  absl::StatusOr<TensorSourcePtr> OpenBytes(const std::string& bytes) {
    return OpenSafetensors(dir_.WriteFile("t.safetensors", bytes));
  }
  // A one-tensor header around `entry` with `data_bytes` zero bytes of data.
  absl::StatusOr<TensorSourcePtr> OpenHeader(const std::string& header, size_t data_bytes) {
    return OpenBytes(RawSafetensors(header, std::string(data_bytes, '\0')));
  }
  TempDir dir_;
};

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

TEST_F(SafetensorsFileTest, MissingFileIsNotFound) {
  const std::string path = dir_.Join("absent.safetensors");
  EXPECT_THAT(OpenSafetensors(path),
              StatusIs(Code::kNotFound, HasSubstr("no such file '" + path + "'")));
}

TEST_F(SafetensorsFileTest, DirectoryIsRejected) {
  EXPECT_THAT(OpenSafetensors(dir_.path()),
              StatusIs(Code::kInvalidArgument, HasSubstr("is not a regular file")));
}

TEST_F(SafetensorsFileTest, FileShorterThanEightBytes) {
  EXPECT_THAT(OpenBytes("abcde"),
              StatusIs(Code::kInvalidArgument,
                       AllOf(HasSubstr("t.safetensors"),
                             HasSubstr("file is 5 bytes; a safetensors file starts with "
                                       "an 8-byte little-endian header length"))));
  EXPECT_THAT(OpenBytes(""), StatusIs(Code::kInvalidArgument, HasSubstr("file is 0 bytes")));
}

TEST_F(SafetensorsFileTest, HeaderLengthPastEndOfFile) {
  EXPECT_THAT(
      OpenBytes(RawSafetensors("{}", "", 100)),
      StatusIs(Code::kInvalidArgument, HasSubstr("header length 100 runs past the end of the file "
                                                 "(8 + 100 > 10 bytes)")));
}

TEST_F(SafetensorsFileTest, HeaderLengthOverCap) {
  EXPECT_THAT(
      OpenBytes(RawSafetensors("{}", "", formats::kMaxSafetensorsHeaderBytes + 1)),
      StatusIs(Code::kInvalidArgument, HasSubstr("header length 104857601 exceeds the limit of "
                                                 "104857600 bytes")));
  EXPECT_THAT(OpenBytes(RawSafetensors("{}", "", ~0ull)),
              StatusIs(Code::kInvalidArgument, HasSubstr("exceeds the limit")));
}

TEST_F(SafetensorsFileTest, HeaderNotJson) {
  EXPECT_THAT(OpenHeader("{\"a\": {\"dtype\": ", 0),
              StatusIs(Code::kInvalidArgument, HasSubstr("header is not valid JSON: ")));
  EXPECT_THAT(OpenHeader("\xff\xfe", 0),
              StatusIs(Code::kInvalidArgument, HasSubstr("header is not valid JSON")));
}

TEST_F(SafetensorsFileTest, HeaderNestedTooDeep) {
  EXPECT_THAT(
      OpenHeader(std::string(100000, '[') + std::string(100000, ']'), 0),
      StatusIs(Code::kInvalidArgument, HasSubstr("header JSON nests deeper than 16 levels")));
}

TEST_F(SafetensorsFileTest, HeaderJsonNotAnObject) {
  EXPECT_THAT(
      OpenHeader("[1, 2]", 0),
      StatusIs(Code::kInvalidArgument, HasSubstr("header JSON is an array; expected an object")));
}

TEST_F(SafetensorsFileTest, MetadataNotStrings) {
  EXPECT_THAT(OpenHeader(R"({"__metadata__": {"k": 3}})", 0),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("'__metadata__' key 'k' holds a number; expected a string")));
  EXPECT_THAT(OpenHeader(R"({"__metadata__": [1]})", 0),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("'__metadata__' is an array; expected an object of strings")));
}

TEST_F(SafetensorsFileTest, TensorEntryNotAnObject) {
  EXPECT_THAT(
      OpenHeader(R"({"w": "F32"})", 0),
      StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': is a string; expected an object")));
}

TEST_F(SafetensorsFileTest, MissingFields) {
  EXPECT_THAT(OpenHeader(R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4),
              StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': has no \"dtype\"")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4),
              StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': has no \"shape\"")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F32", "shape": [1]}})", 4),
              StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': has no \"data_offsets\"")));
}

TEST_F(SafetensorsFileTest, UnknownDtype) {
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})", 1),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'w': unknown dtype 'F8'; known: F64, F32")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'w': \"dtype\" is a number; expected a string")));
}

TEST_F(SafetensorsFileTest, NegativeOrNonIntegerShape) {
  EXPECT_THAT(
      OpenHeader(R"({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 0]}})", 0),
      StatusIs(Code::kInvalidArgument,
               HasSubstr("tensor 'w': \"shape\" entry 1 is -1; expected a non-negative integer")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 0]}})", 0),
              StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': \"shape\" entry 0 is 2.5")));
  EXPECT_THAT(
      OpenHeader(R"({"w": {"dtype": "F32", "shape": ["2"], "data_offsets": [0, 0]}})", 0),
      StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': \"shape\" entry 0 is \"2\"")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F32", "shape": 4, "data_offsets": [0, 16]}})", 16),
              StatusIs(Code::kInvalidArgument, HasSubstr("tensor 'w': \"shape\" is a number")));
}

TEST_F(SafetensorsFileTest, ShapeProductOverflows) {
  EXPECT_THAT(
      OpenHeader(
          R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 0]}})",
          0),
      StatusIs(Code::kInvalidArgument,
               HasSubstr("tensor 'w': shape [4294967296, 4294967296] of F32 needs more "
                         "than 2^63 bytes")));
  // A zero dimension makes any product empty: not an overflow.
  EXPECT_OK(OpenHeader(
      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 0], "data_offsets": [0, 0]}})",
      0));
}

TEST_F(SafetensorsFileTest, MalformedDataOffsets) {
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [0]}})", 1),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'w': \"data_offsets\" is [0]; expected [begin, end]")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "U8", "shape": [1], "data_offsets": [-1, 0]}})", 1),
              StatusIs(Code::kInvalidArgument, HasSubstr("\"data_offsets\" is [-1,0]")));
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "U8", "shape": [0], "data_offsets": [4, 2]}})", 4),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'w': data_offsets [4, 2] end before they begin")));
}

TEST_F(SafetensorsFileTest, DataOffsetsOutsideDataSection) {
  EXPECT_THAT(OpenHeader(R"({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 8),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'w': data_offsets [0, 16] end past the data section "
                                 "(8 bytes)")));
}

TEST_F(SafetensorsFileTest, ByteCountMismatch) {
  EXPECT_THAT(
      OpenHeader(R"({"fc.weight": {"dtype": "F32", "shape": [5, 4], "data_offsets": [0, 100]}})",
                 100),
      StatusIs(Code::kInvalidArgument,
               HasSubstr("tensor 'fc.weight': data_offsets [0, 100] hold 100 bytes; "
                         "shape [5, 4] of F32 needs 80")));
}

TEST_F(SafetensorsFileTest, OverlappingRanges) {
  EXPECT_THAT(
      OpenHeader(R"({"a": {"dtype": "U8", "shape": [8], "data_offsets": [0, 8]},
                            "b": {"dtype": "U8", "shape": [8], "data_offsets": [4, 12]}})",
                 12),
      StatusIs(Code::kInvalidArgument, HasSubstr("tensors 'a' [0, 8] and 'b' [4, 12] overlap")));
}

TEST_F(SafetensorsFileTest, GapInCoverage) {
  EXPECT_THAT(OpenHeader(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]},
                            "b": {"dtype": "U8", "shape": [4], "data_offsets": [8, 12]}})",
                         12),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("bytes [4, 8) of the data section belong to no tensor "
                                 "(between 'a' and 'b')")));
  EXPECT_THAT(OpenHeader(R"({"b": {"dtype": "U8", "shape": [4], "data_offsets": [2, 6]}})", 6),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("bytes [0, 2) of the data section belong to no tensor "
                                 "(before 'b')")));
  EXPECT_THAT(OpenHeader(R"({"a": {"dtype": "U8", "shape": [4], "data_offsets": [0, 4]}})", 9),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("bytes [4, 9) of the data section belong to no tensor "
                                 "(after 'a')")));
}

TEST_F(SafetensorsFileTest, BoolOutsideZeroOne) {
  SafetensorsWriter w;
  w.Add("mask", "BOOL", {3}, std::string("\x01\x00\x02", 3));
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  EXPECT_THAT(src->Read("mask"),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("tensor 'mask': BOOL element 2 is byte 2; expected 0 or 1")));
}

TEST_F(SafetensorsFileTest, TensorNotFoundListsNearest) {
  SafetensorsWriter w;
  w.AddValues("fc.weight", "F32", {1}, {1}).AddValues("fc.bias", "F32", {1}, {1});
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenBytes(w.Bytes()));
  EXPECT_THAT(src->Read("fc.wieght"),
              StatusIs(Code::kNotFound, AllOf(HasSubstr("no tensor 'fc.wieght' in '"),
                                              HasSubstr("nearest: 'fc.weight', 'fc.bias'"))));
}

// ---- sharded ----------------------------------------------------------------

class ShardedSafetensorsTest : public ::testing::Test {
 protected:
  // a, b in shard 1; c in shard 2.
  std::string WriteTwoShards() {
    SafetensorsWriter s1, s2;
    s1.AddValues("a", "F32", {2}, {1, 2}).AddValues("b", "I64", {1}, {7});
    s2.AddValues("c", "BF16", {2}, {0.5, -4});
    return WriteShardedSafetensors(dir_.path(), {{kShard1, s1}, {kShard2, s2}});
  }
  std::string WriteIndex(const std::string& json) {
    return dir_.WriteFile("model.safetensors.index.json", json);
  }
  static constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
  static constexpr const char* kShard2 = "model-00002-of-00002.safetensors";
  TempDir dir_;
};

TEST_F(ShardedSafetensorsTest, OpensEveryShard) {
  const std::string index = WriteTwoShards();
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index));
  EXPECT_EQ(src->format(), "safetensors-sharded");
  EXPECT_EQ(src->path(), index);
  EXPECT_THAT(src->names(), ElementsAre("a", "b", "c"));
  EXPECT_EQ(src->Find("c")->file, dir_.Join(kShard2));
  EXPECT_EQ(src->Find("a")->file, dir_.Join(kShard1));
  ASSERT_OK_AND_ASSIGN(at::Tensor c, src->Read("c"));
  EXPECT_EQ(c.scalar_type(), at::kBFloat16);
  EXPECT_EQ(c[1].item<float>(), -4.0f);
  ASSERT_OK_AND_ASSIGN(at::Tensor b, src->Read("b"));
  EXPECT_EQ(b[0].item<int64_t>(), 7);
  src.reset();
  EXPECT_EQ(c[0].item<float>(), 0.5f);  // still mapped
}

TEST_F(ShardedSafetensorsTest, NamesSubsetOpensOnlyTheirShards) {
  const std::string index = WriteTwoShards();
  std::filesystem::remove(dir_.Join(kShard1));  // never opened, so never missed
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index, {"c", "nope"}));
  EXPECT_THAT(src->names(), ElementsAre("c"));
  ASSERT_OK_AND_ASSIGN(at::Tensor c, src->Read("c"));
  EXPECT_EQ(c[0].item<float>(), 0.5f);
  EXPECT_THAT(
      src->Read("a"),
      StatusIs(Code::kNotFound, AllOf(HasSubstr("tensor 'a' is in shard '" + std::string(kShard1)),
                                      HasSubstr("which was not opened"))));
  // Suggestions draw on the whole index.
  EXPECT_THAT(src->Read("bb"),
              StatusIs(Code::kNotFound, AllOf(HasSubstr("no tensor 'bb' in '" + index + "'"),
                                              HasSubstr("nearest: 'b'"))));
}

TEST_F(ShardedSafetensorsTest, ShardInSubdirectory) {
  SafetensorsWriter s;
  s.AddValues("w", "F32", {1}, {3});
  s.WriteTo(dir_.Join("sub/w.safetensors"));
  const std::string index = WriteIndex(R"({"weight_map": {"w": "sub/../sub/w.safetensors"}})");
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index));
  ASSERT_OK_AND_ASSIGN(at::Tensor w, src->Read("w"));
  EXPECT_EQ(w[0].item<float>(), 3.0f);
}

TEST_F(ShardedSafetensorsTest, MissingIndexIsNotFound) {
  const std::string index = dir_.Join("model.safetensors.index.json");
  EXPECT_THAT(OpenShardedSafetensors(index),
              StatusIs(Code::kNotFound, HasSubstr("no such file '" + index + "'")));
}

TEST_F(ShardedSafetensorsTest, IndexNotJson) {
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex("{\"weight_map\": ")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index is not valid JSON")));
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex("[]")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index JSON is not an object")));
}

TEST_F(ShardedSafetensorsTest, IndexWithoutWeightMap) {
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex(R"({"metadata": {}})")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index has no \"weight_map\" object")));
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex(R"({"weight_map": {"a": 1}})")),
              StatusIs(Code::kInvalidArgument, HasSubstr("weight_map entry 'a' is not a string")));
}

TEST_F(ShardedSafetensorsTest, MissingShard) {
  const std::string index = WriteTwoShards();
  std::filesystem::remove(dir_.Join(kShard2));
  EXPECT_THAT(
      OpenShardedSafetensors(index),
      StatusIs(Code::kNotFound, AllOf(HasSubstr("shard '" + std::string(kShard2) +
                                                "' (holding tensor 'c') is missing"),
                                      HasSubstr("no such file '" + dir_.Join(kShard2) + "'"))));
}

TEST_F(ShardedSafetensorsTest, TensorInIndexAbsentFromShard) {
  WriteTwoShards();
  const std::string index = WriteIndex(
      R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                         "ghost": "model-00001-of-00002.safetensors"}})");
  EXPECT_THAT(OpenShardedSafetensors(index),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("maps tensor 'ghost' to shard "
                                 "'model-00001-of-00002.safetensors', whose header lacks it")));
}

TEST_F(ShardedSafetensorsTest, ShardPathEscapingTheDirectory) {
  for (const char* shard :
       {"../outside.safetensors", "/etc/passwd", "a/../../x.safetensors", "", ".", "sub/"}) {
    SCOPED_TRACE(shard);
    const std::string index = WriteIndex(std::string(R"({"weight_map": {"w": )") +
                                         ::dflash::testing::JsonQuote(shard) + "}}");
    EXPECT_THAT(
        OpenShardedSafetensors(index),
        StatusIs(Code::kInvalidArgument, HasSubstr("shard '" + std::string(shard) +
                                                   "' (for tensor 'w') is not a file inside the "
                                                   "index's directory")));
  }
}

TEST_F(ShardedSafetensorsTest, CorruptShardNamesItsPath) {
  WriteTwoShards();
  dir_.WriteFile(kShard2, "abc");
  EXPECT_THAT(
      OpenShardedSafetensors(dir_.Join("model.safetensors.index.json")),
      StatusIs(Code::kInvalidArgument, HasSubstr("'" + dir_.Join(kShard2) + "': file is 3 bytes")));
}

}  // namespace
}  // namespace dflash::weights
