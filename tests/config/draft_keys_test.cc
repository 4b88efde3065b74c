// The draft keys (dflash2-semantics.md §1: dflash_config first, then the top
// level) of DFlash 1 and 2 drafters, each bad key named, and the top-level
// keys implemented, skipped, refused or warned about.
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

using ::testing::HasSubstr;
using Json = nlohmann::json;
using samples::DFlash2Config;
using samples::Parse;
using samples::Qwen36Config;
using samples::StatusWith;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

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

}  // namespace
}  // namespace dflash::config
