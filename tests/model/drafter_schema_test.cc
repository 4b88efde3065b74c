// DrafterSchema on a reduced draft vocabulary (speculators' draft_vocab_size
// below the target's): the checkpoint's own lm_head, d2t and t2d are asked
// for (read as stored: I64, BOOL); with the full vocabulary they are optional.
#include "model/drafter_schema.h"

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/drafter_config_reader.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::model {
namespace {

using Json = nlohmann::json;

// The released Qwen3.6-27B drafter's shape with a draft vocabulary of
// `draft_vocab` (z-lab's layout; the speculators mapping is config/'s).
Json Config(int64_t draft_vocab) {
  Json j = Json::parse(R"({
    "architectures": ["DFlashDraftModel"],
    "hidden_size": 5120, "num_attention_heads": 32, "num_key_value_heads": 8,
    "head_dim": 128, "intermediate_size": 17408, "num_hidden_layers": 5,
    "layer_types": ["sliding_attention", "sliding_attention", "sliding_attention",
                    "sliding_attention", "full_attention"],
    "sliding_window": 2048, "vocab_size": 248320, "dtype": "bfloat16",
    "rope_parameters": {"rope_theta": 10000000, "rope_type": "default"},
    "dflash_config": {"mask_token_id": 248077, "target_layer_ids": [1, 16, 31, 46, 61]}
  })");
  j["draft_vocab_size"] = draft_vocab;
  return j;
}

weights::TensorSpec Find(const std::vector<weights::TensorSpec>& schema, const std::string& name) {
  for (const weights::TensorSpec& t : schema) {
    if (t.name == name) return t;
  }
  return weights::TensorSpec{};
}

TEST(DrafterSchemaTest, ReducedDraftVocabularyAsksForHeadAndMaps) {
  ASSERT_OK_AND_ASSIGN(config::DrafterConfig c, config::ParseDrafterConfig(Config(32000).dump()));
  ASSERT_TRUE(c.reduced_vocab());
  const std::vector<weights::TensorSpec> schema = DrafterSchema(c, 5120);
  EXPECT_EQ(Find(schema, "lm_head.weight").shape, (std::vector<int64_t>{32000, 5120}));
  EXPECT_TRUE(Find(schema, "lm_head.weight").required);
  EXPECT_EQ(Find(schema, "d2t").exact_dtype, "I64");
  EXPECT_EQ(Find(schema, "t2d").shape, (std::vector<int64_t>{248320}));
  EXPECT_EQ(Find(schema, "t2d").exact_dtype, "BOOL");
  ASSERT_OK_AND_ASSIGN(config::DrafterConfig full,
                       config::ParseDrafterConfig(Config(248320).dump()));
  ASSERT_FALSE(full.reduced_vocab());
  EXPECT_FALSE(Find(DrafterSchema(full, 5120), "d2t").required);
}

}  // namespace
}  // namespace dflash::model
