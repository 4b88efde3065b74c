// LocalBackend (jobs/local_backend.h) on its own, attached to a queue only
// for its options: ids counted on from the store's greatest, the bounded
// FIFO's refusal, every record written whole with Put (a lost lease means
// nothing to a single host), a store's failures passed on with the job
// named, and the answers of a server without a fleet. The queue around it
// is in job_queue_test.cc, the seam in job_backend_test.cc.
#include "jobs/local_backend.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "jobs/job_queue.h"
#include "store/sqlite_result_store.h"
#include "test_util/status_matchers.h"
#include "test_util/temp_dir.h"

namespace dflash::jobs {
namespace {

using ::dflash::testing::IsOkAndHolds;
using ::dflash::testing::StatusIs;
using ::testing::Eq;
using types::JobRecord;
using types::JobState;
using namespace std::chrono_literals;

// 2026-01-02 03:04:05 UTC.
constexpr int64_t kSecond = 1767323045;

// A SQLite store whose writes and MaxId fail while `failing` is set.
class FlakyStore final : public store::ResultStore {
 public:
  explicit FlakyStore(std::unique_ptr<store::SqliteResultStore> real) : real_(std::move(real)) {}
  absl::Status Put(const JobRecord& record) override {
    if (failing) return absl::UnavailableError("disk gone");
    return real_->Put(record);
  }
  absl::StatusOr<JobRecord> Get(const std::string& id) override { return real_->Get(id); }
  absl::StatusOr<types::JobPage> List(const types::ListQuery& query) override {
    return real_->List(query);
  }
  absl::StatusOr<std::vector<std::string>> MarkInterruptedOnStartup(int64_t now) override {
    return real_->MarkInterruptedOnStartup(now);
  }
  absl::StatusOr<std::string> MaxId() override {
    if (failing) return absl::UnavailableError("disk gone");
    return real_->MaxId();
  }

  bool failing = false;

 private:
  std::unique_ptr<store::SqliteResultStore> real_;
};

class LocalBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = store::SqliteResultStore::Open(dir_.Join("results.sqlite3"));
    ASSERT_OK(s.status());
    store_ = std::make_unique<FlakyStore>(std::move(s).value());
    backend_ = std::make_unique<LocalBackend>(*store_);
  }

  // A queue with room for `max_queued` (it runs nothing: no job is
  // submitted to it), and backend_ attached to it.
  void Attach(int max_queued) {
    JobQueueOptions options;
    options.max_queued = max_queued;
    auto queue = JobQueue::Create(
        *store_, [](const JobRecord&, const types::ProgressFn&) { return types::EvalResult{}; },
        options, std::make_unique<LocalBackend>(*store_));
    ASSERT_OK(queue.status());
    queue_ = std::move(queue).value();
    backend_->Attach(*queue_);
  }

  static JobRecord AtSecond(int64_t second) {
    JobRecord r;
    r.create_unix_micros = second * 1'000'000 + 250'000;
    return r;
  }

  ::dflash::testing::TempDir dir_;
  std::unique_ptr<FlakyStore> store_;
  std::unique_ptr<JobQueue> queue_;
  std::unique_ptr<LocalBackend> backend_;  // the one under test
};

TEST_F(LocalBackendTest, IdsCountOnFromTheStoresGreatestWithinOneSecond) {
  JobRecord old;
  old.id = "ev-20260102-030405-0007";
  old.state = JobState::kSucceeded;
  ASSERT_OK(store_->Put(old));
  Attach(64);
  ASSERT_OK(backend_->Open());
  JobRecord a = AtSecond(kSecond), b = AtSecond(kSecond), c = AtSecond(kSecond + 1);
  EXPECT_THAT(backend_->Record(a, 0), IsOkAndHolds(true));  // waits in this process
  EXPECT_THAT(backend_->Record(b, 1), IsOkAndHolds(true));
  EXPECT_THAT(backend_->Record(c, 2), IsOkAndHolds(true));
  EXPECT_EQ(a.id, "ev-20260102-030405-0008");
  EXPECT_EQ(b.id, "ev-20260102-030405-0009");
  EXPECT_EQ(c.id, "ev-20260102-030406-0001");
  // Each recorded as it was handed over.
  ASSERT_OK_AND_ASSIGN(JobRecord stored, store_->Get(b.id));
  EXPECT_EQ(stored.state, JobState::kQueued);
  EXPECT_EQ(stored.create_unix_micros, b.create_unix_micros);
}

TEST_F(LocalBackendTest, AFullFifoIsResourceExhaustedAndRecordsNothing) {
  Attach(2);
  ASSERT_OK(backend_->Open());
  JobRecord job = AtSecond(kSecond);
  EXPECT_THAT(backend_->Record(job, 2),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       Eq("queue is full (2 queued, limit 2); retry when jobs finish")));
  EXPECT_TRUE(job.id.empty());
  EXPECT_THAT(store_->MaxId(), IsOkAndHolds(""));
  EXPECT_THAT(backend_->Record(job, 1), IsOkAndHolds(true));  // one place left
}

TEST_F(LocalBackendTest, StoreFailuresArePassedOnNamingTheJob) {
  Attach(64);
  store_->failing = true;
  EXPECT_THAT(backend_->Open(), StatusIs(absl::StatusCode::kUnavailable, Eq("disk gone")));
  store_->failing = false;
  ASSERT_OK(backend_->Open());
  store_->failing = true;
  JobRecord job = AtSecond(kSecond);
  EXPECT_THAT(backend_->Record(job, 0),
              StatusIs(absl::StatusCode::kUnavailable,
                       Eq("recording job ev-20260102-030405-0001: disk gone")));
  job.state = JobState::kRunning;
  backend_->StoreStarted(job);  // not fatal: the final write rewrites the record
  job.state = JobState::kSucceeded;
  EXPECT_THAT(backend_->StoreFinal(job, false),
              StatusIs(absl::StatusCode::kUnavailable, Eq("disk gone")));
}

TEST_F(LocalBackendTest, StartedAndFinalRecordsAreWrittenWholeWhateverTheLease) {
  Attach(64);
  ASSERT_OK(backend_->Open());
  JobRecord job = AtSecond(kSecond);
  ASSERT_OK(backend_->Record(job, 0).status());
  job.state = JobState::kRunning;
  job.progress.blocks_done = 3;
  backend_->StoreStarted(job);
  ASSERT_OK_AND_ASSIGN(JobRecord running, store_->Get(job.id));
  EXPECT_EQ(running.state, JobState::kRunning);
  EXPECT_EQ(running.progress.blocks_done, 3);
  job.state = JobState::kSucceeded;
  job.result = types::EvalResult{};
  job.result->blocks = 9;
  // A single host has no leases: lease_lost cannot stop the write.
  EXPECT_OK(backend_->StoreFinal(job, /*lease_lost=*/true));
  ASSERT_OK_AND_ASSIGN(JobRecord done, store_->Get(job.id));
  EXPECT_EQ(done.state, JobState::kSucceeded);
  ASSERT_TRUE(done.result.has_value());
  EXPECT_EQ(done.result->blocks, 9);
}

TEST_F(LocalBackendTest, WithoutAFleetNothingRunsOrWaitsElsewhere) {
  Attach(64);
  ASSERT_OK(backend_->Open());
  JobRecord failed = AtSecond(kSecond);
  failed.id = "ev-20260102-030405-0001";
  failed.state = JobState::kFailed;
  ASSERT_OK(store_->Put(failed));
  EXPECT_THAT(backend_->CancelElsewhere(failed.id, 10s),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       Eq("job ev-20260102-030405-0001 already finished (FAILED); nothing to "
                          "cancel")));
  EXPECT_THAT(backend_->CancelElsewhere("ev-nope", 10s),
              StatusIs(absl::StatusCode::kNotFound, Eq("no job with id 'ev-nope'")));
  EXPECT_THAT(backend_->LiveServers(),
              StatusIs(absl::StatusCode::kUnimplemented,
                       Eq("the servers table needs a store shared by a fleet (--store "
                          "postgresql://...); this one is not")));
  EXPECT_EQ(backend_->HandBack(absl::ResourceExhaustedError("over budget"), false), std::nullopt);
  EXPECT_FALSE(backend_->WatchElsewhere(failed));
}

}  // namespace
}  // namespace dflash::jobs
