// FleetPlacement on the server that claimed a job (fleet/fleet_placement_run.cc)
// over a core whose loads fill a budget of a few objects (loading_core.h),
// with a real queue on PostgreSQL (fleet_store_fixture.h): what a job names
// by path is loaded; a load over the budget first unloads earlier on-demand
// loads no job here uses (never one a running job uses, nor one loaded by
// hand), then is a refusal for another server; Run evaluates, or splits a
// sharded job.
#include <string>

#include "fleet/fleet_placement.h"
#include "fleet/refusal.h"
#include "fleet_store_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "loading_core.h"
#include "test_util/status_matchers.h"

namespace dflash::fleet {
namespace {

using ::dflash::testing::FleetStoreTest;
using ::dflash::testing::LoadingCore;
using ::dflash::testing::RunnerGate;
using ::dflash::testing::StatusIs;
using resident::ResourceKind;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;
using types::JobRecord;

// A job claimed by this server ("here") naming target `name` by path
// /models/<name>, and dataset d by name.
JobRecord ByPath(const std::string& name) {
  JobRecord job = ::dflash::testing::NamedJob("held");
  job.server = "here";
  job.request.params.target = name;
  job.request.target_path = "/models/" + name;
  return job;
}

// The queue's runner holds each job at the gate; room for one target.
class FleetPlacementRunTest : public FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    core_.target_capacity = 1;
    StartQueue(::dflash::testing::QuickFleetOptions("here"),
               [this](const JobRecord& job, const types::ProgressFn&) {
                 gate_.Enter(job.id);
                 return types::EvalResult{};
               });
    placement_ = std::make_unique<FleetPlacement>(core_, *backend_, FleetObjects{});
  }
  void TearDown() override {
    gate_.Open();
    FleetStoreTest::TearDown();
  }

  absl::StatusOr<types::EvalParams> Prepare(const JobRecord& job) {
    return placement_->Prepare(job, *queue_);
  }

  LoadingCore core_;
  RunnerGate gate_;
  std::unique_ptr<FleetPlacement> placement_;
};

TEST_F(FleetPlacementRunTest, PrepareLoadsWhatTheJobNamesByPath) {
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Prepare(ByPath("a")));
  EXPECT_EQ(p.target, "a");
  EXPECT_EQ(p.dataset, "d");
  ASSERT_EQ(core_.target_loads.size(), 1u);
  EXPECT_EQ(core_.target_loads[0].path, "/models/a");
  // Resident now: the next job naming it loads nothing.
  ASSERT_OK(Prepare(ByPath("a")).status());
  EXPECT_EQ(core_.target_loads.size(), 1u);
}

TEST_F(FleetPlacementRunTest, AnEarlierOnDemandLoadNoJobUsesMakesRoom) {
  ASSERT_OK(Prepare(ByPath("a")).status());
  ASSERT_OK_AND_ASSIGN(types::EvalParams p, Prepare(ByPath("b")));
  EXPECT_EQ(p.target, "b");
  EXPECT_THAT(core_.unloads, ElementsAre("target a"));
}

TEST_F(FleetPlacementRunTest, OverTheBudgetIsARefusalForAnotherServer) {
  // Loaded by hand, not for a job: never unloaded to make room.
  resident::ResourceInfo x;
  x.kind = ResourceKind::kTarget;
  x.name = "x";
  x.source_path = "/models/x";
  core_.resources = {x};
  const absl::StatusOr<types::EvalParams> p = Prepare(ByPath("a"));
  EXPECT_THAT(p, StatusIs(absl::StatusCode::kResourceExhausted,
                          Eq("loading target 'a' from '/models/a' on demand on server here: needs "
                             "100 bytes; 100 of 100 in use")));
  EXPECT_TRUE(IsRefusal(p.status()));
  EXPECT_THAT(core_.unloads, IsEmpty());
}

TEST_F(FleetPlacementRunTest, AnotherFailedLoadIsNoRefusal) {
  core_.load_error = absl::NotFoundError("no such folder");
  const absl::StatusOr<types::EvalParams> p = Prepare(ByPath("a"));
  EXPECT_THAT(p, StatusIs(absl::StatusCode::kNotFound,
                          Eq("loading target 'a' from '/models/a' on demand on server here: no "
                             "such folder")));
  EXPECT_FALSE(IsRefusal(p.status()));  // no server would do better: it fails here
}

TEST_F(FleetPlacementRunTest, AnObjectARunningJobUsesIsKept) {
  ASSERT_OK(Prepare(ByPath("a")).status());
  // A job naming /models/a runs here (held at the gate).
  ASSERT_OK_AND_ASSIGN(JobRecord running, queue_->Submit(ByPath("a")));
  ASSERT_TRUE(gate_.WaitEntered(running.id));
  const absl::StatusOr<types::EvalParams> p = Prepare(ByPath("b"));
  EXPECT_THAT(p, StatusIs(absl::StatusCode::kResourceExhausted, ::testing::HasSubstr("'b'")));
  EXPECT_TRUE(IsRefusal(p.status()));
  EXPECT_THAT(core_.unloads, IsEmpty());
  gate_.Open();
}

TEST_F(FleetPlacementRunTest, AnObjectUnloadedByHandIsForgotten) {
  ASSERT_OK(Prepare(ByPath("a")).status());
  ASSERT_OK(core_.Unload(ResourceKind::kTarget, "a").status());  // by hand
  core_.target_capacity = 0;
  EXPECT_THAT(Prepare(ByPath("b")), StatusIs(absl::StatusCode::kResourceExhausted,
                                             ::testing::HasSubstr("needs 100 bytes")));
  EXPECT_THAT(core_.unloads, ElementsAre("target a"));  // not unloaded twice
}

TEST_F(FleetPlacementRunTest, RunEvaluatesOrSplitsAShardedJob) {
  JobRecord job = ByPath("a");
  job.id = "ev-1";
  core_.eval_result.blocks = 11;
  ASSERT_OK_AND_ASSIGN(types::EvalResult r,
                       placement_->Run(job, job.request.params, nullptr, *queue_));
  EXPECT_EQ(r.blocks, 11);
  EXPECT_EQ(core_.last_eval.target, "a");
  job.request.dataset_path = "/data/d";
  job.request.params.options.shards = 2;
  core_.plan_error = absl::FailedPreconditionError("dataset 'd' is not resident");
  EXPECT_THAT(placement_->Run(job, job.request.params, nullptr, *queue_),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("splitting job ev-1 into shards: dataset 'd' is not resident")));
}

}  // namespace
}  // namespace dflash::fleet
