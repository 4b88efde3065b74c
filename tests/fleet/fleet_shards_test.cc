// One evaluation as a fleet's shard jobs (fleet/fleet_shards.h): which jobs
// split, what a shard job carries, and a parent job run by a real queue on
// PostgreSQL (fleet_store_fixture.h) as the server runs one: its shards
// created in the store, run here inline (one runner thread), their parts
// merged in sample order; a failed shard, or one that read another copy of
// the dataset, fails the parent and cancels the rest; cancelling the parent
// cancels its shards.
#include "fleet/fleet_shards.h"

#include <string>
#include <utility>
#include <vector>

#include "eval/part_state.h"
#include "fleet_store_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobs/job_watch.h"
#include "loading_core.h"
#include "test_util/status_matchers.h"

namespace dflash::fleet {
namespace {

using ::dflash::testing::FleetStoreTest;
using ::dflash::testing::LoadingCore;
using ::dflash::testing::RunnerGate;
using ::dflash::testing::WaitDone;
using ::testing::ElementsAre;
using types::JobRecord;
using types::JobState;

// A fleet job: dataset d at /data/d, split into `shards`.
types::JobRequest Sharded(int64_t shards) {
  types::JobRequest r = ::dflash::testing::NamedJob("").request;
  r.dataset_path = "/data/d";
  r.params.options.shards = shards;
  return r;
}

JobRecord AsJob(types::JobRequest request) {
  JobRecord job;
  job.request = std::move(request);
  return job;
}

TEST(SplitsIntoShardsTest, OnlyAFleetJobAskingForSeveralOnOneDataset) {
  EXPECT_TRUE(SplitsIntoShards(Sharded(2)));
  EXPECT_FALSE(SplitsIntoShards(Sharded(1)));
  EXPECT_FALSE(SplitsIntoShards(Sharded(0)));
  types::JobRequest by_name = Sharded(4);
  by_name.dataset_path.clear();  // one server's shards on its devices, not the fleet's
  EXPECT_FALSE(SplitsIntoShards(by_name));
  types::JobRequest shard = Sharded(4);
  shard.params.options.sample_end = 10;  // a range: a shard itself
  EXPECT_FALSE(SplitsIntoShards(shard));
  types::JobRequest suite = Sharded(4);
  suite.suite_datasets = {"a", "b"};
  EXPECT_FALSE(SplitsIntoShards(suite));
}

TEST(ShardJobTest, IsTheParentsRequestOverItsRangeWithoutRunGateOrUnload) {
  JobRecord parent;
  parent.id = "ev-20260102-030405-0001";
  parent.request = Sharded(3);
  parent.request.run = "nightly";
  parent.request.step = 400;
  parent.request.gate.reference = "best";
  parent.request.unload_after = true;
  parent.request.labels = {{"team", "x"}};
  parent.placement = "runs on any server";
  parent.resubmitted_from = "ev-20260101-000000-0001";
  const JobRecord shard = ShardJob(parent, 2, eval::SampleRange{40, 55});
  EXPECT_EQ(shard.id, "ev-20260102-030405-0001.s2");
  const types::EvalOptions& o = shard.request.params.options;
  EXPECT_EQ(o.shards, 0);  // on its server: one per device slot
  EXPECT_EQ(o.sample_begin, 40);
  EXPECT_EQ(o.sample_end, 55);
  EXPECT_EQ(o.shard_of, parent.id);
  EXPECT_EQ(o.shard_index, 2);
  EXPECT_EQ(shard.request.run, "");
  EXPECT_EQ(shard.request.step, 0);
  EXPECT_EQ(shard.request.gate.reference, "");
  EXPECT_FALSE(shard.request.unload_after);
  EXPECT_EQ(shard.request.labels.at("team"), "x");
  EXPECT_EQ(shard.request.labels.at("shard_of"), parent.id);
  EXPECT_EQ(shard.request.dataset_path, "/data/d");
  EXPECT_EQ(shard.request.params.target, "t");
  EXPECT_EQ(shard.placement, "runs on any server");
  EXPECT_EQ(shard.resubmitted_from, "");
  EXPECT_FALSE(SplitsIntoShards(shard.request));
}

// The queue's runner runs a parent as the server does (RunFleetShards) and
// a shard as a fake evaluation of its range: blocks = its samples, its part
// marked with its first sample; the test may fail one, give it another
// dataset fingerprint, or hold it at the gate (then it stops if told to).
class FleetShardsTest : public FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    core_.plan.ranges = {{0, 2}, {2, 5}};
    core_.plan.dataset_fingerprint = "h64:d";
    StartQueue(::dflash::testing::QuickFleetOptions("here"),
               [this](const JobRecord& job, const types::ProgressFn& progress) {
                 if (SplitsIntoShards(job.request)) {
                   return RunFleetShards(core_, *queue_, *backend_, job, job.request.params,
                                         progress);
                 }
                 return RunShard(job, progress);
               });
  }
  void TearDown() override {
    gate_.Open();
    FleetStoreTest::TearDown();
  }

  absl::StatusOr<types::EvalResult> RunShard(const JobRecord& job,
                                             const types::ProgressFn& progress) {
    const types::EvalOptions& o = job.request.params.options;
    if (o.sample_begin == fail_begin) return absl::InvalidArgumentError("sample 1 is too short");
    const int64_t n = o.sample_end - o.sample_begin;
    if (o.sample_begin == hold_begin) {
      gate_.Enter(job.id);
      if (!progress({1, n, 1, n})) return absl::CancelledError("evaluation cancelled");
    }
    eval::EvalPart part(4, {});
    part.context_positions = o.sample_begin;
    types::EvalResult r;
    r.blocks = n;
    r.dataset_fingerprint = o.sample_begin == other_copy_begin ? "h64:other" : "h64:d";
    r.part_state = eval::PartToJson(part);
    r.shards = {types::ShardPlacement{o.sample_begin, o.sample_end, n, "cpu", "", 0, 0}};
    return r;
  }

  JobState StateOf(const std::string& id) {
    auto r = store_->Get(id);
    return r.ok() ? r->state : JobState::kInterrupted;
  }

  LoadingCore core_;
  RunnerGate gate_;
  int64_t fail_begin = -1, other_copy_begin = -1, hold_begin = -1;
};

TEST_F(FleetShardsTest, ShardsRunAndTheirPartsMergeInSampleOrder) {
  ASSERT_OK_AND_ASSIGN(JobRecord parent, queue_->Submit(AsJob(Sharded(2))));
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, parent.id));
  ASSERT_EQ(done.state, JobState::kSucceeded) << done.error_message;
  ASSERT_TRUE(done.result.has_value());
  EXPECT_EQ(done.result->device, "merged");  // FinishShards' result
  EXPECT_THAT(core_.merged_parts, ElementsAre(0, 2));
  EXPECT_THAT(core_.merged_where, ElementsAre("0-2@here", "2-5@here"));
  // Every shard's blocks and samples added into the parent's progress.
  EXPECT_EQ(done.progress.samples_total, 5);
  EXPECT_EQ(done.progress.samples_done, 5);
  EXPECT_EQ(done.progress.blocks_total, 5);
  for (const char* k : {".s0", ".s1"}) {
    ASSERT_OK_AND_ASSIGN(JobRecord shard, store_->Get(parent.id + k));
    EXPECT_EQ(shard.state, JobState::kSucceeded) << k;
    EXPECT_EQ(shard.server, "here");
    EXPECT_EQ(shard.request.labels.at("shard_of"), parent.id);
  }
}

TEST_F(FleetShardsTest, AFailedShardFailsTheParentAndCancelsTheRest) {
  core_.plan.ranges = {{0, 2}, {2, 5}, {5, 6}};
  fail_begin = 0;
  ASSERT_OK_AND_ASSIGN(JobRecord parent, queue_->Submit(AsJob(Sharded(3))));
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, parent.id));
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(done.error_message,
            "shard 0 (samples [0, 2)) FAILED on server here: sample 1 is too short");
  EXPECT_EQ(StateOf(parent.id + ".s0"), JobState::kFailed);
  EXPECT_EQ(StateOf(parent.id + ".s1"), JobState::kCancelled);
  EXPECT_EQ(StateOf(parent.id + ".s2"), JobState::kCancelled);
}

TEST_F(FleetShardsTest, AShardThatReadAnotherCopyOfTheDatasetFailsTheParent) {
  other_copy_begin = 2;
  ASSERT_OK_AND_ASSIGN(JobRecord parent, queue_->Submit(AsJob(Sharded(2))));
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, parent.id));
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(done.error_message,
            "shard 1 (samples [2, 5)) ran on server here with dataset fingerprint h64:other; "
            "server here's copy has h64:d: the servers read different files at '/data/d'");
  EXPECT_TRUE(core_.merged_parts.empty());
}

TEST_F(FleetShardsTest, CancellingTheParentCancelsItsShards) {
  hold_begin = 2;
  ASSERT_OK_AND_ASSIGN(JobRecord parent, queue_->Submit(AsJob(Sharded(2))));
  ASSERT_TRUE(gate_.WaitEntered(parent.id + ".s1"));
  ASSERT_OK(queue_->Cancel(parent.id, std::chrono::milliseconds(0)).status());
  gate_.Open();
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, parent.id));
  EXPECT_EQ(done.state, JobState::kCancelled);
  EXPECT_EQ(done.error_message, "cancelled while running");
  EXPECT_EQ(StateOf(parent.id + ".s0"), JobState::kSucceeded);
  EXPECT_EQ(StateOf(parent.id + ".s1"), JobState::kCancelled);
  EXPECT_TRUE(core_.merged_parts.empty());
}

TEST_F(FleetShardsTest, APlanThatFailsFailsTheParentNamingIt) {
  core_.plan_error = absl::InvalidArgumentError("dataset 'd' has 1 sample; 2 shards asked");
  ASSERT_OK_AND_ASSIGN(JobRecord parent, queue_->Submit(AsJob(Sharded(2))));
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, parent.id));
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(done.error_message, "splitting job " + parent.id +
                                    " into shards: dataset 'd' has 1 sample; 2 shards asked");
  EXPECT_FALSE(store_->Get(parent.id + ".s0").ok());  // none created
}

}  // namespace
}  // namespace dflash::fleet
