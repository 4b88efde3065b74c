// A single server's JobPlacement (core/local_placement.h) over a fake core:
// objects named by path refused (they are a fleet's), the target, dataset
// and drafter picked from what is resident with their fingerprints and the
// target's device recorded, suites resolved (their datasets' fingerprints
// joined, a missing one named with the suite, no gate), and Prepare and
// Run handing the request to the core unchanged. The gate's reference
// lookups are in job_gate_test.cc.
#include "core/local_placement.h"

#include <memory>
#include <string>

#include "fakes/fake_eval_core.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_service_fixture.h"
#include "jobs/local_backend.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::core {
namespace {

using ::dflash::testing::StatusIs;
using resident::ResourceKind;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::IsEmpty;
using types::JobRecord;

// Target t (on cuda:1), datasets a and b, drafter m; the config's suites
// "mix" (b, a) and "broken" (a, y).
class LocalPlacementTest : public ::testing::Test {
 protected:
  void SetUp() override {
    resident::ResourceInfo target = Resident(ResourceKind::kTarget, "t", "h64:t");
    target.device = "cuda:1";
    core_.resources = {target, Resident(ResourceKind::kDataset, "a", "h64:a"),
                       Resident(ResourceKind::kDataset, "b", "h64:b"),
                       Resident(ResourceKind::kDrafter, "m", "h64:m")};
    auto store = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_OK(store.status());
    store_ = std::move(store).value();
    auto queue = jobs::JobQueue::Create(
        *store_, [](const JobRecord&, const types::ProgressFn&) { return types::EvalResult{}; },
        jobs::JobQueueOptions{}, std::make_unique<jobs::LocalBackend>(*store_));
    ASSERT_OK(queue.status());
    queue_ = std::move(queue).value();
  }

  // Drafter m on `dataset`, the target unnamed (the only one).
  static JobRecord Job(const std::string& dataset, const std::string& drafter = "m") {
    JobRecord r;
    r.request.params.dataset = dataset;
    r.request.params.drafter = drafter;
    return r;
  }

  absl::Status Place(JobRecord& job) { return placement_.Place(job, *queue_); }

  dflash::testing::FakeEvalCore core_;
  LocalPlacement placement_{core_, SuiteMap{{"mix", {"b", "a"}}, {"broken", {"a", "y"}}}};
  dflash::testing::TempDir dir_;
  std::unique_ptr<store::SqliteResultStore> store_;
  std::unique_ptr<jobs::JobQueue> queue_;
};

TEST_F(LocalPlacementTest, ObjectsNamedByPathAreAFleetsToLoad) {
  const std::string why =
      "dataset_path and target_path name objects for a fleet's servers to load on demand; this "
      "server has no fleet (see --store): load them and name them with dataset and target";
  JobRecord by_dataset_path = Job("a");
  by_dataset_path.request.dataset_path = "/data/a";
  EXPECT_THAT(Place(by_dataset_path), StatusIs(absl::StatusCode::kFailedPrecondition, Eq(why)));
  JobRecord by_target_path = Job("a");
  by_target_path.request.target_path = "/models/t";
  EXPECT_THAT(Place(by_target_path), StatusIs(absl::StatusCode::kFailedPrecondition, Eq(why)));
}

TEST_F(LocalPlacementTest, RecordsTheFingerprintsAndTheTargetsDevice) {
  JobRecord job = Job("b");
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.dataset_fingerprint, "h64:b");
  EXPECT_EQ(job.drafter_fingerprint, "h64:m");
  EXPECT_EQ(job.device, "cuda:1");
  EXPECT_THAT(job.request.suite_datasets, IsEmpty());
  EXPECT_EQ(job.placement, "");  // a single server says nothing of where
}

TEST_F(LocalPlacementTest, ACheckpointDrafterNeedsNoResidentOne) {
  core_.resources.pop_back();  // no drafter resident
  JobRecord job = Job("a", "");
  job.request.params.checkpoint_path = "/ckpt/step-100";
  ASSERT_OK(Place(job));
  EXPECT_EQ(job.drafter_fingerprint, "");
  EXPECT_EQ(job.dataset_fingerprint, "h64:a");
  JobRecord named = Job("a", "m");
  EXPECT_THAT(Place(named), StatusIs(absl::StatusCode::kNotFound,
                                     Eq("no resident drafter named 'm' (resident: none)")));
}

TEST_F(LocalPlacementTest, TheTargetIsPickedBeforeTheDataset) {
  JobRecord job = Job("nowhere");
  job.request.params.target = "x";
  EXPECT_THAT(Place(job), StatusIs(absl::StatusCode::kNotFound,
                                   Eq("no resident target named 'x' (resident: t)")));
  job.request.params.target = "t";
  EXPECT_THAT(Place(job), StatusIs(absl::StatusCode::kNotFound,
                                   Eq("no resident dataset named 'nowhere' (resident: a, b)")));
}

TEST_F(LocalPlacementTest, ASuiteResolvesToItsDatasetsAndJoinsTheirFingerprints) {
  JobRecord listed = Job("a,b");
  ASSERT_OK(Place(listed));
  EXPECT_THAT(listed.request.suite_datasets, ElementsAre("a", "b"));
  EXPECT_EQ(listed.dataset_fingerprint, "h64:a,h64:b");
  JobRecord configured = Job("mix");
  ASSERT_OK(Place(configured));
  EXPECT_THAT(configured.request.suite_datasets, ElementsAre("b", "a"));
  EXPECT_EQ(configured.dataset_fingerprint, "h64:b,h64:a");
  EXPECT_EQ(configured.drafter_fingerprint, "h64:m");
}

TEST_F(LocalPlacementTest, ASuitesMissingDatasetIsNamedWithTheSuite) {
  JobRecord listed = Job("a,x");
  EXPECT_THAT(Place(listed),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("suite 'a,x': no resident dataset named 'x' (resident: a, b)")));
  JobRecord configured = Job("broken");
  EXPECT_THAT(Place(configured),
              StatusIs(absl::StatusCode::kNotFound,
                       Eq("suite 'broken': no resident dataset named 'y' (resident: a, b)")));
  JobRecord malformed = Job("a,,b");
  EXPECT_THAT(Place(malformed), StatusIs(absl::StatusCode::kInvalidArgument,
                                         Eq("suite 'a,,b' has an empty dataset name")));
}

TEST_F(LocalPlacementTest, AGateAppliesToOneDatasetNotASuite) {
  JobRecord suite = Job("a,b");
  suite.request.gate.reference = "best";
  EXPECT_THAT(Place(suite),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       Eq("gate applies to one dataset; gate each dataset of the suite in its "
                          "own job")));
  // One dataset: "best" and "previous" are picked when the job ends, so
  // nothing is looked up now (no job exists yet).
  for (const char* reference : {"best", "previous"}) {
    JobRecord one = Job("a");
    one.request.gate.reference = reference;
    EXPECT_OK(Place(one)) << reference;
  }
}

TEST_F(LocalPlacementTest, PrepareAndRunHandTheRequestToTheCore) {
  JobRecord job = Job("a");
  job.request.params.options.max_samples = 5;
  ASSERT_OK_AND_ASSIGN(types::EvalParams params, placement_.Prepare(job, *queue_));
  EXPECT_EQ(params.dataset, "a");
  EXPECT_EQ(params.drafter, "m");
  EXPECT_EQ(params.options.max_samples, 5);
  core_.eval_result.blocks = 12;
  ASSERT_OK_AND_ASSIGN(types::EvalResult result, placement_.Run(job, params, nullptr, *queue_));
  EXPECT_EQ(result.blocks, 12);
  EXPECT_EQ(core_.last_eval.options.max_samples, 5);
  core_.next_error = absl::ResourceExhaustedError("needs 9 GB; 4 GB free");
  EXPECT_THAT(placement_.Run(job, params, nullptr, *queue_),
              StatusIs(absl::StatusCode::kResourceExhausted, Eq("needs 9 GB; 4 GB free")));
}

}  // namespace
}  // namespace dflash::core
