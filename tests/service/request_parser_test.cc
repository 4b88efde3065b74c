// The strict request parser: one case per defect in hand-made wire bytes,
// and well-formed requests (packed or not, unknown fields) still parse.
#include "service/request_parser.h"

#include <cstdint>
#include <string>

#include "dflash/eval/v1/service.pb.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/wire_bytes.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::IsOk;
using ::dflash::testing::LenField;
using ::dflash::testing::StatusIs;
using ::dflash::testing::Tag;
using ::dflash::testing::Varint;

template <typename Message>
absl::Status Parse(const std::string& wire) {
  Message m;
  return ParseRequest(wire, &m);
}

void ExpectBad(const absl::Status& status, const std::string& type, const std::string& what) {
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kInvalidArgument,
                               "request is not a valid dflash.eval.v1." + type + ": " + what));
}

TEST(RequestParserTest, WellFormedRequestsParse) {
  pb::LoadDatasetRequest want;
  want.set_path("/d");
  (*want.mutable_layer_ids())["hidden_states"].add_ids(1);
  (*want.mutable_layer_ids())["hidden_states"].add_ids(-3);
  want.set_max_samples(-1);
  want.set_skip_bad_samples(true);
  pb::LoadDatasetRequest got;
  ASSERT_THAT(ParseRequest(want.SerializeAsString(), &got), IsOk());
  EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString());
  EXPECT_THAT(ParseRequest(std::string(), &got), IsOk());  // every field absent
}

TEST(RequestParserTest, UnpackedRepeatedScalarsAndUnknownFieldsAreAccepted) {
  // LayerIds.ids unpacked, then a field 99 this server does not know.
  const std::string ids = Tag(1, 0) + Varint(5) + Tag(1, 0) + Varint(7);
  pb::LayerIds got;
  ASSERT_THAT(ParseRequest(ids + Tag(99, 0) + Varint(1) + LenField(98, "x"), &got), IsOk());
  EXPECT_THAT(got.ids(), ::testing::ElementsAre(5, 7));
}

TEST(RequestParserTest, WrongWireTypeNamesTheField) {
  ExpectBad(Parse<pb::GetEvalRequest>(Tag(1, 0) + Varint(7)), "GetEvalRequest",
            "field 'id' (1) has wire type 0 (varint); expected 2 (length-delimited)");
  ExpectBad(Parse<pb::RunEvalRequest>(LenField(1, LenField(6, "12"))), "RunEvalRequest",
            "field 'request.max_samples' (6) has wire type 2 (length-delimited); expected 0 "
            "(varint)");
  ExpectBad(Parse<pb::ListEvalsRequest>(Tag(5, 5) + "abcd"), "ListEvalsRequest",
            "field 'min_step' (5) has wire type 5 (32-bit); expected 0 (varint)");
}

TEST(RequestParserTest, MalformedTags) {
  ExpectBad(Parse<pb::GetEvalRequest>("\x80"), "GetEvalRequest", "the tag at byte 0 is truncated");
  ExpectBad(Parse<pb::GetEvalRequest>(std::string(11, '\xFF')), "GetEvalRequest",
            "the tag at byte 0 is longer than 10 bytes");
  ExpectBad(Parse<pb::GetEvalRequest>(std::string(1, '\0')), "GetEvalRequest",
            "the tag at byte 0 has field number 0; field numbers are 1 to 536870911");
  ExpectBad(Parse<pb::GetEvalRequest>(Tag(1, 3)), "GetEvalRequest",
            "field 'id' (1) at byte 0 has wire type 3 (start group), which proto3 messages do "
            "not use");
  ExpectBad(Parse<pb::GetEvalRequest>(LenField(1, "a") + Tag(20, 7)), "GetEvalRequest",
            "field 20 at byte 3 has wire type 7, which is not a wire type");
}

TEST(RequestParserTest, TruncatedValues) {
  ExpectBad(Parse<pb::GetEvalRequest>(Tag(1, 2) + Varint(5) + "ab"), "GetEvalRequest",
            "field 'id' (1) at byte 0 declares 5 bytes but only 2 remain");
  ExpectBad(Parse<pb::GetEvalRequest>(Tag(1, 2)), "GetEvalRequest",
            "field 'id' (1) at byte 0 has a length that is truncated");
  ExpectBad(Parse<pb::LoadDatasetRequest>(Tag(5, 0) + "\x80"), "LoadDatasetRequest",
            "field 'max_samples' (5) at byte 0 holds a varint that is truncated");
  ExpectBad(Parse<pb::GetEvalRequest>(Tag(50, 1) + "abc"), "GetEvalRequest",
            "field 50 at byte 0 needs 8 bytes but only 3 remain");
  // A nested message cut short inside its declared length.
  ExpectBad(Parse<pb::RunEvalRequest>(LenField(1, Tag(3, 2) + Varint(9) + "d")), "RunEvalRequest",
            "field 'request.dataset' (3) at byte 2 declares 9 bytes but only 1 remain");
  ExpectBad(Parse<pb::LayerIds>(LenField(1, "\x01\x80")), "LayerIds",
            "field 'ids' (1) at byte 0 packs a varint that is truncated");
}

TEST(RequestParserTest, IntegersOutsideTheirTypeAreRefusedNotTruncated) {
  ExpectBad(Parse<pb::LoadDatasetRequest>(Tag(5, 0) + Varint(uint64_t{1} << 62)),
            "LoadDatasetRequest",
            "field 'max_samples' (5) holds 4611686018427387904, which does not fit in an int32 "
            "(-2147483648 to 2147483647)");
  ExpectBad(Parse<pb::LoadDatasetRequest>(Tag(4, 0) + Varint(uint64_t{1} << 40)),
            "LoadDatasetRequest",
            "field 'dtype' (4) holds 1099511627776, which does not fit in an enum "
            "(-2147483648 to 2147483647)");
  ExpectBad(Parse<pb::LayerIds>(LenField(1, Varint(1) + Varint(uint64_t{1} << 33))), "LayerIds",
            "field 'ids' (1) holds 8589934592, which does not fit in an int32 (-2147483648 to "
            "2147483647)");
  ExpectBad(Parse<pb::LoadDatasetRequest>(Tag(6, 0) + Varint(2)), "LoadDatasetRequest",
            "field 'skip_bad_samples' (6) holds 2; a bool is 0 or 1");
  // -1 as protobuf writes it: ten bytes, sign-extended.
  pb::LoadDatasetRequest negative;
  ASSERT_THAT(ParseRequest(Tag(5, 0) + Varint(~uint64_t{0}), &negative), IsOk());
  EXPECT_EQ(negative.max_samples(), -1);
}

TEST(RequestParserTest, StringsMustBeUtf8) {
  ExpectBad(Parse<pb::GetEvalRequest>(LenField(1, "ev-\xFF")), "GetEvalRequest",
            "field 'id' (1) is not valid UTF-8 (byte 0xff at offset 3 of the value)");
  ExpectBad(Parse<pb::GetEvalRequest>(LenField(1, "\xC0\xAF")), "GetEvalRequest",
            "field 'id' (1) is not valid UTF-8 (byte 0xc0 at offset 0 of the value)");
  ExpectBad(Parse<pb::GetEvalRequest>(LenField(1, "a\xED\xA0\x80")), "GetEvalRequest",
            "field 'id' (1) is not valid UTF-8 (byte 0xa0 at offset 2 of the value)");
  ExpectBad(Parse<pb::GetEvalRequest>(LenField(1, "\xE2\x82")), "GetEvalRequest",
            "field 'id' (1) is not valid UTF-8 (byte 0xe2 at offset 0 of the value)");
  ExpectBad(
      Parse<pb::RunEvalRequest>(LenField(1, LenField(14, LenField(1, "k\xFE") + LenField(2, "v")))),
      "RunEvalRequest",
      "field 'request.labels.key' (1) is not valid UTF-8 (byte 0xfe at offset 1 of the "
      "value)");
  pb::GetEvalRequest ok;
  ASSERT_THAT(ParseRequest(LenField(1, "\xE2\x82\xAC \xF0\x9F\x98\x80"), &ok), IsOk());  // € 😀
}

}  // namespace
}  // namespace dflash::service
