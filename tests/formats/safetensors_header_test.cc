// The safetensors layout parser (formats/safetensors_header.h) on raw header
// text and raw file bytes: the file order, the metadata, and one case per
// defect with its exact message. The same defects through the weights
// reader, on files, are in tests/weights/safetensors_defects_test.cc.
#include "formats/safetensors_header.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::Pair;
using ::testing::StartsWith;

using ::dflash::testing::kInvalid;

// One tensor 't' with these JSON fields.
std::string OneTensor(const std::string& fields) {
  return "{\"t\": {" + fields + "}}";
}

// The 8-byte little-endian length, the header, then `data_bytes` zeros.
std::string FileBytes(uint64_t length, const std::string& header, size_t data_bytes) {
  std::string out;
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((length >> (8 * i)) & 0xff));
  return out + header + std::string(data_bytes, '\0');
}

struct Defect {
  std::string header;
  uint64_t data_bytes;
  std::string message;
};

TEST(SafetensorsHeaderTest, EntriesComeBackInFileOrder) {
  ASSERT_OK_AND_ASSIGN(
      std::vector<SafetensorsEntry> entries,
      ParseSafetensorsHeader(R"({"b": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
          "empty": {"dtype": "I64", "shape": [0, 3], "data_offsets": [16, 16]},
          "a": {"dtype": "BF16", "shape": [2, 2], "data_offsets": [8, 16]}})",
                             16));
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].name, "b");
  EXPECT_EQ(entries[1].name, "a");
  EXPECT_EQ(entries[1].dtype, DType::kBF16);
  EXPECT_THAT(entries[1].shape, ElementsAre(2, 2));
  EXPECT_EQ(entries[1].nbytes(), 8u);
  EXPECT_EQ(entries[2].name, "empty");
  EXPECT_EQ(entries[2].nbytes(), 0u);
  // A zero dimension makes the size 0 however large the others are.
  EXPECT_THAT(ParseSafetensorsHeader(OneTensor(R"("dtype": "F32", "data_offsets": [0, 0],
                                                  "shape": [4294967296, 4294967296, 0])"),
                                     0),
              ::dflash::testing::IsOk());
  ASSERT_OK_AND_ASSIGN(entries, ParseSafetensorsHeader("{}", 0));
  EXPECT_TRUE(entries.empty());
}

TEST(SafetensorsHeaderTest, JsonDefects) {
  const std::vector<Defect> defects = {
      {"[1]", 0,
       "header JSON is an array; expected an object of tensor name -> {dtype, shape, "
       "data_offsets}"},
      {std::string(17, '[') + std::string(17, ']'), 0, "header JSON nests deeper than 16 levels"},
      // Brackets inside strings do not count as depth.
      {R"({"t": "[[[[[[[[[[[[[[[[[["})", 0,
       "tensor 't': is a string; expected an object with dtype, shape, data_offsets"},
      {R"({"__metadata__": []})", 0, "'__metadata__' is an array; expected an object of strings"},
      {R"({"__metadata__": {"k": 1}})", 0,
       "'__metadata__' key 'k' holds a number; expected a string"},
  };
  for (const Defect& d : defects) {
    EXPECT_THAT(ParseSafetensorsHeader(d.header, d.data_bytes), StatusIs(kInvalid, Eq(d.message)))
        << d.header;
  }
  EXPECT_THAT(ParseSafetensorsHeader("{\"t\": ", 0),
              StatusIs(kInvalid, StartsWith("header is not valid JSON: parse error at line 1")));
}

TEST(SafetensorsHeaderTest, TensorDefectsNameTheTensor) {
  const std::string shape = R"("dtype": "F32", "shape": [2], )";
  const std::vector<Defect> defects = {
      {OneTensor(R"("shape": [], "data_offsets": [0, 4])"), 4, "tensor 't': has no \"dtype\""},
      {OneTensor(R"("dtype": 5, "shape": [], "data_offsets": [0, 4])"), 4,
       "tensor 't': \"dtype\" is a number; expected a string such as \"F32\""},
      {OneTensor(R"("dtype": "Q4", "shape": [], "data_offsets": [0, 4])"), 4,
       "tensor 't': unknown dtype 'Q4'; known: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL"},
      {OneTensor(R"("dtype": "F32", "data_offsets": [0, 4])"), 4, "tensor 't': has no \"shape\""},
      {OneTensor(R"("dtype": "F32", "shape": "2", "data_offsets": [0, 8])"), 8,
       "tensor 't': \"shape\" is a string; expected a list of non-negative integers"},
      {OneTensor(R"("dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8])"), 8,
       "tensor 't': \"shape\" entry 1 is -1; expected a non-negative integer"},
      {OneTensor(R"("dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8])"), 8,
       "tensor 't': shape [4294967296, 4294967296] of F32 needs more than 2^63 bytes"},
      {OneTensor(R"("dtype": "F32", "shape": [2])"), 8, "tensor 't': has no \"data_offsets\""},
      {OneTensor(shape + R"("data_offsets": [0])"), 8,
       "tensor 't': \"data_offsets\" is [0]; expected [begin, end] of non-negative integers"},
      // A long value is cut short in the message.
      {OneTensor(shape + "\"data_offsets\": \"" + std::string(50, '7') + "\""), 8,
       "tensor 't': \"data_offsets\" is \"" + std::string(44, '7') +
           "...; expected [begin, end] of non-negative integers"},
      {OneTensor(shape + R"("data_offsets": [8, 0])"), 8,
       "tensor 't': data_offsets [8, 0] end before they begin"},
      {OneTensor(shape + R"("data_offsets": [0, 8])"), 4,
       "tensor 't': data_offsets [0, 8] end past the data section (4 bytes)"},
      {OneTensor(shape + R"("data_offsets": [0, 4])"), 4,
       "tensor 't': data_offsets [0, 4] hold 4 bytes; shape [2] of F32 needs 8"},
  };
  for (const Defect& d : defects) {
    EXPECT_THAT(ParseSafetensorsHeader(d.header, d.data_bytes), StatusIs(kInvalid, Eq(d.message)))
        << d.header;
  }
}

TEST(SafetensorsHeaderTest, RangesMustTileTheDataSection) {
  const std::string a4 = R"("a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]})";
  const std::vector<Defect> defects = {
      {"{" + a4 + R"(, "b": {"dtype": "F32", "shape": [1], "data_offsets": [2, 6]}})", 6,
       "tensors 'a' [0, 4] and 'b' [2, 6] overlap"},
      {R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8,
       "bytes [0, 4) of the data section belong to no tensor (before 't')"},
      {"{" + a4 + R"(, "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})", 12,
       "bytes [4, 8) of the data section belong to no tensor (between 'a' and 'b')"},
      {"{" + a4 + "}", 8, "bytes [4, 8) of the data section belong to no tensor (after 'a')"},
      {"{}", 4, "bytes [0, 4) of the data section belong to no tensor"},
  };
  for (const Defect& d : defects) {
    EXPECT_THAT(ParseSafetensorsHeader(d.header, d.data_bytes), StatusIs(kInvalid, Eq(d.message)))
        << d.header;
  }
}

TEST(SafetensorsHeaderTest, FileBytes) {
  const std::string header =
      R"({"__metadata__": {"format": "pt"}, "w": {"dtype": "U8", "shape": [3], )"
      R"("data_offsets": [0, 3]}})";
  ASSERT_OK_AND_ASSIGN(SafetensorsLayout layout,
                       ParseSafetensorsBytes(FileBytes(header.size(), header, 3)));
  EXPECT_EQ(layout.header_bytes, header.size());
  EXPECT_EQ(layout.data_start, 8 + header.size());
  EXPECT_EQ(layout.data_bytes, 3u);
  ASSERT_EQ(layout.entries.size(), 1u);
  EXPECT_EQ(layout.entries[0].name, "w");
  EXPECT_THAT(layout.metadata, ElementsAre(Pair("format", "pt")));

  EXPECT_THAT(ParseSafetensorsBytes("abc"),
              StatusIs(kInvalid, Eq(std::string("file is 3 bytes; a safetensors file starts "
                                                "with an 8-byte little-endian header length"))));
  EXPECT_THAT(ParseSafetensorsBytes(FileBytes(kMaxSafetensorsHeaderBytes + 1, "", 0)),
              StatusIs(kInvalid, Eq(std::string("header length 104857601 exceeds the limit of "
                                                "104857600 bytes"))));
  EXPECT_THAT(
      ParseSafetensorsBytes(FileBytes(100, "{}", 0)),
      StatusIs(kInvalid,
               Eq(std::string("header length 100 runs past the end of the file (8 + 100 > 10 "
                              "bytes)"))));
  // The header's own defects, with the data section's size from the file.
  EXPECT_THAT(ParseSafetensorsBytes(FileBytes(header.size(), header, 4)),
              StatusIs(kInvalid, Eq(std::string("bytes [3, 4) of the data section belong to no "
                                                "tensor (after 'w')"))));
}

}  // namespace
}  // namespace dflash::formats
