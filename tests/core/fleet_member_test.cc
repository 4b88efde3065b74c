// A fleet server's heartbeat text (core/fleet_member.h): what FleetInfoJson
// writes from a core (its default device only, resident names by kind, the
// jobs it runs), what ParseFleetMember reads back (absent fields empty, the
// age in seconds), and a heartbeat that is not what it wrote, refused by
// name.
#include "core/fleet_member.h"

#include <string>
#include <vector>

#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::DoubleEq;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;
using ::testing::StartsWith;

resident::ResourceInfo Named(resident::ResourceKind kind, const std::string& name) {
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.source_path = "/data/" + name;
  return r;
}

// A CUDA server (two devices, cuda:0 its default) holding two targets, a
// dataset and a drafter.
class FleetMemberTest : public ::testing::Test {
 protected:
  void SetUp() override {
    core_.info.default_device = "cuda:0";
    core_.info.devices = {{"cpu", "x86_64, 16 threads", 64, 1}, {"cuda:0", "NVIDIA H200", 140, 30}};
    core_.resources = {Named(resident::ResourceKind::kTarget, "qwen"),
                       Named(resident::ResourceKind::kDrafter, "m1"),
                       Named(resident::ResourceKind::kDataset, "gsm8k"),
                       Named(resident::ResourceKind::kTarget, "llama")};
  }

  dflash::testing::FakeEvalCore core_;
};

TEST_F(FleetMemberTest, InfoJsonNamesTheDefaultDeviceResidentObjectsAndRunningJobs) {
  EXPECT_EQ(FleetInfoJson(core_, {"ev-1", "ev-2"}),
            R"({"datasets":["gsm8k"],"device":"cuda:0","device_description":"NVIDIA H200",)"
            R"("drafters":["m1"],"running_jobs":["ev-1","ev-2"],"targets":["qwen","llama"],)"
            R"("total_memory_bytes":140,"used_memory_bytes":30})");
}

TEST_F(FleetMemberTest, InfoJsonOfAnIdleEmptyServerHasEmptyLists) {
  dflash::testing::FakeEvalCore bare;
  bare.info.default_device = "cpu";  // not among its (no) devices: no memory fields
  EXPECT_EQ(FleetInfoJson(bare, {}),
            R"({"datasets":[],"device":"cpu","drafters":[],"running_jobs":[],"targets":[]})");
}

TEST_F(FleetMemberTest, ParseReadsBackWhatInfoJsonWrote) {
  ASSERT_OK_AND_ASSIGN(FleetMember m,
                       ParseFleetMember("gpu-a:50051", FleetInfoJson(core_, {"ev-9"}), 1'500'000));
  EXPECT_EQ(m.name, "gpu-a:50051");
  EXPECT_EQ(m.device, "cuda:0");
  EXPECT_EQ(m.device_description, "NVIDIA H200");
  EXPECT_EQ(m.total_memory_bytes, 140);
  EXPECT_EQ(m.used_memory_bytes, 30);
  EXPECT_THAT(m.targets, ElementsAre("qwen", "llama"));
  EXPECT_THAT(m.datasets, ElementsAre("gsm8k"));
  EXPECT_THAT(m.drafters, ElementsAre("m1"));
  EXPECT_THAT(m.running_jobs, ElementsAre("ev-9"));
  EXPECT_THAT(m.heartbeat_age_seconds, DoubleEq(1.5));
}

TEST_F(FleetMemberTest, AbsentFieldsAreEmpty) {
  // A server that has only joined (fleet/fleet_backend.cc's first heartbeat
  // without info is "{}").
  ASSERT_OK_AND_ASSIGN(FleetMember m, ParseFleetMember("s1", "{}", 0));
  EXPECT_EQ(m.name, "s1");
  EXPECT_EQ(m.device, "");
  EXPECT_EQ(m.total_memory_bytes, 0);
  EXPECT_THAT(m.targets, IsEmpty());
  EXPECT_THAT(m.running_jobs, IsEmpty());
  EXPECT_THAT(m.heartbeat_age_seconds, DoubleEq(0));
}

TEST_F(FleetMemberTest, AHeartbeatThatIsNotAJsonObjectIsRefusedByName) {
  for (const char* text : {"", "not json", "[1, 2]", "\"text\"", "{\"targets\": [\"a\""}) {
    EXPECT_THAT(ParseFleetMember("s1", text, 0),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         Eq("fleet server 's1' left a heartbeat that is not a JSON object")))
        << text;
  }
}

TEST_F(FleetMemberTest, AFieldOfTheWrongTypeIsAMalformedHeartbeat) {
  for (const char* text : {R"({"targets": "qwen"})", R"({"targets": [1]})",
                           R"({"total_memory_bytes": "140"})", R"({"device": 3})"}) {
    EXPECT_THAT(ParseFleetMember("s2", text, 0),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         StartsWith("fleet server 's2' left a malformed heartbeat: "
                                    "[json.exception.type_error.302] type must be ")))
        << text;
  }
}

TEST_F(FleetMemberTest, ParseMembersKeepsTheTablesOrderAndFailsOnTheFirstBadOne) {
  const std::vector<store::FleetServer> servers = {{"b", FleetInfoJson(core_, {}), 2'000'000},
                                                   {"a", "{}", 500'000}};
  ASSERT_OK_AND_ASSIGN(std::vector<FleetMember> members, ParseFleetMembers(servers));
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[0].name, "b");
  EXPECT_THAT(members[0].targets, ElementsAre("qwen", "llama"));
  EXPECT_THAT(members[0].heartbeat_age_seconds, DoubleEq(2.0));
  EXPECT_EQ(members[1].name, "a");
  EXPECT_THAT(members[1].heartbeat_age_seconds, DoubleEq(0.5));
  EXPECT_THAT(ParseFleetMembers({}), ::dflash::testing::IsOkAndHolds(IsEmpty()));
  EXPECT_THAT(ParseFleetMembers({{"a", "{}", 0}, {"bad", "[]", 0}, {"worse", "", 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("fleet server 'bad' left a heartbeat that is not a JSON object")));
}

}  // namespace
}  // namespace dflash::core
