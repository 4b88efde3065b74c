// ParseDrafterConfig (config/drafter_config_reader.h): transformers 4.x and
// 5.x spellings, the released Qwen3.6-27B-DFlash shape, and every error with
// its code and message. The draft keys' cases are in draft_keys_test.cc.
#include "config/drafter_config_reader.h"

#include <cmath>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sample_configs.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::config {
namespace {

using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using samples::Parse;
using samples::Qwen36Config;
using samples::StatusWith;
using samples::V4Config;

using ::dflash::testing::kInvalid;

TEST(DrafterConfigTest, Qwen36DFlash) {
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(Qwen36Config()));
  EXPECT_EQ(c.hidden_size, 5120);
  EXPECT_EQ(c.num_attention_heads, 32);
  EXPECT_EQ(c.num_key_value_heads, 8);
  EXPECT_EQ(c.head_dim, 128);
  EXPECT_EQ(c.intermediate_size, 17408);
  EXPECT_EQ(c.num_hidden_layers, 5);
  EXPECT_THAT(c.sliding, ElementsAre(true, true, true, true, false));
  EXPECT_EQ(c.sliding_window, 2048);
  EXPECT_EQ(c.block_size, 16);
  EXPECT_THAT(c.target_layer_ids, ElementsAre(1, 16, 31, 46, 61));
  EXPECT_EQ(c.mask_token_id, 248077);
  EXPECT_EQ(c.num_target_layers, 64);
  EXPECT_EQ(c.vocab_size, 248320);
  EXPECT_EQ(c.dtype, "bfloat16");
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e7);
  EXPECT_TRUE(c.warnings.empty());
  EXPECT_EQ(DescribeConfig(c),
            "DFlash 1, 5 layers (4 sliding W=2048, 1 full), H=5120, 32/8 heads x 128, "
            "I=17408, B=16, target layers [1, 16, 31, 46, 61], mask 248077");
}

TEST(DrafterConfigTest, V4SpellingAndDefaults) {
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(V4Config()));
  EXPECT_EQ(c.head_dim, 16);            // H / nh
  EXPECT_EQ(c.num_key_value_heads, 4);  // = nh
  EXPECT_THAT(c.sliding, ElementsAre(false, false));
  EXPECT_EQ(c.sliding_window, 0);
  EXPECT_EQ(c.block_size, 8);  // from dflash_config
  EXPECT_DOUBLE_EQ(c.rope.theta, 1e6);
  EXPECT_EQ(c.rope.type, "default");
  EXPECT_EQ(c.dtype, "float32");
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-6);
  EXPECT_FALSE(c.attention_bias);
  EXPECT_EQ(DescribeConfig(c),
            "DFlash 1, 2 layers (2 full), H=64, 4/4 heads x 16, I=128, B=8, target layers "
            "[1, 17, 33], mask 151669");
}

TEST(DrafterConfigTest, V4RopeScalingLinearWithTypeKey) {
  Json j = V4Config();
  j["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.rope.type, "linear");
  EXPECT_DOUBLE_EQ(c.rope.factor, 2.0);
  EXPECT_THAT(DescribeConfig(c), HasSubstr(", rope linear x2"));
}

TEST(DrafterConfigTest, V4RopeScalingLlama3) {
  Json j = V4Config();
  j["rope_scaling"] = Json::parse(R"({"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})");
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.rope.type, "llama3");
  EXPECT_DOUBLE_EQ(c.rope.factor, 8.0);
  EXPECT_DOUBLE_EQ(c.rope.low_freq_factor, 1.0);
  EXPECT_DOUBLE_EQ(c.rope.high_freq_factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8192);
  j["rope_scaling"].erase("high_freq_factor");
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, HasSubstr("config field 'rope_scaling.high_freq_factor' is missing")));
}

TEST(DrafterConfigTest, V5YarnFollowsTransformers) {
  Json j = Qwen36Config();
  j["max_position_embeddings"] = 131072;
  j["rope_parameters"] = Json::parse(R"({"rope_type": "yarn", "rope_theta": 1000000,
      "factor": 4.0, "original_max_position_embeddings": 32768})");
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.rope.type, "yarn");
  EXPECT_DOUBLE_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope.beta_fast, 32.0);
  EXPECT_DOUBLE_EQ(c.rope.beta_slow, 1.0);
  EXPECT_DOUBLE_EQ(c.rope.attention_factor, 0.0);
  EXPECT_TRUE(c.warnings.empty());

  // transformers replaces factor by max_position / original when both exist.
  j["max_position_embeddings"] = 65536;
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_DOUBLE_EQ(c.rope.factor, 2.0);
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.warnings[0], HasSubstr("yarn factor 4 replaced by"));

  // Without original_max_position_embeddings, max_position_embeddings is it.
  j["rope_parameters"].erase("original_max_position_embeddings");
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_DOUBLE_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 65536);

  j.erase("max_position_embeddings");
  EXPECT_THAT(
      Parse(j),
      StatusWith(
          kInvalid,
          HasSubstr("config field 'rope_parameters.original_max_position_embeddings' is missing")));
}

TEST(DrafterConfigTest, YarnMscaleAndExplicitAttentionFactor) {
  Json j = Qwen36Config();
  j["rope_parameters"] = Json::parse(R"({"rope_type": "yarn", "rope_theta": 10000,
      "factor": 40, "mscale": 1.0, "mscale_all_dim": 0.5, "beta_fast": 16})");
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_NEAR(c.rope.attention_factor, (0.1 * std::log(40.0) + 1) / (0.05 * std::log(40.0) + 1),
              1e-15);
  EXPECT_DOUBLE_EQ(c.rope.beta_fast, 16.0);
  j["rope_parameters"]["attention_factor"] = 1.25;
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_DOUBLE_EQ(c.rope.attention_factor, 1.25);
  j["rope_parameters"]["truncate"] = false;
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid,
                 HasSubstr("config field 'rope_parameters.truncate' is false; not supported")));
}

TEST(DrafterConfigTest, UnknownRopeType) {
  Json j = Qwen36Config();
  j["rope_parameters"]["rope_type"] = "foo";
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "unknown rope_type 'foo' (known: default, linear, llama3, yarn)"));
  Json k = V4Config();
  k["rope_scaling"] = {{"type", "dynamic"}, {"factor", 2.0}};
  EXPECT_THAT(
      Parse(k),
      StatusWith(kInvalid, "unknown rope_type 'dynamic' (known: default, linear, llama3, yarn)"));
}

TEST(DrafterConfigTest, RopeErrors) {
  Json j = Qwen36Config();
  j["rope_parameters"].erase("rope_theta");
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'rope_parameters.rope_theta' is missing"));
  Json k = V4Config();
  k.erase("rope_theta");
  EXPECT_THAT(Parse(k), StatusWith(kInvalid, "config field 'rope_theta' is missing"));
  k = V4Config();
  k["rope_scaling"] = {{"rope_type", "linear"}};
  EXPECT_THAT(Parse(k), StatusWith(kInvalid, "config field 'rope_scaling.factor' is missing"));
  k["rope_scaling"] = {{"factor", 2.0}};
  EXPECT_THAT(Parse(k), StatusWith(kInvalid, "config field 'rope_scaling.rope_type' is missing"));
  k["rope_scaling"] = "linear";
  EXPECT_THAT(Parse(k),
              StatusWith(kInvalid, "config field 'rope_scaling' must be an object; got string"));
  k["rope_scaling"] = {{"rope_type", "linear"}, {"factor", "2"}};
  EXPECT_THAT(Parse(k),
              StatusWith(kInvalid,
                         "config field 'rope_scaling.factor' must be a number; got string \"2\""));
}

// The value checks behind the type checks: each refused value by name.
TEST(DrafterConfigTest, RopeValueErrors) {
  Json j = Qwen36Config();
  j["rope_parameters"] = Json::array({1});
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'rope_parameters' must be an object; got array"));
  j["rope_parameters"] = {{"full_attention", {{"rope_theta", 1e6}}}};
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'rope_parameters' is per layer type; not supported"));
  j["rope_parameters"] = {{"rope_theta", 1.0}};
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'rope_theta' must be greater than 1; got 1"));
  j["rope_parameters"] = {{"rope_type", "linear"}, {"rope_theta", 1e6}, {"factor", 0.0}};
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'rope_parameters.factor' must be positive; got 0"));
  j["rope_parameters"]["factor"] = 2.0;
  j["partial_rotary_factor"] = 0.5;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'partial_rotary_factor' is 0.5; only 1.0 is "
                                   "supported"));
  j["partial_rotary_factor"] = 1.0;  // the one value that is the same as absent
  EXPECT_THAT(Parse(j), IsOk());
}

TEST(DrafterConfigTest, Llama3FactorOrder) {
  Json j = V4Config();
  j["rope_scaling"] = Json::parse(R"({"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 4.0, "high_freq_factor": 1.0,
      "original_max_position_embeddings": 8192})");
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config fields 'rope_scaling.low_freq_factor' (4) and "
                                   "'high_freq_factor' (1) must satisfy 0 < low < high"));
  j["rope_scaling"]["low_freq_factor"] = 0.0;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config fields 'rope_scaling.low_freq_factor' (0) and "
                                   "'high_freq_factor' (1) must satisfy 0 < low < high"));
  j["rope_scaling"] = Json::parse(R"({"rope_type": "llama3", "factor": 8.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0})");
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid,
                 "config field 'rope_scaling.original_max_position_embeddings' is missing"));
  j["rope_scaling"]["original_max_position_embeddings"] = 0;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'rope_scaling.original_max_position_embeddings' "
                                   "must be positive; got 0"));
}

TEST(DrafterConfigTest, LayerTypesAndEpsValues) {
  Json j = Qwen36Config();
  j["layer_types"] = "sliding_attention";
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'layer_types' must be an array; got string"));
  j = Qwen36Config();
  j["layer_types"][3] = 1;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'layer_types[3]' must be a string; got number"));
  j = Qwen36Config();
  j["rms_norm_eps"] = 0.0;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'rms_norm_eps' must be positive; got 0"));
  j["rms_norm_eps"] = -1e-6;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'rms_norm_eps' must be positive; got -1e-06"));
}

TEST(DrafterConfigTest, MissingRequiredFields) {
  for (const char* field :
       {"hidden_size", "num_attention_heads", "intermediate_size", "num_hidden_layers"}) {
    Json j = Qwen36Config();
    j.erase(field);
    EXPECT_THAT(Parse(j),
                StatusWith(kInvalid, std::string("config field '") + field + "' is missing"));
  }
  Json j = Qwen36Config();
  j["dflash_config"].erase("mask_token_id");
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid,
                 "config field 'mask_token_id' is missing (looked in dflash_config and at the top "
                 "level)"));
}

TEST(DrafterConfigTest, WrongTypes) {
  Json j = Qwen36Config();
  j["hidden_size"] = "5120";
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'hidden_size' must be an integer; got string \"5120\""));
  j = Qwen36Config();
  j["block_size"] = 16.5;
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'block_size' must be an integer; got number 16.5"));
  j = Qwen36Config();
  j["attention_bias"] = 1;
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'attention_bias' must be a boolean; got number 1"));
  j = Qwen36Config();
  j["dflash_config"]["target_layer_ids"] = "1,16";
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid,
                         "config field 'dflash_config.target_layer_ids' must be an array of "
                         "integers; got string"));
  j = Qwen36Config();
  j["dflash_config"]["target_layer_ids"][2] = 31.0;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid,
                         "config field 'dflash_config.target_layer_ids[2]' must be a non-negative "
                         "integer; got 31.0"));
  j = Qwen36Config();
  j["layer_types"][1] = "local_attention";
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'layer_types[1]' is 'local_attention' (known: "
                                   "full_attention, sliding_attention)"));
  j = Qwen36Config();
  j["dflash_config"] = 3;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'dflash_config' must be an object; got number"));
}

TEST(DrafterConfigTest, BadJson) {
  EXPECT_THAT(ParseDrafterConfig("{\"hidden_size\": 5120,"),
              StatusWith(kInvalid, HasSubstr("config is not valid JSON: "
                                             "[json.exception.parse_error.101]")));
  EXPECT_THAT(ParseDrafterConfig("[1, 2]"),
              StatusWith(kInvalid, "config must be a JSON object; got array"));
}

TEST(DrafterConfigTest, HeadShapes) {
  Json j = V4Config();
  j["hidden_size"] = 66;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'head_dim' is missing and hidden_size (66) is not "
                                   "divisible by num_attention_heads (4)"));
  j["head_dim"] = 16;  // explicit head_dim makes it fine
  EXPECT_THAT(Parse(j), IsOk());
  j = V4Config();
  j["num_key_value_heads"] = 3;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'num_attention_heads' (4) is not a multiple of "
                                   "'num_key_value_heads' (3)"));
  j["num_key_value_heads"] = 0;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'num_key_value_heads' must be positive; got 0"));
  j = V4Config();
  j["head_dim"] = 15;
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'head_dim' must be even for RoPE; got 15"));
}

TEST(DrafterConfigTest, LayerTypes) {
  Json j = Qwen36Config();
  j["layer_types"].erase(0);
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid,
                 "config field 'layer_types' has 4 entries; expected num_hidden_layers = 5"));
  j = Qwen36Config();
  j.erase("sliding_window");
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'sliding_window' must be positive when layers use "
                                   "sliding_attention; got 0"));
  // Qwen2 convention: layers from max_window_layers on slide.
  j = Qwen36Config();
  j.erase("layer_types");
  j["use_sliding_window"] = true;
  j["max_window_layers"] = 3;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_THAT(c.sliding, ElementsAre(false, false, false, true, true));
  j["use_sliding_window"] = false;
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_THAT(c.sliding, ElementsAre(false, false, false, false, false));
  EXPECT_EQ(c.sliding_window, 0);
}

TEST(DrafterConfigTest, ParseFile) {
  dflash::testing::TempDir dir;
  const std::string path = dir.path() + "/config.json";
  EXPECT_THAT(
      ParseDrafterConfigFile(path),
      StatusWith(absl::StatusCode::kNotFound, "drafter config '" + path + "' cannot be opened"));
  {
    std::ofstream out(path);
    out << Qwen36Config().dump(2);
  }
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, ParseDrafterConfigFile(path));
  EXPECT_EQ(c.hidden_size, 5120);
  {
    std::ofstream out(path);
    out << "{\"hidden_size\": true}";
  }
  EXPECT_THAT(ParseDrafterConfigFile(path),
              StatusWith(kInvalid, "drafter config '" + path +
                                       "': config field 'hidden_size' must be an "
                                       "integer; got boolean true"));
}

}  // namespace
}  // namespace dflash::config
