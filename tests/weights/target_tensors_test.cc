#include "weights/target_tensors.h"

#include <string>
#include <utility>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "weights/safetensors_file.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::WriteShardedSafetensors;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

std::vector<double> Values(int64_t n, double scale) {
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = scale * static_cast<double>(i % 17 - 8);
  return v;
}

struct Names {
  std::string embed, lm_head, norm, layer;
};
const Names kQwen3 = {"model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
                      "model.layers.0.mlp.up_proj.weight"};
const Names kQwen36 = {"model.language_model.embed_tokens.weight", "lm_head.weight",
                       "model.language_model.norm.weight",
                       "model.language_model.layers.0.mlp.up_proj.weight"};
const Names kLegacy = {"language_model.model.embed_tokens.weight", "language_model.lm_head.weight",
                       "language_model.model.norm.weight",
                       "language_model.model.layers.0.mlp.up_proj.weight"};

class TargetTensorsTest : public ::testing::Test {
 public:
  // The model's shape (members, not file constants: a folder's tests
  // compile as one unity batch, cmake/unity.cmake).
  static constexpr int64_t kV = 32, kH = 8;

 protected:
  // Three shards: embed (+ a layer tensor) | lm_head + norm | garbage holding
  // the tensors nobody needs. With `with_lm_head` false, shard 2 has norm only.
  void WriteTarget(const Names& n, const std::string& config, bool with_lm_head = true,
                   std::vector<int64_t> lm_head_shape = {kV, kH}) {
    dir_.WriteFile("config.json", config);
    SafetensorsWriter s1, s2, s3;
    s1.AddValues(n.embed, "BF16", {kV, kH}, Values(kV * kH, 0.25));
    s1.AddValues(n.layer, "BF16", {4, kH}, Values(4 * kH, 1));
    if (with_lm_head) {
      s2.AddValues(n.lm_head, "BF16", lm_head_shape,
                   Values(lm_head_shape[0] * lm_head_shape[1], 0.5));
    }
    s2.AddValues(n.norm, "F32", {kH}, Values(kH, 1.5));
    s3.AddValues("model.layers.1.mlp.up_proj.weight", "BF16", {4, kH}, Values(4 * kH, 1));
    index_ = WriteShardedSafetensors(dir_.path(), {{"model-00001-of-00003.safetensors", s1},
                                                   {"model-00002-of-00003.safetensors", s2},
                                                   {"model-00003-of-00003.safetensors", s3}});
    // The third shard is never needed: make it unreadable.
    dir_.WriteFile("model-00003-of-00003.safetensors", "this is not a safetensors file");
  }

  static std::string Config(const std::string& extra = "") {
    return R"({"hidden_size": 8, "vocab_size": 32)" + extra + "}";
  }

  TargetLoadOptions Options(bool norm = true) {
    TargetLoadOptions o;
    o.dtype = at::kFloat;
    o.load_norm = norm;
    return o;
  }

  TempDir dir_;
  std::string index_;
};

TEST_F(TargetTensorsTest, Qwen3ShardedReadsOnlyNeededShards) {
  WriteTarget(kQwen3, Config(R"(, "tie_word_embeddings": false)"));
  // The garbage shard really is garbage: opening every shard fails.
  EXPECT_THAT(OpenShardedSafetensors(index_), Not(::dflash::testing::IsOk()));

  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_EQ(t.family, "qwen3");
  EXPECT_EQ(t.embed_name, "model.embed_tokens.weight");
  EXPECT_EQ(t.lm_head_name, "lm_head.weight");
  EXPECT_EQ(t.norm_name, "model.norm.weight");
  EXPECT_FALSE(t.tied);
  EXPECT_EQ(t.vocab_size, kV);
  EXPECT_EQ(t.hidden_size, kH);
  EXPECT_THAT(t.embed.sizes().vec(), ElementsAre(kV, kH));
  EXPECT_EQ(t.embed.scalar_type(), at::kFloat);
  EXPECT_THAT(t.norm.sizes().vec(), ElementsAre(kH));
  // Values survive (BF16-exact values).
  EXPECT_FLOAT_EQ(t.embed[0][1].item<float>(), 0.25f * -7);
  EXPECT_FLOAT_EQ(t.lm_head[0][1].item<float>(), 0.5f * -7);
  EXPECT_FLOAT_EQ(t.norm[2].item<float>(), 1.5f * -6);
  EXPECT_EQ(t.bytes_read, kV * kH * 2 * 2 + kH * 4);
  EXPECT_THAT(t.facts, Contains("embed_tokens 'model.embed_tokens.weight' [32, 8] BF16 "
                                "from model-00001-of-00003.safetensors"));
  EXPECT_THAT(t.facts, Contains("lm_head 'lm_head.weight' [32, 8] BF16 from "
                                "model-00002-of-00003.safetensors"));
  EXPECT_THAT(t.fingerprint, ::testing::MatchesRegex("h64:[0-9a-f]{16}"));
}

TEST_F(TargetTensorsTest, LoadsOntoCudaTiedStillShared) {
  if (!at::hasCUDA()) GTEST_SKIP() << "no CUDA device";
  WriteTarget(kQwen3, Config(R"(, "tie_word_embeddings": true)"), /*with_lm_head=*/false);
  TargetLoadOptions o = Options();
  o.dtype = at::kBFloat16;
  o.device = c10::Device(c10::kCUDA, 0);
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), o));
  EXPECT_TRUE(t.embed.is_cuda());
  EXPECT_TRUE(t.norm.is_cuda());
  EXPECT_TRUE(t.lm_head.is_same(t.embed));
  EXPECT_FLOAT_EQ(t.embed[0][1].item<float>(), 0.25f * -7);
}

TEST_F(TargetTensorsTest, NormNotReadUnlessAsked) {
  WriteTarget(kQwen3, Config());
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options(false)));
  EXPECT_FALSE(t.norm.defined());
  EXPECT_EQ(t.bytes_read, kV * kH * 2 * 2);
}

TEST_F(TargetTensorsTest, Qwen36MultimodalNamingWithTextConfig) {
  WriteTarget(kQwen36, R"({"tie_word_embeddings": false,
      "text_config": {"hidden_size": 8, "vocab_size": 32}})");
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_EQ(t.family, "qwen3.5-multimodal");
  EXPECT_EQ(t.embed_name, "model.language_model.embed_tokens.weight");
  EXPECT_EQ(t.lm_head_name, "lm_head.weight");
  EXPECT_EQ(t.norm_name, "model.language_model.norm.weight");
  EXPECT_EQ(t.vocab_size, kV);
}

TEST_F(TargetTensorsTest, LegacyWrapperNaming) {
  WriteTarget(kLegacy, Config());
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_EQ(t.family, "legacy-wrapper");
  EXPECT_EQ(t.lm_head_name, "language_model.lm_head.weight");
  EXPECT_EQ(t.norm_name, "language_model.model.norm.weight");
}

TEST_F(TargetTensorsTest, TiedAtTopLevelSharesStorage) {
  WriteTarget(kQwen3, Config(R"(, "tie_word_embeddings": true)"), /*with_lm_head=*/false);
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_TRUE(t.tied);
  EXPECT_EQ(t.lm_head_name, "model.embed_tokens.weight");
  EXPECT_TRUE(t.lm_head.is_same(t.embed));
  EXPECT_EQ(t.bytes_read, kV * kH * 2 + kH * 4);  // embed read once
  EXPECT_THAT(t.facts, Contains("lm_head tied to embed_tokens (tie_word_embeddings true "
                                "at top level)"));
}

TEST_F(TargetTensorsTest, TiedInTextConfig) {
  WriteTarget(kQwen36, R"({"text_config": {"hidden_size": 8, "vocab_size": 32,
      "tie_word_embeddings": true}})",
              /*with_lm_head=*/false);
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_TRUE(t.tied);
  EXPECT_TRUE(t.lm_head.is_same(t.embed));
  EXPECT_THAT(t.facts, Contains(HasSubstr("tie_word_embeddings true at text_config")));
}

TEST_F(TargetTensorsTest, TiedWithStoredLmHeadUsesEmbedLikeTransformers) {
  WriteTarget(kQwen3, Config(R"(, "tie_word_embeddings": true)"));
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_TRUE(t.lm_head.is_same(t.embed));
  EXPECT_THAT(t.facts, Contains(HasSubstr("'lm_head.weight' present but unused")));
}

TEST_F(TargetTensorsTest, UntiedMissingLmHeadSaysTieAbsent) {
  WriteTarget(kQwen3, Config(), /*with_lm_head=*/false);
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kNotFound,
                       AllOf(HasSubstr("no lm_head tensor; tried 'lm_head.weight', "
                                       "'language_model.lm_head.weight'; nearest present: "),
                             HasSubstr("does not set tie_word_embeddings (treated as false)"),
                             HasSubstr("set \"tie_word_embeddings\": true"))));
}

TEST_F(TargetTensorsTest, UntiedExplicitlyMissingLmHead) {
  WriteTarget(kQwen3, Config(R"(, "tie_word_embeddings": false)"), false);
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("; tie_word_embeddings is false at top level")));
}

TEST_F(TargetTensorsTest, WrongFamilyListsNamesTriedAndNearest) {
  Names wrong = {"model.lang_model.embed_tokens.weight", "lm_head.weight",
                 "model.lang_model.norm.weight", "model.lang_model.layers.0.mlp.up_proj.weight"};
  WriteTarget(wrong, Config());
  EXPECT_THAT(
      LoadTargetTensors(dir_.path(), Options()),
      StatusIs(absl::StatusCode::kNotFound,
               AllOf(HasSubstr("target '" + dir_.path() +
                               "': no embed_tokens tensor; tried "
                               "'model.embed_tokens.weight', "
                               "'model.language_model.embed_tokens.weight', "
                               "'language_model.model.embed_tokens.weight'; nearest present: "
                               "'model.lang_model.embed_tokens.weight'"))));
}

TEST_F(TargetTensorsTest, MissingNormWhenAsked) {
  SafetensorsWriter w;
  w.AddValues(kQwen3.embed, "F32", {kV, kH}, Values(kV * kH, 1));
  w.AddValues(kQwen3.lm_head, "F32", {kV, kH}, Values(kV * kH, 1));
  dir_.WriteFile("config.json", Config());
  w.WriteTo(dir_.Join("model.safetensors"));
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options(true)),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no final norm tensor; tried 'model.norm.weight', "
                                 "'model.language_model.norm.weight', "
                                 "'language_model.model.norm.weight'")));
  // Single-file targets work without the norm.
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options(false)));
  EXPECT_EQ(t.family, "qwen3");
  EXPECT_THAT(t.facts, Contains(HasSubstr("a single safetensors checkpoint")));
}

TEST_F(TargetTensorsTest, LmHeadShapeInconsistent) {
  WriteTarget(kQwen3, Config(), true, {kV - 1, kH});
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("lm_head 'lm_head.weight' has shape [31, 8]; expected "
                                 "[32, 8] from config.json (vocab_size, hidden_size)")));
}

TEST_F(TargetTensorsTest, ConfigVocabDisagreesWithEmbed) {
  WriteTarget(kQwen3, R"({"hidden_size": 8, "vocab_size": 40})");
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("embed_tokens 'model.embed_tokens.weight' has shape "
                                 "[32, 8]; expected [40, 8] from config.json")));
}

TEST_F(TargetTensorsTest, ConfigFieldsAbsentAreTakenFromEmbed) {
  WriteTarget(kQwen3, "{}");
  ASSERT_OK_AND_ASSIGN(TargetTensors t, LoadTargetTensors(dir_.path(), Options()));
  EXPECT_EQ(t.vocab_size, kV);
  EXPECT_EQ(t.hidden_size, kH);
  EXPECT_THAT(t.facts, Contains("config.json has no vocab_size; taken from embed_tokens"));
}

TEST_F(TargetTensorsTest, BadConfigValues) {
  WriteTarget(kQwen3, R"({"hidden_size": "eight"})");
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("hidden_size (top level) is \"eight\"; expected a "
                                 "positive integer")));
  dir_.WriteFile("config.json", R"({"tie_word_embeddings": "yes"})");
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("tie_word_embeddings (top level) is \"yes\"")));
  dir_.WriteFile("config.json", "{not json");
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a JSON object")));
}

TEST_F(TargetTensorsTest, MissingConfigOrWeights) {
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no config.json at '" + dir_.Join("config.json") + "'")));
  dir_.WriteFile("config.json", Config());
  EXPECT_THAT(LoadTargetTensors(dir_.path(), Options()),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no model.safetensors.index.json or model.safetensors")));
}

TEST_F(TargetTensorsTest, IndexWithoutWeightMap) {
  dir_.WriteFile("config.json", Config());
  dir_.WriteFile("model.safetensors.index.json", R"({"metadata": {}})");
  EXPECT_THAT(
      LoadTargetTensors(dir_.path(), Options()),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has no \"weight_map\" object")));
}

TEST(TargetTensorsFingerprintTest, SameValuesSameFingerprintAcrossFamilies) {
  constexpr int64_t kV = TargetTensorsTest::kV, kH = TargetTensorsTest::kH;
  auto load = [](const Names& n, double scale) {
    TempDir dir;
    dir.WriteFile("config.json", R"({"hidden_size": 8, "vocab_size": 32})");
    SafetensorsWriter w;
    w.AddValues(n.embed, "BF16", {kV, kH}, Values(kV * kH, scale));
    w.AddValues(n.lm_head, "BF16", {kV, kH}, Values(kV * kH, 0.5));
    w.WriteTo(dir.Join("model.safetensors"));
    TargetLoadOptions o;
    o.dtype = at::kBFloat16;
    auto t = LoadTargetTensors(dir.path(), o);
    EXPECT_THAT(t, ::dflash::testing::IsOk());
    return t.ok() ? t->fingerprint : std::string();
  };
  const std::string a = load(kQwen3, 0.25);
  EXPECT_EQ(a, load(kQwen3, 0.25));
  EXPECT_EQ(a, load(kQwen36, 0.25));
  EXPECT_NE(a, load(kQwen3, 0.125));
}

}  // namespace
}  // namespace dflash::weights
