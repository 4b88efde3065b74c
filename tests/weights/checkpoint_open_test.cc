#include "weights/checkpoint_open.h"

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <ATen/ATen.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/python_fixtures.h"
#include "test_util/safetensors_writer.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"
#include "weights/weight_map.h"

namespace dflash::weights {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::IsOk;
using ::dflash::testing::ReadFileOrEmpty;
using ::dflash::testing::SafetensorsWriter;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::WriteShardedSafetensors;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The torch.save fixtures (drafter.pt, drafter.ckpt.gz, legacy.pt), made by
// ctest's fixture step before this test (test_util/python_fixtures.h).
std::string FixtureDir() {
  return testing::PythonFixtureDir("make_checkpoint_fixtures");
}

SafetensorsWriter Drafter() {
  SafetensorsWriter w;
  w.AddValues("fc.weight", "F32", {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  w.AddValues("norm.weight", "F32", {2}, {1, 1});
  return w;
}

class CheckpointOpenTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_.WriteFile("config.json", "{}"); }
  std::string Copy(const std::string& fixture, const std::string& to) {
    return dir_.WriteFile(to, ReadFileOrEmpty(FixtureDir() + "/" + fixture));
  }
  TempDir dir_;
};

TEST_F(CheckpointOpenTest, DirectoryWithModelSafetensors) {
  Drafter().WriteTo(dir_.Join("model.safetensors"));
  Drafter().WriteTo(dir_.Join("other.safetensors"));  // model.safetensors outranks it
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(dir_.path(), ""));
  EXPECT_EQ(c.source->format(), "safetensors");
  EXPECT_EQ(c.source->path(), dir_.Join("model.safetensors"));
  EXPECT_EQ(c.config_path, dir_.Join("config.json"));
  EXPECT_THAT(c.source->names(), ElementsAre("fc.weight", "norm.weight"));
}

TEST_F(CheckpointOpenTest, IndexOutranksEverything) {
  SafetensorsWriter a, b;
  a.AddValues("fc.weight", "F32", {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  b.AddValues("norm.weight", "F32", {2}, {1, 1});
  WriteShardedSafetensors(dir_.path(), {{"model-00001-of-00002.safetensors", a},
                                        {"model-00002-of-00002.safetensors", b}});
  Drafter().WriteTo(dir_.Join("model.safetensors"));
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(dir_.path(), ""));
  EXPECT_EQ(c.source->format(), "safetensors-sharded");
  EXPECT_EQ(c.source->names().size(), 2u);
}

TEST_F(CheckpointOpenTest, SingleOtherSafetensors) {
  Drafter().WriteTo(dir_.Join("drafter-step-100.safetensors"));
  Copy("drafter.pt", "training_state.pt");  // safetensors outranks torch files
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(dir_.path(), ""));
  EXPECT_EQ(c.source->path(), dir_.Join("drafter-step-100.safetensors"));
}

TEST_F(CheckpointOpenTest, SeveralSafetensorsWithoutIndexIsAmbiguous) {
  Drafter().WriteTo(dir_.Join("b.safetensors"));
  Drafter().WriteTo(dir_.Join("a.safetensors"));
  EXPECT_THAT(OpenCheckpoint(dir_.path(), ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("holds several weight files ('a.safetensors', "
                                 "'b.safetensors') and no model.safetensors.index.json")));
}

TEST_F(CheckpointOpenTest, SingleTorchFileInDirectory) {
  Copy("drafter.pt", "drafter.pt");
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(dir_.path(), ""));
  EXPECT_EQ(c.source->format(), "torch-zip");
  EXPECT_THAT(c.source->names(), ElementsAre("model.fc.weight", "model.norm.weight"));
  EXPECT_THAT(c.source->skipped_entries(), ElementsAre(HasSubstr("step")));
}

TEST_F(CheckpointOpenTest, TorchStateDictWrapperIsStrippedByValidation) {
  // {"model": {...}, "step": 3} lists "model.fc.weight"; the weight map
  // strips "model." because that is what makes the names match.
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(Copy("drafter.pt", "d.pt"), ""));
  std::vector<TensorSpec> schema = {{"fc.weight", {2, 4}}, {"norm.weight", {2}}};
  ASSERT_OK_AND_ASSIGN(WeightReport r, ValidateWeightMap(*c.source, schema, {}));
  EXPECT_TRUE(r.ok) << ::testing::PrintToString(r.problems);
  EXPECT_EQ(r.stripped_prefix, "model.");
  EXPECT_EQ(r.format, "torch-zip");
  EXPECT_THAT(r.skipped_entries, ElementsAre(HasSubstr("step")));
  ASSERT_OK_AND_ASSIGN(auto w,
                       LoadValidatedWeights(*c.source, r, at::kFloat, c10::Device(c10::kCPU)));
  EXPECT_FLOAT_EQ(w.at("fc.weight")[1][3].item<float>(), 7.0f);
}

TEST_F(CheckpointOpenTest, SeveralTorchFilesAreAmbiguous) {
  Copy("drafter.pt", "step1.pt");
  Copy("drafter.pt", "step2.bin");
  EXPECT_THAT(OpenCheckpoint(dir_.path(), ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("several weight files ('step1.pt', 'step2.bin')")));
}

TEST_F(CheckpointOpenTest, DirectoryWithoutWeights) {
  EXPECT_THAT(OpenCheckpoint(dir_.path(), ""),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("has no weights: looked for model.safetensors.index.json")));
}

TEST_F(CheckpointOpenTest, MissingConfigSaysWhereItLooked) {
  TempDir bare;
  Drafter().WriteTo(bare.Join("model.safetensors"));
  EXPECT_THAT(OpenCheckpoint(bare.path(), ""),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no config.json at '" + bare.Join("config.json") + "'")));
  EXPECT_THAT(OpenCheckpoint(bare.Join("model.safetensors"), ""),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("no config.json at '" + bare.Join("config.json") + "'")));
  // An explicit config elsewhere is used instead.
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(bare.path(), dir_.Join("config.json")));
  EXPECT_EQ(c.config_path, dir_.Join("config.json"));
  EXPECT_THAT(
      OpenCheckpoint(bare.path(), dir_.Join("nope.json")),
      StatusIs(absl::StatusCode::kNotFound, HasSubstr("config '" + dir_.Join("nope.json") + "'")));
}

TEST_F(CheckpointOpenTest, MissingPath) {
  EXPECT_THAT(OpenCheckpoint(dir_.Join("absent"), ""),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("checkpoint '" + dir_.Join("absent") + "' does not exist")));
}

TEST_F(CheckpointOpenTest, FileFormatFromMagicNotName) {
  // safetensors bytes named .pt, and a torch zip named .safetensors.
  const std::string st = Drafter().WriteTo(dir_.Join("weights.pt"));
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint a, OpenCheckpoint(st, ""));
  EXPECT_EQ(a.source->format(), "safetensors");
  EXPECT_EQ(a.config_path, dir_.Join("config.json"));
  const std::string zip = Copy("drafter.pt", "weights.safetensors");
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint b, OpenCheckpoint(zip, ""));
  EXPECT_EQ(b.source->format(), "torch-zip");
}

TEST_F(CheckpointOpenTest, GzipTorchFile) {
  const std::string gz = Copy("drafter.ckpt.gz", "drafter.ckpt.gz");
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(gz, ""));
  EXPECT_EQ(c.source->format(), "torch-zip");
  EXPECT_EQ(c.source->names().size(), 2u);
}

TEST_F(CheckpointOpenTest, LegacyTorchFileGetsTheTorchReadersHint) {
  const std::string legacy = Copy("legacy.pt", "legacy.pt");
  EXPECT_THAT(OpenCheckpoint(legacy, ""),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("checkpoint '" + legacy + "'"),
                             HasSubstr("legacy (pre-1.6, non-zip) torch.save format"))));
}

TEST_F(CheckpointOpenTest, IndexFileGivenDirectly) {
  SafetensorsWriter a;
  a.AddValues("fc.weight", "F32", {2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
  const std::string index =
      WriteShardedSafetensors(dir_.path(), {{"model-00001-of-00001.safetensors", a}});
  ASSERT_OK_AND_ASSIGN(OpenedCheckpoint c, OpenCheckpoint(index, ""));
  EXPECT_EQ(c.source->format(), "safetensors-sharded");
}

TEST_F(CheckpointOpenTest, CorruptFileNamesCheckpoint) {
  dir_.WriteFile("model.safetensors", "garbage, not a checkpoint");
  EXPECT_THAT(
      OpenCheckpoint(dir_.path(), ""),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint '" + dir_.path() + "'")));
}

}  // namespace
}  // namespace dflash::weights
