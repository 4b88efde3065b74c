// Loading into a ResidentSet (resident/loads.h) on the tiny world written to
// disk: the prelude's order (placement, then the path inside the data roots,
// then the name), a name's reuse (the same unchanged source: reused unread;
// another file, dtype, config or changed files: AlreadyExists), the default
// name, the budget's refusal with its sizes (a dataset streamed instead
// unless it refuses), a checkpoint that does not match its config, and
// validation without loading.
#include "resident/loads.h"

#include <chrono>
#include <filesystem>
#include <string>

#include "common/fix_hint.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "resident/data_roots.h"
#include "resident/placement.h"
#include "test_util/resident_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::resident {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// "N bytes (0.00 GiB)": every size here is far below a GiB.
std::string Bytes(int64_t n) {
  return std::to_string(n) + " bytes (0.00 GiB)";
}

class LoadsTest : public dflash::testing::ResidentFixture {
 protected:
  // Besides the fixture's: a second target and dataset, and a drafter
  // whose first tensor (kMissing) is missing.
  static void SetUpTestSuite() {
    ResidentFixture::SetUpTestSuite();
    world_->WriteTarget(root_ + "/models/target2");
    world_->WriteDataset(root_ + "/datasets/data2");
    dflash::testing::TinyWorld broken = *world_;
    missing_ = broken.weights.begin()->first;
    broken.weights.erase(broken.weights.begin());
    broken.WriteDrafter(root_ + "/models/broken");
  }

  void SetUp() override {
    absl::StatusOr<DataRoots> roots = DataRoots::Create({root_});
    ASSERT_TRUE(roots.ok()) << roots.status();
    roots_ = *std::move(roots);
    env_.roots = &roots_;
  }

  static std::string AlreadyResident(const std::string& kind, const std::string& name,
                                     const std::string& from) {
    return "a different " + kind + " is already resident as '" + name + "' (from " + root_ + from +
           "); unload it or choose another name";
  }

  static inline std::string missing_;
  DataRoots roots_;
  LoadEnv env_;
  ResidentSet set_;
};

TEST_F(LoadsTest, ATargetIsLoadedOnceThenReusedUnread) {
  ASSERT_OK_AND_ASSIGN(LoadResult first, LoadTargetInto(set_, env_, Target()));
  EXPECT_FALSE(first.reused);
  const ResourceInfo& info = first.resource;
  EXPECT_EQ(info.kind, ResourceKind::kTarget);
  EXPECT_EQ(info.name, "t");
  EXPECT_EQ(info.source_path, root_ + "/models/target");
  EXPECT_EQ(info.device, "cpu");
  EXPECT_EQ(info.dtype, "fp32");
  EXPECT_EQ(info.bytes, kTargetBytes);
  EXPECT_EQ(info.summary, "V=16, H=16, qwen3");
  EXPECT_GT(info.load_time_unix_micros, 0);
  ASSERT_EQ(set_.targets.count("t"), 1u);

  ASSERT_OK_AND_ASSIGN(LoadResult again, LoadTargetInto(set_, env_, Target()));
  EXPECT_TRUE(again.reused);
  // The resident entry's own info: the first load's time, not a new one.
  EXPECT_EQ(again.resource.load_time_unix_micros, info.load_time_unix_micros);
  EXPECT_EQ(again.resource.fingerprint, info.fingerprint);
  LoadTargetParams fp32 = Target();
  fp32.dtype = "fp32";  // what the default resolved to: the same placement
  fp32.device = "cpu";
  ASSERT_OK_AND_ASSIGN(LoadResult explicit_placement, LoadTargetInto(set_, env_, fp32));
  EXPECT_TRUE(explicit_placement.reused);
  EXPECT_EQ(set_.targets.size(), 1u);
}

TEST_F(LoadsTest, ANameHeldByAnotherTargetIsAlreadyExists) {
  ASSERT_OK(LoadTargetInto(set_, env_, Target()));
  LoadTargetParams other = Target();
  other.path = root_ + "/models/target2";
  const absl::Status taken = LoadTargetInto(set_, env_, other).status();
  EXPECT_THAT(taken, StatusIs(absl::StatusCode::kAlreadyExists,
                              Eq(AlreadyResident("target", "t", "/models/target"))));
  EXPECT_EQ(GetFixHint(taken), FixHint::kChooseName);
  LoadTargetParams bf16 = Target();  // the same file in another dtype
  bf16.dtype = "bf16";
  EXPECT_THAT(LoadTargetInto(set_, env_, bf16),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       Eq(AlreadyResident("target", "t", "/models/target"))));
  // The resident one is untouched; under another name the second loads.
  EXPECT_EQ(set_.targets.at("t").info.source_path, root_ + "/models/target");
  other.name = "t2";
  ASSERT_OK_AND_ASSIGN(LoadResult second, LoadTargetInto(set_, env_, other));
  EXPECT_FALSE(second.reused);
  EXPECT_EQ(set_.targets.size(), 2u);
}

TEST_F(LoadsTest, WithoutANameALoadIsNamedAfterItsFolder) {
  ASSERT_OK_AND_ASSIGN(LoadResult t, LoadTargetInto(set_, env_, Target("")));
  EXPECT_EQ(t.resource.name, "target");
  ASSERT_OK_AND_ASSIGN(LoadResult d, LoadDatasetInto(set_, env_, Dataset("")));
  EXPECT_EQ(d.resource.name, "data");
  ASSERT_OK_AND_ASSIGN(LoadResult m, LoadDrafterInto(set_, env_, Drafter("")));
  EXPECT_EQ(m.resource.name, "drafter");
  EXPECT_EQ(
      set_.targets.count("target") + set_.datasets.count("data") + set_.drafters.count("drafter"),
      3u);
}

TEST_F(LoadsTest, ADrafterFromTheSameFilesIsReusedWithItsReport) {
  ASSERT_OK_AND_ASSIGN(LoadResult first, LoadDrafterInto(set_, env_, Drafter()));
  EXPECT_FALSE(first.reused);
  EXPECT_EQ(first.resource.bytes, WeightBytes());
  ASSERT_TRUE(first.report.has_value());
  const std::string dir = root_ + "/models/drafter";
  EXPECT_EQ(set_.drafters.at("m").disk_signature, dir + "||fp32|cpu|" + DiskSignature(dir));
  EXPECT_EQ(DrafterSignature(dir, "", "fp32", "cpu"), dir + "||fp32|cpu|" + DiskSignature(dir));

  ASSERT_OK_AND_ASSIGN(LoadResult again, LoadDrafterInto(set_, env_, Drafter()));
  EXPECT_TRUE(again.reused);
  ASSERT_TRUE(again.report.has_value());
  EXPECT_EQ(again.report->fingerprint, first.report->fingerprint);
  EXPECT_EQ(again.resource.load_time_unix_micros, first.resource.load_time_unix_micros);

  // The same weights with the config named explicitly: another signature.
  LoadDrafterParams with_config = Drafter();
  with_config.config_path = dir + "/config.json";
  EXPECT_THAT(LoadDrafterInto(set_, env_, with_config),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       Eq(AlreadyResident("drafter", "m", "/models/drafter"))));
}

// Files rewritten since the load (a new mtime) are a different drafter.
TEST_F(LoadsTest, AChangedCheckpointUnderTheSameNameIsAlreadyExists) {
  const std::string dir = root_ + "/models/drafter-changed";
  fs::remove_all(dir);
  world_->WriteDrafter(dir);
  LoadDrafterParams p = Drafter("c", "drafter-changed");
  ASSERT_OK(LoadDrafterInto(set_, env_, p));
  const fs::path weights = dir + "/model.safetensors";
  fs::last_write_time(weights, fs::last_write_time(weights) + std::chrono::hours(1));
  const absl::Status changed = LoadDrafterInto(set_, env_, p).status();
  EXPECT_THAT(changed, StatusIs(absl::StatusCode::kAlreadyExists,
                                Eq(AlreadyResident("drafter", "c", "/models/drafter-changed"))));
  EXPECT_EQ(GetFixHint(changed), FixHint::kChooseName);
}

TEST_F(LoadsTest, ADatasetIsReusedByItsPathAndRefusedFromAnother) {
  ASSERT_OK_AND_ASSIGN(LoadResult first, LoadDatasetInto(set_, env_, Dataset()));
  EXPECT_FALSE(first.reused);
  EXPECT_EQ(first.resource.summary, "4 samples, 51 tokens, layers [1, 2, 3], H=16");
  EXPECT_EQ(first.resource.dtype, "fp32");  // as stored: none was asked
  EXPECT_FALSE(first.resource.streamed);
  ASSERT_OK_AND_ASSIGN(LoadResult again, LoadDatasetInto(set_, env_, Dataset()));
  EXPECT_TRUE(again.reused);
  LoadDatasetParams other = Dataset();
  other.path = root_ + "/datasets/data2";
  EXPECT_THAT(LoadDatasetInto(set_, env_, other),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       Eq(AlreadyResident("dataset", "d", "/datasets/data"))));
}

TEST_F(LoadsTest, PathsOutsideTheDataRootsArePermissionDenied) {
  const auto outside = [](const std::string& field, const std::string& path) {
    return StatusIs(absl::StatusCode::kPermissionDenied,
                    Eq(field + " '" + path + "' is outside the server's data roots"));
  };
  LoadTargetParams t = Target();
  t.path = "/etc";
  EXPECT_THAT(LoadTargetInto(set_, env_, t), outside("path", "/etc"));
  LoadDrafterParams m = Drafter();
  m.path = root_ + "/../..";  // named as asked, not as resolved
  EXPECT_THAT(LoadDrafterInto(set_, env_, m), outside("path", m.path));
  LoadDatasetParams d = Dataset();
  d.path = "/etc/hostname";
  EXPECT_THAT(LoadDatasetInto(set_, env_, d), outside("path", "/etc/hostname"));
  ValidateParams v;
  v.path = root_ + "/models/drafter";
  v.config_path = "/etc/passwd";
  EXPECT_THAT(ValidateCheckpointIn(set_, env_, v), outside("config_path", "/etc/passwd"));
  EXPECT_TRUE(set_.targets.empty() && set_.drafters.empty() && set_.datasets.empty());
}

// A request with several faults gets the same error from every kind: the
// placement first, then the path, then the name.
TEST_F(LoadsTest, ThePreludeChecksPlacementThenPathThenName) {
  ASSERT_OK(LoadTargetInto(set_, env_, Target()));
  ASSERT_OK(LoadDatasetInto(set_, env_, Dataset()));
  const auto bad_device = StatusIs(absl::StatusCode::kInvalidArgument,
                                   Eq("device 'tpu' is not one of cpu, cuda, cuda:N"));
  LoadTargetParams t = Target();
  t.path = "/etc";
  t.device = "tpu";
  EXPECT_THAT(LoadTargetInto(set_, env_, t), bad_device);
  LoadDrafterParams m = Drafter();
  m.path = "/etc";
  m.device = "tpu";
  EXPECT_THAT(LoadDrafterInto(set_, env_, m), bad_device);
  LoadDatasetParams d = Dataset();
  d.path = "/etc";
  d.device = "tpu";
  EXPECT_THAT(LoadDatasetInto(set_, env_, d), bad_device);
  d.device = "";
  d.dtype = "fp64";
  EXPECT_THAT(LoadDatasetInto(set_, env_, d),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("dtype 'fp64' is not one of fp32, bf16, fp16")));
  // "t" and "d" are taken, but the path outside the roots is what is said.
  t.device = "";
  EXPECT_THAT(LoadTargetInto(set_, env_, t),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside")));
  d.dtype = "";
  EXPECT_THAT(LoadDatasetInto(set_, env_, d),
              StatusIs(absl::StatusCode::kPermissionDenied, HasSubstr("outside")));
}

TEST_F(LoadsTest, OverTheBudgetIsResourceExhaustedWithTheSizes) {
  env_.max_resident_bytes = kTargetBytes - 1;
  const absl::Status target = LoadTargetInto(set_, env_, Target()).status();
  EXPECT_THAT(target, StatusIs(absl::StatusCode::kResourceExhausted,
                               Eq("loading target 't' needs " + Bytes(kTargetBytes) +
                                  " (estimated from config.json) but " + Bytes(0) + " of the " +
                                  Bytes(kTargetBytes - 1) +
                                  " resident budget is in use; unload something first")));
  EXPECT_EQ(GetFixHint(target), FixHint::kResidentBudget);
  env_.max_resident_bytes = WeightBytes() - 1;
  EXPECT_THAT(LoadDrafterInto(set_, env_, Drafter()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading drafter 'm' needs " + Bytes(WeightBytes()) +
                          " (estimated from the tensor headers) but " + Bytes(0) + " of the " +
                          Bytes(WeightBytes() - 1) +
                          " resident budget is in use; unload something first")));
  EXPECT_TRUE(set_.targets.empty() && set_.drafters.empty());

  // Exactly full fits; a reuse then is not a new load and is not refused.
  env_.max_resident_bytes = kTargetBytes;
  ASSERT_OK(LoadTargetInto(set_, env_, Target()));
  ASSERT_OK_AND_ASSIGN(LoadResult again, LoadTargetInto(set_, env_, Target()));
  EXPECT_TRUE(again.reused);
  EXPECT_THAT(LoadTargetInto(set_, env_, Target("t2")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("but " + Bytes(kTargetBytes) + " of the " + Bytes(kTargetBytes) +
                                 " resident budget is in use")));
}

TEST_F(LoadsTest, ADatasetOverTheBudgetIsStreamedUnlessItRefuses) {
  env_.max_resident_bytes = 1;
  const std::string refusal = "loading dataset 'd' needs " + Bytes(DatasetFileBytes()) +
                              " (estimated from the sizes of its files) but " + Bytes(0) +
                              " of the " + Bytes(1) +
                              " resident budget is in use; unload something first";
  LoadDatasetParams refuse = Dataset();
  refuse.refuse_over_budget = true;
  const absl::Status refused = LoadDatasetInto(set_, env_, refuse).status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted, Eq(refusal)));
  EXPECT_EQ(GetFixHint(refused), FixHint::kResidentBudget);
  EXPECT_TRUE(set_.datasets.empty());

  ASSERT_OK_AND_ASSIGN(LoadResult streamed, LoadDatasetInto(set_, env_, Dataset()));
  ASSERT_EQ(streamed.warnings.size(), 1u);
  EXPECT_EQ(streamed.warnings[0], refusal + "; streamed from disk instead");
  EXPECT_TRUE(streamed.resource.streamed);
  EXPECT_EQ(streamed.resource.bytes, 0);
  EXPECT_THAT(streamed.resource.summary,
              StartsWith("4 samples, 51 tokens, layers [1, 2, 3], H=16; streamed from disk ("));
}

TEST_F(LoadsTest, ACheckpointThatDoesNotMatchItsConfigLoadsNothing) {
  LoadDrafterParams p = Drafter("b", "broken");
  EXPECT_THAT(LoadDrafterInto(set_, env_, p),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("checkpoint '" + root_ +
                                  "/models/broken' does not match its config (1 missing, 0 shape "
                                  "mismatch(es), 0 unexpected); nothing was loaded:\n  - ")));
  EXPECT_THAT(LoadDrafterInto(set_, env_, p),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(missing_)));
  EXPECT_TRUE(set_.drafters.empty());
}

TEST_F(LoadsTest, ValidationReportsWithoutLoading) {
  ValidateParams v;
  v.path = root_ + "/models/drafter";
  ASSERT_OK_AND_ASSIGN(weights::WeightReport good, ValidateCheckpointIn(set_, env_, v));
  EXPECT_TRUE(good.ok);
  EXPECT_EQ(good.path, root_ + "/models/drafter");
  EXPECT_EQ(good.config_path, root_ + "/models/drafter/config.json");
  EXPECT_THAT(good.facts, ::testing::Contains("fc expects 2 target layers x 16 = 32 input "
                                              "features; config lists target_layer_ids [3, 1]"));
  v.path = root_ + "/models/broken";
  ASSERT_OK_AND_ASSIGN(weights::WeightReport bad, ValidateCheckpointIn(set_, env_, v));
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.missing, 1);
  EXPECT_TRUE(set_.drafters.empty());
}

}  // namespace
}  // namespace dflash::resident
