// The WatchEval stream limit of the real dflash-evald
// (--max-concurrent-streams 2, a server of its own): the third stream is
// refused, a new one is accepted once one closes; and the bad requests that
// need a queued or running job (resubmit, unload, compare).
#include <initializer_list>
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
  struct Stream {
    grpc::ClientContext ctx;
    std::unique_ptr<grpc::ClientReader<pb::EvalJob>> reader;
    pb::EvalJob first;
    bool open = false;
  };

  static void SetUpTestSuite() { SetUpMatrixServer(); }
  static void TearDownTestSuite() { TearDownMatrixServer(); }

  // A dataset of the tiny one's samples many times over, loaded as "big":
  // about 10 s of work on 2 cores (it is cancelled long before; the streams
  // need milliseconds).
  void LoadLongDataset() {
    ASSERT_NO_FATAL_FAILURE(MakeLongDataset(data_, data_ + "/big", 3000));
    grpc::ClientContext ctx;
    pb::LoadDatasetRequest req;
    req.set_name("big");
    req.set_path(data_ + "/big");
    pb::LoadResponse resp;
    grpc::Status s = jobs_->stub->LoadDataset(&ctx, req, &resp);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }

  // Opens a stream on job `id`: open with its first message, or ended with
  // the status the server gave.
  grpc::Status Open(Stream& s, const std::string& id) {
    s.ctx.set_deadline(std::chrono::system_clock::now() + 120s);
    pb::WatchEvalRequest req;
    req.set_id(id);
    s.reader = jobs_->stub->WatchEval(&s.ctx, req);
    s.open = s.reader->Read(&s.first);
    return s.open ? grpc::Status::OK : s.reader->Finish();
  }

  // Opens streams on the queued job `id` until one is accepted (a closed
  // stream may still count).
  void OpenAccepted(std::unique_ptr<Stream>& s, const std::string& id) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    for (;;) {
      s = std::make_unique<Stream>();
      grpc::Status st = Open(*s, id);
      if (s->open) break;
      ASSERT_EQ(st.error_code(), Code::RESOURCE_EXHAUSTED) << st.error_message();
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << st.error_message();
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(s->first.id(), id);
    EXPECT_EQ(s->first.state(), pb::JOB_STATE_QUEUED) << s->first.DebugString();
  }

  // With two open: a third is refused, exactly (a refused attempt may itself
  // still count for a moment, so the count in the message can run over).
  void ExpectThirdRefused(const std::string& id) {
    grpc::Status third;
    for (auto deadline = std::chrono::steady_clock::now() + 10s;;) {
      Stream s;
      third = Open(s, id);
      ASSERT_FALSE(s.open) << "a third stream was accepted: " << s.first.DebugString();
      if (third.error_message() == kTooManyStreams || std::chrono::steady_clock::now() > deadline) {
        break;
      }
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(third.error_code(), Code::RESOURCE_EXHAUSTED);
    EXPECT_EQ(third.error_message(), kTooManyStreams);
  }

  // Cancels the queued job `id`: both open streams end with its final state.
  void CancelQueuedAndDrain(const std::string& id, std::initializer_list<Stream*> streams) {
    {
      grpc::ClientContext ctx;
      pb::CancelEvalRequest req;
      req.set_id(id);
      pb::EvalJob cancelled;
      ASSERT_TRUE(jobs_->stub->CancelEval(&ctx, req, &cancelled).ok());
      EXPECT_EQ(cancelled.state(), pb::JOB_STATE_CANCELLED);
    }
    for (Stream* s : streams) {
      pb::EvalJob job, last;
      while (s->reader->Read(&job)) last = job;
      EXPECT_EQ(last.state(), pb::JOB_STATE_CANCELLED) << last.DebugString();
      grpc::Status end = s->reader->Finish();
      EXPECT_TRUE(end.ok()) << end.error_message();
    }
  }

  // Leaves the server idle: the long job `long_id` cancelled, "big" unloaded.
  void LeaveIdle(const std::string& long_id) {
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
};

TEST_F(StreamLimitTest, WatchEvalPastTheStreamLimitIsRefusedUntilOneCloses) {
  ASSERT_NO_FATAL_FAILURE(LoadLongDataset());
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

  std::unique_ptr<Stream> first, second;
  OpenAccepted(first, queued_id);
  OpenAccepted(second, queued_id);
  ASSERT_TRUE(first->open && second->open);
  ASSERT_NO_FATAL_FAILURE(ExpectThirdRefused(queued_id));

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
  OpenAccepted(fourth, queued_id);
  ASSERT_TRUE(fourth->open);

  ASSERT_NO_FATAL_FAILURE(CancelQueuedAndDrain(queued_id, {second.get(), fourth.get()}));
  Run({"CompareEvals", "ids[0]: a running job",
       [&] {
         pb::CompareEvalsRequest r;
         r.add_ids(long_id);
         r.add_ids(queued_id);
         return r.SerializeAsString();
       }(),
       Code::FAILED_PRECONDITION,
       "job " + long_id + " is RUNNING; only SUCCEEDED jobs can be compared"});
  ASSERT_NO_FATAL_FAILURE(LeaveIdle(long_id));
}

}  // namespace
}  // namespace dflash::testing::bad_input
