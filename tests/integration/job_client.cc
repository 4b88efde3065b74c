// File: job_client.cc
#include "integration/job_client.h"

#include <thread>

#include "gtest/gtest.h"

namespace dflash::testing {
namespace {

namespace pb = ::dflash::eval::v1;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

bool Pending(const pb::EvalJob& job) {
  return job.state() == pb::JOB_STATE_QUEUED || job.state() == pb::JOB_STATE_RUNNING;
}

}  // namespace

JobClient::JobClient(const std::string& address)
    : JobClient(grpc::CreateChannel(address, grpc::InsecureChannelCredentials())) {}

JobClient::JobClient(const std::shared_ptr<grpc::Channel>& channel)
    : stub(pb::DrafterEval::NewStub(channel)) {}

grpc::Status JobClient::TrySubmit(const pb::EvalRequest& r, pb::EvalJob* job) {
  pb::SubmitEvalRequest req;
  *req.mutable_request() = r;
  return Call(&pb::DrafterEval::Stub::SubmitEval, req, job);
}

pb::EvalJob JobClient::Submit(const pb::EvalRequest& r) {
  pb::EvalJob job;
  grpc::Status s = TrySubmit(r, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

pb::EvalJob JobClient::Get(const std::string& id) {
  pb::GetEvalRequest req;
  req.set_id(id);
  pb::EvalJob job;
  grpc::Status s = Call(&pb::DrafterEval::Stub::GetEval, req, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

grpc::Status JobClient::Cancel(const std::string& id, pb::EvalJob* job) {
  pb::CancelEvalRequest req;
  req.set_id(id);
  return Call(&pb::DrafterEval::Stub::CancelEval, req, job);
}

grpc::Status JobClient::Resubmit(const std::string& id, pb::EvalJob* job) {
  pb::ResubmitEvalRequest req;
  req.set_id(id);
  return Call(&pb::DrafterEval::Stub::ResubmitEval, req, job);
}

pb::ListEvalsResponse JobClient::List(pb::ListEvalsRequest req) {
  pb::ListEvalsResponse resp;
  grpc::Status s = Call(&pb::DrafterEval::Stub::ListEvals, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

pb::EvalResult JobClient::RunEval(const pb::EvalRequest& r) {
  pb::RunEvalRequest req;
  *req.mutable_request() = r;
  pb::EvalResult result;
  grpc::Status s = Call(&pb::DrafterEval::Stub::RunEval, req, &result);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return result;
}

pb::EvalJob JobClient::WaitDone(const std::string& id, int seconds) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < until) {
    pb::EvalJob job = Get(id);
    if (!Pending(job)) return job;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "job " << id << " did not finish in " << seconds << " s";
  return {};
}

pb::EvalJob JobClient::WaitRunning(const std::string& id) {
  for (int i = 0; i < 3000; ++i) {
    pb::EvalJob job = Get(id);
    if (job.state() == pb::JOB_STATE_RUNNING && job.progress().blocks_done() > 0) return job;
    if (!Pending(job)) {
      ADD_FAILURE() << "job " << id << " ended before it was seen running: " << job.DebugString();
      return {};
    }
    std::this_thread::sleep_for(10ms);
  }
  ADD_FAILURE() << "job " << id << " never ran";
  return {};
}

pb::EvalResult WithoutTimings(pb::EvalResult r) {
  r.clear_setup_seconds();
  r.clear_compute_seconds();
  r.clear_tokens_per_second();
  for (pb::ShardPlacement& s : *r.mutable_shards()) {
    s.clear_seconds();
    s.clear_server();
  }
  return r;
}

}  // namespace dflash::testing
