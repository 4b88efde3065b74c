// WatchEval's stream (service/watch_reactor.h) on its own: a loopback
// server whose only method hands each call to a WatchReactor with the
// test's job service, refusal and open-stream counter. Covers what the
// service's tests (job_rpcs_watch_test.cc) cannot choose: no job service,
// a refusal passed in, a change arriving while Watch is still setting up,
// many changes queued behind one write, and the counter given back on every
// ending.
#include "service/watch_reactor.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "fakes/fake_job_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/job_rpcs_fixture.h"
#include "service/request_parser.h"
#include "test_util/loopback_server.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::Describe;
using ::dflash::testing::FakeJobService;
using ::dflash::testing::kWait;
using ::dflash::testing::LoopbackServer;
using ::dflash::testing::OpenWatchStream;
using ::dflash::testing::Record;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using types::JobState;

// DrafterEval with WatchEval alone: each call counted in, then handed to a
// WatchReactor over `jobs` (may be null) with `refused`.
class WatchOnlyService final
    : public pb::DrafterEval::WithRawCallbackMethod_WatchEval<pb::DrafterEval::Service> {
 public:
  WatchOnlyService(core::JobService* jobs, absl::Status refused)
      : jobs_(jobs), refused_(std::move(refused)) {}

  grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchEval(grpc::CallbackServerContext* ctx,
                                                        const grpc::ByteBuffer* raw) override {
    pb::WatchEvalRequest req;
    absl::Status refused = refused_;
    if (refused.ok()) refused = ParseRequest(*raw, &req);
    open_.fetch_add(1);
    return new WatchReactor(jobs_, ctx, req.id(), refused, &open_);
  }

  // True once every stream's reactor is done (OnDone gave its count back),
  // false if kWait passed first. OnDone runs on a gRPC thread after the
  // client saw the end and signals nothing, so this polls.
  bool WaitUntilNoneOpen() const {
    const auto deadline = std::chrono::steady_clock::now() + kWait;
    while (open_.load() != 0) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  }

 private:
  core::JobService* jobs_;
  absl::Status refused_;
  std::atomic<int> open_{0};
};

// Hands `during` to the watcher from inside Watch, before Watch returns, as
// the queue may from a runner thread while the subscription is set up.
class ChangeDuringWatch : public FakeJobService {
 public:
  explicit ChangeDuringWatch(types::JobRecord during) : during_(std::move(during)) {}
  absl::StatusOr<core::WatchStart> Watch(const std::string& id, jobs::WatchFn fn) override {
    jobs::WatchFn deliver = fn;
    absl::StatusOr<core::WatchStart> start = FakeJobService::Watch(id, std::move(fn));
    if (start.ok()) deliver(during_);
    return start;
  }

 private:
  types::JobRecord during_;
};

class WatchReactorTest : public ::testing::Test {
 protected:
  // (Re)starts the server with a service over `jobs` and `refused`.
  void Start(core::JobService* jobs, absl::Status refused = absl::OkStatus()) {
    server_.reset();
    service_ = std::make_unique<WatchOnlyService>(jobs, std::move(refused));
    server_ = std::make_unique<LoopbackServer>(service_.get());
    ASSERT_TRUE(server_->ok());
  }
  void TearDown() override {
    if (service_) EXPECT_TRUE(service_->WaitUntilNoneOpen());
    server_.reset();
    service_.reset();
  }
  // Every message of the stream of `id` until it ends, and how it ended.
  std::pair<std::vector<pb::EvalJob>, std::string> ReadAll(const std::string& id) {
    auto watch = OpenWatchStream(*server_, id);
    std::vector<pb::EvalJob> messages;
    pb::EvalJob job;
    while (watch->reader->Read(&job)) messages.push_back(job);
    return {messages, Describe(watch->reader->Finish())};
  }

  FakeJobService jobs_;
  std::unique_ptr<WatchOnlyService> service_;
  std::unique_ptr<LoopbackServer> server_;
};

TEST_F(WatchReactorTest, WithoutAJobServiceTheStreamIsUnimplemented) {
  Start(nullptr);
  const auto [messages, status] = ReadAll("ev-1");
  EXPECT_THAT(messages, IsEmpty());
  EXPECT_EQ(status, "UNIMPLEMENTED: this server was started without a job service");
}

TEST_F(WatchReactorTest, ARefusalEndsTheStreamWithItBeforeAnyWatch) {
  Start(&jobs_, absl::PermissionDeniedError("token 'ro' may not watch"));
  const auto [messages, status] = ReadAll("ev-1");
  EXPECT_THAT(messages, IsEmpty());
  EXPECT_EQ(status, "PERMISSION_DENIED: token 'ro' may not watch");
  EXPECT_THAT(jobs_.calls().watched, IsEmpty());
  ASSERT_TRUE(service_->WaitUntilNoneOpen());

  // A refusal wins over a missing job service.
  Start(nullptr, absl::ResourceExhaustedError("too many streams"));
  EXPECT_EQ(ReadAll("ev-1").second, "RESOURCE_EXHAUSTED: too many streams");
}

TEST_F(WatchReactorTest, AWatchErrorEndsTheStreamWithItsStatus) {
  Start(&jobs_);
  jobs_.Answer([](auto& a) { a.error = absl::FailedPreconditionError("job 'ev-2' is archived"); });
  const auto [messages, status] = ReadAll("ev-2");
  EXPECT_THAT(messages, IsEmpty());
  EXPECT_EQ(status, "FAILED_PRECONDITION: job 'ev-2' is archived");
  EXPECT_THAT(jobs_.calls().watched, ElementsAre("ev-2"));
  EXPECT_THAT(jobs_.calls().unwatched, IsEmpty());  // nothing was subscribed
}

// A change delivered before Watch returned is newer than Watch's snapshot:
// the stream starts with it, and the snapshot is never sent.
TEST_F(WatchReactorTest, AChangeDuringWatchReplacesTheSnapshot) {
  ChangeDuringWatch jobs(Record("ev-1", JobState::kRunning, 7));
  jobs.Answer([](auto& a) { a.record = Record("ev-1", JobState::kQueued); });
  Start(&jobs);
  auto watch = OpenWatchStream(*server_, "ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.state(), pb::JOB_STATE_RUNNING);
  EXPECT_EQ(job.progress().blocks_done(), 7);
  const std::vector<int64_t> handles = jobs.WaitForWatches(1, kWait);
  ASSERT_EQ(handles.size(), 1u);
  ASSERT_TRUE(jobs.Push(handles[0], Record("ev-1", JobState::kSucceeded, 10)));
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_FALSE(watch->reader->Read(&job));
  EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
  EXPECT_TRUE(jobs.WaitForUnwatch(handles[0], kWait));
  EXPECT_TRUE(service_->WaitUntilNoneOpen());  // before `jobs` goes
}

// The final state arriving during Watch is the stream's only message.
TEST_F(WatchReactorTest, AFinalChangeDuringWatchIsTheOnlyMessage) {
  types::JobRecord failed = Record("ev-1", JobState::kFailed, 3);
  failed.error_message = "out of memory";
  ChangeDuringWatch jobs(failed);
  jobs.Answer([](auto& a) { a.record = Record("ev-1", JobState::kRunning, 2); });
  Start(&jobs);
  const auto [messages, status] = ReadAll("ev-1");
  ASSERT_EQ(messages.size(), 1u);
  EXPECT_EQ(messages[0].state(), pb::JOB_STATE_FAILED);
  EXPECT_EQ(messages[0].error_message(), "out of memory");
  EXPECT_EQ(status, "OK: ");
  const std::vector<int64_t> handles = jobs.WaitForWatches(1, kWait);
  ASSERT_EQ(handles.size(), 1u);
  EXPECT_TRUE(jobs.WaitForUnwatch(handles[0], kWait));  // the subscription let go
  EXPECT_TRUE(service_->WaitUntilNoneOpen());           // before `jobs` goes
}

// Changes pushed faster than they are written: while one write is in
// flight only the newest is kept, so the client sees an increasing subset
// of them ending with the final state (the last change a JobService
// delivers, job_service.h).
TEST_F(WatchReactorTest, QueuedChangesArriveInOrderEndingWithTheFinalOne) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", JobState::kQueued); });
  Start(&jobs_);
  auto watch = OpenWatchStream(*server_, "ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
  const std::vector<int64_t> handles = jobs_.WaitForWatches(1, kWait);
  ASSERT_EQ(handles.size(), 1u);
  for (int64_t blocks = 1; blocks <= 50; ++blocks) {
    ASSERT_TRUE(jobs_.Push(handles[0], Record("ev-1", JobState::kRunning, blocks)));
  }
  ASSERT_TRUE(jobs_.Push(handles[0], Record("ev-1", JobState::kCancelled, 51)));

  std::vector<int64_t> seen;
  while (watch->reader->Read(&job)) seen.push_back(job.progress().blocks_done());
  EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
  ASSERT_FALSE(seen.empty());
  ASSERT_LE(seen.size(), 51u);
  for (size_t i = 1; i < seen.size(); ++i) EXPECT_LT(seen[i - 1], seen[i]) << i;
  EXPECT_EQ(seen.back(), 51);
  EXPECT_EQ(job.state(), pb::JOB_STATE_CANCELLED);
  EXPECT_TRUE(jobs_.WaitForUnwatch(handles[0], kWait));
}

TEST_F(WatchReactorTest, AClientThatGoesAwayEndsTheSubscription) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", JobState::kRunning, 1); });
  Start(&jobs_);
  auto watch = OpenWatchStream(*server_, "ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  const std::vector<int64_t> handles = jobs_.WaitForWatches(1, kWait);
  ASSERT_EQ(handles.size(), 1u);
  watch->ctx.TryCancel();
  while (watch->reader->Read(&job)) {
  }
  EXPECT_EQ(watch->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(jobs_.WaitForUnwatch(handles[0], kWait));
  EXPECT_TRUE(service_->WaitUntilNoneOpen());
  EXPECT_FALSE(jobs_.Push(handles[0], Record("ev-1", JobState::kSucceeded)));
}

}  // namespace
}  // namespace dflash::service
