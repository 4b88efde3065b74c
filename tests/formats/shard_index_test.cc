// The sharded-checkpoint index (formats/shard_index.h) on raw text: the maps
// both ways, and each refused index or shard name with its exact message.
// Sharded files on disk are in tests/weights/sharded_safetensors_test.cc.
#include "formats/shard_index.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::formats {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::Pair;
using ::testing::StartsWith;

using ::dflash::testing::kInvalid;
constexpr char kPath[] = "/ckpt/model.safetensors.index.json";

TEST(ShardIndexTest, MapsTensorsAndShardsBothWays) {
  ASSERT_OK_AND_ASSIGN(ShardIndex index, ParseShardIndex(R"({"metadata": {"total_size": 12},
      "weight_map": {"b.weight": "model-00002.safetensors", "a.weight": "model-00001.safetensors",
                     "c.bias": "sub/../model-00002.safetensors"}})",
                                                         kPath));
  EXPECT_THAT(index.all_names, ElementsAre("a.weight", "b.weight", "c.bias"));
  EXPECT_THAT(index.shard_of, ElementsAre(Pair("a.weight", "model-00001.safetensors"),
                                          Pair("b.weight", "model-00002.safetensors"),
                                          Pair("c.bias", "sub/../model-00002.safetensors")));
  // The shard is kept as written: "sub/../x" and "x" are two names.
  EXPECT_THAT(index.by_shard,
              ElementsAre(Pair("model-00001.safetensors", ElementsAre("a.weight")),
                          Pair("model-00002.safetensors", ElementsAre("b.weight")),
                          Pair("sub/../model-00002.safetensors", ElementsAre("c.bias"))));
  ASSERT_OK_AND_ASSIGN(index, ParseShardIndex(R"({"weight_map": {}})", kPath));
  EXPECT_TRUE(index.all_names.empty());
}

TEST(ShardIndexTest, RefusesMalformedIndexes) {
  const std::string p = std::string("'") + kPath + "': ";
  EXPECT_THAT(ParseShardIndex("{\"weight_map\": ", kPath),
              StatusIs(kInvalid, StartsWith(p + "index is not valid JSON: parse error")));
  EXPECT_THAT(ParseShardIndex("[]", kPath),
              StatusIs(kInvalid, Eq(p + "index JSON is not an object; expected "
                                        "{\"weight_map\": {...}}")));
  for (const char* text : {"{}", R"({"weight_map": ["a"]})"}) {
    EXPECT_THAT(ParseShardIndex(text, kPath),
                StatusIs(kInvalid, Eq(p + "index has no \"weight_map\" object of tensor name -> "
                                          "shard file")))
        << text;
  }
  EXPECT_THAT(ParseShardIndex(R"({"weight_map": {"w": 1}})", kPath),
              StatusIs(kInvalid, Eq(p + "weight_map entry 'w' is not a string; expected a shard "
                                        "file name")));
}

TEST(ShardIndexTest, ShardsMustStayInsideTheIndexDirectory) {
  const std::string p = std::string("'") + kPath + "': ";
  for (const char* shard :
       {"", "/etc/passwd", "../x.safetensors", "a/../../x.safetensors", ".", "sub/", "./"}) {
    const std::string text = std::string(R"({"weight_map": {"w": ")") + shard + "\"}}";
    EXPECT_THAT(ParseShardIndex(text, kPath),
                StatusIs(kInvalid, Eq(p + "shard '" + shard +
                                      "' (for tensor 'w') is not a file inside the index's "
                                      "directory")))
        << shard;
  }
  EXPECT_THAT(ParseShardIndex(R"({"weight_map": {"w": "sub/x.safetensors"}})", kPath),
              ::dflash::testing::IsOk());
}

}  // namespace
}  // namespace dflash::formats
