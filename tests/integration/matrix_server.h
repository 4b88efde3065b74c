// File: matrix_server.h
// One dflash-evald over the tiny fixture, with the bad-input matrix's stream
// and request size limits (bad_input_cases.h), for a suite; and the raw and
// typed calls the bad-input tests make to it (bad_input_matrix_test.cc,
// stream_limit_test.cc).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "dflash/eval/v1/service.grpc.pb.h"
#include "integration/bad_input_cases.h"
#include "integration/job_client.h"
#include "integration/tiny_fixture.h"

namespace dflash::testing::bad_input {

struct Reply {
  grpc::Status status;
  std::vector<std::string> messages;  // the response(s), serialized
};

// One dflash-evald over the tiny fixture (with the stream and request size
// limits of bad_input_cases.h) for a suite, and the raw calls the tests make
// to it.
class MatrixServerTest : public TinyServerTest {
 protected:
  static void SetUpMatrixServer();
  static void TearDownMatrixServer();

  void SetUp() override;

  // The data root with symbolic links resolved, as messages show it.
  static std::string DataCanon();

  // Sends `request` as the bytes of /dflash.eval.v1.DrafterEval/<rpc> (unary
  // or server-streaming alike: one message out, every reply read).
  static Reply Call(const std::string& rpc, const std::string& request);

  // Runs one case. A WatchEval refused for the stream limit is retried: the
  // server counts a stream until its last callback, just after the client
  // has seen it end.
  static void Run(const Case& c);

  // GetEval and SubmitEval through jobs_ (a test failure when they fail).
  static pb::EvalJob GetEval(const std::string& id);
  static pb::EvalJob Submit(const pb::EvalRequest& request);
  // Polls GetEval until `done(job)` or 120 s.
  static pb::EvalJob WaitFor(const std::string& id,
                             const std::function<bool(const pb::EvalJob&)>& done);
  static pb::ListEvalsResponse ListRun(const std::string& run);

  static std::shared_ptr<grpc::Channel>* channel_;
  static grpc::GenericStub* generic_;
  static JobClient* jobs_;  // the job RPCs, on channel_
};

}  // namespace dflash::testing::bad_input
