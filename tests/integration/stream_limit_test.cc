// The WatchEval stream limit of the real dflash-evald
// (--max-concurrent-streams 2, a server of its own): the third stream is
// refused, a new one is accepted once one closes; and the bad requests that
// need a queued or running job (resubmit, unload, compare).
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "integration/bad_input_cases.h"
#include "integration/matrix_server.h"
#include "integration/tiny_fixture.h"
#include "test_util/wire_bytes.h"

namespace dflash::testing::bad_input {
namespace {

using namespace std::chrono_literals;

// The WatchEval stream limit, on a server of its own. A long job holds the
// single runner and the watched job waits behind it, so its streams stay
// open until it is cancelled. Polling (with deadlines) covers the moment
// between a client seeing a stream end and the server counting it closed.
class StreamLimitTest : public MatrixServerTest {
 protected:
  static void SetUpTestSuite() { SetUpMatrixServer(); }
  static void TearDownTestSuite() { TearDownMatrixServer(); }
};

TEST_F(StreamLimitTest, WatchEvalPastTheStreamLimitIsRefusedUntilOneCloses) {
  // A dataset of the tiny one's samples many times over: about 10 s of work
  // on 2 cores (it is cancelled long before; the streams need milliseconds).
  ASSERT_NO_FATAL_FAILURE(MakeLongDataset(data_, data_ + "/big", 3000));
  {
    grpc::ClientContext ctx;
    pb::LoadDatasetRequest req;
    req.set_name("big");
    req.set_path(data_ + "/big");
    pb::LoadResponse resp;
    grpc::Status s = jobs_->stub->LoadDataset(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  pb::EvalRequest long_request;
  long_request.set_drafter("m");
  long_request.set_dataset("big");
  long_request.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  const std::string long_id = Submit(long_request).id();
  pb::EvalRequest queued_request;
  queued_request.set_drafter("m");
  queued_request.set_dataset("d");
  const std::string queued_id = Submit(queued_request).id();
  ASSERT_FALSE(long_id.empty() || queued_id.empty());

  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<pb::EvalJob>> reader;
    pb::EvalJob first;
    bool open = false;
  };
  // Opens a stream on the queued job: open with its first message, or
  // ended with the status the server gave.
  auto open = [&](Stream& s) -> grpc::Status {
    s.ctx.set_deadline(std::chrono::system_clock::now() + 120s);
    pb::WatchEvalRequest req;
    req.set_id(queued_id);
    s.reader = jobs_->stub->WatchEval(&s.ctx, req);
    s.open = s.reader->Read(&s.first);
    return s.open ? grpc::Status::OK : s.reader->Finish();
  };
  // Opens streams until one is accepted (a closed stream may still count).
  auto open_accepted = [&](std::unique_ptr<Stream>& s) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      s = std::make_unique<Stream>();
      grpc::Status st = open(*s);
      if (s->open) break;
      ASSERT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << st.error_message();
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << st.error_message();
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(s->first.id(), queued_id);
    EXPECT_EQ(s->first.state(), pb::JOB_STATE_QUEUED) << s->first.DebugString();
  };

  std::unique_ptr<Stream> first, second;
  open_accepted(first);
  open_accepted(second);
  ASSERT_TRUE(first->open && second->open);
  // Two open: a third is refused, exactly (a refused attempt may itself
  // still count for a moment, so the count in the message can run over).
  grpc::Status third;
  for (auto deadline = std::chrono::steady_clock::now() + 10s;;) {
    Stream s;
    third = open(s);
    ASSERT_FALSE(s.open) << "a third stream was accepted: " << s.first.DebugString();
    if (third.error_message() == kTooManyStreams || std::chrono::steady_clock::now() > deadline) {
      break;
    }
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(third.error_code(), Code::RESOURCE_EXHAUSTED);
  EXPECT_EQ(third.error_message(), kTooManyStreams);

  // State problems while the jobs wait and run.
  Run({"ResubmitEval", "id: a queued job", LenField(1, queued_id), Code::FAILED_PRECONDITION,
       "job " + queued_id + " is QUEUED; only finished jobs can be resubmitted (cancel it first)"});
  Run({"UnloadDataset", "name: used by a running job", LenField(1, "big"),
       Code::FAILED_PRECONDITION,
       "dataset 'big' is used by queued or running jobs " + long_id +
           "; cancel them or wait for them to finish"});

  // One closes; then a new one is accepted.
  first->ctx.TryCancel();
  EXPECT_EQ(first->reader->Finish().error_code(), Code::CANCELLED);
  std::unique_ptr<Stream> fourth;
  open_accepted(fourth);
  ASSERT_TRUE(fourth->open);

  // Cancelling the queued job ends both open streams with its final state.
  {
    grpc::ClientContext ctx;
    pb::CancelEvalRequest req;
    req.set_id(queued_id);
    pb::EvalJob cancelled;
    ASSERT_TRUE(jobs_->stub->CancelEval(&ctx, req, &cancelled).ok());
    EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED);
  }
  for (Stream* s : {second.get(), fourth.get()}) {
    pb::EvalJob job, last;
    while (s->reader->Read(&job)) last = job;
    EXPECT_EQ(last.state(), pb::JOB_STATE_CANCELLED) << last.DebugString();
    grpc::Status end = s->reader->Finish();
    EXPECT_TRUE(end.ok()) << end.error_message();
  }
  Run({"CompareEvals", "ids[0]: a running job",
       [&] {
         pb::CompareEvalsRequest r;
         r.add_ids(long_id);
         r.add_ids(queued_id);
         return r.SerializeAsString();
       }(),
       Code::FAILED_PRECONDITION,
       "job " + long_id + " is RUNNING; only SUCCEEDED jobs can be compared"});

  // Leave the server idle: the long job cancelled, "big" unloaded.
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 60s);
    pb::CancelEvalRequest req;
    req.set_id(long_id);
    pb::EvalJob cancelled;
    ASSERT_TRUE(jobs_->stub->CancelEval(&ctx, req, &cancelled).ok());
  }
  EXPECT_EQ(WaitFor(long_id,
                    [](const pb::EvalJob& j) {
                      return j.state() != pb::JOB_STATE_QUEUED &&
                             j.state() != pb::JOB_STATE_RUNNING;
                    })
                .state(),
            pb::JOB_STATE_CANCELLED);
  Reply unloaded = Call("UnloadDataset", LenField(1, "big"));
  EXPECT_TRUE(unloaded.status.ok()) << unloaded.status.error_message();
}

}  // namespace
}  // namespace dflash::testing::bad_input
