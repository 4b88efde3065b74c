// FleetBackend's own thread (fleet/fleet_heartbeat.cc) on a real PostgreSQL
// store (fleet_store_fixture.h): each heartbeat tells the fleet the jobs
// running here and renews their leases with their progress, learns of a
// cancel asked through the store, and says whether the store answered;
// between heartbeats it follows, from the store, the jobs watched here
// that run elsewhere. The test waits on heartbeats themselves: info_json
// is called once per heartbeat, before its write, so the call after the
// next one means that write is done.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "fleet/fleet_backend.h"
#include "fleet_store_fixture.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobs/job_watch.h"
#include "resident/placement.h"
#include "test_util/status_matchers.h"

namespace dflash::fleet {
namespace {

using ::dflash::testing::FleetStoreTest;
using ::dflash::testing::NamedJob;
using ::dflash::testing::RunnerGate;
using ::dflash::testing::WaitDone;
using ::testing::ElementsAre;
using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

constexpr auto kHang = 30s;  // bounds a failure only

// The runner: "held" jobs report 7 blocks done, then wait at the gate;
// "chunks" jobs report a chunk every 2 ms until told to stop.
class FleetHeartbeatTest : public FleetStoreTest {
 protected:
  void SetUp() override {
    FleetStoreTest::SetUp();
    FleetOptions options = ::dflash::testing::QuickFleetOptions("here");
    options.info_json = [this](const std::vector<std::string>& running) {
      std::lock_guard<std::mutex> lock(mu_);
      ++beats_;
      cv_.notify_all();
      return absl::StrCat(R"({"running":")", absl::StrJoin(running, ","), R"("})");
    };
    StartQueue(std::move(options),
               [this](const JobRecord& job,
                      const types::ProgressFn& progress) -> absl::StatusOr<types::EvalResult> {
                 if (job.request.run == "held") {
                   if (!progress({7, 10, 0, 1}))
                     return absl::CancelledError("evaluation cancelled");
                   gate_.Enter(job.id);
                   return types::EvalResult{};
                 }
                 for (int64_t i = 1; i < 15000; ++i) {
                   if (!progress({i, 15000, 0, 1}))
                     return absl::CancelledError("evaluation cancelled");
                   std::this_thread::sleep_for(2ms);
                 }
                 return types::EvalResult{};
               });
  }
  void TearDown() override {
    gate_.Open();
    FleetStoreTest::TearDown();
  }

  // Until `n` more heartbeats have begun: the first n - 1 have ended.
  [[nodiscard]] bool WaitBeats(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    const int until = beats_ + n;
    return cv_.wait_for(lock, kHang, [&] { return beats_ >= until; });
  }

  std::string Info() {
    auto live = store_->LiveServers(60'000'000);
    return live.ok() && live->size() == 1 ? (*live)[0].info_json : "(not one server)";
  }

  std::mutex mu_;
  std::condition_variable cv_;
  int beats_ = 0;
  RunnerGate gate_;
};

TEST_F(FleetHeartbeatTest, EachHeartbeatTellsTheFleetTheJobsRunningHere) {
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_EQ(Info(), R"({"running":""})");
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(NamedJob("held")));
  ASSERT_TRUE(gate_.WaitEntered(job.id));
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_EQ(Info(), absl::StrCat(R"({"running":")", job.id, R"("})"));
  gate_.Open();
  ASSERT_OK(WaitDone(*queue_, job.id).status());
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_EQ(Info(), R"({"running":""})");
  EXPECT_TRUE(backend_->store_reachable());
}

TEST_F(FleetHeartbeatTest, RenewalsCarryProgressAndExtendTheLease) {
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(NamedJob("held")));
  ASSERT_TRUE(gate_.WaitEntered(job.id));
  ASSERT_TRUE(WaitBeats(2));
  const std::string lease = absl::StrCat("SELECT lease_until FROM jobs WHERE id = '", job.id, "'");
  const int64_t first = std::stoll(Sql(lease));
  ASSERT_OK_AND_ASSIGN(JobRecord renewed, store_->Get(job.id));
  EXPECT_EQ(renewed.state, JobState::kRunning);
  EXPECT_EQ(renewed.progress.blocks_done, 7);  // for the fleet's viewers
  EXPECT_EQ(renewed.progress.blocks_total, 10);
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_GT(std::stoll(Sql(lease)), first);
  EXPECT_EQ(Sql(absl::StrCat("SELECT owner FROM jobs WHERE id = '", job.id, "'")), "here");
}

TEST_F(FleetHeartbeatTest, ACancelAskedThroughTheStoreStopsTheJobHere) {
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(NamedJob("chunks")));
  // As another server does when asked to cancel a job running here.
  ASSERT_OK_AND_ASSIGN(JobRecord running,
                       ::dflash::testing::WatchUntil(*queue_, job.id, [](const JobRecord& r) {
                         return r.state == JobState::kRunning;
                       }));
  ASSERT_OK(store_->RequestCancel(job.id, resident::NowUnixMicros()).status());
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, job.id));
  EXPECT_EQ(done.state, JobState::kCancelled);
  EXPECT_EQ(done.error_message, "cancelled while running");
  EXPECT_EQ(done.attempts.back().outcome, "CANCELLED");
}

TEST_F(FleetHeartbeatTest, AStoreThatDoesNotAnswerIsReportedUntilItAnswersAgain) {
  ASSERT_TRUE(WaitBeats(2));
  ASSERT_TRUE(backend_->store_reachable());
  // The database refuses connections, and the store's is dropped.
  ASSERT_THAT(
      pg_->Sql("postgres", absl::StrCat("ALTER DATABASE ", db_, " ALLOW_CONNECTIONS false")),
      ::dflash::testing::IsOk());
  ASSERT_THAT(pg_->Sql("postgres", absl::StrCat("SELECT count(pg_terminate_backend(pid)) >= 0 FROM "
                                                "pg_stat_activity WHERE datname = '",
                                                db_, "'")),
              ::dflash::testing::IsOkAndHolds("t"));
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_FALSE(backend_->store_reachable());
  ASSERT_THAT(pg_->Sql("postgres", absl::StrCat("ALTER DATABASE ", db_, " ALLOW_CONNECTIONS true")),
              ::dflash::testing::IsOk());
  ASSERT_TRUE(WaitBeats(2));
  EXPECT_TRUE(backend_->store_reachable());  // the connection was opened again
}

// Another server runs a job watched here: its records reach the watcher
// from the store, each change once, the final state last.
TEST_F(FleetHeartbeatTest, AJobRunningElsewhereIsFollowedFromTheStore) {
  JobRecord elsewhere_job = NamedJob("");
  elsewhere_job.request.params.dataset = "nowhere";  // not this server's to claim
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(elsewhere_job));
  store::ClaimRequest other;
  other.server = "other";
  other.targets = {"t"};
  other.datasets = {"nowhere"};
  ASSERT_OK_AND_ASSIGN(std::optional<JobRecord> claimed, store_->Claim(other));
  ASSERT_TRUE(claimed.has_value());

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;  // "STATE blocks_done"
  ASSERT_OK_AND_ASSIGN(jobs::JobQueue::Watch w, queue_->Subscribe(job.id, [&](const JobRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(absl::StrCat(types::JobStateName(r.state), " ", r.progress.blocks_done));
    cv.notify_all();
  }));
  ASSERT_NE(w.handle, 0);
  EXPECT_EQ(w.current.state, JobState::kRunning);
  const auto wait_for = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kHang, [&] { return seen.size() >= n; });
  };

  JobRecord r = *claimed;
  r.progress.blocks_done = 4;
  ASSERT_OK(store_->PutLeased(r, 60'000'000).status());
  ASSERT_TRUE(wait_for(1));
  ASSERT_TRUE(WaitBeats(3));  // polls between beats: an unchanged record is not sent again
  r.state = JobState::kSucceeded;
  r.progress.blocks_done = 9;
  r.result = types::EvalResult{};
  ASSERT_OK(store_->PutLeased(r, 0).status());
  ASSERT_TRUE(wait_for(2));
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_THAT(seen, ElementsAre("RUNNING 4", "SUCCEEDED 9"));
  }
  EXPECT_TRUE(queue_->WatchedElsewhere().empty());  // the final state ended the watch
}

}  // namespace
}  // namespace dflash::fleet
