// File: jobs_e2e_fixture.h
// What the evaluation-job tests against the real dflash-evald share
// (jobs_e2e_test.cc, jobs_durability_e2e_test.cc): a raw-stub client, the
// request they submit, the comparison of results, and a suite with the tiny
// fixture plus a long dataset, where each test starts its own servers.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "gtest/gtest.h"
#include "test_util/process.h"
#include "test_util/temp_dir.h"

namespace dflash::testing {

namespace pb = ::dflash::eval::v1;

// A raw stub per "client", each on its own channel.
struct JobsClient {
  explicit JobsClient(const std::string& address);

  // One unary call with a fresh context and a 60 s deadline.
  template <typename Req, typename Resp>
  grpc::Status Call(grpc::Status (pb::DrafterEval::Stub::*method)(grpc::ClientContext*, const Req&,
                                                                  Resp*),
                    const Req& req, Resp* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    return (stub.get()->*method)(&ctx, req, resp);
  }
  grpc::Status Submit(const pb::EvalRequest& r, pb::EvalJob* job);
  pb::EvalJob Get(const std::string& id);
  grpc::Status Cancel(const std::string& id, pb::EvalJob* job);
  grpc::Status Resubmit(const std::string& id, pb::EvalJob* job);
  pb::ListEvalsResponse List(pb::ListEvalsRequest req);
  pb::EvalResult RunEval(const pb::EvalRequest& r);
  // Polls until the job leaves QUEUED/RUNNING.
  pb::EvalJob WaitDone(const std::string& id);
  // Polls until the job is RUNNING with some progress.
  void WaitRunning(const std::string& id);

  std::unique_ptr<pb::DrafterEval::Stub> stub;
};

// Drafter m on `dataset`, every anchor, at most `max_samples` (0: all).
pb::EvalRequest JobRequest(const std::string& dataset, int max_samples = 0);

// Results equal apart from wall-clock timings and which process ran them
// (a shard's seconds and server, "host:pid").
void ExpectSameNumbers(pb::EvalResult got, pb::EvalResult want);

// The suite's data root: the tiny fixture and "big" (kBigSamples samples:
// seconds of real work). Each test starts its own servers on it.
class JobsE2eTest : public ::testing::Test {
 protected:
  static constexpr int kBigSamples = 900;  // 150 copies of the tiny dataset

  static void SetUpTestSuite();
  static void TearDownTestSuite();

  // A server with its state in dir_/`state` and `extra` flags; null (and a
  // test failure) when it does not start.
  static std::unique_ptr<ServerProcess> Start(const std::string& state,
                                              std::vector<std::string> extra = {});
  // Loads target t, datasets d, split and (when `big`) big, and drafter m.
  static void Load(const std::string& address, bool big = true);

  static TempDir* dir_;
  static std::string data_;
};

}  // namespace dflash::testing
