// resident::Registry alone, on the tiny world written to disk: loads and
// their listing, paths outside the data roots, the budget's refusal before
// reading, the picks (by name, the only one, their errors), unload (while
// a pick holds the object, then free), a checkpoint's drafter (one-shot or
// the resident copy) and the target consistency a dataset load reports.
#include "resident/registry.h"

#include <memory>
#include <string>

#include "common/fix_hint.h"
#include "data/eval_dataset.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/resident_fixture.h"
#include "test_util/status_matchers.h"
#include "weights/target_tensors.h"

namespace dflash::resident {
namespace {

using ::dflash::testing::StatusIs;
using ::testing::Eq;
using ::testing::StartsWith;

class RegistryTest : public dflash::testing::ResidentFixture {
 protected:
  static std::unique_ptr<Registry> Make(int64_t budget = 0) {
    RegistryOptions o;
    o.data_roots = {root_};
    o.max_resident_bytes = budget;
    auto r = Registry::Create(o);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *std::move(r) : nullptr;
  }
};

TEST_F(RegistryTest, LoadsListAndReuse) {
  auto r = Make();
  ASSERT_OK_AND_ASSIGN(LoadResult t, r->LoadTarget(Target()));
  EXPECT_EQ(t.resource.bytes, kTargetBytes);
  EXPECT_EQ(t.resource.summary, "V=16, H=16, qwen3");
  ASSERT_OK_AND_ASSIGN(LoadResult m, r->LoadDrafter(Drafter()));
  EXPECT_EQ(m.resource.bytes, WeightBytes());
  ASSERT_TRUE(m.report.has_value());
  ASSERT_OK_AND_ASSIGN(LoadResult d, r->LoadDataset(Dataset()));
  EXPECT_EQ(d.resource.summary, "4 samples, 51 tokens, layers [1, 2, 3], H=16");

  const std::vector<ResourceInfo> all = r->List(std::nullopt);
  ASSERT_EQ(all.size(), 3u);  // targets, drafters, datasets
  EXPECT_EQ(all[0].kind, ResourceKind::kTarget);
  EXPECT_EQ(all[1].kind, ResourceKind::kDrafter);
  EXPECT_EQ(all[2].kind, ResourceKind::kDataset);
  ASSERT_OK_AND_ASSIGN(LoadResult again, r->LoadTarget(Target()));
  EXPECT_TRUE(again.reused);
  EXPECT_EQ(r->List(ResourceKind::kTarget).size(), 1u);
}

TEST_F(RegistryTest, PathsOutsideTheDataRootsAreRefused) {
  auto r = Make();
  LoadTargetParams p = Target();
  p.path = "/etc";
  EXPECT_THAT(r->LoadTarget(p), StatusIs(absl::StatusCode::kPermissionDenied,
                                         Eq("path '/etc' is outside the server's data roots")));
  EXPECT_TRUE(r->List(std::nullopt).empty());
}

TEST_F(RegistryTest, BudgetRefusesBeforeReading) {
  const int64_t budget = kTargetBytes + 100;
  auto r = Make(budget);
  ASSERT_OK(r->LoadTarget(Target()));
  const absl::Status refused = r->LoadDrafter(Drafter()).status();
  EXPECT_THAT(refused,
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading drafter 'm' needs " + std::to_string(WeightBytes()) +
                          " bytes (0.00 GiB) (estimated from the tensor headers) but " +
                          std::to_string(kTargetBytes) + " bytes (0.00 GiB) of the " +
                          std::to_string(budget) +
                          " bytes (0.00 GiB) resident budget is in use; unload something first")));
  EXPECT_EQ(GetFixHint(refused), FixHint::kResidentBudget);
  EXPECT_EQ(r->List(std::nullopt).size(), 1u);
}

TEST_F(RegistryTest, PickByNameOrTheOnlyOne) {
  auto r = Make();
  EXPECT_THAT(r->Pick("", "", ""), StatusIs(absl::StatusCode::kFailedPrecondition,
                                            Eq("no target is loaded; load one first")));
  ASSERT_OK(r->LoadTarget(Target()));
  ASSERT_OK(r->LoadDataset(Dataset()));
  ASSERT_OK(r->LoadDrafter(Drafter()));
  ASSERT_OK_AND_ASSIGN(Registry::Picked p, r->Pick("", "", ""));
  EXPECT_EQ(p.target.info.name, "t");
  EXPECT_EQ(p.dataset.info.name, "d");
  EXPECT_EQ(p.drafter.object, nullptr);  // none named: none picked
  EXPECT_EQ(p.target.object->hidden_size, 16);
  ASSERT_OK_AND_ASSIGN(Registry::Picked named, r->Pick("t", "d", "m"));
  ASSERT_NE(named.drafter.object, nullptr);
  EXPECT_EQ(named.drafter.info.name, "m");
  EXPECT_THAT(r->Pick("t", "d", "x"), StatusIs(absl::StatusCode::kNotFound,
                                               Eq("no resident drafter named 'x' (resident: m)")));
  ASSERT_OK(r->LoadTarget(Target("t2")));
  const absl::Status several = r->Pick("", "d", "").status();
  EXPECT_THAT(several, StatusIs(absl::StatusCode::kInvalidArgument,
                                Eq("several targets are resident (t, t2); name one")));
  EXPECT_EQ(GetFixHint(several), FixHint::kNameTarget);
}

TEST_F(RegistryTest, UnloadWaitsForWhatAPickHolds) {
  auto r = Make();
  ASSERT_OK(r->LoadTarget(Target()));
  ASSERT_OK(r->LoadDataset(Dataset()));
  EXPECT_THAT(r->Unload(ResourceKind::kTarget, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("unload: name is empty")));
  {
    ASSERT_OK_AND_ASSIGN(Registry::Picked held, r->Pick("t", "d", ""));
    EXPECT_THAT(r->Unload(ResourceKind::kTarget, "t"),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         Eq("target 't' is in use by a running evaluation; unload it when that "
                            "finishes")));
  }
  ASSERT_OK_AND_ASSIGN(ResourceInfo gone, r->Unload(ResourceKind::kTarget, "t"));
  EXPECT_EQ(gone.name, "t");
  EXPECT_THAT(
      r->Unload(ResourceKind::kTarget, "t"),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident target named 't' (resident: none)")));
  EXPECT_EQ(r->List(std::nullopt).size(), 1u);
}

TEST_F(RegistryTest, DrafterFromCheckpointIsOneShotUnlessResident) {
  auto r = Make();
  ASSERT_OK(r->LoadTarget(Target()));
  ASSERT_OK(r->LoadDataset(Dataset()));
  ASSERT_OK_AND_ASSIGN(Registry::Picked p, r->Pick("t", "d", ""));
  const std::string path = root_ + "/models/drafter";
  ASSERT_OK_AND_ASSIGN(Registry::Held<model::DrafterModel> once,
                       r->DrafterFromCheckpoint(path, *p.target.object));
  ASSERT_NE(once.object, nullptr);
  EXPECT_THAT(once.info.name, StartsWith("__oneshot__"));
  EXPECT_TRUE(r->List(ResourceKind::kDrafter).empty());
  // The same files resident in the target's placement: that copy.
  ASSERT_OK(r->LoadDrafter(Drafter()));
  ASSERT_OK_AND_ASSIGN(Registry::Held<model::DrafterModel> resident,
                       r->DrafterFromCheckpoint(path, *p.target.object));
  EXPECT_EQ(resident.info.name, "m");
  EXPECT_EQ(resident.info.fingerprint, once.info.fingerprint);
  EXPECT_THAT(r->DrafterFromCheckpoint("/etc", *p.target.object),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       Eq("checkpoint_path '/etc' is outside the server's data roots")));
}

// The tiny dataset holds no final hidden state, so the consistency itself
// is refused; what is checked is how the load names the pair and that the
// dataset stays resident either way.
TEST_F(RegistryTest, DatasetLoadWithATargetChecksTheirConsistency) {
  auto r = Make();
  ASSERT_OK(r->LoadTarget(Target()));
  LoadDatasetParams unknown = Dataset();
  unknown.target = "x";
  EXPECT_THAT(r->LoadDataset(unknown),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("no resident target named 'x' (resident: t); load it first")));
  EXPECT_EQ(r->List(ResourceKind::kDataset).size(), 1u);
  LoadDatasetParams with = Dataset();
  with.target = "t";
  EXPECT_THAT(r->LoadDataset(with),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       StartsWith("target consistency of dataset 'd' with target 't': dataset "
                                  "'d' holds no final hidden state of the target")));
  EXPECT_EQ(r->List(ResourceKind::kDataset).size(), 1u);
}

}  // namespace
}  // namespace dflash::resident
