// EvalCoreImpl in process on the tiny world written to disk: loads and
// residency (list, reuse, name clashes), unload (unknown, while an
// evaluation holds the object), the memory budget's refusals, RunEval's
// argument errors, the block limit, one-shot checkpoints and that a run
// through the core equals Evaluate() on the same objects.
#include "core/eval_core_impl.h"

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "eval/evaluator.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/drafter_model.h"
#include "test_util/resident_fixture.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::core {
namespace {

namespace fs = std::filesystem;
using ::dflash::testing::IsOk;
using ::dflash::testing::StatusIs;
using ::dflash::testing::TempDir;
using ::dflash::testing::TinySpec;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class EvalCoreImplTest : public dflash::testing::ResidentFixture {
 protected:
  static void SetUpTestSuite() {
    ResidentFixture::SetUpTestSuite();
    world_->WriteDrafter(root_ + "/models/drafter2");
  }

  std::unique_ptr<EvalCoreImpl> MakeCore(int64_t budget = 0, int64_t max_blocks = 0) {
    CoreOptions o;
    o.registry.device = "cpu";
    o.registry.data_roots = {root_};
    o.registry.max_resident_bytes = budget;
    o.state_dir = state_.path();
    o.max_eval_blocks = max_blocks;
    auto core = EvalCoreImpl::Create(o);
    EXPECT_TRUE(core.ok()) << core.status();
    return core.ok() ? *std::move(core) : nullptr;
  }

  static types::EvalParams Eval() {
    types::EvalParams p;
    p.drafter = "m";
    p.dataset = "d";
    p.options.mode = types::Mode::kAnchor;
    p.options.anchors = types::AnchorStrategy::kAll;
    return p;
  }
  void LoadAll(EvalCoreImpl& core) {
    ASSERT_OK(core.LoadTarget(Target()));
    ASSERT_OK(core.LoadDataset(Dataset()));
    ASSERT_OK(core.LoadDrafter(Drafter()));
  }

  TempDir state_;
};

TEST_F(EvalCoreImplTest, LoadsAndLists) {
  auto core = MakeCore();
  ASSERT_OK_AND_ASSIGN(resident::LoadResult t, core->LoadTarget(Target()));
  EXPECT_EQ(t.resource.kind, resident::ResourceKind::kTarget);
  EXPECT_EQ(t.resource.name, "t");
  EXPECT_EQ(t.resource.source_path, root_ + "/models/target");
  EXPECT_EQ(t.resource.device, "cpu");
  EXPECT_EQ(t.resource.dtype, "fp32");
  EXPECT_EQ(t.resource.bytes, kTargetBytes);
  EXPECT_EQ(t.resource.summary, "V=16, H=16, qwen3");
  EXPECT_FALSE(t.reused);

  ASSERT_OK_AND_ASSIGN(resident::LoadResult d, core->LoadDataset(Dataset()));
  EXPECT_EQ(d.resource.kind, resident::ResourceKind::kDataset);
  EXPECT_EQ(d.resource.summary, "4 samples, 51 tokens, layers [1, 2, 3], H=16");
  EXPECT_EQ(d.resource.bytes, 51 * (8 + 1 + 3 * 16 * 4));  // ids, mask, features
  EXPECT_THAT(d.resource.fingerprint, StartsWith("h64:"));

  ASSERT_OK_AND_ASSIGN(resident::LoadResult m, core->LoadDrafter(Drafter()));
  EXPECT_EQ(m.resource.kind, resident::ResourceKind::kDrafter);
  ASSERT_TRUE(m.report.has_value());
  EXPECT_TRUE(m.report->ok);
  EXPECT_EQ(m.resource.bytes, WeightBytes());

  EXPECT_EQ(core->ListResources(std::nullopt).size(), 3u);
  ASSERT_EQ(core->ListResources(resident::ResourceKind::kDrafter).size(), 1u);
  EXPECT_EQ(core->ListResources(resident::ResourceKind::kDrafter)[0].name, "m");
  const ServerInfo info = core->GetServerInfo();
  EXPECT_EQ(info.resident_targets, 1);
  EXPECT_EQ(info.resident_drafters, 1);
  EXPECT_EQ(info.resident_datasets, 1);
  EXPECT_EQ(info.default_dtype, "fp32");
}

TEST_F(EvalCoreImplTest, SameSourceIsReusedAndAnotherIsRefused) {
  auto core = MakeCore();
  LoadAll(*core);
  ASSERT_OK_AND_ASSIGN(resident::LoadResult again, core->LoadDrafter(Drafter()));
  EXPECT_TRUE(again.reused);
  ASSERT_OK_AND_ASSIGN(resident::LoadResult t, core->LoadTarget(Target()));
  EXPECT_TRUE(t.reused);
  ASSERT_OK_AND_ASSIGN(resident::LoadResult d, core->LoadDataset(Dataset()));
  EXPECT_TRUE(d.reused);
  EXPECT_THAT(core->LoadDrafter(Drafter("m", "drafter2")),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       Eq("a different drafter is already resident as 'm' (from " + root_ +
                          "/models/drafter); unload it or choose another name")));
  // A different dtype of the same target is a different object.
  resident::LoadTargetParams bf16 = Target();
  bf16.dtype = "bf16";
  EXPECT_THAT(core->LoadTarget(bf16), StatusIs(absl::StatusCode::kAlreadyExists,
                                               HasSubstr("a different target is already")));
  // Without a name: the folder's.
  resident::LoadDrafterParams unnamed = Drafter("", "drafter2");
  ASSERT_OK_AND_ASSIGN(resident::LoadResult m2, core->LoadDrafter(unnamed));
  EXPECT_EQ(m2.resource.name, "drafter2");
}

TEST_F(EvalCoreImplTest, UnloadErrors) {
  auto core = MakeCore();
  LoadAll(*core);
  EXPECT_THAT(core->Unload(resident::ResourceKind::kDrafter, ""),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("unload: name is empty")));
  EXPECT_THAT(
      core->Unload(resident::ResourceKind::kDrafter, "x"),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident drafter named 'x' (resident: m)")));
  EXPECT_THAT(
      core->Unload(resident::ResourceKind::kTarget, "m"),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident target named 'm' (resident: t)")));
  ASSERT_OK_AND_ASSIGN(resident::ResourceInfo gone,
                       core->Unload(resident::ResourceKind::kDrafter, "m"));
  EXPECT_EQ(gone.name, "m");
  EXPECT_THAT(
      core->Unload(resident::ResourceKind::kDrafter, "m"),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident drafter named 'm' (resident: none)")));
  EXPECT_TRUE(core->ListResources(resident::ResourceKind::kDrafter).empty());
}

TEST_F(EvalCoreImplTest, UnloadWhileAnEvaluationHoldsTheObject) {
  auto core = MakeCore();
  LoadAll(*core);
  std::vector<absl::Status> during;
  bool first = true;
  auto progress = [&](const types::EvalProgress&) {
    if (first) {
      first = false;
      during.push_back(core->Unload(resident::ResourceKind::kDrafter, "m").status());
      during.push_back(core->Unload(resident::ResourceKind::kDataset, "d").status());
      during.push_back(core->Unload(resident::ResourceKind::kTarget, "t").status());
    }
    return true;
  };
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, core->RunEval(Eval(), progress));
  EXPECT_EQ(r.blocks, 29);
  ASSERT_EQ(during.size(), 3u);
  EXPECT_THAT(during[0], StatusIs(absl::StatusCode::kFailedPrecondition,
                                  Eq("drafter 'm' is in use by a running evaluation; unload it "
                                     "when that finishes")));
  EXPECT_THAT(during[1], StatusIs(absl::StatusCode::kFailedPrecondition,
                                  Eq("dataset 'd' is in use by a running evaluation; unload it "
                                     "when that finishes")));
  EXPECT_THAT(during[2], StatusIs(absl::StatusCode::kFailedPrecondition,
                                  Eq("target 't' is in use by a running evaluation; unload it "
                                     "when that finishes")));
  EXPECT_EQ(core->ListResources(std::nullopt).size(), 3u);  // nothing was removed
  // Once it has finished, all three go.
  EXPECT_OK(core->Unload(resident::ResourceKind::kDrafter, "m"));
  EXPECT_OK(core->Unload(resident::ResourceKind::kDataset, "d"));
  EXPECT_OK(core->Unload(resident::ResourceKind::kTarget, "t"));
  EXPECT_TRUE(core->ListResources(std::nullopt).empty());
}

TEST_F(EvalCoreImplTest, MemoryBudgetRefusesBeforeReading) {
  const int64_t budget = kTargetBytes + 100;
  auto core = MakeCore(budget);
  ASSERT_OK(core->LoadTarget(Target()));
  const int64_t need = DatasetFileBytes();
  ASSERT_GT(need, 100);
  resident::LoadDatasetParams refuse = Dataset();
  refuse.refuse_over_budget = true;
  EXPECT_THAT(core->LoadDataset(refuse),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading dataset 'd' needs " + std::to_string(need) +
                          " bytes (0.00 GiB) (estimated from the sizes of its files) but " +
                          std::to_string(kTargetBytes) + " bytes (0.00 GiB) of the " +
                          std::to_string(budget) +
                          " bytes (0.00 GiB) resident budget is in use; unload something first")));
  EXPECT_THAT(core->LoadDrafter(Drafter()),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("loading drafter 'm' needs " + std::to_string(WeightBytes()) +
                          " bytes (0.00 GiB) (estimated from the tensor headers) but " +
                          std::to_string(kTargetBytes) + " bytes (0.00 GiB) of the " +
                          std::to_string(budget) +
                          " bytes (0.00 GiB) resident budget is in use; unload something first")));
  EXPECT_EQ(core->ListResources(std::nullopt).size(), 1u);
  // Without refuse_over_budget the dataset is streamed instead (issue 30):
  // nothing of it resident, and the load says why.
  ASSERT_OK_AND_ASSIGN(resident::LoadResult streamed, core->LoadDataset(Dataset()));
  EXPECT_TRUE(streamed.resource.streamed);
  EXPECT_EQ(streamed.resource.bytes, 0);
  ASSERT_FALSE(streamed.warnings.empty());
  EXPECT_THAT(streamed.warnings[0], ::testing::EndsWith("; streamed from disk instead"));
  EXPECT_OK(core->Unload(resident::ResourceKind::kDataset, "d"));
  // A second target does not fit either (estimated from config.json).
  EXPECT_THAT(core->LoadTarget(Target("t2")),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       HasSubstr("loading target 't2' needs 2048 bytes (0.00 GiB) (estimated "
                                 "from config.json)")));
  // Unloading makes room.
  ASSERT_OK(core->Unload(resident::ResourceKind::kTarget, "t"));
  EXPECT_OK(core->LoadTarget(Target("t2")));
}

TEST_F(EvalCoreImplTest, RunEvalArgumentErrors) {
  auto core = MakeCore();
  types::EvalParams none = Eval();
  none.drafter.clear();
  EXPECT_THAT(core->RunEval(none, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("give a resident drafter name or a checkpoint path")));
  types::EvalParams both = Eval();
  both.checkpoint_path = root_ + "/models/drafter";
  EXPECT_THAT(core->RunEval(both, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("give a resident drafter name or a checkpoint path, not both")));
  types::EvalParams no_data = Eval();
  no_data.dataset.clear();
  EXPECT_THAT(core->RunEval(no_data, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq("dataset is required")));
  EXPECT_THAT(core->RunEval(Eval(), nullptr), StatusIs(absl::StatusCode::kFailedPrecondition,
                                                       Eq("no target is loaded; load one first")));
  LoadAll(*core);
  ASSERT_OK(core->LoadTarget(Target("t2")));
  EXPECT_THAT(core->RunEval(Eval(), nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("several targets are resident (t, t2); name one")));
  types::EvalParams unknown = Eval();
  unknown.target = "t";
  unknown.drafter = "x";
  EXPECT_THAT(
      core->RunEval(unknown, nullptr),
      StatusIs(absl::StatusCode::kNotFound, Eq("no resident drafter named 'x' (resident: m)")));
  types::EvalParams outside = Eval();
  outside.target = "t";
  outside.drafter.clear();
  outside.checkpoint_path = "/etc";
  EXPECT_THAT(core->RunEval(outside, nullptr),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       Eq("checkpoint_path '/etc' is outside the server's data roots")));
}

TEST_F(EvalCoreImplTest, BlockLimitRefusesBeforeScoring) {
  auto core = MakeCore(0, /*max_blocks=*/10);
  LoadAll(*core);
  int calls = 0;
  EXPECT_THAT(core->RunEval(Eval(),
                            [&](const types::EvalProgress&) {
                              ++calls;
                              return true;
                            }),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("this evaluation would score 29 blocks; the server allows at most 10 "
                          "per evaluation; lower max_samples or "
                          "max_blocks")));
  EXPECT_EQ(calls, 0);  // the caller's progress never saw the refused run
  // Replay is refused on the most its walks can take, and says so.
  types::EvalParams replay = Eval();
  replay.options.mode = types::Mode::kReplay;
  EXPECT_THAT(core->RunEval(replay, nullptr),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("this evaluation would score up to 29 blocks; the server allows at "
                          "most 10 per evaluation; lower max_samples or max_blocks")));
  types::EvalParams fewer = Eval();
  fewer.options.max_samples = 1;  // 10 blocks
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, core->RunEval(fewer, nullptr));
  EXPECT_EQ(r.blocks, 10);
}

TEST_F(EvalCoreImplTest, RunEvalEqualsEvaluateOnTheSameObjects) {
  auto core = MakeCore();
  LoadAll(*core);
  for (types::Mode mode : {types::Mode::kAnchor, types::Mode::kReplay}) {
    types::EvalParams p = Eval();
    p.options.mode = mode;
    ASSERT_OK_AND_ASSIGN(types::EvalResult got, core->RunEval(p, nullptr));
    ASSERT_OK_AND_ASSIGN(model::DrafterModel m,
                         model::DrafterModel::Create(world_->cfg, world_->weights));
    data::DatasetLoadOptions lo;
    lo.path = root_ + "/datasets/data";
    ASSERT_OK_AND_ASSIGN(data::EvalDataset ds, data::EvalDataset::Load(lo));
    ASSERT_OK_AND_ASSIGN(types::EvalResult want,
                         eval::Evaluate(m, world_->Target(), ds, p.options));
    EXPECT_EQ(got.blocks, want.blocks);
    EXPECT_EQ(got.accepted_histogram, want.accepted_histogram);
    EXPECT_DOUBLE_EQ(got.accept_length_pooled, want.accept_length_pooled);
    for (size_t j = 0; j < want.positions.size(); ++j) {
      EXPECT_EQ(got.positions[j].correct, want.positions[j].correct);
    }
    const std::vector<resident::ResourceInfo> drafters =
        core->ListResources(resident::ResourceKind::kDrafter);
    EXPECT_EQ(got.drafter_fingerprint, drafters[0].fingerprint);
    EXPECT_EQ(got.dataset_fingerprint,
              core->ListResources(resident::ResourceKind::kDataset)[0].fingerprint);
    EXPECT_EQ(got.device, "cpu");
    EXPECT_EQ(got.dtype, "fp32");
    EXPECT_GE(got.setup_seconds, 0);
  }
}

TEST_F(EvalCoreImplTest, OneShotCheckpointLeavesNothingResident) {
  auto core = MakeCore();
  ASSERT_OK(core->LoadTarget(Target()));
  ASSERT_OK(core->LoadDataset(Dataset()));
  types::EvalParams p = Eval();
  p.drafter.clear();
  p.checkpoint_path = root_ + "/models/drafter";
  ASSERT_OK_AND_ASSIGN(types::EvalResult r, core->RunEval(p, nullptr));
  EXPECT_EQ(r.blocks, 29);
  EXPECT_THAT(r.drafter_fingerprint, ::testing::Not(::testing::IsEmpty()));
  EXPECT_TRUE(core->ListResources(resident::ResourceKind::kDrafter).empty());
  // With the same checkpoint resident (same placement), that copy is used.
  ASSERT_OK(core->LoadDrafter(Drafter()));
  ASSERT_OK_AND_ASSIGN(types::EvalResult again, core->RunEval(p, nullptr));
  EXPECT_EQ(again.drafter_fingerprint, r.drafter_fingerprint);
  EXPECT_EQ(core->ListResources(resident::ResourceKind::kDrafter).size(), 1u);
}

TEST_F(EvalCoreImplTest, DrafterNotMatchingItsConfigIsNotLoaded) {
  TempDir bad_root;
  auto core = MakeCore();
  // A copy of the drafter whose config asks for 3 layers: layer 2's tensors
  // are missing.
  const std::string dir = root_ + "/models/bad";
  fs::create_directories(dir);
  fs::copy_file(root_ + "/models/drafter/model.safetensors", dir + "/model.safetensors",
                fs::copy_options::overwrite_existing);
  TinySpec three;
  three.layers = 3;
  std::ofstream(dir + "/config.json") << dflash::testing::TinyConfigJson(three);
  EXPECT_THAT(core->LoadDrafter(Drafter("bad", "bad")),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("checkpoint '" + dir +
                                  "' does not match its config (11 "
                                  "missing, 0 shape mismatch(es), 0 unexpected); nothing was "
                                  "loaded:\n  - ")));
  EXPECT_TRUE(core->ListResources(resident::ResourceKind::kDrafter).empty());
}

}  // namespace
}  // namespace dflash::core
