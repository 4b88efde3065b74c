// Evaluation jobs against the real dflash-evald on the tiny generated
// fixture, across restarts: finished results survive kill -9, the jobs it
// interrupted resubmit to the same numbers, random kills never leave a job
// QUEUED or RUNNING or a result half-written; a full queue refuses a job
// and SIGTERM stores the running one INTERRUPTED.
#include <signal.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>

#include <google/protobuf/util/message_differencer.h>
#include <grpcpp/grpcpp.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "integration/jobs_e2e_fixture.h"
#include "test_util/process.h"

namespace dflash {
namespace {

namespace pb = ::dflash::eval::v1;
using ::dflash::testing::ExpectSameNumbers;
using ::dflash::testing::JobRequest;
using ::dflash::testing::JobsE2eTest;
using ::testing::HasSubstr;
using Client = ::dflash::testing::JobClient;
using namespace std::chrono_literals;

TEST_F(JobsE2eTest, ResultsSurviveKill9AndInterruptedJobsResubmitToTheSameNumbers) {
  auto server = Start("state-durable");
  ASSERT_NE(server, nullptr);
  Load(server->address());
  pb::EvalJob done_job;
  pb::EvalResult done_result;
  pb::EvalJob killed;
  pb::EvalJob behind;
  {
    Client c(server->address());
    pb::EvalRequest r = JobRequest("d");
    r.set_run("durable");
    ASSERT_TRUE(c.TrySubmit(r, &done_job).ok());
    pb::EvalJob d = c.WaitDone(done_job.id());
    ASSERT_EQ(d.state(), pb::JOB_STATE_SUCCEEDED);
    done_result = d.result();
    ASSERT_TRUE(c.TrySubmit(JobRequest("big", 300), &killed).ok());
    ASSERT_TRUE(c.TrySubmit(JobRequest("d"), &behind).ok());
    c.WaitRunning(killed.id());
  }
  server->Stop(SIGKILL);

  server = Start("state-durable");
  ASSERT_NE(server, nullptr);
  Client c(server->address());
  pb::EvalJob d = c.Get(done_job.id());
  ASSERT_EQ(d.state(), pb::JOB_STATE_SUCCEEDED);
  google::protobuf::util::MessageDifferencer diff;
  EXPECT_TRUE(diff.Compare(d.result(), done_result));  // every field, timings included
  for (const std::string& id : {killed.id(), behind.id()}) {
    pb::EvalJob k = c.Get(id);
    EXPECT_EQ(k.state(), pb::JOB_STATE_INTERRUPTED) << id;
    EXPECT_TRUE(k.interrupted_by_restart()) << id;
    EXPECT_FALSE(k.has_result());
  }
  Load(server->address());
  pb::EvalJob again;
  ASSERT_TRUE(c.Resubmit(killed.id(), &again).ok());
  EXPECT_EQ(again.resubmitted_from(), killed.id());
  EXPECT_GT(again.id(), killed.id());
  pb::EvalJob again_done = c.WaitDone(again.id());
  ASSERT_EQ(again_done.state(), pb::JOB_STATE_SUCCEEDED);
  ExpectSameNumbers(again_done.result(), c.RunEval(killed.request()));

  // kill -9 at random moments while short jobs come and go: the store always
  // opens, nothing is left QUEUED/RUNNING, every SUCCEEDED job is complete.
  std::mt19937 rng(12345);
  for (int round = 0; round < 3; ++round) {
    {
      Client k(server->address());
      for (int i = 0; i < 4; ++i) {
        pb::EvalJob j;
        ASSERT_TRUE(k.TrySubmit(JobRequest(i % 2 ? "big" : "d", 1 + i * 37), &j).ok());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 400));
    }
    server->Stop(round == 2 ? SIGTERM : SIGKILL);
    server = Start("state-durable");
    ASSERT_NE(server, nullptr) << "round " << round;
    Client k(server->address());
    pb::ListEvalsRequest all;
    all.set_page_size(1000);
    pb::ListEvalsResponse listed = k.List(all);
    EXPECT_GE(listed.jobs_size(), 6 + 4 * round);
    for (const pb::EvalJob& j : listed.jobs()) {
      EXPECT_NE(j.state(), pb::JOB_STATE_QUEUED) << j.id();
      EXPECT_NE(j.state(), pb::JOB_STATE_RUNNING) << j.id();
      if (j.state() == pb::JOB_STATE_SUCCEEDED) {
        EXPECT_GT(j.result().positions_size(), 0) << j.id();
        EXPECT_GT(j.result().per_sample_size(), 0) << j.id();
        EXPECT_GT(j.result().accepted_histogram_size(), 0) << j.id();
      } else {
        EXPECT_FALSE(j.has_result()) << j.id();
      }
    }
    Load(server->address(), /*big=*/true);
  }
  EXPECT_THAT(server->log(), HasSubstr("results store"));
}

TEST_F(JobsE2eTest, AFullQueueIsResourceExhausted) {
  auto server = Start("state-full", {"--max-queued", "1"});
  ASSERT_NE(server, nullptr);
  Load(server->address());
  Client c(server->address());
  pb::EvalJob a, b, d;
  ASSERT_TRUE(c.TrySubmit(JobRequest("big"), &a).ok());
  c.WaitRunning(a.id());
  ASSERT_TRUE(c.TrySubmit(JobRequest("d"), &b).ok());
  grpc::Status s = c.TrySubmit(JobRequest("d"), &d);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(s.error_message(), HasSubstr("queue is full (1 queued, limit 1)"));
  // SIGTERM: the running job stops at a chunk boundary, stored INTERRUPTED.
  EXPECT_EQ(server->Stop(SIGTERM), 0);
  EXPECT_THAT(server->log(), HasSubstr("job queue stopped"));
  server = Start("state-full");
  ASSERT_NE(server, nullptr);
  Client after(server->address());
  EXPECT_EQ(after.Get(a.id()).state(), pb::JOB_STATE_INTERRUPTED);
  EXPECT_EQ(after.Get(b.id()).state(), pb::JOB_STATE_INTERRUPTED);
}

}  // namespace
}  // namespace dflash
