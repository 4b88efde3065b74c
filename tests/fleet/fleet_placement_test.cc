// Where a fleet job may run (FleetPlacement::Place, fleet/fleet_placement.cc),
// from the servers table of a real PostgreSQL store (fleet_store_fixture.h):
// other servers are heartbeats the test writes. Objects named by path run
// anywhere; objects named by name pin the job to the live servers holding
// all of them, this one counted as soon as it holds them; a name no server
// holds is refused in this server's words (its fix kept), and servers that
// each hold only some are refused together.
#include <string>

#include "common/fix_hint.h"
#include "fleet/fleet_placement.h"
#include "fleet_store_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "loading_core.h"
#include "test_util/status_matchers.h"

namespace dflash::fleet {
namespace {

using ::dflash::testing::FleetStoreTest;
using ::dflash::testing::LoadingCore;
using ::dflash::testing::StatusIs;
using resident::ResourceKind;
using ::testing::Eq;
using types::JobRecord;
using namespace std::chrono_literals;

resident::ResourceInfo Here(ResourceKind kind, const std::string& name) {
  resident::ResourceInfo r;
  r.kind = kind;
  r.name = name;
  r.fingerprint = "h64:" + name;
  r.source_path = "/here/" + name;
  return r;
}

// This server is "here" (nothing resident unless the test loads it); its
// heartbeats are 2 s apart, so a server the test beats once stays live for
// the test's length (three missed heartbeats: gone).
class FleetPlacementTest : public FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    fleet::FleetOptions options = ::dflash::testing::QuickFleetOptions("here");
    options.heartbeat = 2000ms;
    StartQueue(std::move(options),
               [](const JobRecord&, const types::ProgressFn&) { return types::EvalResult{}; });
    placement_ = std::make_unique<FleetPlacement>(core_, *backend_, FleetObjects{});
  }

  void Beat(const std::string& server, const std::string& info) {
    ASSERT_OK(store_->Heartbeat(server, info));
  }

  // Target t, dataset d, drafter m, by name.
  static JobRecord Named() {
    JobRecord job;
    job.request.params.target = "t";
    job.request.params.dataset = "d";
    job.request.params.drafter = "m";
    return job;
  }

  absl::Status Place(JobRecord& job) { return placement_->Place(job, *queue_); }

  LoadingCore core_;
  std::unique_ptr<FleetPlacement> placement_;
};

TEST_F(FleetPlacementTest, ObjectsNamedByPathRunOnAnyServer) {
  JobRecord job;
  job.request.params.target = "qwen";
  job.request.target_path = "/models/qwen";
  job.request.params.dataset = "gsm8k";
  job.request.dataset_path = "/data/gsm8k";
  job.request.params.checkpoint_path = "/ckpt/step-9";  // no resident drafter needed
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.placement,
            "runs on any server; loads target 'qwen' from '/models/qwen', dataset 'gsm8k' from "
            "'/data/gsm8k' where not resident");
}

TEST_F(FleetPlacementTest, ARelativePathIsRefusedBeforeAnyServerIsAsked) {
  JobRecord job = Named();
  job.request.dataset_path = "data/gsm8k";
  EXPECT_THAT(Place(job),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("dataset_path 'data/gsm8k' is not absolute; every server of the fleet "
                          "loads it from its own file system, so give the absolute path")));
}

TEST_F(FleetPlacementTest, NamesPinTheJobToTheServersHoldingThem) {
  Beat("s2", R"({"targets":["t"],"datasets":["d"],"drafters":["m"]})");
  Beat("s3", R"({"targets":["t"],"datasets":["d"]})");
  JobRecord job = Named();
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.placement,
            "runs only on a server holding target 't', dataset 'd', drafter 'm' (now: s2); name "
            "objects by path to run on any server");
  EXPECT_EQ(job.dataset_fingerprint, "");  // not resident here: known when it runs
  EXPECT_EQ(job.drafter_fingerprint, "");
}

TEST_F(FleetPlacementTest, ThisServerCountsAsSoonAsItHoldsTheObjects) {
  Beat("s2", R"({"targets":["t"],"datasets":["d"],"drafters":["m"]})");
  // Loaded here after this server's last heartbeat: its row still says {}.
  core_.resources = {Here(ResourceKind::kTarget, "t"), Here(ResourceKind::kDataset, "d"),
                     Here(ResourceKind::kDrafter, "m")};
  JobRecord job = Named();
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.placement,
            "runs only on a server holding target 't', dataset 'd', drafter 'm' (now: s2, here); "
            "name objects by path to run on any server");
  EXPECT_EQ(job.dataset_fingerprint, "h64:d");
  EXPECT_EQ(job.drafter_fingerprint, "h64:m");
}

TEST_F(FleetPlacementTest, AnUnnamedTargetIsTheOnlyTargetOfAServer) {
  Beat("s2", R"({"targets":["t"],"datasets":["d"]})");
  Beat("s3", R"({"targets":["t","u"],"datasets":["d"]})");
  JobRecord job;
  job.request.params.dataset = "gsm8k";
  job.request.dataset_path = "/data/gsm8k";
  job.request.params.checkpoint_path = "/ckpt/step-9";
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.placement,
            "runs only on a server holding one target only (now: s2); loads dataset 'gsm8k' from "
            "'/data/gsm8k' where not resident; name objects by path to run on any server");
}

TEST_F(FleetPlacementTest, ServersHoldingOnlySomeOfTheObjectsAreRefusedTogether) {
  Beat("s2", R"({"targets":["t"],"datasets":["d"]})");
  Beat("s3", R"({"targets":["t"],"drafters":["m"]})");
  JobRecord job = Named();
  EXPECT_THAT(Place(job),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("no live server of the fleet holds all of target 't', dataset 'd', "
                          "drafter 'm'; load them on one server, or name the drafter by "
                          "checkpoint path")));
}

TEST_F(FleetPlacementTest, ANameNoServerHoldsIsRefusedInThisServersWords) {
  Beat("s2", R"({"targets":["t"],"datasets":["d"]})");
  core_.resources = {Here(ResourceKind::kDataset, "d")};
  JobRecord job = Named();
  job.request.params.dataset = "e";
  EXPECT_THAT(Place(job), StatusIs(absl::StatusCode::kNotFound,
                                   Eq("no resident dataset named 'e' (resident: d); no live "
                                      "server of the fleet holds it either")));
  // No target anywhere: the fix a single server would suggest is kept.
  Beat("s2", R"({"datasets":["d"]})");
  JobRecord unnamed = Named();
  unnamed.request.params.target.clear();
  const absl::Status nowhere = Place(unnamed);
  EXPECT_THAT(nowhere, StatusIs(absl::StatusCode::kFailedPrecondition,
                                Eq("no target is loaded; load one first; no live server of the "
                                   "fleet holds it either")));
  EXPECT_EQ(GetFixHint(nowhere), FixHint::kLoadTarget);
}

TEST_F(FleetPlacementTest, AHeartbeatThatIsNotJsonFailsThePlacement) {
  Beat("broken", "[]");
  JobRecord job = Named();
  EXPECT_THAT(Place(job),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("fleet server 'broken' left a heartbeat that is not a JSON object")));
}

}  // namespace
}  // namespace dflash::fleet
