// The config file's preload list (app/preload.h): loaded in the order
// targets, datasets, drafters; the first failure stops it with a message
// that names the object and its path.
#include "app/preload.h"

#include <optional>
#include <string>
#include <vector>

#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "test_util/status_matchers.h"

namespace dflash::app {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::ElementsAre;

// Records each load as "kind:name" and fails the one named `fail`.
class RecordingCore : public ::dflash::testing::FakeEvalCore {
 public:
  std::vector<std::string> calls;
  std::optional<std::string> fail;

  absl::StatusOr<resident::LoadResult> LoadTarget(const resident::LoadTargetParams& p) override {
    return Record("target", p.name);
  }
  absl::StatusOr<resident::LoadResult> LoadDataset(const resident::LoadDatasetParams& p) override {
    return Record("dataset", p.name);
  }
  absl::StatusOr<resident::LoadResult> LoadDrafter(const resident::LoadDrafterParams& p) override {
    return Record("drafter", p.name);
  }

 private:
  absl::StatusOr<resident::LoadResult> Record(const std::string& kind, const std::string& name) {
    calls.push_back(kind + ":" + name);
    if (name == fail) return absl::NotFoundError("no such file");
    resident::LoadResult r;
    r.resource.name = name;
    return r;
  }
};

PreloadConfig ThreeOfEach() {
  PreloadConfig p;
  // Listed drafters first on purpose: the order is by kind, not as written.
  p.drafters = {{"d1", "/m/d1"}, {"d2", "/m/d2"}};
  p.targets = {{"t1", "/m/t1"}};
  p.datasets = {{"gsm8k", "/m/gsm8k"}, {"", "/m/unnamed"}};
  return p;
}

TEST(PreloadTest, EmptyListLoadsNothing) {
  RecordingCore core;
  EXPECT_OK(RunPreload(core, PreloadConfig{}));
  EXPECT_TRUE(core.calls.empty());
}

TEST(PreloadTest, TargetsThenDatasetsThenDrafters) {
  RecordingCore core;
  EXPECT_OK(RunPreload(core, ThreeOfEach()));
  EXPECT_THAT(core.calls,
              ElementsAre("target:t1", "dataset:gsm8k", "dataset:", "drafter:d1", "drafter:d2"));
}

TEST(PreloadTest, FirstFailureStopsAndNamesObjectAndPath) {
  RecordingCore core;
  core.fail = "gsm8k";
  EXPECT_THAT(RunPreload(core, ThreeOfEach()),
              StatusIs(absl::StatusCode::kNotFound,
                       "preload of dataset 'gsm8k' from '/m/gsm8k' failed: no such file"));
  EXPECT_THAT(core.calls, ElementsAre("target:t1", "dataset:gsm8k"));
}

TEST(PreloadTest, UnnamedObjectIsNamedByItsPath) {
  RecordingCore core;
  core.fail = "";
  EXPECT_THAT(RunPreload(core, ThreeOfEach()),
              StatusIs(absl::StatusCode::kNotFound,
                       "preload of dataset from '/m/unnamed' failed: no such file"));
}

}  // namespace
}  // namespace dflash::app
