// The JobBackend seam (jobs/job_backend.h): LocalBackend on its own, and a
// JobQueue over a fake backend whose jobs wait elsewhere, to show the queue
// leaves to its backend what differs between one server and a fleet (where
// a job waits, a job not here, a job handed back) and nothing more.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fake_job_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobs/job_queue.h"
#include "jobs/local_backend.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::jobs {
namespace {

using ::dflash::testing::FakeBackend;
using ::dflash::testing::StatusIs;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

class JobBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
  }

  ::dflash::testing::TempDir dir_;
  std::unique_ptr<store::SqliteResultStore> store_;
};

Runner Succeeds() {
  return [](const types::JobRecord&, const types::ProgressFn&) { return types::EvalResult{}; };
}

TEST_F(JobBackendTest, LocalIdsFollowTheStoresGreatestAndNothingWaitsElsewhere) {
  types::JobRecord old;
  old.id = "ev-29991231-235959-0007";
  old.state = types::JobState::kSucceeded;
  ASSERT_OK(store_->Put(old));
  auto owned = std::make_unique<LocalBackend>(*store_);
  LocalBackend* local = owned.get();
  auto queue = JobQueue::Create(*store_, Succeeds(), JobQueueOptions{}, std::move(owned));
  ASSERT_OK(queue.status());

  auto job = (*queue)->Submit(types::JobRecord{});
  ASSERT_OK(job.status());
  EXPECT_GT(job->id, old.id);
  EXPECT_EQ(local->HandBack(absl::CancelledError("stopping"), true), std::nullopt);
  EXPECT_FALSE(local->WatchElsewhere(old));
  EXPECT_TRUE(local->store_reachable());
  EXPECT_THAT(local->LiveServers(), StatusIs(absl::StatusCode::kUnimplemented, ::testing::_));
  EXPECT_THAT(local->CancelElsewhere(old.id, 0ms),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("already finished (SUCCEEDED); nothing to cancel")));
  EXPECT_THAT(local->CancelElsewhere("ev-nope", 0ms),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
}

TEST_F(JobBackendTest, TheQueueLeavesWaitingCancelAndHandBackToItsBackend) {
  auto owned = std::make_unique<FakeBackend>();
  FakeBackend* fake = owned.get();
  Runner fails = [](const types::JobRecord&,
                    const types::ProgressFn&) -> absl::StatusOr<types::EvalResult> {
    return absl::ResourceExhaustedError("over this server's budget");
  };
  auto queue = JobQueue::Create(*store_, fails, JobQueueOptions{}, std::move(owned));
  ASSERT_OK(queue.status());

  auto job = (*queue)->Submit(types::JobRecord{});
  ASSERT_OK(job.status());
  EXPECT_EQ(job->id, "ev-fake-1");
  EXPECT_EQ(job->state, types::JobState::kQueued);
  EXPECT_EQ(fake->queued_here_, 0);
  EXPECT_EQ((*queue)->queued(), 0);  // it waits elsewhere, not in this process

  // Not in this process: the backend answers the cancel.
  auto cancelled = (*queue)->Cancel("ev-fake-1", 0ms);
  ASSERT_OK(cancelled.status());
  EXPECT_EQ(cancelled->state, types::JobState::kCancelled);

  // Claimed and run here; it fails, and the backend hands it back.
  types::JobRecord claimed = *job;
  claimed.state = types::JobState::kRunning;
  claimed.attempts.push_back({"here", 1, 0, ""});
  fake->Release(claimed);
  std::vector<types::JobRecord> stored = fake->WaitFinal(1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].state, types::JobState::kQueued);
  ASSERT_EQ(stored[0].attempts.size(), 1u);
  EXPECT_EQ(stored[0].attempts[0].outcome, "handed back: fake");
  (*queue)->Shutdown(0ms);
  EXPECT_EQ((*queue)->running(), 0);
}

}  // namespace
}  // namespace dflash::jobs
