// The key table (config/internal/key_table.h): every key once, the lists
// derived from it, every implemented and draft key read without a warning,
// every harmless key skipped, every refused key refused with its why, and a
// read of a key the table does not declare caught.
#include "config/internal/key_table.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "config/drafter_config_reader.h"
#include "config/internal/config_fields.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sample_configs.h"
#include "test_util/status_matchers.h"

namespace dflash::config::internal {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

using ::dflash::testing::kInvalid;
constexpr auto kInternal = absl::StatusCode::kInternal;

// A valid value for every key the reader reads (a DFlash 2 drafter, so that
// its draft keys are read too). A key added to the table as implemented or
// a draft key needs a line here.
const std::map<std::string, Json>& ReadKeySamples() {
  static const std::map<std::string, Json> samples = {
      {"hidden_size", 64},
      {"num_attention_heads", 4},
      {"num_key_value_heads", 2},
      {"head_dim", 16},
      {"intermediate_size", 128},
      {"num_hidden_layers", 2},
      {"rms_norm_eps", 1e-6},
      {"attention_bias", false},
      {"vocab_size", 1000},
      {"draft_vocab_size", 1000},
      {"dtype", "bfloat16"},
      {"torch_dtype", "bfloat16"},
      {"rope_theta", 10000.0},
      {"rope_scaling", Json::object({{"rope_type", "default"}})},
      {"rope_parameters", Json::object({{"rope_type", "default"}, {"rope_theta", 10000.0}})},
      {"partial_rotary_factor", 1.0},
      {"max_position_embeddings", 4096},
      {"layer_types", Json::array({"sliding_attention", "full_attention"})},
      {"sliding_window", 8},
      {"use_sliding_window", true},
      {"max_window_layers", 1},
      {"is_causal", false},
      {"dflash_config", Json::object()},
      {"num_target_layers", 36},
      {"architectures", Json::array({"DFlash2DraftModel"})},
      {"hidden_act", "silu"},
      {"mlp_bias", false},
      {"block_size", 8},
      {"target_layer_ids", Json::array({1, 17, 33})},
      {"mask_token_id", 999},
      {"input_embedding_scale", 2.0},
      {"output_multiplier", 0.5},
      {"final_logit_softcapping", 20.0},
      {"conv_kernel_size", 2},
      {"conv_group_size", 16},
      {"selector_rank", 8},
      {"selector_top_k", 4},
  };
  return samples;
}

TEST(KeyTableTest, EveryKeyOnceAndOnlyRefusedKeysSayWhy) {
  std::set<std::string> seen;
  for (const KeyRule& rule : KeyTable()) {
    EXPECT_TRUE(seen.insert(rule.key).second) << rule.key << " is listed twice";
    EXPECT_EQ(std::string(rule.why).empty(), rule.kind != KeyKind::kRefused) << rule.key;
    EXPECT_EQ(FindKeyRule(rule.key), &rule);
  }
  EXPECT_EQ(FindKeyRule("attention_sink"), nullptr);
}

TEST(KeyTableTest, DraftKeyListsFollowTheTableInReadingOrder) {
  EXPECT_THAT(DraftKeyNames(), ElementsAre("block_size", "target_layer_ids", "mask_token_id",
                                           "input_embedding_scale", "output_multiplier",
                                           "final_logit_softcapping", "conv_kernel_size",
                                           "conv_group_size", "selector_rank", "selector_top_k"));
  EXPECT_THAT(DFlash2KeyNames(), ElementsAre("conv_kernel_size", "conv_group_size", "selector_rank",
                                             "selector_top_k"));
  // The message naming them, as before the table.
  Json j = samples::Qwen36Config();
  j["dflash_config"]["conv_kernel"] = 2;
  EXPECT_THAT(ParseDrafterConfig(j.dump()),
              StatusIs(kInvalid, ::testing::Eq(std::string(
                                     "config field 'dflash_config.conv_kernel' is not a draft key "
                                     "this service knows (block_size, target_layer_ids, "
                                     "mask_token_id, input_embedding_scale, output_multiplier, "
                                     "final_logit_softcapping, conv_kernel_size, conv_group_size, "
                                     "selector_rank, selector_top_k); refusing rather than "
                                     "ignoring it"))));
}

// Every key the table says is read, all present at once: read, nothing
// skipped, nothing warned about, every draft key from the top level.
TEST(KeyTableTest, EveryImplementedAndDraftKeyIsReadWithoutAWarning) {
  Json j = Json::object();
  for (const std::string& key :
       KeysOfKind({KeyKind::kImplemented, KeyKind::kDraft, KeyKind::kDFlash2Draft})) {
    auto sample = ReadKeySamples().find(key);
    ASSERT_NE(sample, ReadKeySamples().end()) << "no sample value for '" << key << "'";
    j[key] = sample->second;
  }
  EXPECT_EQ(j.size(), ReadKeySamples().size()) << "a sample for a key the table does not read";
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, ParseDrafterConfig(j.dump()));
  EXPECT_THAT(c.warnings, ::testing::IsEmpty());
  EXPECT_THAT(c.skipped_keys, ::testing::IsEmpty());
  std::vector<std::string> read;
  for (const DraftKey& k : c.draft_keys) {
    EXPECT_EQ(k.source, "top level") << k.key;
    read.push_back(k.key);
  }
  EXPECT_EQ(read, DraftKeyNames());
  EXPECT_EQ(c.block_size, 8);
  EXPECT_EQ(c.selector_top_k, 4);
}

TEST(KeyTableTest, EveryHarmlessKeyIsSkippedAndSaidSo) {
  Json j = samples::Qwen36Config();
  const std::vector<std::string> harmless = KeysOfKind({KeyKind::kHarmless});
  for (const std::string& key : harmless) j[key] = 1;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, ParseDrafterConfig(j.dump()));
  EXPECT_THAT(c.warnings, ::testing::IsEmpty());
  EXPECT_THAT(c.skipped_keys, ::testing::UnorderedElementsAreArray(harmless));
}

TEST(KeyTableTest, EveryRefusedKeyIsRefusedWithWhyAndNullIsAbsent) {
  for (const std::string& key : KeysOfKind({KeyKind::kRefused})) {
    Json j = samples::Qwen36Config();
    j[key] = 1;
    EXPECT_THAT(
        ParseDrafterConfig(j.dump()),
        StatusIs(kInvalid, ::testing::Eq(absl::StrCat("config field '", key,
                                                      "' is present: ", FindKeyRule(key)->why))));
    j[key] = nullptr;
    ASSERT_OK_AND_ASSIGN(DrafterConfig c, ParseDrafterConfig(j.dump()));
    EXPECT_THAT(c.warnings, ::testing::IsEmpty()) << key;
    EXPECT_THAT(c.skipped_keys, ::testing::IsEmpty()) << key;
  }
}

// A reader that reads a key the table does not declare as read gets an
// InternalError naming it, whatever the file holds.
TEST(KeyTableTest, ReadingAKeyTheTableDoesNotDeclareIsCaught) {
  const Json root = samples::Qwen36Config();
  const TopLevel top(root);
  int64_t v = 0;
  EXPECT_THAT(top.Int("attention_sink", &v).status(),
              StatusIs(kInternal, ::testing::Eq(std::string(
                                      "config key 'attention_sink' is read but the key table "
                                      "(config/internal/key_table.cc) does not list it; a reader "
                                      "may read only keys declared as implemented or draft key or "
                                      "DFlash 2 draft key"))));
  EXPECT_THAT(top.Find("model_type").status(),
              StatusIs(kInternal, HasSubstr("lists it as harmless")));
  EXPECT_THAT(top.Find("quantization_config").status(),
              StatusIs(kInternal, HasSubstr("lists it as refused")));
  EXPECT_THAT(top.Int("hidden_size", &v), IsOk());
  EXPECT_EQ(v, 5120);
  ASSERT_OK_AND_ASSIGN(const Json* block, top.Find("block_size"));
  EXPECT_EQ(*block, 16);
  // Draft keys are read only as draft keys (dflash_config, then the top level).
  EXPECT_THAT(CheckReadable("hidden_size", {KeyKind::kDraft, KeyKind::kDFlash2Draft}),
              StatusIs(kInternal, HasSubstr("lists it as implemented")));
  EXPECT_THAT(CheckReadable("selector_rank", {KeyKind::kDraft, KeyKind::kDFlash2Draft}), IsOk());
}

// CheckReadable's message names what the table says of the key and the
// kinds the reader asked for, each by its name.
TEST(KeyTableTest, CheckReadableNamesTheKindsExactly) {
  EXPECT_THAT(CheckReadable("transformers_version", {KeyKind::kImplemented}),
              StatusIs(kInternal, ::testing::Eq(std::string(
                                      "config key 'transformers_version' is read but the key "
                                      "table (config/internal/key_table.cc) lists it as harmless; "
                                      "a reader may read only keys declared as implemented"))));
  EXPECT_THAT(CheckReadable("block_size", {KeyKind::kImplemented, KeyKind::kRefused}),
              StatusIs(kInternal, ::testing::Eq(std::string(
                                      "config key 'block_size' is read but the key table "
                                      "(config/internal/key_table.cc) lists it as draft key; a "
                                      "reader may read only keys declared as implemented or "
                                      "refused"))));
  EXPECT_THAT(CheckReadable("selector_rank", {KeyKind::kDraft}),
              StatusIs(kInternal, HasSubstr("lists it as DFlash 2 draft key;")));
  EXPECT_THAT(CheckReadable("quantization_config", {KeyKind::kRefused}), IsOk());
  EXPECT_THAT(KeysOfKind({}), ::testing::IsEmpty());
  EXPECT_EQ(KeysOfKind({KeyKind::kDFlash2Draft}), DFlash2KeyNames());
}

}  // namespace
}  // namespace dflash::config::internal
