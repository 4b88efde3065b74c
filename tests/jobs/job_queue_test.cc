#include "jobs/job_queue.h"

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "job_watch.h"
#include "jobs/local_backend.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::jobs {
namespace {

using ::dflash::testing::StatusIs;
using ::dflash::testing::WaitDone;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

using ::dflash::testing::kHang;

// A runner without torch: request.params.options.max_blocks "chunks", each waiting
// for a permit from the test (or none with free_run), reporting progress
// after each; label fail=1 makes it fail. The test synchronises on what it
// records (started jobs, chunks reported), never on elapsed time.
struct FakeRunner {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> started;  // request.run of each job, in start order
  int64_t reported = 0;              // progress calls that returned true, all jobs
  int permits = 0;
  bool free_run = false;

  absl::StatusOr<types::EvalResult> Run(const types::JobRecord& job,
                                        const types::ProgressFn& progress) {
    {
      std::lock_guard<std::mutex> lock(mu);
      started.push_back(job.request.run);
      cv.notify_all();
    }
    if (job.request.labels.count("fail")) {
      return absl::InvalidArgumentError("block_size 99 is above the drafter's 16");
    }
    const int64_t chunks = job.request.params.options.max_blocks;
    for (int64_t i = 1; i <= chunks; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return free_run || permits > 0; });
        if (!free_run) --permits;
      }
      if (!progress({i, chunks, i, chunks})) return absl::CancelledError("evaluation cancelled");
      std::lock_guard<std::mutex> lock(mu);
      ++reported;
      cv.notify_all();
    }
    types::EvalResult r;
    r.blocks = chunks;
    r.accept_length_pooled = 1.5;
    r.device = "cpu";
    r.dtype = "fp32";
    r.drafter_fingerprint = "fp-" + job.request.params.drafter;
    return r;
  }
  void Allow(int n) {
    std::lock_guard<std::mutex> lock(mu);
    permits += n;
    cv.notify_all();
  }
  void FreeRun() {
    std::lock_guard<std::mutex> lock(mu);
    free_run = true;
    cv.notify_all();
  }
  // True once `n` jobs have started (false after kHang).
  [[nodiscard]] bool WaitStarted(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kHang, [&] { return started.size() >= n; });
  }
  // True once `n` chunks have been reported and accepted by the queue.
  [[nodiscard]] bool WaitReported(int64_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, kHang, [&] { return reported >= n; });
  }
  std::vector<std::string> Started() {
    std::lock_guard<std::mutex> lock(mu);
    return started;
  }
};

// More chunks than any test lets run: a free-running job with this many
// only ends when it is cancelled or interrupted.
constexpr int64_t kEndless = int64_t{1} << 50;

types::JobRecord Request(const std::string& run, int64_t chunks, const std::string& drafter = "m") {
  types::JobRecord r;
  r.request.run = run;
  r.request.params.drafter = drafter;
  r.request.params.dataset = "d";
  r.request.params.options.max_blocks = chunks;
  return r;
}

class JobQueueTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_OK(s.status());
    store_ = std::move(s).value();
  }

  absl::StatusOr<std::unique_ptr<JobQueue>> Make(int max_queued = 64, int concurrent = 1) {
    JobQueueOptions options;
    options.max_queued = max_queued;
    options.concurrent_jobs = concurrent;
    options.server_version = "test-1";
    options.progress_interval = 0ms;
    return JobQueue::Create(
        *store_,
        [this](const types::JobRecord& j, const types::ProgressFn& p) { return runner_.Run(j, p); },
        options, std::make_unique<LocalBackend>(*store_));
  }

  testing::TempDir dir_;
  std::unique_ptr<store::SqliteResultStore> store_;
  FakeRunner runner_;
};

TEST_F(JobQueueTest, JobsRunInSubmissionOrderAndSucceed) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK_AND_ASSIGN(types::JobRecord r, q->Submit(Request(absl::StrCat("r", i), 2)));
    EXPECT_EQ(r.state, types::JobState::kQueued);
    EXPECT_EQ(r.server_version, "test-1");
    EXPECT_GT(r.create_unix_micros, 0);
    if (!ids.empty()) EXPECT_GT(r.id, ids.back());  // ids sort by creation
    ids.push_back(r.id);
  }
  runner_.FreeRun();
  for (const std::string& id : ids) {
    ASSERT_OK_AND_ASSIGN(types::JobRecord r, WaitDone(*q, id));
    EXPECT_EQ(r.state, types::JobState::kSucceeded);
    ASSERT_TRUE(r.result.has_value());
    EXPECT_EQ(r.result->blocks, 2);
    EXPECT_EQ(r.drafter_fingerprint, "fp-m");
    EXPECT_EQ(r.device, "cpu");
    EXPECT_GE(r.end_unix_micros, r.start_unix_micros);
    EXPECT_GE(r.start_unix_micros, r.create_unix_micros);
    ASSERT_OK_AND_ASSIGN(types::JobRecord stored, store_->Get(id));
    EXPECT_EQ(stored.state, types::JobState::kSucceeded);
    EXPECT_TRUE(stored.result.has_value());
  }
  EXPECT_THAT(runner_.Started(), ElementsAre("r0", "r1", "r2", "r3", "r4"));
}

TEST_F(JobQueueTest, AFullQueueIsResourceExhausted) {
  ASSERT_OK_AND_ASSIGN(auto q, Make(/*max_queued=*/2));
  ASSERT_OK(q->Submit(Request("a", 1)).status());
  ASSERT_TRUE(runner_.WaitStarted(1));  // a is running, so it no longer counts as queued
  ASSERT_OK(q->Submit(Request("b", 1)).status());
  ASSERT_OK(q->Submit(Request("c", 1)).status());
  EXPECT_THAT(q->Submit(Request("d", 1)), StatusIs(absl::StatusCode::kResourceExhausted,
                                                   HasSubstr("queue is full (2 queued, limit 2)")));
  EXPECT_EQ(q->queued(), 2);
  EXPECT_EQ(q->running(), 1);
  runner_.FreeRun();
}

TEST_F(JobQueueTest, CancellingAQueuedJobIsImmediate) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 1)));
  ASSERT_OK_AND_ASSIGN(types::JobRecord b, q->Submit(Request("b", 1)));
  ASSERT_TRUE(runner_.WaitStarted(1));
  ASSERT_OK_AND_ASSIGN(types::JobRecord cancelled, q->Cancel(b.id, 0ms));
  EXPECT_EQ(cancelled.state, types::JobState::kCancelled);
  ASSERT_OK_AND_ASSIGN(types::JobRecord stored, store_->Get(b.id));
  EXPECT_EQ(stored.state, types::JobState::kCancelled);
  runner_.FreeRun();
  ASSERT_OK_AND_ASSIGN(types::JobRecord a_done, WaitDone(*q, a.id));
  EXPECT_EQ(a_done.state, types::JobState::kSucceeded);
  EXPECT_THAT(runner_.Started(), ElementsAre("a"));  // b never ran
  EXPECT_THAT(q->Cancel(b.id, 0ms), StatusIs(absl::StatusCode::kFailedPrecondition,
                                             HasSubstr("already finished (CANCELLED)")));
  EXPECT_THAT(q->Cancel("ev-none", 0ms),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no job with id 'ev-none'")));
}

TEST_F(JobQueueTest, ARunningJobStopsAtTheNextChunkBoundary) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 10)));
  runner_.Allow(2);
  ASSERT_TRUE(runner_.WaitReported(2));  // two chunks done; the third waits for a permit
  ASSERT_OK_AND_ASSIGN(types::JobRecord two, q->Get(a.id));
  EXPECT_EQ(two.progress.blocks_done, 2);
  ASSERT_OK_AND_ASSIGN(types::JobRecord still, q->Cancel(a.id, 0ms));
  EXPECT_EQ(still.state, types::JobState::kRunning);  // mid-chunk: it has not stopped yet
  runner_.Allow(1);                                   // the chunk in flight completes
  ASSERT_OK_AND_ASSIGN(types::JobRecord done, WaitDone(*q, a.id));
  EXPECT_EQ(done.state, types::JobState::kCancelled);
  EXPECT_EQ(done.progress.blocks_done, 3);
  EXPECT_EQ(done.progress.blocks_total, 10);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kCancelled));
  EXPECT_FALSE(done.result.has_value());
}

TEST_F(JobQueueTest, CancelWaitsForTheRunningJobToEnd) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  runner_.FreeRun();
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", kEndless)));
  ASSERT_TRUE(runner_.WaitStarted(1));
  ASSERT_OK_AND_ASSIGN(types::JobRecord done, q->Cancel(a.id, 10s));
  EXPECT_EQ(done.state, types::JobState::kCancelled);
}

TEST_F(JobQueueTest, WatchersSeeEveryStateAndMonotoneProgressCommittedFirst) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 20)));
  std::mutex mu;
  std::vector<types::JobRecord> seen;
  std::vector<std::string> stored_states;
  ASSERT_OK_AND_ASSIGN(JobQueue::Watch w, q->Subscribe(a.id, [&](const types::JobRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(r);
    // What the store says at the moment the watcher hears of the state.
    auto s = store_->Get(r.id);
    stored_states.push_back(s.ok() ? types::JobStateName(s->state) : "?");
  }));
  EXPECT_NE(w.handle, 0);
  // A runner thread may already have picked the job up (its runner blocks
  // until FreeRun), so the state at subscription is QUEUED or RUNNING.
  EXPECT_THAT(w.current.state,
              ::testing::AnyOf(types::JobState::kQueued, types::JobState::kRunning));
  runner_.FreeRun();
  ASSERT_OK(WaitDone(*q, a.id).status());
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_GE(seen.size(), 3u);
  EXPECT_EQ(seen.front().state, types::JobState::kRunning);
  EXPECT_EQ(seen.back().state, types::JobState::kSucceeded);
  EXPECT_TRUE(seen.back().result.has_value());
  EXPECT_EQ(stored_states.back(), "SUCCEEDED");
  int64_t last = 0;
  for (const types::JobRecord& r : seen) {
    EXPECT_GE(r.progress.blocks_done, last);
    last = r.progress.blocks_done;
  }
  EXPECT_EQ(last, 20);
  // A finished job: the final record, no subscription.
  ASSERT_OK_AND_ASSIGN(JobQueue::Watch after, q->Subscribe(a.id, [](const types::JobRecord&) {}));
  EXPECT_EQ(after.handle, 0);
  EXPECT_EQ(after.current.state, types::JobState::kSucceeded);
  EXPECT_THAT(q->Subscribe("ev-none", [](const types::JobRecord&) {}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("no job with id 'ev-none'")));
}

TEST_F(JobQueueTest, UnsubscribedWatchersAreNotCalled) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 5)));
  // Running first: otherwise its QUEUED -> RUNNING change could land between
  // Subscribe and Unsubscribe (it did, 9 runs in 100 under ASan).
  ASSERT_TRUE(runner_.WaitStarted(1));
  std::atomic<int> calls{0};
  ASSERT_OK_AND_ASSIGN(JobQueue::Watch w,
                       q->Subscribe(a.id, [&](const types::JobRecord&) { ++calls; }));
  q->Unsubscribe(w.handle);
  runner_.FreeRun();
  ASSERT_OK(WaitDone(*q, a.id).status());
  EXPECT_EQ(calls.load(), 0);
}

TEST_F(JobQueueTest, AFailingRunnerGivesFailedWithItsStatus) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  types::JobRecord bad = Request("bad", 1);
  bad.request.labels["fail"] = "1";
  ASSERT_OK_AND_ASSIGN(types::JobRecord r, q->Submit(bad));
  ASSERT_OK_AND_ASSIGN(types::JobRecord done, WaitDone(*q, r.id));
  EXPECT_EQ(done.state, types::JobState::kFailed);
  EXPECT_EQ(done.error_code, static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(done.error_message, "block_size 99 is above the drafter's 16");
}

TEST_F(JobQueueTest, ShutdownInterruptsRunningAndQueuedJobs) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", kEndless)));
  ASSERT_OK_AND_ASSIGN(types::JobRecord b, q->Submit(Request("b", 10)));
  ASSERT_TRUE(runner_.WaitStarted(1));  // a waits for its first chunk's permit
  std::thread stopper([&] { q->Shutdown(0ms); });
  // The chunk in flight finishes and a runs on to the first boundary after
  // Shutdown asks it to stop: being endless, a can only end INTERRUPTED,
  // whichever thread gets there first.
  runner_.FreeRun();
  stopper.join();
  for (const std::string& id : {a.id, b.id}) {
    ASSERT_OK_AND_ASSIGN(types::JobRecord r, store_->Get(id));
    EXPECT_EQ(r.state, types::JobState::kInterrupted) << id;
    EXPECT_TRUE(r.interrupted_by_restart) << id;
  }
  EXPECT_THAT(q->Submit(Request("c", 1)),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("shutting down")));
  EXPECT_THAT(runner_.Started(), ElementsAre("a"));
}

TEST_F(JobQueueTest, ShutdownGraceLetsARunningJobFinish) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  runner_.FreeRun();
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 3)));
  ASSERT_TRUE(runner_.WaitStarted(1));
  q->Shutdown(10s);
  ASSERT_OK_AND_ASSIGN(types::JobRecord r, store_->Get(a.id));
  EXPECT_EQ(r.state, types::JobState::kSucceeded);
}

TEST_F(JobQueueTest, JobsLeftUnfinishedByACrashComeBackInterrupted) {
  types::JobRecord left = Request("crashed", 1);
  left.id = "ev-20260101-000000-0001";
  left.state = types::JobState::kRunning;
  ASSERT_OK(store_->Put(left));
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord r, q->Get(left.id));
  EXPECT_EQ(r.state, types::JobState::kInterrupted);
  EXPECT_TRUE(r.interrupted_by_restart);
  ASSERT_OK_AND_ASSIGN(types::JobRecord next, q->Submit(Request("n", 1)));
  EXPECT_GT(next.id, left.id);
  runner_.FreeRun();
}

TEST_F(JobQueueTest, UnfinishedJobsWhereNamesTheJobsUsingAResource) {
  ASSERT_OK_AND_ASSIGN(auto q, Make());
  ASSERT_OK_AND_ASSIGN(types::JobRecord a, q->Submit(Request("a", 1, "m")));
  ASSERT_OK_AND_ASSIGN(types::JobRecord b, q->Submit(Request("b", 1, "other")));
  ASSERT_OK_AND_ASSIGN(types::JobRecord c, q->Submit(Request("c", 1, "m")));
  auto uses_m = [](const types::JobRequest& r) { return r.params.drafter == "m"; };
  EXPECT_THAT(q->UnfinishedJobsWhere(uses_m), ElementsAre(a.id, c.id));
  EXPECT_THAT(q->UnfinishedJobsWhere(uses_m, a.id), ElementsAre(c.id));
  runner_.FreeRun();
  ASSERT_OK(WaitDone(*q, c.id).status());
  EXPECT_THAT(q->UnfinishedJobsWhere(uses_m), ElementsAre());
}

TEST_F(JobQueueTest, ConcurrentRunnersRunJobsSideBySide) {
  ASSERT_OK_AND_ASSIGN(auto q, Make(64, /*concurrent=*/2));
  ASSERT_OK(q->Submit(Request("a", 1)).status());
  ASSERT_OK(q->Submit(Request("b", 1)).status());
  ASSERT_TRUE(runner_.WaitStarted(2));  // both started without any permit
  EXPECT_EQ(q->running(), 2);
  runner_.FreeRun();
}

TEST_F(JobQueueTest, BadOptionsAreInvalidArgument) {
  JobQueueOptions options;
  options.max_queued = 0;
  EXPECT_THAT(JobQueue::Create(*store_, nullptr, options, std::make_unique<LocalBackend>(*store_)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be >= 1")));
}

}  // namespace
}  // namespace dflash::jobs
