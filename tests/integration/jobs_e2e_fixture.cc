#include "integration/jobs_e2e_fixture.h"

#include <stdlib.h>

#include <thread>
#include <utility>

#include <google/protobuf/util/message_differencer.h>

#include "client/eval_client.h"
#include "integration/tiny_fixture.h"
#include "test_util/status_matchers.h"

namespace dflash::testing {

using namespace std::chrono_literals;

JobsClient::JobsClient(const std::string& address)
    : stub(pb::DrafterEval::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

grpc::Status JobsClient::Submit(const pb::EvalRequest& r, pb::EvalJob* job) {
  pb::SubmitEvalRequest req;
  *req.mutable_request() = r;
  return Call(&pb::DrafterEval::Stub::SubmitEval, req, job);
}

pb::EvalJob JobsClient::Get(const std::string& id) {
  pb::GetEvalRequest req;
  req.set_id(id);
  pb::EvalJob job;
  grpc::Status s = Call(&pb::DrafterEval::Stub::GetEval, req, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

grpc::Status JobsClient::Cancel(const std::string& id, pb::EvalJob* job) {
  pb::CancelEvalRequest req;
  req.set_id(id);
  return Call(&pb::DrafterEval::Stub::CancelEval, req, job);
}

grpc::Status JobsClient::Resubmit(const std::string& id, pb::EvalJob* job) {
  pb::ResubmitEvalRequest req;
  req.set_id(id);
  return Call(&pb::DrafterEval::Stub::ResubmitEval, req, job);
}

pb::ListEvalsResponse JobsClient::List(pb::ListEvalsRequest req) {
  pb::ListEvalsResponse resp;
  grpc::Status s = Call(&pb::DrafterEval::Stub::ListEvals, req, &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

pb::EvalResult JobsClient::RunEval(const pb::EvalRequest& r) {
  pb::RunEvalRequest req;
  *req.mutable_request() = r;
  pb::EvalResult result;
  grpc::Status s = Call(&pb::DrafterEval::Stub::RunEval, req, &result);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return result;
}

pb::EvalJob JobsClient::WaitDone(const std::string& id) {
  for (int i = 0; i < 3000; ++i) {
    pb::EvalJob job = Get(id);
    if (job.state() != pb::JOB_STATE_QUEUED && job.state() != pb::JOB_STATE_RUNNING) return job;
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "job " << id << " did not finish";
  return {};
}

void JobsClient::WaitRunning(const std::string& id) {
  for (int i = 0; i < 3000; ++i) {
    pb::EvalJob job = Get(id);
    if (job.state() == pb::JOB_STATE_RUNNING && job.progress().blocks_done() > 0) return;
    ASSERT_TRUE(job.state() == pb::JOB_STATE_QUEUED || job.state() == pb::JOB_STATE_RUNNING)
        << job.DebugString();
    std::this_thread::sleep_for(10ms);
  }
  FAIL() << "job " << id << " never ran";
}

pb::EvalRequest JobRequest(const std::string& dataset, int max_samples) {
  pb::EvalRequest r;
  r.set_drafter("m");
  r.set_dataset(dataset);
  r.set_anchors(pb::ANCHOR_STRATEGY_ALL);
  r.set_max_samples(max_samples);
  return r;
}

void ExpectSameNumbers(pb::EvalResult got, pb::EvalResult want) {
  for (pb::EvalResult* r : {&got, &want}) {
    r->clear_setup_seconds();
    r->clear_compute_seconds();
    r->clear_tokens_per_second();
    for (pb::ShardPlacement& s : *r->mutable_shards()) {
      s.clear_seconds();
      s.clear_server();
    }
  }
  std::string diff;
  google::protobuf::util::MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(got, want)) << diff;
  EXPECT_GT(want.positions_size(), 0);
  EXPECT_GT(want.per_sample_size(), 0);
}

TempDir* JobsE2eTest::dir_ = nullptr;
std::string JobsE2eTest::data_;

void JobsE2eTest::SetUpTestSuite() {
  // Two spinning OpenMP threads per server on a busy 2-core machine make
  // timings erratic; passive waiting keeps the suite fast.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  dir_ = new TempDir();
  data_ = dir_->Join("data");
  MakeTinyFixture(data_);
  ASSERT_FALSE(::testing::Test::HasFailure());
  MakeLongDataset(data_, data_ + "/big", kBigSamples);
}

void JobsE2eTest::TearDownTestSuite() {
  delete dir_;
}

std::unique_ptr<ServerProcess> JobsE2eTest::Start(const std::string& state,
                                                  std::vector<std::string> extra) {
  extra.insert(extra.end(), {"--data-root", data_});
  auto server = ServerProcess::Start(dir_->Join(state), extra);
  EXPECT_OK(server.status());
  return server.ok() ? std::move(server).value() : nullptr;
}

void JobsE2eTest::Load(const std::string& address, bool big) {
  client::EvalClient c(address, 60s);
  pb::LoadTargetRequest t;
  t.set_name("t");
  t.set_path(data_ + "/target");
  ASSERT_OK(c.LoadTarget(t).status());
  for (auto [name, path] : {std::pair<std::string, std::string>{"d", "/dataset"},
                            {"split", "/dataset-split"},
                            {"big", "/big"}}) {
    if (name == "big" && !big) continue;
    pb::LoadDatasetRequest d;
    d.set_name(name);
    d.set_path(data_ + path);
    ASSERT_OK(c.LoadDataset(d).status());
  }
  pb::LoadDrafterRequest m;
  m.set_name("m");
  m.set_path(data_ + "/drafter");
  ASSERT_OK(c.LoadDrafter(m).status());
}

}  // namespace dflash::testing
