// config.json files of the other DFlash trainers (speculators dflash and
// dflash2, Model-Optimizer exports): read as the same drafter as their z-lab
// twin, the mapping reported, and every refused variant's exact message.
#include <string>

#include <nlohmann/json.hpp>

#include "config/drafter_config_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sample_configs.h"
#include "test_util/status_matchers.h"

namespace dflash::config {
namespace {

using ::dflash::config::samples::Parse;
using ::dflash::testing::StatusIs;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using Json = nlohmann::json;

using ::dflash::testing::kInvalid;

// The released Qwen3.6-27B drafter's shape in z-lab's layout, without
// num_target_layers (the other trainers' files do not carry it).
Json ZlabConfig() {
  Json j = samples::Qwen36Config();
  j.erase("num_target_layers");
  return j;
}

// The same drafter as speculators saves it: the shape nested (a Qwen3Config
// diff), flat draft keys, layer ids in vLLM capture numbering.
Json SpeculatorsConfig() {
  return Json::parse(R"({
    "speculators_model_type": "dflash", "architectures": ["DFlashDraftModel"],
    "transformer_layer_config": {
      "model_type": "qwen3", "architectures": ["Qwen3ForCausalLM"],
      "hidden_size": 5120, "num_key_value_heads": 8, "intermediate_size": 17408,
      "num_hidden_layers": 5, "use_sliding_window": true, "sliding_window": 2048,
      "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                      "sliding_attention", "full_attention"],
      "vocab_size": 248320, "max_position_embeddings": 262144,
      "rope_parameters": {"rope_theta": 10000000, "rope_type": "default"}},
    "draft_vocab_size": 248320, "block_size": 16, "mask_token_id": 248077,
    "aux_hidden_state_layer_ids": [2, 17, 32, 47, 62], "sliding_window_non_causal": false,
    "projector_type": "dflash", "sample_from_anchor": false, "shift_label": false,
    "lambda_base_start": 1.0, "speculators_version": "0.5.0", "dtype": "bfloat16"
  })");
}

auto Refused(const std::string& message) {
  return StatusIs(kInvalid, Eq(message));
}

TEST(ForeignConfigTest, SpeculatorsDFlashReadsAsItsZlabTwin) {
  ASSERT_OK_AND_ASSIGN(DrafterConfig z, Parse(ZlabConfig()));
  ASSERT_OK_AND_ASSIGN(DrafterConfig s, Parse(SpeculatorsConfig()));
  EXPECT_EQ(DescribeConfig(s), DescribeConfig(z));
  EXPECT_THAT(s.target_layer_ids, ElementsAre(1, 16, 31, 46, 61));
  EXPECT_EQ(s.sliding, z.sliding);
  EXPECT_FALSE(s.is_causal.has_value());
  EXPECT_DOUBLE_EQ(s.rms_norm_eps, z.rms_norm_eps);
  EXPECT_EQ(s.layout, "speculators dflash");
  EXPECT_EQ(z.layout, "z-lab");
  EXPECT_TRUE(s.warnings.empty()) << s.warnings[0];
  const std::vector<std::string> lines = DescribeDraftKeys(s);
  EXPECT_EQ(lines[0], "layout speculators dflash, read as z-lab's:");
  EXPECT_THAT(lines,
              Contains("  layer numbering: aux_hidden_state_layer_ids [2,17,32,47,62] "
                       "(vllm-capture-id: id 0 = embeddings, id k+1 = output of layer k) -> "
                       "target_layer_ids [1,16,31,46,61] (hf-layer: output of layer k = "
                       "hidden_states[k+1]); capture id->hf layer 2->1, 17->16, 32->31, 47->46, "
                       "62->61"));
  EXPECT_THAT(lines, Contains("  sliding_window_non_causal false (as written) -> is_causal "
                              "absent: sliding layers causal, full layers bidirectional"));
  EXPECT_THAT(lines, Contains("  transformer_layer_config omits fields equal to Qwen3Config's "
                              "defaults; used: num_attention_heads=32, head_dim=128, "
                              "hidden_act=\"silu\", rms_norm_eps=1e-06, attention_bias=false, "
                              "max_window_layers=28"));
  EXPECT_THAT(lines, Contains("  speculators keys that do not change the drafts, not used: "
                              "lambda_base_start, projector_type, sample_from_anchor, "
                              "shift_label, speculators_version"));
}

// Qwen3Config's use_sliding_window defaults to false: omitted, no layer has
// a window (as speculators reads it), the layer types still decide causality.
TEST(ForeignConfigTest, OmittedUseSlidingWindowMeansNoWindow) {
  Json j = SpeculatorsConfig();
  j["transformer_layer_config"].erase("use_sliding_window");
  ASSERT_OK_AND_ASSIGN(DrafterConfig s, Parse(j));
  EXPECT_EQ(s.sliding_window, 0);
  EXPECT_FALSE(s.use_sliding_window);
}

TEST(ForeignConfigTest, NonCausalSlidingLayersAreBidirectional) {
  Json j = SpeculatorsConfig();
  j["sliding_window_non_causal"] = true;
  ASSERT_OK_AND_ASSIGN(DrafterConfig s, Parse(j));
  ASSERT_TRUE(s.is_causal.has_value());
  EXPECT_FALSE(*s.is_causal);
  j.erase("sliding_window_non_causal");  // dflash default: false
  ASSERT_OK_AND_ASSIGN(s, Parse(j));
  EXPECT_FALSE(s.is_causal.has_value());
  EXPECT_THAT(DescribeDraftKeys(s),
              Contains("  sliding_window_non_causal false (absent: speculators' default for "
                       "dflash is false) -> is_causal absent: sliding layers causal, full layers "
                       "bidirectional"));
}

TEST(ForeignConfigTest, SpeculatorsDFlash2KeepsItsKeysAndDefaultsToNonCausal) {
  Json j = SpeculatorsConfig();
  j["speculators_model_type"] = "dflash2";
  j.erase("sliding_window_non_causal");
  j.update(Json{{"conv_kernel_size", 2},
                {"conv_group_size", 16},
                {"selector_rank", 256},
                {"selector_top_k", 16}});
  ASSERT_OK_AND_ASSIGN(DrafterConfig s, Parse(j));
  EXPECT_TRUE(s.is_dflash2());
  EXPECT_EQ(s.layout, "speculators dflash2");
  EXPECT_EQ(s.conv_kernel_size, 2);
  EXPECT_EQ(s.conv_group_size, 16);
  EXPECT_EQ(s.selector_rank, 256);
  EXPECT_EQ(s.selector_top_k, 16);
  ASSERT_TRUE(s.is_causal.has_value());
  EXPECT_FALSE(*s.is_causal);
}

TEST(ForeignConfigTest, SpeculatorsVariantsAreRefusedByName) {
  Json j = SpeculatorsConfig();
  j["speculators_model_type"] = "dspark";
  EXPECT_THAT(Parse(j), Refused("config field 'speculators_model_type' is 'dspark': not computed "
                                "by this service (it reads speculators 'dflash' and 'dflash2' "
                                "checkpoints)"));
  j = SpeculatorsConfig();
  j["projector_type"] = "domino";
  EXPECT_THAT(Parse(j), Refused("config field 'projector_type' is \"domino\": speculators' Domino "
                                "projector (a causal correction head) is not computed by this "
                                "service; only 'dflash' is"));
  j = SpeculatorsConfig();
  j["sample_from_anchor"] = true;
  EXPECT_THAT(Parse(j), Refused("config field 'sample_from_anchor' is true: drafting the anchor "
                                "slot as well (speculators' DSpark convention) is not computed by "
                                "this service"));
  j = SpeculatorsConfig();
  j["shift_label"] = true;
  EXPECT_THAT(Parse(j), Refused("config field 'shift_label' is true: targets shifted by one "
                                "position (speculators' Domino convention) are not computed by "
                                "this service"));
  j = SpeculatorsConfig();
  j["speculators_model_type"] = "dflash2";
  for (const char* key : {"conv_kernel_size", "conv_group_size", "selector_rank"}) j[key] = 4;
  j["selector_top_k"] = 8;
  j["draft_vocab_size"] = 32000;
  EXPECT_THAT(Parse(j), Refused("config field 'draft_vocab_size' is 32000 below the target "
                                "vocabulary (248320) in a DFlash 2 drafter: a reduced draft "
                                "vocabulary with the candidate selector (codebooks over the target "
                                "vocabulary) is not evaluated by this service"));
  j = SpeculatorsConfig();
  j["draft_vocab_size"] = 300000;
  EXPECT_THAT(Parse(j), Refused("config field 'draft_vocab_size' is 300000; expected 1 .. "
                                "vocab_size (248320)"));
}

// speculators' reduced draft vocabulary: the size is kept and the mapping
// says where drafts come from (the schema this asks for is in
// tests/model/drafter_schema_test.cc).
TEST(ForeignConfigTest, SpeculatorsReducedDraftVocabulary) {
  Json j = SpeculatorsConfig();
  j["draft_vocab_size"] = 32000;
  ASSERT_OK_AND_ASSIGN(DrafterConfig c, Parse(j));
  EXPECT_EQ(c.draft_vocab_size, 32000);
  EXPECT_TRUE(c.reduced_vocab());
  EXPECT_THAT(
      c.layout_notes,
      Contains("draft_vocab_size 32000 < the target vocabulary 248320: reduced draft "
               "vocabulary; drafts from the checkpoint's lm_head.weight [32000, H], mapped to "
               "target ids by d2t (target id = draft index + d2t[index]); labels outside it "
               "(t2d false) can never be drafted"));
  ASSERT_OK_AND_ASSIGN(DrafterConfig full, Parse(SpeculatorsConfig()));
  EXPECT_FALSE(full.reduced_vocab());
}

TEST(ForeignConfigTest, SpeculatorsMalformedKeys) {
  Json j = SpeculatorsConfig();
  j["aux_hidden_state_layer_ids"] = {0, 17};
  EXPECT_THAT(Parse(j), Refused("config field 'aux_hidden_state_layer_ids[0]' is 0: vLLM capture "
                                "ids of target layers start at 1 (id 0 is the embeddings, which "
                                "no DFlash drafter reads)"));
  j.erase("aux_hidden_state_layer_ids");
  EXPECT_THAT(Parse(j), Refused("config field 'aux_hidden_state_layer_ids' is missing: a "
                                "speculators DFlash config names the target layers it reads "
                                "there"));
  j = SpeculatorsConfig();
  j["transformer_layer_config"]["model_type"] = "llama";
  EXPECT_THAT(Parse(j), Refused("config field 'transformer_layer_config.model_type' is 'llama': "
                                "only Qwen3 decoder layers (Qwen3DFlashDecoderLayer) are computed "
                                "by this service"));
  j.erase("transformer_layer_config");
  EXPECT_THAT(Parse(j), Refused("speculators config (speculators_model_type present) has no "
                                "'transformer_layer_config' object: the decoder shape is missing"));
  // A speculators key in a file that does not say it is one.
  j = ZlabConfig();
  j["sliding_window_non_causal"] = true;
  EXPECT_THAT(Parse(j), Refused("config field 'sliding_window_non_causal' is present: a "
                                "speculators key, but 'speculators_model_type' is absent; add it "
                                "(\"dflash\" or \"dflash2\") if this is a speculators checkpoint"));
}

// Model-Optimizer: z-lab's layout, block_size at the top level,
// dflash_config.causal and use_swa / swa_window_size.
Json ModelOptConfig() {
  Json j = ZlabConfig();
  j["dflash_config"]["causal"] = false;
  j["use_swa"] = true;
  j["swa_window_size"] = 2048;
  j.erase("sliding_window");
  return j;
}

TEST(ForeignConfigTest, ModelOptExportReadsAsItsZlabTwin) {
  Json z = ZlabConfig();
  z["is_causal"] = false;
  ASSERT_OK_AND_ASSIGN(DrafterConfig zc, Parse(z));
  ASSERT_OK_AND_ASSIGN(DrafterConfig m, Parse(ModelOptConfig()));
  EXPECT_EQ(DescribeConfig(m), DescribeConfig(zc));
  EXPECT_EQ(m.is_causal, zc.is_causal);
  EXPECT_EQ(m.sliding_window, 2048);
  EXPECT_EQ(m.layout, "Model-Optimizer");
  EXPECT_THAT(DescribeDraftKeys(m),
              Contains("  dflash_config.causal false -> is_causal false: every layer "
                       "bidirectional inside the block"));
  EXPECT_THAT(DescribeDraftKeys(m),
              Contains("  use_swa true, swa_window_size 2048 -> sliding_window 2048 on the "
                       "layer_types sliding_attention layers"));
  Json j = ModelOptConfig();
  j["use_swa"] = false;
  ASSERT_OK_AND_ASSIGN(m, Parse(j));
  EXPECT_EQ(m.sliding_window, 0);
}

TEST(ForeignConfigTest, ModelOptVariantsAreRefusedByName) {
  Json j = ModelOptConfig();
  j["quantization_config"] = {{"quant_method", "modelopt"}, {"quant_algo", "FP8"}};
  EXPECT_THAT(Parse(j), Refused("config field 'quantization_config' is present (quant_method "
                                "\"modelopt\"): quantized Model-Optimizer exports are not "
                                "supported; evaluate the export made before quantization"));
  for (const char* p : {"dspark", "domino", "lilicorr"}) {
    j = ModelOptConfig();
    j["projector_type"] = p;
    EXPECT_THAT(Parse(j), Refused(std::string("config field 'projector_type' is \"") + p +
                                  "\": projector variants (DSpark, Domino, LiLiCorr) are not "
                                  "supported yet"));
  }
  j = ModelOptConfig();
  j.erase("use_swa");
  EXPECT_THAT(Parse(j), Refused("config field 'swa_window_size' is set without 'use_swa': whether "
                                "the window applies is not recorded"));
  j = ModelOptConfig();
  j["layer_types"] = Json::array(
      {"full_attention", "full_attention", "full_attention", "full_attention", "full_attention"});
  EXPECT_THAT(Parse(j), Refused("config field 'use_swa' is true but 'layer_types' names no "
                                "sliding_attention layer: which layers use the window is not "
                                "recorded"));
}

// Each foreign key of the wrong type or value, named with what was found.
TEST(ForeignConfigTest, MalformedForeignValuesAreNamed) {
  Json j = SpeculatorsConfig();
  j["aux_hidden_state_layer_ids"] = Json::array();
  EXPECT_THAT(Parse(j), Refused("config field 'aux_hidden_state_layer_ids' must be a non-empty "
                                "array; got []"));
  j["aux_hidden_state_layer_ids"] = 17;
  EXPECT_THAT(Parse(j), Refused("config field 'aux_hidden_state_layer_ids' must be a non-empty "
                                "array; got 17"));
  j = SpeculatorsConfig();
  j["draft_vocab_size"] = "32000";
  EXPECT_THAT(Parse(j),
              Refused("config field 'draft_vocab_size' must be an integer; got \"32000\""));
  j = SpeculatorsConfig();
  j["sliding_window_non_causal"] = "yes";
  EXPECT_THAT(Parse(j), Refused("config field 'sliding_window_non_causal' must be a boolean; got "
                                "\"yes\""));
  j = ModelOptConfig();
  j["use_swa"] = 1;
  EXPECT_THAT(Parse(j), Refused("config field 'use_swa' must be a boolean; got 1"));
  j = ModelOptConfig();
  j["swa_window_size"] = 0;
  EXPECT_THAT(Parse(j), Refused("config field 'swa_window_size' must be a positive integer when "
                                "use_swa is true; got 0"));
  j.erase("swa_window_size");
  EXPECT_THAT(Parse(j), Refused("config field 'swa_window_size' must be a positive integer when "
                                "use_swa is true; got null"));
  j = ModelOptConfig();
  j["dflash_config"]["causal"] = "no";
  EXPECT_THAT(Parse(j),
              Refused("config field 'dflash_config.causal' must be a boolean; got \"no\""));
}

}  // namespace
}  // namespace dflash::config
