#include "integration/matrix_server.h"

#include <chrono>
#include <filesystem>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace dflash::testing::bad_input {

using namespace std::chrono_literals;

std::shared_ptr<grpc::Channel>* MatrixServerTest::channel_ = nullptr;
grpc::GenericStub* MatrixServerTest::generic_ = nullptr;
JobClient* MatrixServerTest::jobs_ = nullptr;

void MatrixServerTest::SetUpMatrixServer() {
  SetUpTinyServer({"--max-concurrent-streams", absl::StrCat(kMaxStreams), "--max-request-bytes",
                   absl::StrCat(kMaxRequestBytes)});
  if (server_ == nullptr || ::testing::Test::HasFatalFailure()) return;
  channel_ = new std::shared_ptr<grpc::Channel>(
      grpc::CreateChannel(server_->address(), grpc::InsecureChannelCredentials()));
  generic_ = new grpc::GenericStub(*channel_);
  jobs_ = new JobClient(*channel_);
}

void MatrixServerTest::TearDownMatrixServer() {
  delete jobs_;
  jobs_ = nullptr;
  delete generic_;
  generic_ = nullptr;
  delete channel_;
  channel_ = nullptr;
  TinyServerTest::TearDownTestSuite();
}

void MatrixServerTest::SetUp() {
  ASSERT_NE(jobs_, nullptr) << "the suite's server did not start; see the failure above";
}

std::string MatrixServerTest::DataCanon() {
  return std::filesystem::canonical(data_).string();
}

Reply MatrixServerTest::Call(const std::string& rpc, const std::string& request) {
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  grpc::CompletionQueue cq;
  auto wait = [&cq] {
    void* tag = nullptr;
    bool ok = false;
    EXPECT_TRUE(cq.Next(&tag, &ok));
    return ok;
  };
  auto call = generic_->PrepareCall(&ctx, "/dflash.eval.v1.DrafterEval/" + rpc, &cq);
  call->StartCall(nullptr);
  Reply reply;
  if (wait()) {
    grpc::Slice slice(request);
    call->Write(grpc::ByteBuffer(&slice, 1), nullptr);
    if (wait()) {
      call->WritesDone(nullptr);
      wait();
    }
    for (;;) {
      grpc::ByteBuffer in;
      call->Read(&in, nullptr);
      if (!wait()) break;
      std::vector<grpc::Slice> slices;
      EXPECT_TRUE(in.Dump(&slices).ok());
      std::string bytes;
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
      reply.messages.push_back(std::move(bytes));
    }
  }
  call->Finish(&reply.status, nullptr);
  wait();
  return reply;
}

void MatrixServerTest::Run(const Case& c) {
  SCOPED_TRACE(c.rpc + " " + c.what);
  Reply r = Call(c.rpc, c.request);
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       c.rpc == "WatchEval" && r.status.error_message() == kTooManyStreams &&
       std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(5ms);
    r = Call(c.rpc, c.request);
  }
  EXPECT_EQ(r.status.error_code(), c.code) << r.status.error_message();
  EXPECT_EQ(r.status.error_message(), c.message);
}

pb::EvalJob MatrixServerTest::GetEval(const std::string& id) {
  return jobs_->Get(id);
}

pb::EvalJob MatrixServerTest::Submit(const pb::EvalRequest& request) {
  return jobs_->Submit(request);
}

pb::EvalJob MatrixServerTest::WaitFor(const std::string& id,
                                      const std::function<bool(const pb::EvalJob&)>& done) {
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  pb::EvalJob job = GetEval(id);
  while (!done(job) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
    job = GetEval(id);
  }
  EXPECT_TRUE(done(job)) << job.DebugString();
  return job;
}

pb::ListEvalsResponse MatrixServerTest::ListRun(const std::string& run) {
  pb::ListEvalsRequest req;
  req.set_run(run);
  return jobs_->List(req);
}

}  // namespace dflash::testing::bad_input
