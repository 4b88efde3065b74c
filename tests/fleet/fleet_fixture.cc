// File: fleet_fixture.cc
#include "fleet_fixture.h"

#include <stdlib.h>

#include <thread>

#include "absl/strings/str_cat.h"
#include "integration/tiny_fixture.h"

namespace dflash::testing {

using Clock = std::chrono::steady_clock;

FleetClient::FleetClient(const std::string& address)
    : stub(pb::DrafterEval::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()))) {}

grpc::Status FleetClient::TrySubmit(const pb::EvalRequest& r, pb::EvalJob* job) {
  pb::SubmitEvalRequest req;
  *req.mutable_request() = r;
  return Call(&pb::DrafterEval::Stub::SubmitEval, req, job);
}

pb::EvalJob FleetClient::Submit(const pb::EvalRequest& r) {
  pb::EvalJob job;
  grpc::Status s = TrySubmit(r, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

pb::EvalJob FleetClient::Get(const std::string& id) {
  pb::GetEvalRequest req;
  req.set_id(id);
  pb::EvalJob job;
  grpc::Status s = Call(&pb::DrafterEval::Stub::GetEval, req, &job);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return job;
}

grpc::Status FleetClient::Cancel(const std::string& id, pb::EvalJob* job) {
  pb::CancelEvalRequest req;
  req.set_id(id);
  return Call(&pb::DrafterEval::Stub::CancelEval, req, job);
}

pb::EvalJob FleetClient::WaitDone(const std::string& id, int seconds) {
  const Clock::time_point until = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < until) {
    pb::EvalJob job = Get(id);
    if (job.state() != pb::JOB_STATE_QUEUED && job.state() != pb::JOB_STATE_RUNNING) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ADD_FAILURE() << "job " << id << " did not finish";
  return {};
}

pb::EvalJob FleetClient::WaitRunning(const std::string& id) {
  for (int i = 0; i < 3000; ++i) {
    pb::EvalJob job = Get(id);
    if (job.state() == pb::JOB_STATE_RUNNING && job.progress().blocks_done() > 0) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ADD_FAILURE() << "job " << id << " never ran";
  return {};
}

pb::EvalResult WithoutTimings(pb::EvalResult r) {
  r.clear_setup_seconds();
  r.clear_compute_seconds();
  r.clear_tokens_per_second();
  // Where the shards ran differs from server to server, not what they give.
  for (pb::ShardPlacement& s : *r.mutable_shards()) {
    s.clear_seconds();
    s.clear_server();
  }
  return r;
}

double Seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

TempDir* FleetTestBase::dir_ = nullptr;
std::string FleetTestBase::data_;
PostgresServer* FleetTestBase::pg_ = nullptr;

void FleetTestBase::SetUpFleet() {
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  dir_ = new TempDir();
  data_ = dir_->Join("data");
  MakeTinyFixture(data_);
  ASSERT_FALSE(::testing::Test::HasFailure());
  auto pg = PostgresServer::Start();
  ASSERT_TRUE(pg.ok()) << pg.status();
  pg_ = pg->release();
}

void FleetTestBase::TearDownFleet() {
  delete pg_;
  delete dir_;
  pg_ = nullptr;
  dir_ = nullptr;
}

std::string FleetTestBase::NewDatabase() {
  static int n = 0;
  auto url = pg_->CreateDatabase(absl::StrCat("fleet", ++n));
  EXPECT_TRUE(url.ok()) << url.status();
  return url.ok() ? *url : "";
}

std::unique_ptr<ServerProcess> FleetTestBase::StartFleetServer(
    const std::string& url, const std::string& name, const std::string& lease_seconds,
    const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--data-root",
                                   data_,
                                   "--store",
                                   url,
                                   "--fleet-name",
                                   name,
                                   "--fleet-lease-seconds",
                                   lease_seconds,
                                   "--fleet-heartbeat-seconds",
                                   "0.5"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto server = ServerProcess::Start(dir_->Join("state-" + name), args);
  EXPECT_TRUE(server.ok()) << server.status();
  if (!server.ok()) return nullptr;
  return std::move(server).value();
}

}  // namespace dflash::testing
