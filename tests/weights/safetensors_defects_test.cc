// The safetensors reader on broken files, one test per defect in the
// format's check order (length, size cap, bounds, JSON, per tensor, coverage),
// each with its exact status code and message.
#include "weights/safetensors_file.h"

#include <cstdint>
#include <string>

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
using ::dflash::testing::StatusIs;
using ::dflash::weights::testing::SafetensorsFileTest;
using ::testing::AllOf;
using ::testing::HasSubstr;

using Code = absl::StatusCode;

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
}  // namespace
}  // namespace dflash::weights
