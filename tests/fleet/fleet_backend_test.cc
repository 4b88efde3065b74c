// FleetBackend (fleet/fleet_backend.cc) on a real PostgreSQL store
// (fleet_store_fixture.h), for what fleet_queue_test.cc leaves: joining the
// fleet, ids another server took, what is handed back and a refused job's
// end, a final write without the lease, cancels of jobs not here, the live
// servers, shard jobs created once, and a claim run on the caller's thread.
// The heartbeat thread is in fleet_heartbeat_test.cc.
#include "fleet/fleet_backend.h"

#include <ctime>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "fleet/refusal.h"
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
using ::dflash::testing::QuickFleetOptions;
using ::dflash::testing::RunnerGate;
using ::dflash::testing::StatusIs;
using ::dflash::testing::WaitDone;
using ::dflash::testing::WatchUntil;
using ::testing::ElementsAre;
using ::testing::Eq;
using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

// The id a server makes first in second `unix_seconds`.
std::string FirstIdOf(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "ev-%Y%m%d-%H%M%S-0001", &tm);
  return text;
}

// A job no server of these tests can claim (its dataset is nowhere).
JobRecord Unclaimable() {
  JobRecord job = NamedJob("");
  job.request.params.dataset = "nowhere";
  return job;
}

// The runner: "refused" jobs are refused here, "held" ones wait at the
// gate, the rest succeed; each records the thread it ran on.
class FleetBackendTest : public FleetStoreTest {
 protected:
  void TearDown() override {
    gate_.Open();
    FleetStoreTest::TearDown();
  }

  void Start(FleetOptions options = QuickFleetOptions("here")) {
    StartQueue(std::move(options),
               [this](const JobRecord& job,
                      const types::ProgressFn&) -> absl::StatusOr<types::EvalResult> {
                 {
                   std::lock_guard<std::mutex> lock(mu_);
                   ran_on_ = std::this_thread::get_id();
                 }
                 if (job.request.run == "refused") {
                   return Refusal(absl::ResourceExhaustedError("needs 9 GB; 4 GB free"));
                 }
                 if (job.request.run == "held") gate_.Enter(job.id);
                 return types::EvalResult{};
               });
  }

  std::mutex mu_;
  std::thread::id ran_on_;
  RunnerGate gate_;
};

TEST_F(FleetBackendTest, OpenNeedsTheServersNameAndItsResidentNames) {
  const std::string why =
      "a shared store needs the fleet options: this server's name and its resident names";
  FleetOptions unnamed = QuickFleetOptions("");
  EXPECT_THAT(FleetBackend(*store_, unnamed).Open(),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(why)));
  FleetOptions no_names = QuickFleetOptions("here");
  no_names.resident = nullptr;
  EXPECT_THAT(FleetBackend(*store_, no_names).Open(),
              StatusIs(absl::StatusCode::kInvalidArgument, Eq(why)));
  EXPECT_EQ(Sql("SELECT count(*) FROM servers"), "0");  // neither joined
}

TEST_F(FleetBackendTest, OpenJoinsTheFleetSayingWhatTheServerIs) {
  FleetOptions options = QuickFleetOptions("here");
  options.info_json = [](const std::vector<std::string>& running) {
    return absl::StrCat(R"({"running":)", running.size(), "}");
  };
  {
    FleetBackend backend(*store_, options);
    ASSERT_OK(backend.Open());
    ASSERT_OK_AND_ASSIGN(std::vector<store::FleetServer> live, backend.LiveServers());
    ASSERT_EQ(live.size(), 1u);
    EXPECT_EQ(live[0].name, "here");
    EXPECT_EQ(live[0].info_json, R"({"running":0})");
  }
  // Never attached to a queue, it did not leave: its row ages out.
  EXPECT_EQ(Sql("SELECT name FROM servers"), "here");
}

TEST_F(FleetBackendTest, AnIdAnotherServerTookIsMadeAgainAfterTheGreatest) {
  Start();
  // After this server read the greatest id, another made one in each
  // second from just before now to a few seconds ahead.
  const int64_t now = resident::NowUnixMicros() / 1'000'000;
  std::string greatest;
  for (int64_t s = now - 1; s <= now + 5; ++s) {
    JobRecord theirs = Unclaimable();
    theirs.id = greatest = FirstIdOf(s);
    theirs.state = JobState::kSucceeded;
    ASSERT_OK(store_->Create(theirs));
  }
  ASSERT_OK_AND_ASSIGN(JobRecord mine, queue_->Submit(Unclaimable()));
  EXPECT_EQ(mine.id, greatest.substr(0, greatest.size() - 4) + "0002");
  EXPECT_EQ(Sql(absl::StrCat("SELECT state FROM jobs WHERE id = '", mine.id, "'")), "QUEUED");
}

TEST_F(FleetBackendTest, HandBackSendsRefusalsAndAStoppingServersJobsBack) {
  Start();
  EXPECT_EQ(backend_->HandBack(Refusal(absl::ResourceExhaustedError("needs 9 GB")), false),
            "refused: needs 9 GB");
  EXPECT_EQ(backend_->HandBack(absl::CancelledError("evaluation cancelled"), true),
            "handed back: the server stopped");
  // Ended here: a cancel while running, or any other failure.
  EXPECT_EQ(backend_->HandBack(absl::CancelledError("evaluation cancelled"), false), std::nullopt);
  EXPECT_EQ(backend_->HandBack(absl::ResourceExhaustedError("needs 9 GB"), true), std::nullopt);
  EXPECT_EQ(backend_->HandBack(absl::InvalidArgumentError("bad block size"), false), std::nullopt);
}

TEST_F(FleetBackendTest, AJobEveryLiveServerRefusedFails) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(NamedJob("refused")));
  ASSERT_OK_AND_ASSIGN(JobRecord done, WaitDone(*queue_, job.id));
  EXPECT_EQ(done.state, JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kResourceExhausted));
  EXPECT_EQ(done.error_message,
            "no live server of the fleet can hold what this job names: needs 9 GB; 4 GB free");
  ASSERT_EQ(done.attempts.size(), 1u);
  EXPECT_EQ(done.attempts[0].server, "here");
  EXPECT_EQ(done.attempts[0].outcome, "refused: needs 9 GB; 4 GB free");
}

TEST_F(FleetBackendTest, ARefusedJobWaitsForALiveServerThatHasNotRefusedIt) {
  FleetOptions options = QuickFleetOptions("here");
  options.heartbeat = 2000ms;  // s2, beaten once below, stays live 6 s
  Start(std::move(options));
  ASSERT_OK(store_->Heartbeat("s2", "{}"));
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(NamedJob("refused")));
  ASSERT_OK_AND_ASSIGN(JobRecord back, WatchUntil(*queue_, job.id, [](const JobRecord& r) {
                         return !r.attempts.empty() && !r.attempts.back().outcome.empty();
                       }));
  EXPECT_EQ(back.state, JobState::kQueued);
  EXPECT_EQ(back.attempts.back().outcome, "refused: needs 9 GB; 4 GB free");
  EXPECT_EQ(
      Sql(absl::StrCat("SELECT '[' || owner || '] ' || state FROM jobs WHERE id = '", job.id, "'")),
      "[] QUEUED");  // handed back: no owner
}

TEST_F(FleetBackendTest, AFinalRecordWithoutTheLeaseIsNotWritten) {
  Start();
  JobRecord record = NamedJob("");
  record.id = "ev-lost";
  record.state = JobState::kSucceeded;
  EXPECT_THAT(backend_->StoreFinal(record, /*lease_lost=*/true),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("lease lost: job ev-lost was taken over; no result written")));
  EXPECT_EQ(Sql("SELECT count(*) FROM jobs"), "0");
}

TEST_F(FleetBackendTest, CancelOfAJobNotHereGoesThroughTheStore) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord queued, queue_->Submit(Unclaimable()));
  ASSERT_OK_AND_ASSIGN(JobRecord cancelled, queue_->Cancel(queued.id, 0ms));
  EXPECT_EQ(cancelled.state, JobState::kCancelled);
  EXPECT_EQ(cancelled.error_message, "cancelled before it started");
  EXPECT_THAT(
      queue_->Cancel(queued.id, 0ms),
      StatusIs(absl::StatusCode::kFailedPrecondition,
               Eq("job " + queued.id + " already finished (CANCELLED); nothing to cancel")));
  EXPECT_THAT(queue_->Cancel("ev-none", 0ms),
              StatusIs(absl::StatusCode::kNotFound, Eq("no job with id 'ev-none'")));
}

TEST_F(FleetBackendTest, CancelOfAJobRunningElsewhereWaitsForItsServerToStopIt) {
  Start();
  ASSERT_OK_AND_ASSIGN(JobRecord job, queue_->Submit(Unclaimable()));
  store::ClaimRequest other;
  other.server = "other";
  other.targets = {"t"};
  other.datasets = {"nowhere"};
  ASSERT_OK_AND_ASSIGN(std::optional<JobRecord> claimed, store_->Claim(other));
  ASSERT_TRUE(claimed.has_value());
  // The other server: renews its lease until it hears of the cancel, then
  // stops the job.
  std::thread elsewhere([&] {
    JobRecord r = *claimed;
    for (int i = 0; i < 3000; ++i) {
      absl::StatusOr<bool> cancel = store_->PutLeased(r, 60'000'000);
      if (!cancel.ok() || *cancel) break;
      std::this_thread::sleep_for(5ms);  // its next chunk
    }
    r.state = JobState::kCancelled;
    r.error_message = "cancelled while running";
    r.attempts.back().outcome = "CANCELLED";
    EXPECT_OK(store_->PutLeased(r, 0).status());
  });
  ASSERT_OK_AND_ASSIGN(JobRecord ended, queue_->Cancel(job.id, 30s));
  elsewhere.join();
  EXPECT_EQ(ended.state, JobState::kCancelled);
  EXPECT_EQ(ended.server, "other");
}

TEST_F(FleetBackendTest, LiveServersAreThoseHeardFromWithinThreeHeartbeats) {
  FleetOptions options = QuickFleetOptions("here");
  options.heartbeat = 1000ms;  // gone after 3 s without one
  Start(std::move(options));
  ASSERT_OK(store_->Heartbeat("stale", "{}"));
  Sql("UPDATE servers SET heartbeat_micros = heartbeat_micros - 3100000 WHERE name = 'stale'");
  ASSERT_OK(store_->Heartbeat("fresh", "{}"));
  ASSERT_OK_AND_ASSIGN(std::vector<store::FleetServer> live, backend_->LiveServers());
  std::vector<std::string> names;
  for (const store::FleetServer& s : live) names.push_back(s.name);
  EXPECT_THAT(names, ElementsAre("fresh", "here"));
  EXPECT_TRUE(backend_->store_reachable());
}

TEST_F(FleetBackendTest, AShardJobIsCreatedOnceAndFoundAgain) {
  Start();
  JobRecord shard = Unclaimable();
  shard.id = "ev-p.s0";
  shard.state = JobState::kFailed;  // left over: reset as it enters the queue
  shard.error_message = "old";
  shard.attempts = {{"gone", 1, 2, "FAILED"}};
  ASSERT_OK_AND_ASSIGN(JobRecord created, backend_->CreateShard(shard));
  EXPECT_EQ(created.id, "ev-p.s0");
  EXPECT_EQ(created.state, JobState::kQueued);
  EXPECT_EQ(created.error_message, "");
  EXPECT_TRUE(created.attempts.empty());
  // The parent run again (another server) asks again: the stored one comes back.
  JobRecord again = Unclaimable();
  again.id = "ev-p.s0";
  again.request.run = "second";
  ASSERT_OK_AND_ASSIGN(JobRecord found, backend_->CreateShard(again));
  EXPECT_EQ(found.request.run, "");
  EXPECT_EQ(found.create_unix_micros, created.create_unix_micros);
  EXPECT_EQ(Sql("SELECT count(*) FROM jobs"), "1");
}

TEST_F(FleetBackendTest, RunClaimedHereRunsAJobWithThePrefixOnTheCallersThread) {
  Start();
  // The runner thread is busy, so only this thread claims.
  ASSERT_OK_AND_ASSIGN(JobRecord busy, queue_->Submit(NamedJob("held")));
  ASSERT_TRUE(gate_.WaitEntered(busy.id));
  for (const char* id : {"ev-x.s0", "ev-y.s0"}) {
    JobRecord shard = NamedJob("");
    shard.id = id;
    ASSERT_OK_AND_ASSIGN(JobRecord created, backend_->CreateShard(shard));
  }
  EXPECT_FALSE(backend_->RunClaimedHere("ev-z.", ""));  // none with that prefix
  EXPECT_TRUE(backend_->RunClaimedHere("ev-x.", ""));
  {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(ran_on_, std::this_thread::get_id());
  }
  EXPECT_EQ(Sql("SELECT string_agg(id || ' ' || state, ', ' ORDER BY id) FROM jobs WHERE id "
                "LIKE '%.s0'"),
            "ev-x.s0 SUCCEEDED, ev-y.s0 QUEUED");
  gate_.Open();
  ASSERT_OK(WaitDone(*queue_, busy.id).status());
  queue_->Shutdown(0ms);
  JobRecord late = NamedJob("");
  late.id = "ev-z.s0";
  ASSERT_OK(store_->Create(late));
  EXPECT_FALSE(backend_->RunClaimedHere("ev-z.", ""));  // the queue stopped: no claim
  EXPECT_EQ(Sql("SELECT state FROM jobs WHERE id = 'ev-z.s0'"), "QUEUED");
}

}  // namespace
}  // namespace dflash::fleet
