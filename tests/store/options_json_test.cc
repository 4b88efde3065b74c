// The stored form of a job's options (options_json.h): options written by
// earlier servers, as literal text, read back and are written again byte for
// byte; options of the first form read with the defaults they ran under;
// every field, table or hand-written, round-trips, also inside a record. The
// whole record's own text is in record_json_test.cc.
#include "store/options_json.h"

#include <string>

#include "gtest/gtest.h"
#include "store/record_json.h"
#include "test_util/field_fill.h"

namespace dflash::store {
namespace {

using json = nlohmann::json;
using ::dflash::testing::ExpectFieldsEqual;
using ::dflash::testing::FillFields;

// Every option set, as the stored JSON held it before the field tables.
constexpr char kEveryOption[] =
    R"({"anchors":1,"block_size":8,"ci":"none","ci_resamples":200,"engine":"vllm",)"
    R"("full_positions":true,"max_blocks":7,"max_chunk_elements":1048576,)"
    R"("max_new_tokens":64,"max_samples":12,"metrics":"acceptance","mode":1,)"
    R"("policies":["argmax","match"],"sampling":[{"engine":"vllm","policy":"argmax",)"
    R"("temperature":0.6,"top_k":20,"top_p":0.95,"truncate_draft":false},)"
    R"({"temperature":0.0,"top_k":0,"top_p":1.0}],"seed":18446744073709551615,)"
    R"("semantics":"zlab-2025","shard":{"begin":24,"end":32,"index":3,"of":"ev-7"},)"
    R"("shards":4})";

// The defaults: what is written only when set is absent.
constexpr char kDefaults[] =
    R"({"anchors":0,"block_size":0,"ci":"bootstrap","ci_resamples":1000,)"
    R"("full_positions":false,"max_blocks":0,"max_chunk_elements":67108864,)"
    R"("max_new_tokens":0,"max_samples":0,"metrics":"all","mode":0,"seed":0,)"
    R"("semantics":"zlab-current","shards":0})";

// The first records' options: only the keys they held.
constexpr char kFirstForm[] =
    R"({"anchors":2,"block_size":4,"max_blocks":3,"max_chunk_elements":1024,)"
    R"("max_new_tokens":5,"max_samples":6,"mode":0,"seed":9})";

class OptionsJsonTest : public ::testing::Test {};

TEST_F(OptionsJsonTest, EveryOptionReadsAndIsWrittenBackByteForByte) {
  const types::EvalOptions o = OptionsFromJson(json::parse(kEveryOption));
  EXPECT_EQ(o.mode, types::Mode::kReplay);
  EXPECT_EQ(o.anchors, types::AnchorStrategy::kRandom);
  EXPECT_EQ(o.max_samples, 12);
  EXPECT_EQ(o.max_blocks, 7);
  EXPECT_EQ(o.seed, 0xFFFFFFFFFFFFFFFFull);
  EXPECT_EQ(o.block_size, 8);
  EXPECT_EQ(o.max_new_tokens, 64);
  EXPECT_EQ(o.max_chunk_elements, 1048576);
  EXPECT_EQ(o.semantics, types::Semantics::kZlab2025);
  EXPECT_EQ(o.metrics, types::MetricSet::kAcceptance);
  EXPECT_TRUE(o.full_positions);
  ASSERT_EQ(o.sampling.size(), 2u);
  EXPECT_EQ(o.sampling[0].top_k, 20);
  EXPECT_EQ(o.sampling[0].policy, types::ProposalPolicy::kArgmax);
  EXPECT_FALSE(o.sampling[0].truncate_draft);
  ASSERT_EQ(o.policies.size(), 2u);
  EXPECT_EQ(o.policies[1], types::ProposalPolicy::kMatch);
  EXPECT_EQ(o.engine, "vllm");
  EXPECT_EQ(o.ci, types::CiMethod::kNone);
  EXPECT_EQ(o.ci_resamples, 200);
  EXPECT_EQ(o.shards, 4);
  EXPECT_EQ(o.shard_of, "ev-7");
  EXPECT_EQ(o.shard_index, 3);
  EXPECT_EQ(o.sample_begin, 24);
  EXPECT_EQ(o.sample_end, 32);
  EXPECT_EQ(OptionsToJson(o).dump(), kEveryOption);
}

TEST_F(OptionsJsonTest, DefaultsAreWrittenAsBefore) {
  EXPECT_EQ(OptionsToJson(types::EvalOptions{}).dump(), kDefaults);
  EXPECT_EQ(OptionsToJson(OptionsFromJson(json::parse(kDefaults))).dump(), kDefaults);
}

// Keys added since the first records read as the rules those records ran
// under: the older semantics, no intervals.
TEST_F(OptionsJsonTest, TheFirstFormReadsWithTheOlderDefaults) {
  const types::EvalOptions o = OptionsFromJson(json::parse(kFirstForm));
  EXPECT_EQ(o.anchors, types::AnchorStrategy::kAll);
  EXPECT_EQ(o.block_size, 4);
  EXPECT_EQ(o.max_blocks, 3);
  EXPECT_EQ(o.max_chunk_elements, 1024);
  EXPECT_EQ(o.max_new_tokens, 5);
  EXPECT_EQ(o.max_samples, 6);
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.semantics, types::Semantics::kZlab2025);
  EXPECT_EQ(o.metrics, types::MetricSet::kAll);
  EXPECT_FALSE(o.full_positions);
  EXPECT_TRUE(o.sampling.empty());
  EXPECT_TRUE(o.policies.empty());
  EXPECT_EQ(o.engine, "");
  EXPECT_EQ(o.ci, types::CiMethod::kNone);
  EXPECT_EQ(o.ci_resamples, 0);
  EXPECT_EQ(o.shards, 0);
  EXPECT_EQ(o.sample_end, 0);
}

// What the first records held must be there: a record without it is not
// one this code wrote.
TEST_F(OptionsJsonTest, AKeyOfTheFirstFormIsRequired) {
  for (const char* key : {"mode", "anchors", "max_samples", "max_blocks", "seed", "block_size",
                          "max_new_tokens", "max_chunk_elements"}) {
    json j = json::parse(kFirstForm);
    j.erase(key);
    EXPECT_THROW(OptionsFromJson(j), json::out_of_range) << key;
  }
}

// Every table field (types/eval_options_fields.h) set to its own value, and
// each hand field off its default.
types::EvalOptions FilledOptions() {
  types::EvalOptions o;
  int64_t k = 1;
  FillFields(o, k);
  o.mode = types::Mode::kReplay;
  o.anchors = types::AnchorStrategy::kAll;
  o.semantics = types::Semantics::kZlab2025;
  o.metrics = types::MetricSet::kAcceptance;
  o.sampling = {{0.5, 0.9, 3, types::ProposalPolicy::kArgmax, false, "vllm"}, {}};
  o.policies = {types::ProposalPolicy::kMatch, types::ProposalPolicy::kSample};
  o.ci = types::CiMethod::kNone;
  o.ci_resamples = 77;
  o.shard_of = "ev-9";
  o.shard_index = 2;
  o.sample_begin = 3;
  o.sample_end = 9;
  return o;
}

// The table is the whole story for its fields: one added to it is stored
// and read back with no edit here or in options_json.cc.
TEST_F(OptionsJsonTest, EveryFieldRoundTrips) {
  const types::EvalOptions o = FilledOptions();
  const json j = OptionsToJson(o);
  types::ForEachField<types::EvalOptions>(
      [&](const auto& f) { EXPECT_TRUE(j.contains(f.name)) << f.name; });
  const types::EvalOptions back = OptionsFromJson(j);
  ExpectFieldsEqual(back, o, "options");
  EXPECT_EQ(back.mode, o.mode);
  EXPECT_EQ(back.anchors, o.anchors);
  EXPECT_EQ(back.semantics, o.semantics);
  EXPECT_EQ(back.metrics, o.metrics);
  ASSERT_EQ(back.sampling.size(), o.sampling.size());
  for (size_t i = 0; i < o.sampling.size(); ++i) {
    ExpectFieldsEqual(back.sampling[i], o.sampling[i], "sampling[" + std::to_string(i) + "]");
  }
  EXPECT_EQ(back.policies, o.policies);
  EXPECT_EQ(back.ci, o.ci);
  EXPECT_EQ(back.ci_resamples, o.ci_resamples);
  EXPECT_EQ(back.shard_of, o.shard_of);
  EXPECT_EQ(back.shard_index, o.shard_index);
  EXPECT_EQ(back.sample_begin, o.sample_begin);
  EXPECT_EQ(back.sample_end, o.sample_end);
  EXPECT_EQ(OptionsToJson(back), j);
}

TEST_F(OptionsJsonTest, EveryParamsFieldRoundTripsInTheRecord) {
  types::JobRecord r;
  r.id = "ev-1";
  int64_t k = 1;
  FillFields(r.request.params, k);
  r.request.params.options = FilledOptions();
  auto back = RecordFromJson(RecordToJson(r));
  ASSERT_TRUE(back.ok()) << back.status();
  ExpectFieldsEqual(back->request.params, r.request.params, "params");
  ExpectFieldsEqual(back->request.params.options, r.request.params.options, "options");
}

}  // namespace
}  // namespace dflash::store
