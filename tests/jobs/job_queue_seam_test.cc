// JobQueue's side of the JobBackend seam (jobs/job_queue_seam.cc), over a
// fake backend whose jobs wait elsewhere (fake_job_backend.h): a claimed
// job run on the caller's thread, what a backend may read of the jobs here
// (accepting, Active, CancelRequested, WatchedElsewhere), and how it stops
// one (StopRunning, a shard stopping with its parent) or reports a job run
// elsewhere (DeliverIfNotHere).
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fake_job_backend.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_watch.h"
#include "jobs/job_queue.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::jobs {
namespace {

using ::dflash::testing::FakeBackend;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

using ::dflash::testing::kHang;  // bounds a failure only

// What the runner does with a job, by its request.run: "once" reports one
// chunk and succeeds; "chunks" reports a chunk each millisecond until the
// queue says stop; "held" waits for Proceed(), then reports one chunk.
// Told to stop, it returns CancelledError, as the evaluator does.
class SteeredRunner {
 public:
  absl::StatusOr<types::EvalResult> Run(const JobRecord& job, const types::ProgressFn& progress) {
    if (on_start) on_start(job);
    {
      std::unique_lock<std::mutex> lock(mu_);
      started_.insert(job.id);
      cv_.notify_all();
      if (job.request.run == "held") cv_.wait(lock, [&] { return proceed_; });
    }
    const bool chunks = job.request.run == "chunks";
    for (int64_t i = 1;; ++i) {
      if (!progress({i, 100, 0, 0})) return absl::CancelledError("evaluation cancelled");
      if (!chunks || i >= 30000) break;
      std::this_thread::sleep_for(1ms);  // a chunk of work
    }
    return types::EvalResult{};
  }
  // True once job `id` has started (false after kHang).
  [[nodiscard]] bool WaitStarted(const std::string& id) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, kHang, [&] { return started_.count(id) > 0; });
  }
  void Proceed() {
    std::lock_guard<std::mutex> lock(mu_);
    proceed_ = true;
    cv_.notify_all();
  }

  std::function<void(const JobRecord&)> on_start;  // set before a job starts

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string> started_;
  bool proceed_ = false;
};

// A job as a fleet's claim hands it over: RUNNING, with this server's attempt.
JobRecord Claimed(const std::string& id, const std::string& run) {
  JobRecord r;
  r.id = id;
  r.state = JobState::kRunning;
  r.request.run = run;
  r.attempts.push_back({"here", 1, 0, ""});
  return r;
}

class JobQueueSeamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
  }

  // The queue over a fake backend that follows jobs elsewhere when
  // `watch_elsewhere` and hands nothing back.
  void Start(bool watch_elsewhere) {
    auto owned = std::make_unique<FakeBackend>();
    backend_ = owned.get();
    backend_->watch_elsewhere = watch_elsewhere;
    backend_->hand_back = std::nullopt;
    JobQueueOptions options;
    options.progress_interval = 0ms;
    auto queue = JobQueue::Create(
        *store_,
        [this](const JobRecord& j, const types::ProgressFn& p) { return runner_.Run(j, p); },
        options, std::move(owned));
    ASSERT_OK(queue.status());
    queue_ = std::move(queue).value();
  }

  // A job waiting elsewhere, as the store shows it.
  void StoreQueued(const std::string& id) {
    JobRecord r;
    r.id = id;
    ASSERT_OK(store_->Put(r));
  }

  ::dflash::testing::TempDir dir_;
  std::unique_ptr<store::SqliteResultStore> store_;
  SteeredRunner runner_;
  FakeBackend* backend_ = nullptr;
  std::unique_ptr<JobQueue> queue_;
};

TEST_F(JobQueueSeamTest, AcceptingUntilShutdownBegins) {
  Start(false);
  EXPECT_TRUE(queue_->accepting());
  queue_->Shutdown(0ms);
  EXPECT_FALSE(queue_->accepting());
}

TEST_F(JobQueueSeamTest, RunHereRunsAClaimedJobOnTheCallersThreadAndPublishesIt) {
  Start(true);
  StoreQueued("ev-c1");
  std::vector<JobState> seen;
  ASSERT_OK_AND_ASSIGN(JobQueue::Watch w, queue_->Subscribe("ev-c1", [&](const JobRecord& r) {
    seen.push_back(r.state);
  }));
  ASSERT_NE(w.handle, 0);  // followed elsewhere, until it is claimed here
  std::vector<JobRecord> active_inside;
  std::thread::id ran_on;
  runner_.on_start = [&](const JobRecord&) {
    ran_on = std::this_thread::get_id();
    active_inside = queue_->Active();
  };

  queue_->RunHere(Claimed("ev-c1", "once"), "");

  EXPECT_EQ(ran_on, std::this_thread::get_id());
  ASSERT_EQ(active_inside.size(), 1u);
  EXPECT_EQ(active_inside[0].id, "ev-c1");
  EXPECT_EQ(active_inside[0].state, JobState::kRunning);
  EXPECT_THAT(queue_->Active(), IsEmpty());
  EXPECT_EQ(queue_->running(), 0);
  std::vector<JobRecord> stored = backend_->WaitFinal(1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].state, JobState::kSucceeded);
  EXPECT_EQ(stored[0].attempts[0].outcome, "SUCCEEDED");
  EXPECT_THAT(backend_->final_lease_lost(), ElementsAre(false));
  // Claimed (RUNNING), one progress report, the final state; then no watch.
  EXPECT_THAT(seen, ElementsAre(JobState::kRunning, JobState::kRunning, JobState::kSucceeded));
  EXPECT_THAT(queue_->WatchedElsewhere(), IsEmpty());
}

TEST_F(JobQueueSeamTest, StopRunningWithALostLeaseEndsTheJobWritingNothing) {
  Start(false);
  backend_->Release(Claimed("ev-l1", "chunks"));
  ASSERT_TRUE(runner_.WaitStarted("ev-l1"));
  queue_->StopRunning("ev-unknown", /*lease_lost=*/true);  // not here: nothing to stop
  queue_->StopRunning("ev-l1", /*lease_lost=*/true);
  EXPECT_FALSE(queue_->CancelRequested("ev-l1"));  // another server took it: no cancel
  ASSERT_EQ(backend_->WaitFinal(1).size(), 1u);
  queue_->Shutdown(0ms);  // the runner has finished with it
  // One write, refused by the backend (not this server's to report): the
  // queue neither rewrites it as FAILED Internal nor keeps the job.
  std::vector<JobRecord> stored = backend_->WaitFinal(1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_THAT(backend_->final_lease_lost(), ElementsAre(true));
  EXPECT_EQ(stored[0].error_message, "evaluation cancelled");
  EXPECT_THAT(queue_->Active(), IsEmpty());
}

TEST_F(JobQueueSeamTest, StopRunningWithoutALostLeaseCancelsTheJob) {
  Start(false);
  EXPECT_FALSE(queue_->CancelRequested("ev-c2"));  // not here
  backend_->Release(Claimed("ev-c2", "chunks"));
  ASSERT_TRUE(runner_.WaitStarted("ev-c2"));
  EXPECT_FALSE(queue_->CancelRequested("ev-c2"));
  queue_->StopRunning("ev-c2", /*lease_lost=*/false);
  std::vector<JobRecord> stored = backend_->WaitFinal(1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].state, JobState::kCancelled);
  EXPECT_EQ(stored[0].error_code, static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_EQ(stored[0].error_message, "cancelled while running");
  EXPECT_EQ(stored[0].attempts[0].outcome, "CANCELLED");
  EXPECT_THAT(backend_->final_lease_lost(), ElementsAre(false));
}

TEST_F(JobQueueSeamTest, CancelRequestedSaysWhetherACancelOfAJobHereWasAsked) {
  Start(false);
  backend_->Release(Claimed("ev-h1", "held"));
  ASSERT_TRUE(runner_.WaitStarted("ev-h1"));
  EXPECT_FALSE(queue_->CancelRequested("ev-h1"));
  ASSERT_OK_AND_ASSIGN(JobRecord asked, queue_->Cancel("ev-h1", 0ms));
  EXPECT_EQ(asked.state, JobState::kRunning);  // stops at its next chunk
  EXPECT_TRUE(queue_->CancelRequested("ev-h1"));
  runner_.Proceed();
  EXPECT_EQ(backend_->WaitFinal(1).at(0).state, JobState::kCancelled);
  queue_->Shutdown(0ms);                           // the runner has finished with it
  EXPECT_FALSE(queue_->CancelRequested("ev-h1"));  // ended: no longer here
}

TEST_F(JobQueueSeamTest, AShardRunHereStopsWithTheJobItRunsFor) {
  Start(false);
  backend_->Release(Claimed("ev-p", "held"));  // the parent, on the runner thread
  ASSERT_TRUE(runner_.WaitStarted("ev-p"));
  std::thread shard([&] { queue_->RunHere(Claimed("ev-p.s0", "chunks"), "ev-p"); });
  ASSERT_TRUE(runner_.WaitStarted("ev-p.s0"));
  EXPECT_EQ(queue_->Active().size(), 2u);
  ASSERT_OK(queue_->Cancel("ev-p", 0ms).status());
  shard.join();  // the shard saw its parent's cancel at its next chunk
  std::vector<JobRecord> stored = backend_->WaitFinal(1);
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].id, "ev-p.s0");
  EXPECT_EQ(stored[0].state, JobState::kCancelled);
  EXPECT_EQ(stored[0].error_message, "cancelled while running");
  runner_.Proceed();
  stored = backend_->WaitFinal(2);
  ASSERT_EQ(stored.size(), 2u);
  EXPECT_EQ(stored[1].id, "ev-p");
  EXPECT_EQ(stored[1].state, JobState::kCancelled);
}

TEST_F(JobQueueSeamTest, WatchedElsewhereListsEachWatchedJobNotHereOnce) {
  Start(true);
  StoreQueued("ev-a");
  StoreQueued("ev-b");
  const auto ignore = [](const JobRecord&) {};
  EXPECT_THAT(queue_->WatchedElsewhere(), IsEmpty());
  // Watchers of a, b, then a again (a second viewer of a).
  ASSERT_OK(queue_->Subscribe("ev-a", ignore).status());
  ASSERT_OK(queue_->Subscribe("ev-b", ignore).status());
  ASSERT_OK_AND_ASSIGN(JobQueue::Watch again, queue_->Subscribe("ev-a", ignore));
  ASSERT_NE(again.handle, 0);
  EXPECT_THAT(queue_->WatchedElsewhere(), ElementsAre("ev-a", "ev-b"));
  // A watched job running here is this process's to report.
  backend_->Release(Claimed("ev-a", "held"));
  ASSERT_TRUE(runner_.WaitStarted("ev-a"));
  EXPECT_THAT(queue_->WatchedElsewhere(), ElementsAre("ev-b"));
  runner_.Proceed();
  EXPECT_EQ(backend_->WaitFinal(1).at(0).id, "ev-a");
  queue_->Shutdown(0ms);                                         // the runner has reported a's end
  EXPECT_THAT(queue_->WatchedElsewhere(), ElementsAre("ev-b"));  // a ended: its watches too
  queue_->Unsubscribe(again.handle);                             // already ended: no effect
  EXPECT_THAT(queue_->WatchedElsewhere(), ElementsAre("ev-b"));
}

TEST_F(JobQueueSeamTest, DeliverIfNotHereGivesAStoredRecordToItsWatchers) {
  Start(true);
  StoreQueued("ev-r");
  std::vector<std::string> first, second;
  ASSERT_OK(
      queue_
          ->Subscribe("ev-r",
                      [&](const JobRecord& r) { first.push_back(types::JobStateName(r.state)); })
          .status());
  ASSERT_OK(
      queue_
          ->Subscribe("ev-r",
                      [&](const JobRecord& r) { second.push_back(types::JobStateName(r.state)); })
          .status());
  JobRecord elsewhere = Claimed("ev-r", "once");
  elsewhere.server = "other";
  EXPECT_TRUE(queue_->DeliverIfNotHere(elsewhere));
  elsewhere.state = JobState::kSucceeded;
  EXPECT_TRUE(queue_->DeliverIfNotHere(elsewhere));
  EXPECT_THAT(first, ElementsAre("RUNNING", "SUCCEEDED"));
  EXPECT_THAT(second, ElementsAre("RUNNING", "SUCCEEDED"));
  // The final state ended both watches: nothing more is delivered.
  EXPECT_THAT(queue_->WatchedElsewhere(), IsEmpty());
  EXPECT_TRUE(queue_->DeliverIfNotHere(elsewhere));
  EXPECT_EQ(first.size(), 2u);
}

TEST_F(JobQueueSeamTest, DeliverIfNotHereLeavesAJobRunningHereToTheQueue) {
  Start(true);
  StoreQueued("ev-x");
  backend_->Release(Claimed("ev-x", "held"));
  ASSERT_TRUE(runner_.WaitStarted("ev-x"));
  std::vector<std::string> servers;
  ASSERT_OK(
      queue_->Subscribe("ev-x", [&](const JobRecord& r) { servers.push_back(r.server); }).status());
  JobRecord stale = Claimed("ev-x", "held");
  stale.server = "other";  // the store's older view: another server had it
  EXPECT_FALSE(queue_->DeliverIfNotHere(stale));
  EXPECT_THAT(servers, IsEmpty());
  runner_.Proceed();
  EXPECT_EQ(backend_->WaitFinal(1).at(0).state, JobState::kSucceeded);
  queue_->Shutdown(0ms);  // the runner has published the end
  // This server's own reports only: a progress report and the final state.
  EXPECT_THAT(servers, ElementsAre("", ""));
}

}  // namespace
}  // namespace dflash::jobs
