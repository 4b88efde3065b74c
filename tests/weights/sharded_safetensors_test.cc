// Sharded safetensors checkpoints (model.safetensors.index.json): every
// shard opened, a subset of names opening only their shards, and each
// defect of the index or a shard with its exact message.
#include "weights/safetensors_file.h"

#include <cstdint>
#include <filesystem>
#include <string>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::weights {
namespace {

using ::dflash::testing::RawSafetensors;
using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::WriteShardedSafetensors;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using Code = absl::StatusCode;

// ---- sharded ----------------------------------------------------------------

class ShardedSafetensorsTest : public ::testing::Test {
 protected:
  // a, b in shard 1; c in shard 2.
  std::string WriteTwoShards() {
    SafetensorsWriter s1, s2;
    s1.AddValues("a", "F32", {2}, {1, 2}).AddValues("b", "I64", {1}, {7});
    s2.AddValues("c", "BF16", {2}, {0.5, -4});
    return WriteShardedSafetensors(dir_.path(), {{kShard1, s1}, {kShard2, s2}});
  }
  std::string WriteIndex(const std::string& json) {
    return dir_.WriteFile("model.safetensors.index.json", json);
  }
  static constexpr const char* kShard1 = "model-00001-of-00002.safetensors";
  static constexpr const char* kShard2 = "model-00002-of-00002.safetensors";
  TempDir dir_;
};

TEST_F(ShardedSafetensorsTest, OpensEveryShard) {
  const std::string index = WriteTwoShards();
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index));
  EXPECT_EQ(src->format(), "safetensors-sharded");
  EXPECT_EQ(src->path(), index);
  EXPECT_THAT(src->names(), ElementsAre("a", "b", "c"));
  EXPECT_EQ(src->Find("c")->file, dir_.Join(kShard2));
  EXPECT_EQ(src->Find("a")->file, dir_.Join(kShard1));
  ASSERT_OK_AND_ASSIGN(at::Tensor c, src->Read("c"));
  EXPECT_EQ(c.scalar_type(), at::kBFloat16);
  EXPECT_EQ(c[1].item<float>(), -4.0f);
  ASSERT_OK_AND_ASSIGN(at::Tensor b, src->Read("b"));
  EXPECT_EQ(b[0].item<int64_t>(), 7);
  src.reset();
  EXPECT_EQ(c[0].item<float>(), 0.5f);  // still mapped
}

TEST_F(ShardedSafetensorsTest, NamesSubsetOpensOnlyTheirShards) {
  const std::string index = WriteTwoShards();
  std::filesystem::remove(dir_.Join(kShard1));  // never opened, so never missed
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index, {"c", "nope"}));
  EXPECT_THAT(src->names(), ElementsAre("c"));
  ASSERT_OK_AND_ASSIGN(at::Tensor c, src->Read("c"));
  EXPECT_EQ(c[0].item<float>(), 0.5f);
  EXPECT_THAT(
      src->Read("a"),
      StatusIs(Code::kNotFound, AllOf(HasSubstr("tensor 'a' is in shard '" + std::string(kShard1)),
                                      HasSubstr("which was not opened"))));
  // Suggestions draw on the whole index.
  EXPECT_THAT(src->Read("bb"),
              StatusIs(Code::kNotFound, AllOf(HasSubstr("no tensor 'bb' in '" + index + "'"),
                                              HasSubstr("nearest: 'b'"))));
}

TEST_F(ShardedSafetensorsTest, ShardInSubdirectory) {
  SafetensorsWriter s;
  s.AddValues("w", "F32", {1}, {3});
  s.WriteTo(dir_.Join("sub/w.safetensors"));
  const std::string index = WriteIndex(R"({"weight_map": {"w": "sub/../sub/w.safetensors"}})");
  ASSERT_OK_AND_ASSIGN(TensorSourcePtr src, OpenShardedSafetensors(index));
  ASSERT_OK_AND_ASSIGN(at::Tensor w, src->Read("w"));
  EXPECT_EQ(w[0].item<float>(), 3.0f);
}

TEST_F(ShardedSafetensorsTest, MissingIndexIsNotFound) {
  const std::string index = dir_.Join("model.safetensors.index.json");
  EXPECT_THAT(OpenShardedSafetensors(index),
              StatusIs(Code::kNotFound, HasSubstr("no such file '" + index + "'")));
}

TEST_F(ShardedSafetensorsTest, IndexNotJson) {
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex("{\"weight_map\": ")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index is not valid JSON")));
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex("[]")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index JSON is not an object")));
}

TEST_F(ShardedSafetensorsTest, IndexWithoutWeightMap) {
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex(R"({"metadata": {}})")),
              StatusIs(Code::kInvalidArgument, HasSubstr("index has no \"weight_map\" object")));
  EXPECT_THAT(OpenShardedSafetensors(WriteIndex(R"({"weight_map": {"a": 1}})")),
              StatusIs(Code::kInvalidArgument, HasSubstr("weight_map entry 'a' is not a string")));
}

TEST_F(ShardedSafetensorsTest, MissingShard) {
  const std::string index = WriteTwoShards();
  std::filesystem::remove(dir_.Join(kShard2));
  EXPECT_THAT(
      OpenShardedSafetensors(index),
      StatusIs(Code::kNotFound, AllOf(HasSubstr("shard '" + std::string(kShard2) +
                                                "' (holding tensor 'c') is missing"),
                                      HasSubstr("no such file '" + dir_.Join(kShard2) + "'"))));
}

TEST_F(ShardedSafetensorsTest, TensorInIndexAbsentFromShard) {
  WriteTwoShards();
  const std::string index = WriteIndex(
      R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                         "ghost": "model-00001-of-00002.safetensors"}})");
  EXPECT_THAT(OpenShardedSafetensors(index),
              StatusIs(Code::kInvalidArgument,
                       HasSubstr("maps tensor 'ghost' to shard "
                                 "'model-00001-of-00002.safetensors', whose header lacks it")));
}

TEST_F(ShardedSafetensorsTest, ShardPathEscapingTheDirectory) {
  for (const char* shard :
       {"../outside.safetensors", "/etc/passwd", "a/../../x.safetensors", "", ".", "sub/"}) {
    SCOPED_TRACE(shard);
    const std::string index = WriteIndex(std::string(R"({"weight_map": {"w": )") +
                                         ::dflash::testing::JsonQuote(shard) + "}}");
    EXPECT_THAT(
        OpenShardedSafetensors(index),
        StatusIs(Code::kInvalidArgument, HasSubstr("shard '" + std::string(shard) +
                                                   "' (for tensor 'w') is not a file inside the "
                                                   "index's directory")));
  }
}

TEST_F(ShardedSafetensorsTest, CorruptShardNamesItsPath) {
  WriteTwoShards();
  dir_.WriteFile(kShard2, "abc");
  EXPECT_THAT(
      OpenShardedSafetensors(dir_.Join("model.safetensors.index.json")),
      StatusIs(Code::kInvalidArgument, HasSubstr("'" + dir_.Join(kShard2) + "': file is 3 bytes")));
}

}  // namespace
}  // namespace dflash::weights
