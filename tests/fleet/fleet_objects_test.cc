// The objects a fleet job may have any server load (fleet/fleet_objects.h),
// over real folders and a core whose loads make objects resident within a
// budget (loading_core.h): the config's names, the paths a job records at
// submit (absolute, canonical, named after their folder), the loads on the
// server that claimed it (the config's parameters, a path already resident
// under any name, room made once, a dataset streamed when none can be made,
// a failure naming object, path and server), what a claim offers, and
// whether a job uses an object.
#include "fleet/fleet_objects.h"

#include <filesystem>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "loading_core.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::fleet {
namespace {

using ::dflash::testing::LoadingCore;
using ::dflash::testing::StatusIs;
using resident::ResourceKind;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;

namespace fs = std::filesystem;

resident::ResourceInfo Listed(ResourceKind kind, const std::string& name, const std::string& path) {
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.source_path = path;
  return r;
}

// Folders models/qwen and data/gsm8k, and `link` -> models.
class FleetObjectsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_.Join("models/qwen"));
    fs::create_directories(dir_.Join("data/gsm8k"));
    fs::create_directory_symlink(dir_.Join("models"), dir_.Join("link"));
    qwen_ = fs::canonical(dir_.Join("models/qwen")).string();
    gsm8k_ = fs::canonical(dir_.Join("data/gsm8k")).string() + "/part-0.pt";
  }

  // What LoadOnDemand is given on server s1, the hooks counting.
  absl::StatusOr<types::EvalParams> Load(const FleetObjects& objects,
                                         const types::JobRequest& request, int frees) {
    OnDemandHooks hooks;
    hooks.loaded = [this](ResourceKind kind, const std::string& name) {
      loaded_.push_back(std::string(resident::ResourceKindName(kind)) + " " + name);
    };
    hooks.free_space = [this, frees] {
      ++free_calls_;
      for (int i = 0; i < frees && !core_.resources.empty(); ++i) {
        core_.Unload(core_.resources.front().kind, core_.resources.front().name).IgnoreError();
      }
      return frees;
    };
    return LoadOnDemand(core_, objects, request, "s1", hooks);
  }

  ::dflash::testing::TempDir dir_;
  std::string qwen_, gsm8k_;
  LoadingCore core_;
  std::vector<std::string> loaded_;
  int free_calls_ = 0;
};

TEST_F(FleetObjectsTest, TheConfigsEntriesAreNamedByNameElseByFolder) {
  resident::LoadTargetParams big;
  big.name = "big";
  big.path = dir_.Join("models/llama");
  big.dtype = "bf16";
  const FleetObjects objects =
      MakeFleetObjects({{"", dir_.Join("models/qwen"), "", ""}, big},
                       {{"", dir_.Join("data/gsm8k/part-0.pt")}, {"chat", "datasets/chat"}});
  ASSERT_EQ(objects.targets.size(), 2u);
  EXPECT_EQ(objects.targets.at("qwen").path, dir_.Join("models/qwen"));
  EXPECT_EQ(objects.targets.at("big").dtype, "bf16");
  ASSERT_EQ(objects.datasets.size(), 2u);
  EXPECT_EQ(objects.datasets.at("gsm8k").path, dir_.Join("data/gsm8k/part-0.pt"));
  EXPECT_EQ(objects.datasets.at("chat").path, "datasets/chat");
}

TEST_F(FleetObjectsTest, PathsAreRecordedCanonicalAndNameTheirFolder) {
  types::JobRequest request;
  request.target_path = dir_.Join("link/qwen/../qwen");
  request.dataset_path = dir_.Join("data/./gsm8k/part-0.pt");
  ASSERT_OK(RecordFleetPaths(FleetObjects{}, request));
  EXPECT_EQ(request.target_path, qwen_);
  EXPECT_EQ(request.params.target, "qwen");
  EXPECT_EQ(request.dataset_path, gsm8k_);
  EXPECT_EQ(request.params.dataset, "gsm8k");
  // A name given is kept.
  types::JobRequest named;
  named.params.target = "mine";
  named.target_path = dir_.Join("models/qwen");
  ASSERT_OK(RecordFleetPaths(FleetObjects{}, named));
  EXPECT_EQ(named.params.target, "mine");
  EXPECT_EQ(named.target_path, qwen_);
}

TEST_F(FleetObjectsTest, ARelativePathIsRefusedNamingTheField) {
  types::JobRequest target;
  target.target_path = "models/qwen";
  target.dataset_path = "data/gsm8k";
  EXPECT_THAT(RecordFleetPaths(FleetObjects{}, target),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("target_path 'models/qwen' is not absolute; every server of the fleet "
                          "loads it from its own file system, so give the absolute path")));
  EXPECT_EQ(target.dataset_path, "data/gsm8k");  // the target is checked first
  types::JobRequest dataset;
  dataset.dataset_path = "gsm8k.pt";
  EXPECT_THAT(RecordFleetPaths(FleetObjects{}, dataset),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("dataset_path 'gsm8k.pt' is not absolute; every server of the fleet "
                          "loads it from its own file system, so give the absolute path")));
}

TEST_F(FleetObjectsTest, ANameOfTheConfigGetsTheConfigsPath) {
  const FleetObjects objects =
      MakeFleetObjects({{"qwen", dir_.Join("link/qwen"), "", ""}}, {{"chat", "datasets/chat"}});
  types::JobRequest request;
  request.params.target = "qwen";
  request.params.dataset = "chat";
  ASSERT_OK(RecordFleetPaths(objects, request));
  EXPECT_EQ(request.target_path, qwen_);  // absolute: canonical
  // Relative: kept, each server resolves it against its data roots.
  EXPECT_EQ(request.dataset_path, "datasets/chat");
  // A path in the request wins; a name the config lacks stays a name.
  types::JobRequest own;
  own.params.target = "qwen";
  own.target_path = dir_.Join("models/qwen");
  own.params.dataset = "other";
  ASSERT_OK(RecordFleetPaths(objects, own));
  EXPECT_EQ(own.target_path, qwen_);
  EXPECT_EQ(own.dataset_path, "");
  EXPECT_EQ(own.params.dataset, "other");
}

TEST_F(FleetObjectsTest, ObjectsByNameOrResidentFromTheSamePathLoadNothing) {
  core_.resources = {Listed(ResourceKind::kTarget, "qwen-old", "/models/qwen")};
  types::JobRequest request;
  request.params.target = "qwen";
  request.target_path = "/models/qwen";  // resident under another name
  request.params.dataset = "d";          // by name: the claim checked it is here
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Load(FleetObjects{}, request, 0));
  EXPECT_EQ(p.target, "qwen-old");
  EXPECT_EQ(p.dataset, "d");
  EXPECT_THAT(core_.target_loads, IsEmpty());
  EXPECT_THAT(core_.dataset_loads, IsEmpty());
  EXPECT_THAT(loaded_, IsEmpty());
}

TEST_F(FleetObjectsTest, AMissingObjectLoadsWithTheConfigsParameters) {
  resident::LoadTargetParams t{"qwen", "/models/qwen", "bf16", "cuda:1", true};
  resident::LoadDatasetParams d;
  d.name = "gsm8k";
  d.path = "/data/gsm8k";
  d.max_samples = 50;
  const FleetObjects objects = MakeFleetObjects({t}, {d});
  types::JobRequest request;
  request.params.target = "qwen";
  request.target_path = "/models/qwen";
  request.params.dataset = "gsm8k";
  request.dataset_path = "/data/gsm8k";
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Load(objects, request, 0));
  EXPECT_EQ(p.target, "qwen");
  EXPECT_EQ(p.dataset, "gsm8k");
  ASSERT_EQ(core_.target_loads.size(), 1u);
  EXPECT_EQ(core_.target_loads[0].dtype, "bf16");
  EXPECT_EQ(core_.target_loads[0].device, "cuda:1");
  EXPECT_TRUE(core_.target_loads[0].load_final_norm);
  ASSERT_EQ(core_.dataset_loads.size(), 1u);
  EXPECT_EQ(core_.dataset_loads[0].max_samples, 50);
  EXPECT_TRUE(core_.dataset_loads[0].refuse_over_budget);  // room is made before streaming
  EXPECT_THAT(loaded_, ElementsAre("target qwen", "dataset gsm8k"));
  EXPECT_EQ(free_calls_, 0);
}

TEST_F(FleetObjectsTest, ATargetOverTheBudgetMakesRoomOnceThenFailsNamingItAll) {
  core_.target_capacity = 1;
  core_.resources = {Listed(ResourceKind::kTarget, "old", "/models/old")};
  types::JobRequest request;
  request.params.target = "qwen";
  request.target_path = "/models/qwen";
  request.params.dataset = "d";
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Load(FleetObjects{}, request, 1));
  EXPECT_EQ(p.target, "qwen");
  EXPECT_EQ(free_calls_, 1);
  EXPECT_THAT(core_.unloads, ElementsAre("target old"));
  EXPECT_EQ(core_.target_loads.size(), 2u);  // refused, then loaded

  request.params.target = "llama";
  request.target_path = "/models/llama";
  EXPECT_THAT(Load(FleetObjects{}, request, 0),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading target 'llama' from '/models/llama' on demand on server s1: "
                          "needs 100 bytes; 100 of 100 in use")));
  EXPECT_EQ(free_calls_, 2);
  EXPECT_EQ(core_.target_loads.size(), 3u);  // nothing freed: not tried again
}

TEST_F(FleetObjectsTest, ADatasetOverTheBudgetIsStreamedWhenNoRoomCanBeMade) {
  core_.dataset_capacity = 0;
  types::JobRequest request;
  request.params.dataset = "big";
  request.dataset_path = "/data/big";
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Load(FleetObjects{}, request, 0));
  EXPECT_EQ(p.dataset, "big");
  ASSERT_EQ(core_.dataset_loads.size(), 2u);
  EXPECT_TRUE(core_.dataset_loads[0].refuse_over_budget);
  EXPECT_FALSE(core_.dataset_loads[1].refuse_over_budget);
  EXPECT_EQ(free_calls_, 1);  // the streamed load asks for no room
  EXPECT_THAT(loaded_, ElementsAre("dataset big"));
}

TEST_F(FleetObjectsTest, ADatasetOverTheBudgetMakesRoomBeforeStreaming) {
  core_.dataset_capacity = 1;
  core_.resources = {Listed(ResourceKind::kDataset, "old", "/data/old")};
  types::JobRequest request;
  request.params.dataset = "big";
  request.dataset_path = "/data/big";
  ASSERT_OK(Load(FleetObjects{}, request, 1).status());
  ASSERT_EQ(core_.dataset_loads.size(), 2u);
  EXPECT_TRUE(core_.dataset_loads[1].refuse_over_budget);  // room made: held, not streamed
  EXPECT_THAT(core_.unloads, ElementsAre("dataset old"));
}

TEST_F(FleetObjectsTest, AFailedLoadKeepsItsCodeAndStopsThere) {
  core_.load_error = absl::NotFoundError("no such file");
  types::JobRequest request;
  request.params.target = "qwen";
  request.target_path = "/models/qwen";
  request.params.dataset = "gsm8k";
  request.dataset_path = "/data/gsm8k";
  EXPECT_THAT(Load(FleetObjects{}, request, 1),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("loading target 'qwen' from '/models/qwen' on demand on server s1: no "
                          "such file")));
  EXPECT_EQ(free_calls_, 0);  // only a budget makes room
  EXPECT_THAT(core_.dataset_loads, IsEmpty());
  request.target_path.clear();
  EXPECT_THAT(Load(FleetObjects{}, request, 1),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("loading dataset 'gsm8k' from '/data/gsm8k' on demand on server s1: no "
                          "such file")));
}

TEST_F(FleetObjectsTest, ResidentNamesOfferEveryObjectAndTheTargetsAndDatasetsPaths) {
  core_.resources = {
      Listed(ResourceKind::kTarget, "t1", "/t1"), Listed(ResourceKind::kDrafter, "m", "/ckpt/m"),
      Listed(ResourceKind::kDataset, "d", "/d"), Listed(ResourceKind::kTarget, "t2", "/t2")};
  const store::ClaimRequest names = ResidentNames(core_);
  EXPECT_THAT(names.targets, ElementsAre("t1", "t2"));
  EXPECT_THAT(names.target_paths, ElementsAre("/t1", "/t2"));
  EXPECT_THAT(names.datasets, ElementsAre("d"));
  EXPECT_THAT(names.dataset_paths, ElementsAre("/d"));
  EXPECT_THAT(names.drafters, ElementsAre("m"));
  EXPECT_EQ(names.server, "");  // the backend's to fill in
}

TEST_F(FleetObjectsTest, UsesObjectByNamePathOrSuite) {
  types::JobRequest r;
  r.params.target = "t";
  r.params.dataset = "d";
  r.params.drafter = "m";
  r.dataset_path = "/data/d";
  r.suite_datasets = {"s1", "s2"};
  EXPECT_TRUE(UsesObject(r, ResourceKind::kTarget, "t", "/models/x"));
  EXPECT_FALSE(UsesObject(r, ResourceKind::kTarget, "u", "/models/u"));
  EXPECT_TRUE(UsesObject(r, ResourceKind::kDataset, "d", "/elsewhere"));
  EXPECT_TRUE(UsesObject(r, ResourceKind::kDataset, "other-name", "/data/d"));
  EXPECT_TRUE(UsesObject(r, ResourceKind::kDataset, "s2", "/data/s2"));
  EXPECT_FALSE(UsesObject(r, ResourceKind::kDataset, "e", "/data/e"));
  EXPECT_TRUE(UsesObject(r, ResourceKind::kDrafter, "m", "/ckpt/m"));
  EXPECT_FALSE(UsesObject(r, ResourceKind::kDrafter, "n", "/ckpt/m"));
  r.target_path = "/models/u";
  EXPECT_TRUE(UsesObject(r, ResourceKind::kTarget, "u-renamed", "/models/u"));
  // No target named: the job may use any target.
  types::JobRequest any;
  any.params.dataset = "d";
  EXPECT_TRUE(UsesObject(any, ResourceKind::kTarget, "whatever", "/models/w"));
}

}  // namespace
}  // namespace dflash::fleet
