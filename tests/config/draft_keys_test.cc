// The draft keys (dflash2-semantics.md §1: dflash_config first, then the top
// level) of DFlash 1 and 2 drafters, each bad key named, and the top-level
// keys implemented, skipped, refused or warned about (config/internal/draft_keys.h,
// through the reader).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/drafter_config_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sample_configs.h"
#include "test_util/status_matchers.h"

namespace dflash::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;
using samples::DFlash2Config;
using samples::Parse;
using samples::Qwen36Config;
using samples::StatusWith;
using samples::V4Config;

using ::dflash::testing::kInvalid;

TEST(DFlash2ConfigTest, ReleasedShapeParsesWithEveryDraftKeyAndItsSource) {
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(DFlash2Config()));
  EXPECT_TRUE(c.is_dflash2());
  EXPECT_EQ(c.conv_kernel_size, 2);
  EXPECT_EQ(c.conv_groups(), 416);
  EXPECT_EQ(c.selector_rank, 256);
  EXPECT_EQ(c.selector_top_k, 16);
  EXPECT_DOUBLE_EQ(c.output_multiplier, 0.1961);
  EXPECT_DOUBLE_EQ(c.final_logit_softcapping, 20.0);
  EXPECT_DOUBLE_EQ(c.input_embedding_scale, 1.0);
  ASSERT_TRUE(c.is_causal.has_value());
  EXPECT_FALSE(*c.is_causal);
  EXPECT_TRUE(c.warnings.empty()) << c.warnings[0];
  const std::vector<std::string> lines = DescribeDraftKeys(c);
  EXPECT_EQ(lines[0], "family DFlash 2 (DFlash2DraftModel)");
  EXPECT_THAT(lines,
              ::testing::IsSupersetOf(
                  {"draft key block_size = 16 (dflash_config)",
                   "draft key target_layer_ids = [1,13,25,37,49] (dflash_config)",
                   "draft key input_embedding_scale = 1.0 (default)",
                   "draft key output_multiplier = 0.1961 (top level)",
                   "draft key final_logit_softcapping = 20.0 (top level)",
                   "draft key selector_top_k = 16 (dflash_config)",
                   "keys known not to change the computation, not used: transformers_version"}));
  EXPECT_THAT(lines,
              ::testing::Contains(HasSubstr(
                  "attention inside the block (zlab-current): 0 sliding W=2048 bidirectional;")));
  EXPECT_THAT(DescribeConfig(c), HasSubstr("DFlash 2, 5 layers"));
}

TEST(DFlash2ConfigTest, EachBadKeyIsNamed) {
  auto with = [](const std::string& key, Json v) {
    Json j = DFlash2Config();
    j["dflash_config"][key] = v;
    return Parse(j);
  };
  EXPECT_THAT(
      with("conv_group_size", 10),
      StatusWith(
          kInvalid,
          "config field 'dflash_config.conv_group_size' (10) does not divide hidden_size (6656)"));
  EXPECT_THAT(
      with("selector_top_k", 300000),
      StatusWith(
          kInvalid,
          "config field 'dflash_config.selector_top_k' (300000) is above the vocabulary size "
          "(202048)"));
  EXPECT_THAT(
      with("selector_rank", 0),
      StatusWith(kInvalid, "config field 'dflash_config.selector_rank' must be positive; got 0"));
  EXPECT_THAT(
      with("final_logit_softcapping", 0.0),
      StatusWith(
          kInvalid,
          "config field 'dflash_config.final_logit_softcapping' must be positive when set; got 0 "
          "(null or absent disables the softcap)"));
  EXPECT_THAT(
      with("conv_kernel", 2),
      StatusWith(
          kInvalid,
          HasSubstr(
              "config field 'dflash_config.conv_kernel' is not a draft key this service knows")));
  Json j = DFlash2Config();
  j["dflash_config"].erase("conv_kernel_size");
  EXPECT_THAT(
      Parse(j),
      StatusWith(
          kInvalid,
          "config field 'conv_kernel_size' is missing (looked in dflash_config and at the top "
          "level); required for a DFlash 2 drafter"));
  j = DFlash2Config();
  j.erase("vocab_size");
  EXPECT_THAT(Parse(j), StatusWith(kInvalid, HasSubstr("config field 'vocab_size' is missing")));
  // DFlash 2 keys under a DFlash 1 architecture.
  j = DFlash2Config();
  j["architectures"] = {"DFlashDraftModel"};
  EXPECT_THAT(
      Parse(j),
      StatusWith(
          kInvalid,
          HasSubstr(
              "config field 'dflash_config.conv_kernel_size' is a DFlash 2 key, but architectures "
              "does not name DFlash2DraftModel")));
}

TEST(DFlash2ConfigTest, TopLevelKeysAreImplementedSkippedRefusedOrWarned) {
  Json j = Qwen36Config();
  j["hidden_act"] = "gelu";
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid,
                 "config field 'hidden_act' is 'gelu'; only silu (Qwen3's MLP) is implemented"));
  j = Qwen36Config();
  j["quantization_config"] = {{"quant_method", "fp8"}};
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'quantization_config' is present: quantized "
                                   "checkpoints are not supported"));
  j = Qwen36Config();
  j["attention_sink"] = true;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_EQ(c.warnings[0],
            "config key 'attention_sink' is not known to this service and was not used; check "
            "that it does not change the drafter's computation");
}

TEST(DFlash2ConfigTest, ScalesAndCausalityOfAnUpdatedDFlash1) {
  Json j = Qwen36Config();
  j["input_embedding_scale"] = 2.0;
  j["dflash_config"]["output_multiplier"] = 0.5;
  j["use_sliding_window"] = false;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_DOUBLE_EQ(c.input_embedding_scale, 2.0);
  EXPECT_DOUBLE_EQ(c.output_multiplier, 0.5);
  EXPECT_EQ(c.sliding_window, 0);  // use_sliding_window false: no window anywhere
  EXPECT_FALSE(c.is_causal.has_value());
  EXPECT_THAT(
      DescribeDraftKeys(c),
      ::testing::Contains(HasSubstr(
          "0 sliding causal; 1 sliding causal; 2 sliding causal; 3 sliding causal; 4 full "
          "bidirectional (is_causal absent: sliding layers causal); use_sliding_window false: no "
          "window")));
  j["input_embedding_scale"] = -1.0;
  EXPECT_THAT(
      Parse(j),
      StatusWith(kInvalid, "config field 'input_embedding_scale' must be positive; got -1"));
}

// Moved from drafter_config_test.cc (the draft keys through the reader).
// z-lab's _draft_value: dflash_config first, then the top level.
TEST(DrafterConfigTest, DFlashConfigBlockSizeWinsOverTopLevel) {
  Json j = V4Config();
  j["block_size"] = 16;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.block_size, 8);
  j["dflash_config"].erase("block_size");
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_EQ(c.block_size, 16);
  EXPECT_THAT(DescribeDraftKeys(c), ::testing::Contains("draft key block_size = 16 (top level)"));
}

TEST(DrafterConfigTest, MissingBlockSizeDefaultsTo16AndSaysSo) {
  Json j = V4Config();
  j["dflash_config"].erase("block_size");
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.block_size, 16);
  EXPECT_THAT(DescribeDraftKeys(c), ::testing::Contains("draft key block_size = 16 (default)"));
}

// z-lab's current model.py requires target_layer_ids: the old formula's
// guess is named in the error, never used.
TEST(DrafterConfigTest, MissingTargetLayerIdsIsRefusedWithTheOldGuess) {
  Json j = Qwen36Config();
  j["dflash_config"].erase("target_layer_ids");
  EXPECT_THAT(
      Parse(j),
      StatusWith(
          kInvalid,
          "config field 'target_layer_ids' is missing (looked in dflash_config and at the top "
          "level); z-lab's current model.py requires it (the formula fallback is gone); the old "
          "formula would have guessed [1, 16, 31, 46, 61]: add the list the drafter was trained "
          "on to dflash_config"));
  j.erase("num_target_layers");
  EXPECT_THAT(
      Parse(j),
      StatusWith(
          kInvalid,
          "config field 'target_layer_ids' is missing (looked in dflash_config and at the top "
          "level); z-lab's current model.py requires it (the formula fallback is gone)"));
}

TEST(DFlash2ConfigTest, ArchitecturesPickTheFamily) {
  Json j = Qwen36Config();
  j["architectures"] = "DFlashDraftModel";
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'architectures' must be an array of strings; got "
                                   "string"));
  j["architectures"] = {"DFlashDraftModel", 2};
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'architectures' must be an array of strings; got "
                                   "2"));
  j["architectures"] = {"DFlashDraftModel", "DFlash2DraftModel"};
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'architectures' names both DFlashDraftModel and "
                                   "DFlash2DraftModel"));
  j["architectures"] = {"Qwen3ForCausalLM"};
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_FALSE(c.is_dflash2());
  EXPECT_THAT(c.warnings,
              ElementsAre("architectures [\"Qwen3ForCausalLM\"] names neither "
                          "DFlashDraftModel nor DFlash2DraftModel; reading it as DFlash 1"));
  j.erase("architectures");  // absent: DFlash 1 without a warning
  ASSERT_OK_AND_ASSIGN(c, Parse(j));
  EXPECT_FALSE(c.is_dflash2());
  EXPECT_THAT(c.warnings, ::testing::IsEmpty());
}

TEST(DFlash2ConfigTest, DFlash1KeyValues) {
  Json j = Qwen36Config();
  j["dflash_config"]["block_size"] = 0;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'dflash_config.block_size' must be positive; got "
                                   "0"));
  j = Qwen36Config();
  j["dflash_config"]["target_layer_ids"] = Json::array();
  EXPECT_THAT(Parse(j),
              StatusWith(kInvalid, "config field 'dflash_config.target_layer_ids' is empty"));
  j["dflash_config"]["target_layer_ids"] = {1, -2};
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'dflash_config.target_layer_ids[1]' must be a "
                                   "non-negative integer; got -2"));
  j = Qwen36Config();
  j["dflash_config"].erase("mask_token_id");
  j["mask_token_id"] = -1;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid, "config field 'mask_token_id' must be >= 0; got -1"));
  j = Qwen36Config();
  j["output_multiplier"] = "0.5";
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'output_multiplier' must be a number; got string "
                                   "\"0.5\""));
  j = Qwen36Config();
  j["mlp_bias"] = true;
  EXPECT_THAT(Parse(j), StatusWith(kInvalid,
                                   "config field 'mlp_bias' is true; MLP biases are not "
                                   "implemented"));
  j["mlp_bias"] = false;
  EXPECT_THAT(Parse(j), ::dflash::testing::IsOk());
}

// The old formula's guess for a one-layer drafter: the middle target layer.
TEST(DFlash2ConfigTest, OldFormulaGuessForOneDraftLayer) {
  Json j = samples::V4Config();
  j["num_hidden_layers"] = 1;
  j["dflash_config"].erase("target_layer_ids");
  EXPECT_THAT(Parse(j), StatusWith(kInvalid, HasSubstr("the old formula would have guessed [18]")));
}

}  // namespace
}  // namespace dflash::config
