#include "store/result_json.h"

#include <string>

#include "gtest/gtest.h"
#include "test_util/field_fill.h"
#include "types/semantics.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;
using ::dflash::testing::ExpectFieldsEqual;
using ::dflash::testing::FillFields;

// Every field of every table set to its own value, and the hand fields too.
types::EvalResult FilledResult() {
  types::EvalResult r;
  int64_t k = 1;
  FillFields(r, k);
  r.mode = types::Mode::kReplay;
  r.first_miss = {7, 8, 9};
  r.target_consistency = {10, 9, 0.9, true};
  return r;
}

// A record of the first stored form: only the keys the first records held.
json FirstRecord() {
  return json::parse(R"({"mode": 1, "block_size": 4, "samples": 1, "blocks": 2,
      "tokens_scored": 3, "accept_length_pooled": 1.5, "tau": 1.25, "positions": [],
      "accepted_histogram": [1, 1], "per_sample": [[0, 2, 1.5, 10, 3, 3]],
      "setup_seconds": 0.1, "compute_seconds": 0.2, "tokens_per_second": 5.0,
      "device": "cpu", "dtype": "fp32", "drafter_fingerprint": "a",
      "dataset_fingerprint": "b", "warnings": []})");
}

class ResultJsonTest : public ::testing::Test {};

// The table is the whole story: a field added to it is stored and read back
// with no edit here or in result_json.cc.
TEST_F(ResultJsonTest, EveryTableFieldRoundTrips) {
  types::EvalResult r = FilledResult();
  r.suite_results.push_back({"d1", FilledResult()});
  const types::EvalResult back = ResultFromJson(ResultToJson(r));
  ExpectFieldsEqual(back, r, "result");
  ExpectFieldsEqual(back.suite_results.at(0).result, r, "suite_results[0]");
  EXPECT_EQ(back.mode, types::Mode::kReplay);
  EXPECT_EQ(back.first_miss.ranking_error, 9);
  EXPECT_EQ(back.target_consistency.matches, 9);
  EXPECT_TRUE(back.target_consistency.norm_applied);
}

TEST_F(ResultJsonTest, EveryTableFieldIsStoredUnderItsName) {
  const json j = ResultToJson(FilledResult());
  types::ForEachField<types::EvalResult>(
      [&](const auto& f) { EXPECT_TRUE(j.contains(f.name)) << f.name; });
  types::ForEachField<types::PositionMetrics>([&](const auto& f) {
    EXPECT_TRUE(j.at("positions").at(0).contains(f.name)) << "positions." << f.name;
  });
  // Per-sample summaries are positional: one entry per table field.
  EXPECT_EQ(j.at("per_sample").at(0).size(),
            std::tuple_size_v<decltype(types::FieldTable<types::SampleSummary>::kFields)>);
}

TEST_F(ResultJsonTest, EmptyFieldsMarkedSoAreLeftOut) {
  const json j = ResultToJson(types::EvalResult());
  for (const char* key :
       {"slices", "draft_length_curve", "sampling", "part_state", "target_consistency"}) {
    EXPECT_FALSE(j.contains(key)) << key;
  }
  EXPECT_TRUE(j.at("gate").is_null());
  EXPECT_TRUE(j.at("accept_length_ci").is_null());
}

TEST_F(ResultJsonTest, FirstRecordsReadWithTheirOwnDefaults) {
  const types::EvalResult r = ResultFromJson(FirstRecord());
  EXPECT_EQ(r.family, "DFlash 1");
  EXPECT_EQ(r.semantics, "zlab-2025");
  EXPECT_EQ(r.semantics_reference, types::SemanticsReference(types::Semantics::kZlab2025));
  EXPECT_EQ(r.mode, types::Mode::kReplay);
  ASSERT_EQ(r.per_sample.size(), 1u);
  EXPECT_EQ(r.per_sample[0].accepted_total, 3);
  EXPECT_TRUE(r.per_sample[0].counted.empty());
  EXPECT_EQ(r.target_fingerprint, "");
  EXPECT_FALSE(r.gate.has_value());
  EXPECT_FALSE(r.accept_length_ci.has_value());
}

TEST_F(ResultJsonTest, AFirstRecordKeyMissingThrows) {
  json j = FirstRecord();
  j.erase("tau");
  EXPECT_THROW(ResultFromJson(j), json::exception);
}

TEST_F(ResultJsonTest, AWrongTypeThrows) {
  json j = FirstRecord();
  j["context_positions"] = "many";
  EXPECT_THROW(ResultFromJson(j), json::exception);
}

}  // namespace
}  // namespace dflash::store
