// service/proto_fields: the shape checks every converter shares (names,
// ids, counts, labels) with their exact messages, and timestamps.
#include "service/proto_fields.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::service {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::Eq;

using ::dflash::testing::kInvalid;

class ProtoFieldsTest : public ::testing::Test {};

TEST_F(ProtoFieldsTest, NamesAndIds) {
  EXPECT_THAT(CheckName("run", ""), IsOk());
  EXPECT_THAT(CheckName("run", std::string(256, 'x')), IsOk());
  EXPECT_THAT(CheckName("run", "caf\xC3\xA9"), IsOk());  // UTF-8 is fine
  EXPECT_THAT(CheckId("job_id", ""), StatusIs(kInvalid, Eq("job_id is empty")));
  EXPECT_THAT(CheckId("job_id", "j\x01"),
              StatusIs(kInvalid, Eq("job_id contains control character 0x01 at byte 1")));
}

TEST_F(ProtoFieldsTest, NameLengthAndControlCharacters) {
  EXPECT_THAT(CheckName("run", std::string(257, 'x')),
              StatusIs(kInvalid, Eq("run is 257 bytes long; at most 256 are allowed")));
  EXPECT_THAT(CheckName("run", std::string("a\0b", 3)),
              StatusIs(kInvalid, Eq("run contains control character 0x00 at byte 1")));
  EXPECT_THAT(CheckName("run", "\x1f"),
              StatusIs(kInvalid, Eq("run contains control character 0x1f at byte 0")));
  EXPECT_THAT(CheckName("run", " ~"), IsOk());  // 0x20 and 0x7e are printable
  EXPECT_THAT(CheckId("job_id", std::string(257, 'j')),
              StatusIs(kInvalid, Eq("job_id is 257 bytes long; at most 256 are allowed")));
}

TEST_F(ProtoFieldsTest, CountsMustNotBeNegative) {
  EXPECT_THAT(NonNegative("step", 0), IsOk());
  EXPECT_THAT(NonNegative("step", -7), StatusIs(kInvalid, Eq("step must be >= 0; got -7")));
}

TEST_F(ProtoFieldsTest, LabelsAreCheckedInKeyOrder) {
  google::protobuf::Map<std::string, std::string> labels;
  labels["team/owner"] = "eval";
  labels["lr"] = "3e-4";
  EXPECT_THAT(CheckLabels(labels), IsOk());
  labels["z\x01"] = "v";
  labels["b key"] = "v";  // sorts before the control character's key
  EXPECT_THAT(CheckLabels(labels),
              StatusIs(kInvalid, Eq("labels key 'b key' is not 1 to 63 letters, digits, '_', "
                                    "'-', '.', '/'")));
  labels.erase("b key");
  EXPECT_THAT(CheckLabels(labels),
              StatusIs(kInvalid, Eq("labels key 'z\\x01' is not 1 to 63 letters, digits, '_', "
                                    "'-', '.', '/'")));
  labels.erase("z\x01");
  labels["lr"] = std::string(257, 'v');
  EXPECT_THAT(CheckLabels(labels),
              StatusIs(kInvalid, Eq("labels['lr'] is 257 bytes long; at most 256 are allowed")));
  google::protobuf::Map<std::string, std::string> many;
  for (int i = 0; i < 65; ++i) many["k" + std::to_string(i)] = "v";
  EXPECT_THAT(CheckLabels(many),
              StatusIs(kInvalid, Eq("labels has 65 entries; at most 64 are allowed")));
}

TEST_F(ProtoFieldsTest, TimestampsFromMicros) {
  const google::protobuf::Timestamp t = FromUnixMicros(1'700'000'000'123'456);
  EXPECT_EQ(t.seconds(), 1'700'000'000);
  EXPECT_EQ(t.nanos(), 123'456'000);
}

}  // namespace
}  // namespace dflash::service
