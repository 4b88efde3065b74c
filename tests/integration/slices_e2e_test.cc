// Slices through the real binaries on the tiny fixture: a dataset with a
// sample_metadata.jsonl gives per-category and per-thinking slices next to
// the context and repetition slices, printed by `eval` and carried in JSON;
// a bad metadata line refuses the load and leaves the server serving.
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/tiny_fixture.h"
#include "test_util/process.h"

namespace dflash {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::CommandResult;
using ::testing::HasSubstr;
using json = nlohmann::json;

// Protobuf's JSON writes int64 fields as strings.
int64_t I64(const json& v) {
  return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<int64_t>();
}

class SlicesE2eTest : public testing::TinyServerTest {
 protected:
  // A copy of the fixture's dataset with `metadata` as its sample_metadata.jsonl.
  static std::string DatasetWith(const std::string& name, const std::string& metadata) {
    const std::string to = data_ + "/" + name;
    fs::copy(data_ + "/dataset", to, fs::copy_options::recursive);
    std::ofstream(to + "/sample_metadata.jsonl") << metadata;
    return to;
  }
};

TEST_F(SlicesE2eTest, MetadataGivesSlicesWithIntervals) {
  // Even indices are math, odd ones code; indices the dataset lacks are ignored.
  std::string lines;
  for (int i = 0; i < 200; ++i) {
    lines += "{\"index\": " + std::to_string(i) + ", \"category\": \"" +
             (i % 2 == 0 ? "math" : "code") + "\", \"thinking\": " + (i < 100 ? "true" : "false") +
             "}\n";
  }
  const std::string path = DatasetWith("dataset-meta", lines);
  ASSERT_EQ(Cli({"load-dataset", path, "--name", "dm"}).exit_code, 0);
  CommandResult r =
      Cli({"eval", "--drafter", "m", "--dataset", "dm", "--progress", "none", "--detail"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("slices (docs/slices.md): "));
  EXPECT_THAT(r.out, HasSubstr("  category=code "));
  EXPECT_THAT(r.out, HasSubstr("  category=math "));
  EXPECT_THAT(r.out, HasSubstr("  context=0-512 "));
  json j = CliJson({"eval", "--drafter", "m", "--dataset", "dm", "--progress", "none"});
  int64_t category_blocks = 0, context_blocks = 0;
  for (const json& s : j["slices"]) {
    if (s["kind"] == "category") category_blocks += I64(s["blocks"]);
    if (s["kind"] == "context") context_blocks += I64(s["blocks"]);
    if (s["kind"] == "category" && I64(s["samples"]) > 1) {
      EXPECT_TRUE(s.contains("acceptLengthCi")) << s.dump();
    }
  }
  // Every sample has a category here; every block has a context bucket.
  EXPECT_EQ(category_blocks, I64(j["blocks"])) << j.dump();
  EXPECT_EQ(context_blocks, I64(j["blocks"]));
  EXPECT_EQ(j["perSample"][0]["category"], "math");
  // The same data without metadata: context slices only, same numbers.
  json plain = CliJson({"eval", "--drafter", "m", "--dataset", "d", "--progress", "none"});
  EXPECT_EQ(plain["acceptLengthPooled"], j["acceptLengthPooled"]);
  for (const json& s : plain["slices"]) EXPECT_NE(s["kind"], "category");
}

TEST_F(SlicesE2eTest, ABadMetadataLineRefusesTheLoad) {
  const std::string path = DatasetWith("dataset-badmeta", "{\"index\": 0, \"thinking\": 1}\n");
  CommandResult r = Cli({"load-dataset", path, "--name", "bad"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("INVALID_ARGUMENT: sample metadata '" + path +
                               "/sample_metadata.jsonl' line 1: 'thinking' must be true or "
                               "false; got 1"));
  EXPECT_EQ(Cli({"eval", "--drafter", "m", "--dataset", "d", "--progress", "none"}).exit_code, 0);
}

}  // namespace
}  // namespace dflash
