// dataset.json parsing and layer-group checks.
#include "data/dataset_manifest.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

class DatasetManifestTest : public ::testing::Test {};

TEST_F(DatasetManifestTest, ParsesFullManifest) {
  ASSERT_OK_AND_ASSIGN(auto m, ParseManifest(R"({"name": "gsm8k", "hidden_size": 5120,
      "features": {"hidden_states": [1, 16, 31, 46, 61]}, "extra": 1})",
                                             "/d/dataset.json"));
  EXPECT_EQ(m.name, "gsm8k");
  EXPECT_EQ(m.hidden_size, 5120);
  EXPECT_THAT(m.features, ElementsAre(Pair("hidden_states", ElementsAre(1, 16, 31, 46, 61))));
}

TEST_F(DatasetManifestTest, CanonicalGroupOrder) {
  ASSERT_OK_AND_ASSIGN(
      auto m,
      ParseManifest(
          R"({"features": {"hidden_state": [61], "zz": [70], "aux_hidden_state": [1, 16]}})", "m"));
  EXPECT_EQ(m.name, "");
  EXPECT_EQ(m.hidden_size, 0);
  ASSERT_EQ(m.features.size(), 3u);
  EXPECT_EQ(m.features[0].first, "aux_hidden_state");
  EXPECT_EQ(m.features[1].first, "hidden_state");
  EXPECT_EQ(m.features[2].first, "zz");
}

TEST_F(DatasetManifestTest, Defects) {
  const auto bad = [](const char* json) { return ParseManifest(json, "/d/dataset.json"); };
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(bad("{"),
              StatusIs(kInvalid, HasSubstr("manifest '/d/dataset.json': is not valid JSON")));
  EXPECT_THAT(bad("[1]"), StatusIs(kInvalid, HasSubstr("must be a JSON object")));
  EXPECT_THAT(bad(R"({"name": "x"})"), StatusIs(kInvalid, HasSubstr("needs an object 'features'")));
  EXPECT_THAT(bad(R"({"features": {}})"),
              StatusIs(kInvalid, HasSubstr("declares no feature keys")));
  EXPECT_THAT(
      bad(R"({"features": {"hidden_states": 5}})"),
      StatusIs(kInvalid, HasSubstr("feature 'hidden_states' must be a list of layer ids; got 5")));
  EXPECT_THAT(bad(R"({"features": {"hidden_states": []}})"),
              StatusIs(kInvalid, HasSubstr("feature 'hidden_states' lists no layers")));
  EXPECT_THAT(bad(R"({"features": {"hidden_states": [1, "2"]}})"),
              StatusIs(kInvalid, HasSubstr("non-integer layer id \"2\"")));
  EXPECT_THAT(bad(R"({"features": {"hidden_states": [1, 2.5]}})"),
              StatusIs(kInvalid, HasSubstr("non-integer layer id 2.5")));
  EXPECT_THAT(bad(R"({"features": {"hidden_states": [-1]}})"),
              StatusIs(kInvalid, HasSubstr("lists layer -1; layer ids must be >= 0")));
  EXPECT_THAT(
      bad(R"({"features": {"aux_hidden_state": [1, 16], "hidden_state": [16]}})"),
      StatusIs(kInvalid,
               HasSubstr("layer 16 is declared twice (in 'aux_hidden_state' and 'hidden_state')")));
  EXPECT_THAT(bad(R"({"features": {"hidden_states": [3, 3]}})"),
              StatusIs(kInvalid, HasSubstr("layer 3 is declared twice")));
  EXPECT_THAT(bad(R"({"features": {"input_ids": [3]}})"),
              StatusIs(kInvalid, HasSubstr("'input_ids' cannot be a feature key")));
  EXPECT_THAT(bad(R"({"hidden_size": 0, "features": {"h": [3]}})"),
              StatusIs(kInvalid, HasSubstr("'hidden_size' must be a positive integer; got 0")));
  EXPECT_THAT(bad(R"({"name": 3, "features": {"h": [3]}})"),
              StatusIs(kInvalid, HasSubstr("'name' must be a string")));
}

TEST_F(DatasetManifestTest, FinalHiddenState) {
  ASSERT_OK_AND_ASSIGN(
      auto m, ParseManifest(R"({"features": {"aux_hidden_state": [1, 16], "hidden_state": [61]},
          "final_hidden_state": {"norm_applied": true}})",
                            "/d/dataset.json"));
  ASSERT_TRUE(m.final_hidden.has_value());
  EXPECT_EQ(m.final_hidden->key, "hidden_state");  // the EAGLE-3 default
  EXPECT_TRUE(m.final_hidden->norm_applied);
  ASSERT_OK_AND_ASSIGN(auto own, ParseManifest(R"({"features": {"hidden_states": [1]},
          "final_hidden_state": {"key": "last", "norm_applied": false}})",
                                               "/d/dataset.json"));
  EXPECT_EQ(own.final_hidden->key, "last");
  EXPECT_FALSE(own.final_hidden->norm_applied);
  ASSERT_OK_AND_ASSIGN(auto none, ParseManifest(R"({"features": {"hidden_states": [1]}})", "x"));
  EXPECT_FALSE(none.final_hidden.has_value());
  const auto kInvalid = absl::StatusCode::kInvalidArgument;
  EXPECT_THAT(
      ParseManifest(R"({"features": {"hidden_states": [1]}, "final_hidden_state": {"key": "h"}})",
                    "/d/dataset.json"),
      StatusIs(kInvalid,
               "manifest '/d/dataset.json': 'final_hidden_state.norm_applied' must be "
               "true or false (was the target's final norm applied before capture? HF "
               "hidden_states[-1] is after it), e.g. {\"key\": \"hidden_state\", "
               "\"norm_applied\": false}"));
  EXPECT_THAT(ParseManifest(R"({"features": {"hidden_states": [1, 2]},
          "final_hidden_state": {"key": "hidden_states", "norm_applied": false}})",
                            "/d/dataset.json"),
              StatusIs(kInvalid, HasSubstr("names feature 'hidden_states', which holds 2 layers; "
                                           "the final hidden state is one layer wide")));
  EXPECT_THAT(ParseManifest(R"({"features": {"hidden_states": [1]}, "final_hidden_state": 3})",
                            "/d/dataset.json"),
              StatusIs(kInvalid, HasSubstr("'final_hidden_state' must be an object")));
}

TEST_F(DatasetManifestTest, CheckLayerGroupsUsesLabel) {
  EXPECT_THAT(CheckLayerGroups({{"a", {1}}, {"b", {1}}}, "request layer_ids"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("request layer_ids: layer 1 is declared twice")));
}

TEST_F(DatasetManifestTest, MissingManifestMessageShowsAnExample) {
  const std::string msg = MissingManifestMessage("/data/gsm8k");
  EXPECT_THAT(msg, HasSubstr("/data/gsm8k/dataset.json"));
  EXPECT_THAT(msg, HasSubstr(R"("features": {"hidden_states": [1, 16, 31, 46, 61]})"));
  EXPECT_THAT(msg, HasSubstr("layer_ids"));
}

}  // namespace
}  // namespace dflash::data
