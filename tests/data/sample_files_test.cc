// Capture-file discovery and the sample ordering rule.
#include "data/sample_files.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::data {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;

std::vector<std::string> Files(const std::vector<SampleFile>& v) {
  std::vector<std::string> out;
  for (const SampleFile& f : v) out.push_back(f.relative);
  return out;
}
std::vector<int64_t> Indices(const std::vector<SampleFile>& v) {
  std::vector<int64_t> out;
  for (const SampleFile& f : v) out.push_back(f.index);
  return out;
}

class SampleFilesTest : public ::testing::Test {};

TEST_F(SampleFilesTest, NameParts) {
  EXPECT_TRUE(IsCaptureFileName("data_1.ckpt"));
  EXPECT_TRUE(IsCaptureFileName("data_1.pt"));
  EXPECT_TRUE(IsCaptureFileName("data_1.pth"));
  EXPECT_TRUE(IsCaptureFileName("data_1.ckpt.gz"));
  EXPECT_FALSE(IsCaptureFileName("dataset.json"));
  EXPECT_FALSE(IsCaptureFileName("data_1.pt.gz"));
  EXPECT_FALSE(IsCaptureFileName(".data_1.ckpt"));
  EXPECT_FALSE(IsCaptureFileName(".pt"));
  EXPECT_EQ(FileNameIndex("data_17.ckpt"), 17);
  EXPECT_EQ(FileNameIndex("data_17.ckpt.gz"), 17);
  EXPECT_EQ(FileNameIndex("shard3_sample0042.pt"), 42);  // the last integer
  EXPECT_EQ(FileNameIndex("sample.pt"), -1);
  EXPECT_EQ(FolderIndex("rows_5000-10000"), 5000);  // the first integer
  EXPECT_EQ(FolderIndex("train"), -1);
}

TEST_F(SampleFilesTest, DistinctIndicesOrderByIndexNotText) {
  auto v = OrderSampleFiles({"b/data_10.ckpt", "a/data_2.ckpt", "data_0.ckpt", "z/data_1.pt"});
  EXPECT_THAT(Files(v), ::testing::ElementsAre("data_0.ckpt", "z/data_1.pt", "a/data_2.ckpt",
                                               "b/data_10.ckpt"));
  EXPECT_THAT(Indices(v), ::testing::ElementsAre(0, 1, 2, 10));
}

TEST_F(SampleFilesTest, CollidingIndicesOrderByFolderThenIndex) {
  auto v = OrderSampleFiles({"rows_5000-10000/data_1.ckpt", "rows_0-5000/data_10.ckpt",
                             "rows_5000-10000/data_0.ckpt", "rows_0-5000/data_1.ckpt",
                             "rows_0-5000/data_2.ckpt"});
  EXPECT_THAT(Files(v),
              ::testing::ElementsAre("rows_0-5000/data_1.ckpt", "rows_0-5000/data_2.ckpt",
                                     "rows_0-5000/data_10.ckpt", "rows_5000-10000/data_0.ckpt",
                                     "rows_5000-10000/data_1.ckpt"));
  EXPECT_THAT(Indices(v), ::testing::ElementsAre(0, 1, 2, 3, 4));
}

TEST_F(SampleFilesTest, NamesWithoutDigitsFallBackToPositions) {
  auto v = OrderSampleFiles({"beta.pt", "data_3.pt", "alpha.pt"});
  // -1 (no integer) sorts first, then by name.
  EXPECT_THAT(Files(v), ::testing::ElementsAre("alpha.pt", "beta.pt", "data_3.pt"));
  EXPECT_THAT(Indices(v), ::testing::ElementsAre(0, 1, 2));
}

TEST_F(SampleFilesTest, ListsRecursivelyAndSkipsOtherFiles) {
  testing::TempDir dir;
  dir.WriteFile("dataset.json", "{}");
  dir.WriteFile("README.md", "x");
  dir.WriteFile("rows_0-4/data_2.ckpt", "x");
  dir.WriteFile("rows_0-4/data_10.ckpt.gz", "x");
  dir.WriteFile("data_1.pth", "x");
  dir.WriteFile(".cache/data_0.ckpt", "x");
  ASSERT_OK_AND_ASSIGN(auto v, ListSampleFiles(dir.path()));
  EXPECT_THAT(Files(v), ::testing::ElementsAre("data_1.pth", "rows_0-4/data_2.ckpt",
                                               "rows_0-4/data_10.ckpt.gz"));
}

TEST_F(SampleFilesTest, MissingDirectoryIsNotFound) {
  testing::TempDir dir;
  EXPECT_THAT(ListSampleFiles(dir.Join("nope")),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("is not an existing directory")));
  const std::string file = dir.WriteFile("data_0.ckpt", "x");
  EXPECT_THAT(ListSampleFiles(file),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("is not an existing directory")));
}

}  // namespace
}  // namespace dflash::data
