// A job record's stored text (store/record_json.h): a record written by an
// earlier server reads back and is written again byte for byte, every
// record field round-trips, records from before a field read with its
// default, and text that is not a record is InvalidArgument.
#include "store/record_json.h"

#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::store {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::StartsWith;
using json = nlohmann::json;

using ::dflash::testing::kInvalid;

// A whole job record as stored, its request's fields among the record's own.
constexpr char kRecord[] =
    R"({"create_unix_micros":1,"dataset_fingerprint":"df","device":"cpu",)"
    R"("drafter_fingerprint":"dr","dtype":"fp32","end_unix_micros":3,)"
    R"("error_code":0,"error_message":"","id":"ev-1","interrupted_by_restart":false,)"
    R"("progress":[1,2,3,4,0.5,1.5,false],"request":{"checkpoint_path":"/c.pt",)"
    R"("dataset":"ds","drafter":"d1","gate":["ev-0","tau",0.1,false,false,0.0],)"
    R"("labels":{"k":"v"},"options":{"anchors":0,"block_size":0,"ci":"bootstrap",)"
    R"("ci_resamples":1000,"full_positions":false,"max_blocks":0,)"
    R"("max_chunk_elements":67108864,"max_new_tokens":0,"max_samples":5,)"
    R"("metrics":"all","mode":0,"seed":0,"semantics":"zlab-current","shards":0},)"
    R"("run":"r","step":7,"suite":null,"suite_datasets":[],"target":"t1",)"
    R"("unload_after":true},"resubmitted_from":"","server_version":"v",)"
    R"("start_unix_micros":2,"state":"SUCCEEDED"})";

// Moved from options_json_test.cc (OptionsJsonTest).
TEST(RecordJsonTest, AStoredRecordReadsAndIsWrittenBackByteForByte) {
  auto r = RecordFromJson(kRecord);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->request.params.drafter, "d1");
  EXPECT_EQ(r->request.params.checkpoint_path, "/c.pt");
  EXPECT_EQ(r->request.params.dataset, "ds");
  EXPECT_EQ(r->request.params.target, "t1");
  EXPECT_EQ(r->request.params.options.max_samples, 5);
  EXPECT_EQ(RecordToJson(*r), kRecord);
}

// The record's own fields, each off its default, including the fleet's and
// the request's paths (written only when set).
TEST(RecordJsonTest, EveryRecordFieldRoundTrips) {
  types::JobRecord r;
  r.id = "ev-2";
  r.state = types::JobState::kFailed;
  r.request.run = "run";
  r.request.step = 12;
  r.request.labels = {{"a", "1"}, {"b", "2"}};
  r.request.unload_after = true;
  r.request.gate = {"best", "accept_len", 0.25, true, true, 0.5};
  r.request.params.dataset = "a,b";
  r.request.suite_datasets = {"a", "b"};
  r.request.dataset_path = "/data/a";
  r.request.target_path = "/targets/t";
  r.progress = {3, 9, 4, 10, 1.25, 2.5, true};
  r.error_code = 5;
  r.error_message = "dataset 'x' not found";
  r.create_unix_micros = 10;
  r.start_unix_micros = 11;
  r.end_unix_micros = 12;
  r.server_version = "1.2";
  r.device = "cuda:0";
  r.dtype = "bf16";
  r.drafter_fingerprint = "dfp";
  r.dataset_fingerprint = "sfp";
  r.interrupted_by_restart = true;
  r.resubmitted_from = "ev-1";
  r.attempts = {{"host-a:50051", 1, 2, "lease expired"}, {"host-b:50051", 3, 0, ""}};
  r.server = "host-b:50051";
  r.placement = "drafter 'd' is resident on host-b";
  r.calibrations = {R"({"tau":1.5})"};
  const std::string text = RecordToJson(r);
  EXPECT_EQ(json::parse(text)["request"]["suite"], "a,b");
  ASSERT_OK_AND_ASSIGN(types::JobRecord back, RecordFromJson(text));
  EXPECT_EQ(RecordToJson(back), text);
  EXPECT_EQ(back.state, types::JobState::kFailed);
  EXPECT_EQ(back.request.labels, r.request.labels);
  EXPECT_EQ(back.request.gate.metric, "accept_len");
  EXPECT_TRUE(back.request.gate.allow_recipe_mismatch);
  EXPECT_TRUE(back.request.gate.has_floor);
  EXPECT_EQ(back.request.gate.floor, 0.5);
  EXPECT_THAT(back.request.suite_datasets, ElementsAre("a", "b"));
  EXPECT_EQ(back.request.dataset_path, "/data/a");
  EXPECT_EQ(back.request.target_path, "/targets/t");
  EXPECT_TRUE(back.progress.blocks_total_is_bound);
  EXPECT_EQ(back.progress.eta_seconds, 2.5);
  ASSERT_EQ(back.attempts.size(), 2u);
  EXPECT_EQ(back.attempts[0].outcome, "lease expired");
  EXPECT_EQ(back.attempts[1].server, "host-b:50051");
  EXPECT_EQ(back.server, "host-b:50051");
  EXPECT_EQ(back.placement, r.placement);
  EXPECT_THAT(back.calibrations, ElementsAre(R"({"tau":1.5})"));
  EXPECT_FALSE(back.result.has_value());
}

// Records from before a field: six progress entries (no bound flag), a gate
// of three or four entries (no floor), no suite_datasets, no fleet fields.
TEST(RecordJsonTest, OlderRecordsReadWithTheirDefaults) {
  json j = json::parse(kRecord);
  j["progress"] = {1, 2, 3, 4, 0.5, 1.5};
  j["request"]["gate"] = {"previous", "tau", 0.1};
  j["request"].erase("suite_datasets");
  ASSERT_OK_AND_ASSIGN(types::JobRecord r, RecordFromJson(j.dump()));
  EXPECT_FALSE(r.progress.blocks_total_is_bound);
  EXPECT_EQ(r.request.gate.reference, "previous");
  EXPECT_FALSE(r.request.gate.allow_recipe_mismatch);
  EXPECT_FALSE(r.request.gate.has_floor);
  EXPECT_TRUE(r.request.suite_datasets.empty());
  EXPECT_TRUE(r.attempts.empty());
  EXPECT_EQ(r.server, "");
  j["request"]["gate"] = {"previous", "tau", 0.1, true};
  ASSERT_OK_AND_ASSIGN(r, RecordFromJson(j.dump()));
  EXPECT_TRUE(r.request.gate.allow_recipe_mismatch);
  EXPECT_FALSE(r.request.gate.has_floor);
}

TEST(RecordJsonTest, TextThatIsNotARecordIsInvalidArgument) {
  for (const char* text : {"", "{", "[1]", "\"ev-1\""}) {
    EXPECT_THAT(RecordFromJson(text),
                StatusIs(kInvalid, Eq(std::string("stored job record is not a JSON object"))))
        << text;
  }
  json j = json::parse(kRecord);
  j.erase("error_message");
  EXPECT_THAT(RecordFromJson(j.dump()),
              StatusIs(kInvalid, Eq(std::string("stored job record is malformed: "
                                                "[json.exception.out_of_range.403] key "
                                                "'error_message' not found"))));
  j = json::parse(kRecord);
  j["request"]["step"] = "7";
  EXPECT_THAT(
      RecordFromJson(j.dump()),
      StatusIs(kInvalid, StartsWith("stored job record is malformed: "
                                    "[json.exception.type_error.302] type must be number")));
  j = json::parse(kRecord);
  j["state"] = "DONE";
  EXPECT_THAT(RecordFromJson(j.dump()),
              StatusIs(kInvalid, Eq(std::string("job state 'DONE' is not one of QUEUED, RUNNING, "
                                                "SUCCEEDED, FAILED, CANCELLED, INTERRUPTED"))));
}

}  // namespace
}  // namespace dflash::store
