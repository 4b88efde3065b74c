// The WatchEval stream over a fake job service, on a real loopback server
// (job_rpcs_fixture.h): the current state, then each change, ending after
// the final one; a finished job sent once; unwatching when the client
// cancels; errors ending the stream; streams past the limit refused.
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/eval_service.h"
#include "service/job_convert.h"
#include "service/job_rpcs_fixture.h"

namespace dflash::service {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::Describe;
using ::dflash::testing::JobRpcsTest;
using ::dflash::testing::kWait;
using ::dflash::testing::Record;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST_F(JobRpcsTest, WatchEvalSendsTheCurrentStateThenEachChangeAndEndsAfterTheFinalOne) {
  for (types::JobState final_state : {types::JobState::kSucceeded, types::JobState::kFailed,
                                      types::JobState::kCancelled, types::JobState::kInterrupted}) {
    SCOPED_TRACE(types::JobStateName(final_state));
    const size_t watches_before = jobs_.calls().watched.size();
    jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kQueued); });
    auto watch = OpenWatch("ev-1");
    pb::EvalJob job;
    ASSERT_TRUE(watch->reader->Read(&job));
    EXPECT_EQ(job.id(), "ev-1");
    EXPECT_EQ(job.state(), pb::JOB_STATE_QUEUED);
    std::vector<int64_t> handles = jobs_.WaitForWatches(watches_before + 1, kWait);
    ASSERT_EQ(handles.size(), watches_before + 1);
    const int64_t handle = handles.back();
    ASSERT_NE(handle, 0);
    EXPECT_EQ(jobs_.calls().watched.back(), "ev-1");

    // One change at a time: the stream keeps only the newest while a write
    // is in flight, so each is read before the next is pushed.
    for (int64_t blocks : {1, 5, 9}) {
      ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning, blocks)));
      ASSERT_TRUE(watch->reader->Read(&job));
      EXPECT_EQ(job.state(), pb::JOB_STATE_RUNNING);
      EXPECT_EQ(job.progress().blocks_done(), blocks);
    }
    types::JobRecord last = Record("ev-1", final_state, 10);
    last.error_message = "the last state";
    ASSERT_TRUE(jobs_.Push(handle, last));
    ASSERT_TRUE(watch->reader->Read(&job));
    EXPECT_EQ(job.state(), JobStateToProto(final_state));
    EXPECT_EQ(job.progress().blocks_done(), 10);
    EXPECT_EQ(job.error_message(), "the last state");
    EXPECT_FALSE(watch->reader->Read(&job));  // nothing after the final state
    EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
    // The stream ended: the service lets go of the subscription.
    EXPECT_TRUE(jobs_.WaitForUnwatch(handle, kWait));
    EXPECT_FALSE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning)));
  }
}

TEST_F(JobRpcsTest, WatchEvalOfAFinishedJobSendsItOnceAndEnds) {
  types::JobRecord rec = Record("ev-1", types::JobState::kSucceeded, 10);
  rec.result.emplace();
  rec.result->accept_length_pooled = 4.0;
  jobs_.Answer([&](auto& a) { a.record = rec; });
  auto watch = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.state(), pb::JOB_STATE_SUCCEEDED);
  EXPECT_DOUBLE_EQ(job.result().accept_length_pooled(), 4.0);
  EXPECT_FALSE(watch->reader->Read(&job));
  EXPECT_EQ(Describe(watch->reader->Finish()), "OK: ");
  EXPECT_THAT(jobs_.WaitForWatches(1, kWait), ElementsAre(0));
  EXPECT_THAT(jobs_.calls().unwatched, IsEmpty());  // handle 0: nothing to let go of
}

TEST_F(JobRpcsTest, WatchEvalUnwatchesWhenTheClientCancels) {
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kRunning, 2); });
  auto watch = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.progress().blocks_done(), 2);
  const int64_t handle = LastHandle();
  ASSERT_GT(handle, 0);
  ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kRunning, 3)));
  ASSERT_TRUE(watch->reader->Read(&job));
  EXPECT_EQ(job.progress().blocks_done(), 3);

  watch->ctx.TryCancel();
  while (watch->reader->Read(&job)) {
  }
  EXPECT_EQ(watch->reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(jobs_.WaitForUnwatch(handle, kWait));
  // After Unwatch no change reaches the stream.
  EXPECT_FALSE(jobs_.Push(handle, Record("ev-1", types::JobState::kSucceeded)));
  for (int64_t h : jobs_.calls().unwatched) EXPECT_EQ(h, handle);
}

TEST_F(JobRpcsTest, WatchEvalErrorsEndTheStreamWithTheirStatus) {
  {
    auto watch = OpenWatch("");
    pb::EvalJob job;
    EXPECT_FALSE(watch->reader->Read(&job));
    EXPECT_EQ(Describe(watch->reader->Finish()), "INVALID_ARGUMENT: id is empty");
  }
  EXPECT_THAT(jobs_.calls().watched, IsEmpty());
  {
    jobs_.Answer([](auto& a) { a.error = absl::NotFoundError("no job 'ev-404'"); });
    auto watch = OpenWatch("ev-404");
    pb::EvalJob job;
    EXPECT_FALSE(watch->reader->Read(&job));
    EXPECT_EQ(Describe(watch->reader->Finish()), "NOT_FOUND: no job 'ev-404'");
  }
  EXPECT_THAT(jobs_.calls().watched, ElementsAre("ev-404"));
  EXPECT_THAT(jobs_.calls().unwatched, IsEmpty());
}

TEST_F(JobRpcsTest, WatchStreamsPastTheLimitAreResourceExhausted) {
  ServiceOptions options;
  options.max_watch_streams = 1;
  Start(options);
  jobs_.Answer([](auto& a) { a.record = Record("ev-1", types::JobState::kRunning); });
  auto first = OpenWatch("ev-1");
  pb::EvalJob job;
  ASSERT_TRUE(first->reader->Read(&job));
  const int64_t handle = LastHandle();
  ASSERT_GT(handle, 0);

  auto second = OpenWatch("ev-1");
  EXPECT_FALSE(second->reader->Read(&job));
  EXPECT_EQ(Describe(second->reader->Finish()),
            "RESOURCE_EXHAUSTED: too many WatchEval streams open (1); the server allows 1 "
            "(--max-concurrent-streams); poll with GetEval instead");
  EXPECT_THAT(jobs_.calls().watched, ElementsAre("ev-1"));  // refused before Watch

  // The limit counts open streams: once the first ends, another may open
  // (the server lets go of a stream just after its client sees the end).
  ASSERT_TRUE(jobs_.Push(handle, Record("ev-1", types::JobState::kSucceeded)));
  ASSERT_TRUE(first->reader->Read(&job));
  EXPECT_FALSE(first->reader->Read(&job));
  EXPECT_EQ(Describe(first->reader->Finish()), "OK: ");
  jobs_.Answer([](auto& a) { a.record = Record("ev-2", types::JobState::kSucceeded); });
  std::string last_status;
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    auto third = OpenWatch("ev-2");
    if (third->reader->Read(&job)) {
      EXPECT_EQ(job.id(), "ev-2");
      EXPECT_FALSE(third->reader->Read(&job));
      last_status = Describe(third->reader->Finish());
      break;
    }
    last_status = Describe(third->reader->Finish());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(last_status, "OK: ");
}

}  // namespace
}  // namespace dflash::service
